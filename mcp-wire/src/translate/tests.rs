//! The translations on the shapes the real SDKs send (TypeScript SDK 2.4.0 `server/discover`,
//! `input_required`; PyPI mcp 1.30.0 / TS 1.32.2 `initialize` params).

use super::request::{discover, disposition, modern_request, Disposition, Envelope, Retry};
use super::result::{answer, initialize_result, legacy_result, Answer, ProgressShift};
use super::rounds::{client_answer, missing_capability, server_request, ClientAnswer};
use super::*;
use serde_json::json;

fn init(caps: Value) -> ClientInit {
    let params = json!({"protocolVersion": "2025-06-18", "capabilities": caps,
        "clientInfo": {"name": "mcp", "version": "1.30.0"}});
    ClientInit::parse(&params.to_string()).unwrap()
}

#[test]
fn a_legacy_call_gets_the_envelope_and_headers_and_keeps_its_progress_token() {
    let i = init(json!({"elicitation": {}}));
    let msg = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "résumé", "arguments": {}, "_meta": {"progressToken": 3}}});
    let env = Envelope {
        init: &i,
        log_level: Some("info"),
    };
    let out = modern_request(&msg, env, None).unwrap();
    let body: Value = serde_json::from_slice(&out.body).unwrap();
    let meta = &body["params"]["_meta"];
    assert_eq!(meta["progressToken"], 3);
    assert_eq!(meta[META_PROTOCOL_VERSION], "2026-07-28");
    assert_eq!(meta[META_CLIENT_CAPABILITIES], json!({"elicitation": {}}));
    assert_eq!(meta[META_CLIENT_INFO]["name"], "mcp");
    assert_eq!(meta[META_LOG_LEVEL], "info");
    assert_eq!(body["id"], 7);
    let h = |n: &str| {
        out.headers
            .iter()
            .find(|(k, _)| *k == n)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(h("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(h("mcp-method"), Some("tools/call"));
    assert_eq!(h("mcp-name"), Some("=?base64?csOpc3Vtw6k=?="));
}

#[test]
fn the_discover_request_is_the_translation_of_a_bare_server_discover_byte_for_byte() {
    let bare = ClientInit {
        protocol_version: "2025-11-25".into(),
        capabilities: json!({}),
        client_info: None,
    };
    for i in [init(json!({"sampling": {}})), bare] {
        let msg = json!({"jsonrpc": "2.0", "id": 3, "method": "server/discover"});
        let env = Envelope {
            init: &i,
            log_level: None,
        };
        assert_eq!(discover(&i, 3), modern_request(&msg, env, None).unwrap());
    }
}

#[test]
fn a_meta_that_is_not_an_object_is_replaced_by_the_envelope() {
    let i = init(json!({}));
    let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "t", "_meta": 5, "arguments": {}}});
    let env = Envelope {
        init: &i,
        log_level: None,
    };
    let out = modern_request(&msg, env, None).unwrap();
    let body: Value = serde_json::from_slice(&out.body).unwrap();
    let meta = &body["params"]["_meta"];
    assert_eq!(meta[META_PROTOCOL_VERSION], "2026-07-28");
    assert!(meta.get(META_LOG_LEVEL).is_none());
}

#[test]
fn a_retry_carries_input_responses_and_the_state_exactly() {
    let i = init(json!({}));
    let msg =
        json!({"jsonrpc": "2.0", "id": "a", "method": "prompts/get", "params": {"name": "p"}});
    let state = "st=\u{e9}\u{2603} \"q\" \\ end".to_owned();
    let retry = Retry {
        id: json!("a#2"),
        input_responses: json!({"q1": {"action": "accept"}})
            .as_object()
            .unwrap()
            .clone(),
        request_state: Some(state.clone()),
    };
    let env = Envelope {
        init: &i,
        log_level: None,
    };
    let out = modern_request(&msg, env, Some(&retry)).unwrap();
    let body: Value = serde_json::from_slice(&out.body).unwrap();
    assert_eq!(body["id"], "a#2");
    assert_eq!(body["params"]["requestState"], state.as_str());
    assert_eq!(body["params"]["inputResponses"]["q1"]["action"], "accept");
    assert!(body["params"]["_meta"].get(META_LOG_LEVEL).is_none());
}

#[test]
fn the_gateway_answers_ping_and_set_level_and_refuses_what_has_no_translation() {
    assert_eq!(disposition("ping", true), Disposition::Ping);
    assert_eq!(disposition("logging/setLevel", true), Disposition::SetLevel);
    assert_eq!(
        disposition("notifications/initialized", false),
        Disposition::Acknowledged
    );
    assert_eq!(
        disposition("notifications/cancelled", false),
        Disposition::Cancelled
    );
    assert_eq!(disposition("tasks/get", true), Disposition::Refused);
    assert_eq!(
        disposition("resources/subscribe", true),
        Disposition::Subscribe(true)
    );
    assert_eq!(
        disposition("resources/unsubscribe", true),
        Disposition::Subscribe(false)
    );
    assert_eq!(disposition("initialize", true), Disposition::Reinitialize);
    assert_eq!(disposition("tools/call", true), Disposition::Forward);
}

#[test]
fn discover_becomes_the_initialize_result_at_the_clients_version() {
    // as the TypeScript SDK 2.4.0 answers server/discover
    let d = json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": true}},
        "instructions": "hi", "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "2.4.0"}}});
    let r = initialize_result(&d, &init(json!({}))).unwrap();
    assert_eq!(
        r,
        json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": true}},
        "serverInfo": {"name": "modern", "version": "2.4.0"}, "instructions": "hi"})
    );
    let mut future = init(json!({}));
    future.protocol_version = "2099-01-01".into();
    let r = initialize_result(&d, &future).unwrap();
    assert_eq!(r["protocolVersion"], "2025-11-25");
    assert!(initialize_result(&json!({"supportedVersions": []}), &future).is_err());
}

