//! What a legacy backend sends beside a call's answer, as the reverse bridge handles it: its
//! notifications as the 2026-07-28 client gets them, a server→client request it does not
//! bridge refused upstream, and the legacy cancellation of a call whose client went away.

use super::serve::One;
use super::Entry;
use crate::mcp::bridge::legacy;
use serde_json::{json, Value};

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
        let answer = json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32601,
            "message": format!("the gateway does not bridge `{method}` to this 2026-07-28 client"),
        }});
        self.bridge.engine.spawn_notify(
            entry.pool.clone(),
            entry.backend.clone(),
            entry.session.clone(),
            answer.to_string(),
        );
    }

    /// The client went away: the legacy way to cancel its call upstream.
    pub(super) fn cancel_upstream(&self, entry: &Entry, up_id: &str) {
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": up_id, "reason": "the client went away"}});
        self.bridge.engine.spawn_notify(
            entry.pool.clone(),
            entry.backend.clone(),
            entry.session.clone(),
            cancel.to_string(),
        );
    }
}
