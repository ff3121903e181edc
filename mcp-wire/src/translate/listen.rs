//! Subscriptions of a legacy client on 2026-07-28 backends: the session's
//! `resources/subscribe`d URIs (and the list changes a legacy client hears on its GET stream)
//! become one `subscriptions/listen` request, and the notifications on its stream become the
//! legacy notifications the client's GET stream carries. Pure: the stream itself is held by
//! `crate::bridge::listen`.
//!
//! A listen stream starts with `notifications/subscriptions/acknowledged` (the filter the
//! server honours, narrowed to what it declared), then the notifications, each stamped with
//! the subscription id in `_meta`; it ends with the listen request's (empty) result.
//!
//! The other way round (a 2026-07-28 client's listen served from a legacy backend session),
//! the gateway writes that stream itself: [`acknowledged`], [`stamp`] and [`listen_result`].

use super::request::{modern_request, Envelope, ModernRequest};
use super::TranslateError;
use serde_json::{json, Map, Value};

/// The listen stream's first message: the filter the server honours.
pub const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// `_meta` key on each listen notification: the subscription (the listen request's id).
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The `subscriptions/listen` request for a session subscribed to `uris`: list changes of
/// tools, prompts and resources too (a legacy server sends those on the GET stream unasked
/// when it declares them; the server narrows the filter to what it declared).
pub fn listen_request(
    id: &str,
    uris: &[impl AsRef<str>],
    env: Envelope<'_>,
) -> Result<ModernRequest, TranslateError> {
    let mut notifications = Map::new();
    for key in [
        "toolsListChanged",
        "promptsListChanged",
        "resourcesListChanged",
    ] {
        notifications.insert(key.into(), Value::Bool(true));
    }
    if !uris.is_empty() {
        let uris: Vec<&str> = uris.iter().map(AsRef::as_ref).collect();
        notifications.insert("resourceSubscriptions".into(), json!(uris));
    }
    let msg = json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "subscriptions/listen",
        "params": {"notifications": notifications},
    });
    modern_request(&msg, env, None)
}

/// One message of a listen stream, read for a legacy client.
#[derive(Debug, Clone, PartialEq)]
pub enum Heard {
    /// The server acknowledged the filter.
    Acknowledged {
        /// It honours nothing of it (the stream ends at once: nothing to listen for).
        empty: bool,
    },
    /// A notification for the client's GET stream, as a legacy server sends it.
    Notify(Value),
    /// A JSON-RPC response: the stream is over (its result), or refused (an error).
    Ended {
        /// The error object, when refused.
        error: Option<Value>,
    },
    /// Nothing for the client (a request, or not JSON-RPC).
    Nothing,
}

/// Reads one message of a listen stream.
pub fn heard(raw: &[u8]) -> Heard {
    let Ok(Value::Object(mut msg)) = serde_json::from_slice::<Value>(raw) else {
        return Heard::Nothing;
    };
    let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
    match method {
        None if msg.contains_key("id") => Heard::Ended {
            error: msg.remove("error"),
        },
        None => Heard::Nothing,
        Some(_) if msg.contains_key("id") => Heard::Nothing,
        Some(m) if m == ACKNOWLEDGED => {
            let honoured = msg
                .get("params")
                .and_then(|p| p.get("notifications"))
                .and_then(Value::as_object);
            let empty = honoured.is_none_or(|n| {
                n.iter().all(|(_, v)| match v {
                    Value::Bool(b) => !b,
                    Value::Array(a) => a.is_empty(),
                    _ => true,
                })
            });
            Heard::Acknowledged { empty }
        }
        Some(_) => {
            if let Some(Value::Object(params)) = msg.get_mut("params") {
                if let Some(Value::Object(meta)) = params.get_mut("_meta") {
                    meta.remove(META_SUBSCRIPTION_ID);
                    if meta.is_empty() {
                        params.remove("_meta");
                    }
                }
            }
            msg.insert("jsonrpc".into(), "2.0".into());
            Heard::Notify(Value::Object(msg))
        }
    }
}

/// The acknowledgement the gateway writes first on a 2026-07-28 client's listen stream it
/// serves from a legacy backend session: the filter it honours, and the subscription
/// (`subscription_id`, the listen request's id) in `_meta`.
pub fn acknowledged(honoured: &Map<String, Value>, subscription_id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "method": ACKNOWLEDGED,
        "params": {"notifications": honoured, "_meta": subscription_meta(subscription_id)}})
}

