//! The legacy cancellation of a call in flight on a pooled session (`CancelOnDrop`): sent
//! upstream when the guard drops armed (the call's exchange dropped before its answer was read).

use super::entry::Entry;
use crate::upstream::attempt::Engine;
use std::sync::Arc;

/// A call in flight on a pooled session whose exchange may be dropped before its answer is
/// read: the client went away, or the route's deadline passed (`proxy/bridged.rs`). Closing the
/// answer stream does not stop a legacy server's tool, so the call is cancelled the legacy way
/// (`notifications/cancelled` in the backend session) when the guard drops armed.
pub(super) struct CancelOnDrop {
    pub(super) engine: Arc<Engine>,
    pub(super) entry: Arc<Entry>,
    pub(super) up_id: Option<String>,
}

impl CancelOnDrop {
    /// The call ended (answered, lost with its connection) or is parked: nothing to cancel.
    pub(super) fn disarm(&mut self) {
        self.up_id = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(up_id) = self.up_id.take() else {
            return;
        };
        let reason = "the client went away or its deadline passed";
        let cancel = mcp_wire::messages::cancelled(&up_id, reason);
        self.engine.spawn_notify(
            self.entry.pool.clone(),
            self.entry.backend.clone(),
            self.entry.session.clone(),
            cancel.to_string(),
            self.entry.caller.clone(),
        );
    }
}
