//! The JSON-RPC messages the gateway writes on its own, by name: the replay of a client's
//! `initialize` after a move (and the settings it had made), and the cancellation of a
//! request whose deadline passed. Params given as JSON text go in verbatim (never
//! re-serialized); ids are the gateway's own, so a backend's log says where they came from.
//! Also here: which methods are safe to send twice.

/// Methods whose repetition cannot change server state: retried transparently when the
/// backend was lost mid-answer.
pub const REPEATABLE: &[&str] = &[
    "tools/list",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "completion/complete",
    "ping",
];

/// Whether a message may be sent twice: notifications and the read-only methods above, and
/// `initialize` (a second one only makes a second session). A response to a server request
/// (`method` absent) is never repeated: only its own session can take it.
pub fn safe_to_repeat(method: Option<&str>, is_request: bool) -> bool {
    match (method, is_request) {
        (None, _) => false,
        (Some(_), false) => true,
        (Some(m), true) => REPEATABLE.contains(&m) || m == "initialize",
    }
}

/// The client's `initialize` (its `params`, JSON text) replayed for the session's
/// `generation`-th binding.
pub fn reinitialize(generation: u64, params: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":"mcpgw-reinit-{generation}","method":"initialize","params":{params}}}"#
    )
}

/// `notifications/initialized`, after a replayed `initialize` was accepted.
pub fn initialized() -> String {
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned()
}

/// The client's last `logging/setLevel` (its `params`, JSON text), replayed.
pub fn replay_log_level(params: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":"mcpgw-replay-level","method":"logging/setLevel","params":{params}}}"#
    )
}

/// The client's `i`-th active `resources/subscribe` of `uri`, replayed.
pub fn replay_subscription(i: usize, uri: &str) -> String {
    let params = serde_json::json!({ "uri": uri });
    format!(
        r#"{{"jsonrpc":"2.0","id":"mcpgw-replay-sub-{i}","method":"resources/subscribe","params":{params}}}"#
    )
}

/// `notifications/cancelled` for the request with id `request_id` (raw JSON), whose deadline
/// passed at the gateway.
pub fn deadline_cancelled(request_id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{request_id},"reason":"deadline exceeded at the gateway"}}}}"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn parsed(message: String) -> Value {
        serde_json::from_str(&message).expect("a builder writes valid JSON")
    }

    #[test]
    fn only_read_only_requests_notifications_and_initialize_are_repeated() {
        assert!(safe_to_repeat(Some("tools/list"), true));
        assert!(safe_to_repeat(Some("initialize"), true));
        assert!(safe_to_repeat(Some("notifications/initialized"), false));
        assert!(!safe_to_repeat(Some("tools/call"), true));
        assert!(!safe_to_repeat(None, true));
        assert!(!safe_to_repeat(None, false));
    }

    #[test]
    fn replayed_messages_carry_the_clients_params_and_the_gateways_ids() {
        let init = parsed(reinitialize(3, r#"{"protocolVersion":"2025-06-18"}"#));
        assert_eq!(init["id"], "mcpgw-reinit-3");
        assert_eq!(init["method"], "initialize");
        assert_eq!(init["params"]["protocolVersion"], "2025-06-18");
        assert_eq!(parsed(initialized())["method"], "notifications/initialized");
        let level = parsed(replay_log_level(r#"{"level":"debug"}"#));
        assert_eq!(level["params"], json!({"level": "debug"}));
        let sub = parsed(replay_subscription(1, "file:///\"quoted\""));
        assert_eq!(sub["id"], "mcpgw-replay-sub-1");
        assert_eq!(sub["params"]["uri"], "file:///\"quoted\"");
        let cancel = parsed(deadline_cancelled(r#""req-7""#));
        assert_eq!(cancel["params"]["requestId"], "req-7");
        assert!(cancel.get("id").is_none(), "a notification has no id");
    }
}
