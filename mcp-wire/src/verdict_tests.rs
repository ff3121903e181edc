//! The answer scan against the shapes real SDKs send, split at every byte.

use super::*;
use proptest::prelude::*;

fn scan(shape: Shape, body: &[u8]) -> Option<Verdict> {
    let mut s = AnswerScan::new(shape);
    s.push(body);
    let whole = s.verdict();
    for size in 1..body.len().max(2) {
        let mut s = AnswerScan::new(shape);
        for c in body.chunks(size) {
            s.push(c);
        }
        assert_eq!(s.verdict(), whole, "chunks of {size}");
    }
    // the whole-body look agrees wherever the scan gives a verdict; where it gives none (a
    // request, garbage) the look may call an object without error keys a result
    let mut s = AnswerScan::new(shape);
    s.push_whole(body);
    if whole.is_some() {
        assert_eq!(s.verdict(), whole, "whole body");
    } else {
        assert!(
            matches!(s.verdict(), None | Some(Verdict::Result)),
            "whole body"
        );
    }
    whole
}

#[test]
fn a_whole_body_without_error_keys_is_a_result_and_one_with_them_is_scanned() {
    let mut s = AnswerScan::new(Shape::Json);
    s.push_whole(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n");
    assert_eq!(s.verdict(), Some(Verdict::Result));
    // what most SDKs send: `isError: false` on every tool result
    let mut s = AnswerScan::new(Shape::Json);
    s.push_whole(br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError" : false}}"#);
    assert_eq!(s.verdict(), Some(Verdict::Result));
    assert!(!may_say_error(br#"{"result":{"isError":false}}"#));
    assert!(may_say_error(br#"{"result":{"isError":true}}"#));
    assert!(may_say_error(br#"{"result":{"isError":false},"error":{}}"#));
    assert!(may_say_error(br#"{"result":{"isError":fals"#));
    // `error` inside a string sends it to the scan, which finds the result
    let mut s = AnswerScan::new(Shape::Json);
    s.push_whole(
        br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"text":"no \"error\" here"}]}}"#,
    );
    assert_eq!(s.verdict(), Some(Verdict::Result));
    let mut s = AnswerScan::new(Shape::Json);
    s.push_whole(br#"{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[]}}"#);
    assert_eq!(s.verdict(), Some(Verdict::ToolError));
    let mut s = AnswerScan::new(Shape::Json);
    s.push_whole(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}"#);
    assert_eq!(s.verdict(), Some(Verdict::RpcError(Some(-32601))));
    // not an object, or not closed: the scan decides (no verdict)
    for body in [&b"[{\"result\":{}}]"[..], b"{\"result\":{", b"\"x\""] {
        let mut s = AnswerScan::new(Shape::Json);
        s.push_whole(body);
        assert_eq!(s.verdict(), None, "{}", String::from_utf8_lossy(body));
    }
    // an SSE body is never taken whole
    let mut s = AnswerScan::new(Shape::Sse);
    s.push_whole(b"{\"result\":{}}");
    assert_eq!(s.verdict(), None);
}

fn json(body: &str) -> Option<Verdict> {
    scan(Shape::Json, body.as_bytes())
}

#[test]
fn a_tool_result_with_is_error_true_is_a_tool_error() {
    // mcp 1.30.0 (pydantic field order: content, structuredContent, isError)
    let py = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"Error executing tool test_error_handling: This tool intentionally returns an error for testing"}],"isError":true}}"#;
    assert_eq!(json(py), Some(Verdict::ToolError));
    // TypeScript: isError first, with spaces
    let ts = r#"{ "result" : { "isError" : true , "content": [] }, "jsonrpc": "2.0", "id": "a" }"#;
    assert_eq!(json(ts), Some(Verdict::ToolError));
    let ok = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[],"isError":false}}"#;
    assert_eq!(json(ok), Some(Verdict::Result));
}

#[test]
fn is_error_counts_only_directly_in_the_result() {
    let nested = r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"isError":true},"content":[{"type":"text","text":"{\"isError\":true}"}]}}"#;
    assert_eq!(json(nested), Some(Verdict::Result));
    let in_text = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\"isError\":true"}]}}"#;
    assert_eq!(json(in_text), Some(Verdict::Result));
    let elsewhere = r#"{"jsonrpc":"2.0","id":1,"isError":true,"result":{}}"#;
    assert_eq!(json(elsewhere), Some(Verdict::Result));
}

#[test]
fn a_json_rpc_error_gives_its_code() {
    let e = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Invalid params"}}"#;
    assert_eq!(json(e), Some(Verdict::RpcError(Some(-32602))));
    let late = r#"{"error":{"message":"x","data":{"code":7},"code": -32000 },"id":1}"#;
    assert_eq!(json(late), Some(Verdict::RpcError(Some(-32000))));
    let odd = r#"{"jsonrpc":"2.0","id":1,"error":{"code":"nope"}}"#;
    assert_eq!(json(odd), Some(Verdict::RpcError(None)));
    assert_eq!(Verdict::code_label(Some(-32602)), "-32602");
    assert_eq!(Verdict::code_label(Some(42)), "other");
    assert_eq!(Verdict::code_label(None), "other");
}