#[test]
fn modern_only_keys_go_only_from_empty_results() {
    let empty = json!({"resultType": "complete", "_meta": {"x": 1}});
    assert_eq!(legacy_result(empty), json!({"_meta": {"x": 1}}));
    let list = json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"});
    assert_eq!(legacy_result(list.clone()), list);
}

#[test]
fn input_required_becomes_server_requests_checked_against_capabilities() {
    let r = json!({"resultType": "input_required", "requestState": "s1:",
        "inputRequests": {"q1": {"method": "elicitation/create", "params": {"message": "?", "mode": "form",
            "requestedSchema": {"type": "object", "properties": {}}}}}});
    let Answer::InputRequired(ir) = answer(r).unwrap() else {
        panic!("not input_required")
    };
    assert_eq!(ir.request_state.as_deref(), Some("s1:"));
    assert_eq!(ir.requests[0].key, "q1");
    assert_eq!(
        missing_capability(&init(json!({"elicitation": {}})), &ir).unwrap(),
        None
    );
    let (method, required) = missing_capability(&init(json!({"sampling": {}})), &ir)
        .unwrap()
        .unwrap();
    assert_eq!(method, "elicitation/create");
    assert_eq!(required, json!({"elicitation": {}}));
    let req = server_request(&ir.requests[0], "mcpgw-1", "e1");
    assert_eq!(req["id"], "mcpgw-1");
    assert_eq!(req["method"], "elicitation/create");
    assert!(req["params"].get("elicitationId").is_none());
    let url = json!({"resultType": "input_required", "inputRequests": {"u": {"method": "elicitation/create",
        "params": {"mode": "url", "url": "https://x", "message": "m"}}}});
    let Answer::InputRequired(ir) = answer(url).unwrap() else {
        panic!()
    };
    assert!(missing_capability(&init(json!({"elicitation": {}})), &ir)
        .unwrap()
        .is_some());
    assert_eq!(
        server_request(&ir.requests[0], "i", "e9")["params"]["elicitationId"],
        "e9"
    );
    let weird =
        json!({"resultType": "input_required", "inputRequests": {"x": {"method": "tools/call"}}});
    let Answer::InputRequired(ir) = answer(weird).unwrap() else {
        panic!()
    };
    assert!(missing_capability(&init(json!({})), &ir).is_err());
    assert!(answer(json!({"resultType": "input_required"})).is_err());
}

#[test]
fn client_responses_are_read_as_results_or_errors() {
    let ok = json!({"jsonrpc": "2.0", "id": "mcpgw-1", "result": {"action": "accept"}});
    assert_eq!(
        client_answer(&ok),
        Some((
            json!("mcpgw-1"),
            ClientAnswer::Result(json!({"action": "accept"}))
        ))
    );
    let err = json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -1, "message": "no"}});
    assert!(matches!(
        client_answer(&err),
        Some((_, ClientAnswer::Error(_)))
    ));
    assert_eq!(
        client_answer(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})),
        None
    );
}

#[test]
fn progress_keeps_increasing_across_rounds() {
    let p = |v: f64, total: f64| {
        json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": 1, "progress": v, "total": total}})
    };
    let mut shift = ProgressShift::default();
    assert_eq!(shift.shift(p(1.0, 2.0)).unwrap()["params"]["progress"], 1.0);
    assert_eq!(shift.shift(p(2.0, 2.0)).unwrap()["params"]["progress"], 2.0);
    shift.next_round();
    let next = shift.shift(p(1.0, 2.0)).unwrap();
    assert_eq!(next["params"]["progress"], 3);
    assert_eq!(next["params"]["total"], 4);
    assert!(
        shift.shift(p(1.0, 2.0)).is_none(),
        "a repeated value is dropped"
    );
    let log = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {}});
    assert_eq!(shift.shift(log.clone()), Some(log));
}

#[test]
fn the_stored_initialize_is_read_leniently() {
    let i = ClientInit::parse(r#"{"protocolVersion":"2025-11-25"}"#).unwrap();
    assert_eq!(i.capabilities, json!({}));
    assert_eq!(i.client_info, None);
    assert!(!i.declares(&["roots"]));
    assert!(ClientInit::parse("{}").is_err());
    assert!(ClientInit::parse("[").is_err());
    let i = init(json!({"elicitation": {"form": {}}, "roots": null}));
    assert!(
        i.declares(&["elicitation"])
            && !i.declares(&["roots"])
            && !i.declares(&["elicitation", "url"])
    );
}

#[test]
fn a_peek_tells_what_passes_to_a_legacy_client_unchanged() {
    use super::result::peek;
    let full = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"resultType":"complete"}}"#;
    let p = peek(full).unwrap();
    assert!(p.response && p.verbatim && !p.request);
    let empty = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","_meta":{}}}"#;
    assert!(
        !peek(empty).unwrap().verbatim,
        "an empty result loses its modern keys first"
    );
    let asks =
        br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"s"}}"#;
    assert!(!peek(asks).unwrap().verbatim);
    let error = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}"#;
    assert!(peek(error).unwrap().verbatim);
    let note = br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#;
    assert!(!peek(note).unwrap().response);
    assert!(
        peek(br#"{"jsonrpc":"2.0","id":"x","method":"ping"}"#)
            .unwrap()
            .request
    );
    assert!(peek(b"not json").is_none());
}
