//! What a session's binding says, read by both the manager and the move: the backend to send
//! to (or why the binding cannot be used), and the backend session as the engine addresses it.

use super::reinit::Reason;
use super::SessionRecord;
use crate::upstream::own::BackendSession;
use crate::upstream::{Backend, Pool};
use std::sync::Arc;

/// The session's backend, or why the binding cannot be used as it is.
pub(super) fn bound_backend(pool: &Pool, rec: &SessionRecord) -> Result<Arc<Backend>, Reason> {
    match pool.find(rec.binding.backend) {
        None => Err(Reason::BackendGone),
        Some(b) if b.is_failed() => Err(Reason::BackendDown),
        Some(_) if rec.binding.stale => Err(Reason::ConnectionLost),
        Some(b) if b.draining_for().is_some_and(|d| d >= pool.drain_timeout) => {
            Err(Reason::Drained)
        }
        Some(b) if !b.serves(mcp_wire::Era::Legacy) => Err(Reason::EraChanged),
        Some(b) => Ok(b),
    }
}

/// The record's backend session, as the attempt engine addresses it.
pub(super) fn backend_session(rec: &SessionRecord) -> BackendSession {
    BackendSession {
        id: rec.binding.backend_session.clone(),
        path: rec.path.clone(),
        protocol_version: rec.protocol_version.clone(),
    }
}
