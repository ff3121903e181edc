//! What a legacy backend sends beside a call's answer, as the reverse bridge handles it: its
//! notifications as the 2026-07-28 client gets them, a server→client request it does not
//! bridge refused upstream, and the legacy cancellation of a call whose exchange was dropped.

use super::cancel::CancelOnDrop;
use super::entry::Entry;
use super::serve::One;
use crate::error::GatewayError;
use mcp_wire::translate::legacy;
use serde_json::Value;
use std::sync::Arc;

impl One<'_> {
    /// A notification of the backend's as the 2026-07-28 client gets it: progress as it is,
    /// log messages at the request's level only, nothing else (list changes and the like are
    /// the session's, which the client does not have).
    pub(super) fn for_client(&self, m: Value) -> Option<Value> {
        match m.get("method").and_then(Value::as_str) {
            Some("notifications/progress") => Some(m),
            Some("notifications/message") => {
                let level = m
                    .get("params")
                    .and_then(|p| p.get("level"))
                    .and_then(Value::as_str);
                legacy::wants_log(self.env.log_level.as_deref(), level).then_some(m)
            }
            _ => None,
        }
    }

    /// A server→client request during the call: not bridged (yet); the backend is told so,
    /// so its call goes on rather than waiting.
    pub(super) fn refuse_server_request(&self, entry: &Entry, m: &Value) {
        let Some(id) = m.get("id") else { return };
        let method = m.get("method").and_then(Value::as_str).unwrap_or("?");
        tracing::debug!(
            method,
            "a legacy backend's request to a 2026-07-28 client, refused"
        );
        let answer = GatewayError::server_request_not_bridged(method).to_backend(id);
        self.bridge.engine.spawn_notify(
            entry.pool.clone(),
            entry.backend.clone(),
            entry.session.clone(),
            answer.to_string(),
            self.to.caller.clone(),
        );
    }

    /// Arms the legacy cancellation of the call `up_id` in flight on `entry`: sent upstream
    /// unless the guard is disarmed first (its answer read, its stream lost, the call parked).
    pub(super) fn cancel_on_drop(&self, entry: &Arc<Entry>, up_id: &str) -> CancelOnDrop {
        CancelOnDrop {
            engine: self.bridge.engine.clone(),
            entry: entry.clone(),
            up_id: Some(up_id.to_owned()),
        }
    }
}
