//! The JSON-RPC messages the gateway writes on its own, by name: the replay of a client's
//! `initialize` after a move (and the settings it had made), the cancellation of a request
//! whose deadline passed, and what the era bridges write: responses to a client's request
//! (a result, a backend's error relayed), and to a backend's own request (the gateway's
//! refusal, whose code and message come from the gateway's error table), cancellations and
//! subscriptions in a backend session. Params given as JSON text go in verbatim (never
//! re-serialized); ids are the gateway's own, so a backend's log says where they came from; a
//! client's id is written as it sent it. Also here: which methods are safe to send twice.

use crate::RequestId;
use bytes::Bytes;
use serde_json::{json, Value};

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

/// The response to the client's request `id` with `result`.
pub fn result(id: &RequestId, result: &Value) -> Bytes {
    response(id, "result", result)
}

/// The empty result `{}`, for what the gateway answers itself (`ping`, `logging/setLevel`,
/// a subscription kept by the gateway).
pub fn empty_result(id: &RequestId) -> Bytes {
    response(id, "result", &json!({}))
}

/// The response to the client's request `id` carrying a backend's `error` object as it is
/// (relayed; the gateway's own errors are written by its error table).
pub fn relayed_error(id: &RequestId, error: &Value) -> Bytes {
    response(id, "error", error)
}

/// A JSON-RPC response with the request's id verbatim (a 23-digit id must not become a
/// float) and `key` (`result` or `error`).
fn response(id: &RequestId, key: &str, value: &Value) -> Bytes {
    let value = serde_json::to_string(value).unwrap_or_else(|_| "null".into());
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":{},"{key}":{value}}}"#,
        id.as_json()
    ))
}

/// `notifications/cancelled` for the gateway's own request `request_id` in a backend session,
/// with the `reason` a backend's log shows.
pub fn cancelled(request_id: &str, reason: &str) -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": request_id, "reason": reason}})
    .to_string()
}

/// The error response to a backend's own request `id` (its id as the backend sent it) that
/// the gateway refuses: `code` and `message` only, from the gateway's error table.
pub fn error_to_backend(id: &Value, code: i32, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// `resources/subscribe` of `uri` with the gateway's own request `id`.
pub fn subscribe(id: &str, uri: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe",
        "params": {"uri": uri}})
    .to_string()
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

    #[test]
    fn responses_to_a_client_echo_its_id_verbatim() {
        let id = RequestId::from_json("12345678901234567890123").unwrap();
        assert_eq!(
            &result(&id, &json!({"a": 1}))[..],
            br#"{"jsonrpc":"2.0","id":12345678901234567890123,"result":{"a":1}}"#
        );
        assert_eq!(
            &empty_result(&id)[..],
            br#"{"jsonrpc":"2.0","id":12345678901234567890123,"result":{}}"#
        );
        let error = json!({"code": -32000, "message": "Tool failed"});
        assert_eq!(
            &relayed_error(&id, &error)[..],
            br#"{"jsonrpc":"2.0","id":12345678901234567890123,"error":{"code":-32000,"message":"Tool failed"}}"#
        );
    }

    #[test]
    fn messages_in_a_backend_session_are_written_as_before() {
        assert_eq!(
            cancelled("mcpgw-pool-3", "the client went away"),
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"the client went away","requestId":"mcpgw-pool-3"}}"#
        );
        assert_eq!(
            error_to_backend(&json!(7), -32603, "no"),
            r#"{"error":{"code":-32603,"message":"no"},"id":7,"jsonrpc":"2.0"}"#
        );
        assert_eq!(
            error_to_backend(&Value::Null, -32601, "no"),
            r#"{"error":{"code":-32601,"message":"no"},"id":null,"jsonrpc":"2.0"}"#
        );
        let sub = parsed(subscribe("mcpgw-pool-4", "file:///a"));
        assert_eq!(sub["id"], "mcpgw-pool-4");
        assert_eq!(sub["method"], "resources/subscribe");
        assert_eq!(sub["params"], json!({"uri": "file:///a"}));
    }
}