#[test]
fn requests_batches_and_garbage_give_no_verdict() {
    assert_eq!(
        json(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#),
        None
    );
    assert_eq!(json(r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#), None);
    assert_eq!(json("not json"), None);
    assert_eq!(json(r#"{"jsonrpc":"2.0","id":1,"result":{"#), None);
    assert_eq!(json(""), None);
}

#[test]
fn escaped_and_long_keys_are_skipped_safely() {
    let long = format!(
        r#"{{"{}":1,"result":{{"{}":true,"isError":true}}}}"#,
        "k".repeat(100),
        "x".repeat(40)
    );
    assert_eq!(json(&long), Some(Verdict::ToolError));
    let escaped = r#"{"result":{"is\u0045rror":true,"a\"b":{"isError":true}}}"#;
    assert_eq!(json(escaped), Some(Verdict::Result));
}

#[test]
fn an_sse_answer_is_judged_by_its_response_event() {
    let body = b"id: 1\r\nretry: 1000\r\ndata: \r\n\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"isError\":true}}\r\n\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"elicitation/create\",\"params\":{}}\r\n\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[],\"isError\":true}}\r\n\r\n";
    assert_eq!(scan(Shape::Sse, body), Some(Verdict::ToolError));
    let lf = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\n: a comment\ndata: \"error\":{\"code\":-32601}}\n\n";
    assert_eq!(scan(Shape::Sse, lf), Some(Verdict::RpcError(Some(-32601))));
    let cr = b"data:{\"id\":1,\"result\":{}}\r\r";
    assert_eq!(scan(Shape::Sse, cr), Some(Verdict::Result));
    let unended = b"data: {\"id\":1,\"result\":{\"isError\":true}}";
    assert_eq!(scan(Shape::Sse, unended), Some(Verdict::ToolError));
    let only_progress = b"data: {\"method\":\"notifications/progress\"}\n\n";
    assert_eq!(scan(Shape::Sse, only_progress), None);
    let not_data = b"dat: {\"id\":1,\"result\":{}}\n\nevent: {\"id\":1,\"result\":{}}\n\n";
    assert_eq!(scan(Shape::Sse, not_data), None);
}

proptest! {
    /// Whatever a JSON value holds inside the result, the verdict depends only on `isError`
    /// directly in it, and the scan agrees with serde_json on random structure.
    #[test]
    fn the_scan_agrees_with_a_parser(
        is_error in proptest::option::of(any::<bool>()),
        inner in "[a-z\"\\\\{}\\[\\], :0-9]{0,40}",
        code in proptest::option::of(-33000i64..100),
    ) {
        let filler = serde_json::json!({"text": inner, "nested": {"isError": true, "code": 1}});
        let msg = match code {
            Some(c) => serde_json::json!({"jsonrpc":"2.0","id":1,"error":{"data":filler,"code":c}}),
            None => {
                let mut result = serde_json::json!({"content": [filler.clone()], "x": filler});
                if let Some(e) = is_error {
                    result["isError"] = serde_json::json!(e);
                }
                serde_json::json!({"jsonrpc":"2.0","id":1,"result":result})
            }
        };
        let body = serde_json::to_vec_pretty(&msg).unwrap();
        let want = match code {
            Some(c) => Verdict::RpcError(Some(c)),
            None if is_error == Some(true) => Verdict::ToolError,
            None => Verdict::Result,
        };
        prop_assert_eq!(json(std::str::from_utf8(&body).unwrap()), Some(want));
    }

    /// The whole-body look agrees with the scan on results that carry `isError` anywhere, and
    /// on errors, whatever strings around them hold.
    #[test]
    fn the_whole_body_look_agrees_with_the_scan(
        is_error in proptest::option::of(any::<bool>()),
        nested in any::<bool>(),
        inner in "[a-zE\"\\\\{}\\[\\], :0-9]{0,40}",
        error in any::<bool>(),
    ) {
        let filler = serde_json::json!({"text": inner, "nested": {"isError": nested}});
        let msg = if error {
            serde_json::json!({"jsonrpc":"2.0","id":1,"error":{"data":filler,"code":-32000}})
        } else {
            let mut result = serde_json::json!({"content": [filler]});
            if let Some(e) = is_error {
                result["isError"] = serde_json::json!(e);
            }
            serde_json::json!({"jsonrpc":"2.0","id":1,"result":result})
        };
        let body = serde_json::to_vec(&msg).unwrap();
        let mut s = AnswerScan::new(Shape::Json);
        s.push(&body);
        let mut w = AnswerScan::new(Shape::Json);
        w.push_whole(&body);
        prop_assert_eq!(w.verdict(), s.verdict());
    }
}