/// The listen request's result, which ends such a stream gracefully.
pub fn listen_result(subscription_id: &Value) -> Value {
    json!({"_meta": subscription_meta(subscription_id)})
}

/// A legacy notification relayed on such a stream, stamped with the subscription in its
/// `params._meta` (either made an object first when it is not one).
pub fn stamp(msg: &mut Value, subscription_id: &Value) {
    if !msg.get("params").is_some_and(Value::is_object) {
        msg["params"] = Value::Object(Map::new());
    }
    let params = &mut msg["params"];
    if !params.get("_meta").is_some_and(Value::is_object) {
        params["_meta"] = Value::Object(Map::new());
    }
    params["_meta"][META_SUBSCRIPTION_ID] = subscription_id.clone();
}

fn subscription_meta(subscription_id: &Value) -> Value {
    json!({ META_SUBSCRIPTION_ID: subscription_id })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::ClientInit;

    fn init() -> ClientInit {
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"}});
        ClientInit::parse(&params.to_string()).unwrap()
    }

    #[test]
    fn the_listen_request_asks_for_the_subscribed_uris_and_list_changes_with_the_envelope() {
        let init = init();
        let env = Envelope {
            init: &init,
            log_level: None,
        };
        let req = listen_request("mcpgw-listen-1", &["text://a", "text://b"], env).unwrap();
        let body: Value = serde_json::from_slice(&req.body).unwrap();
        assert_eq!(body["method"], "subscriptions/listen");
        assert_eq!(body["id"], "mcpgw-listen-1");
        let n = &body["params"]["notifications"];
        assert_eq!(n["resourceSubscriptions"], json!(["text://a", "text://b"]));
        assert_eq!(n["toolsListChanged"], true);
        let meta = &body["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(meta["io.modelcontextprotocol/clientInfo"]["name"], "c");
        assert!(req
            .headers
            .iter()
            .any(|(h, v)| *h == "mcp-method" && v == "subscriptions/listen"));
        let none: [&str; 0] = [];
        let req = listen_request("x", &none, env).unwrap();
        let body: Value = serde_json::from_slice(&req.body).unwrap();
        assert!(body["params"]["notifications"]
            .get("resourceSubscriptions")
            .is_none());
    }

    #[test]
    fn listen_messages_become_what_a_legacy_get_stream_carries() {
        let ack = br#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":["text://a"]},"_meta":{"io.modelcontextprotocol/subscriptionId":"x"}}}"#;
        assert_eq!(heard(ack), Heard::Acknowledged { empty: false });
        let nothing = br#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{}}}"#;
        assert_eq!(heard(nothing), Heard::Acknowledged { empty: true });
        let update = br#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"text://a","_meta":{"io.modelcontextprotocol/subscriptionId":"x"}}}"#;
        assert_eq!(
            heard(update),
            Heard::Notify(
                json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                "params": {"uri": "text://a"}})
            )
        );
        let kept = br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"x","trace":"t"}}}"#;
        assert_eq!(
            heard(kept),
            Heard::Notify(
                json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                "params": {"_meta": {"trace": "t"}}})
            )
        );
        let end = br#"{"jsonrpc":"2.0","id":"x","result":{"resultType":"complete"}}"#;
        assert_eq!(heard(end), Heard::Ended { error: None });
        let refused = br#"{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no"}}"#;
        assert!(matches!(heard(refused), Heard::Ended { error: Some(_) }));
        assert_eq!(heard(b"not json"), Heard::Nothing);
        assert_eq!(
            heard(br#"{"jsonrpc":"2.0","id":1,"method":"roots/list"}"#),
            Heard::Nothing
        );
    }

    #[test]
    fn a_listen_stream_the_gateway_serves_carries_its_subscription_id_throughout() {
        let mut honoured = Map::new();
        honoured.insert("toolsListChanged".into(), Value::Bool(true));
        let sub = json!(7);
        assert_eq!(
            acknowledged(&honoured, &sub).to_string(),
            r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"notifications":{"toolsListChanged":true}}}"#
        );
        assert_eq!(
            listen_result(&sub).to_string(),
            r#"{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}"#
        );
        let mut bare = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        stamp(&mut bare, &sub);
        assert_eq!(bare["params"]["_meta"][META_SUBSCRIPTION_ID], 7);
        let mut odd = json!({"method": "m", "params": {"_meta": 3, "uri": "u"}});
        stamp(&mut odd, &sub);
        assert_eq!(
            odd["params"],
            json!({"_meta": {META_SUBSCRIPTION_ID: 7}, "uri": "u"})
        );
    }
}
