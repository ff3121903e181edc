//! Property tests (proptest) for the era bridge's pure translation (`translate`): fed
//! arbitrary messages, nothing panics; a translated request keeps everything the client sent
//! and carries the envelope; header values round-trip through their wire form; a retry echoes
//! `requestState` exactly; progress forwarded across rounds only increases.
//!
//! `cargo test -p mcp-gateway --test it bridge_properties::` (64 cases per property, or
//! `PROPTEST_CASES`).

use crate::generate::{any_json, config};
use mcp_wire::headers::{decode_value, encode_value};
use mcp_wire::translate::request::{modern_request, Envelope, Retry};
use mcp_wire::translate::result::{answer, legacy_result, ProgressShift, MODERN_ONLY_KEYS};
use mcp_wire::translate::rounds::{input_required, missing_capability};
use mcp_wire::translate::{ClientInit, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

fn object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map("[a-zA-Z_]{1,8}", any_json(), 0..5)
        .prop_map(|m| m.into_iter().collect())
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("tools/call".to_owned()),
        Just("prompts/get".to_owned()),
        Just("resources/read".to_owned()),
        Just("tools/list".to_owned()),
        ".{1,16}",
    ]
}

fn init() -> ClientInit {
    ClientInit::parse(r#"{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"c","version":"1"}}"#).unwrap()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn header_values_round_trip_through_their_wire_form(s in any::<String>()) {
        let wire = encode_value(&s);
        prop_assert!(wire.bytes().all(|b| b == b'\t' || (0x20..=0x7e).contains(&b)), "{wire:?}");
        prop_assert_eq!(wire.trim(), wire.as_str());
        let decoded = decode_value(wire.as_bytes()).map(|d| d.into_owned());
        prop_assert_eq!(decoded, Some(s));
    }

    #[test]
    fn a_translated_request_keeps_what_the_client_sent_and_carries_the_envelope(
        method in method(),
        mut params in object(),
        meta in object(),
        name in any::<String>(),
        id in any::<i64>(),
        level in prop::option::of("[a-z]{1,9}"),
    ) {
        params.insert("name".into(), name.clone().into());
        params.insert("uri".into(), name.clone().into());
        params.insert("_meta".into(), Value::Object(meta.clone()));
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let i = init();
        let env = Envelope { init: &i, log_level: level.as_deref() };
        let out = modern_request(&msg, env, None).unwrap();
        let body: Value = serde_json::from_slice(&out.body).unwrap();
        prop_assert_eq!(&body["method"], &json!(method));
        prop_assert_eq!(&body["id"], &json!(id));
        for (k, v) in &params {
            if k != "_meta" {
                prop_assert_eq!(&body["params"][k], v);
            }
        }
        let sent = body["params"]["_meta"].as_object().unwrap();
        for (k, v) in &meta {
            if !k.starts_with("io.modelcontextprotocol/") {
                prop_assert_eq!(&sent[k], v);
            }
        }
        prop_assert_eq!(&sent[META_PROTOCOL_VERSION], &json!("2026-07-28"));
        prop_assert_eq!(&sent[META_CLIENT_CAPABILITIES], &json!({"sampling": {}}));
        let header = |n: &str| out.headers.iter().find(|(k, _)| *k == n).map(|(_, v)| v.clone());
        let decoded = header("mcp-method").map(|v| decode_value(v.as_bytes()).unwrap().into_owned());
        prop_assert_eq!(decoded, Some(method.clone()));
        let named = matches!(method.as_str(), "tools/call" | "prompts/get" | "resources/read");
        let decoded = header("mcp-name").map(|v| decode_value(v.as_bytes()).unwrap().into_owned());
        prop_assert_eq!(decoded, named.then_some(name));
    }

    #[test]
    fn a_retry_echoes_request_state_exactly(state in any::<String>(), responses in object()) {
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}});
        let i = init();
        let retry = Retry { id: json!("r"), input_responses: responses.clone(), request_state: Some(state.clone()) };
        let out = modern_request(&msg, Envelope { init: &i, log_level: None }, Some(&retry)).unwrap();
        let body: Value = serde_json::from_slice(&out.body).unwrap();
        prop_assert_eq!(body["params"]["requestState"].as_str(), Some(state.as_str()));
        prop_assert_eq!(&body["params"]["inputResponses"], &Value::Object(responses));
        prop_assert_eq!(&body["id"], &json!("r"));
    }

    #[test]
    fn any_result_is_sorted_without_panicking(result in any_json()) {
        let _ = answer(result.clone());
        if let Ok(ir) = input_required(&result) {
            prop_assert!(!ir.requests.is_empty() || ir.request_state.is_some());
            let _ = missing_capability(&init(), &ir);
        }
    }

    #[test]
    fn legacy_results_lose_modern_keys_only_when_nothing_else_is_there(result in object(), rt in any::<bool>()) {
        let mut result = result;
        if rt {
            result.insert("resultType".into(), "complete".into());
        }
        let out = legacy_result(Value::Object(result.clone()));
        let out = out.as_object().unwrap();
        let empty = result.keys().all(|k| k == "_meta" || MODERN_ONLY_KEYS.contains(&k.as_str()));
        for (k, v) in &result {
            let gone = empty && MODERN_ONLY_KEYS.contains(&k.as_str());
            prop_assert_eq!(out.get(k), (!gone).then_some(v));
        }
        prop_assert!(out.len() <= result.len());
    }

    #[test]
    fn forwarded_progress_only_increases_across_rounds(
        rounds in prop::collection::vec(prop::collection::vec(0u32..50, 0..6), 1..5)
    ) {
        let mut shift = ProgressShift::default();
        let mut last: Option<f64> = None;
        for round in rounds {
            shift.next_round();
            for p in round {
                let msg = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": "t", "progress": p}});
                if let Some(out) = shift.shift(msg) {
                    let v = out["params"]["progress"].as_f64().unwrap();
                    prop_assert!(last.is_none_or(|l| v > l), "{v} after {last:?}");
                    last = Some(v);
                }
            }
        }
    }
}
