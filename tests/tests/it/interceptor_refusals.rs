//! What a route's interceptors (and a pool's enforced pins) refuse rather than pass on
//! unchecked, against canned backend answers: an answer the gate cannot read (a key given
//! twice, an array, a media type it does not read, another request's answer), a resumed answer
//! on a route with a chain, a list the pins cannot read; and a success other than 200 checked
//! like a 200.

use crate::interceptor_paths::{modern_call, rules, servers};
use mcp_gateway_tests::client::META;
use mcp_gateway_tests::interceptor_mock::MockInterceptor;
use mcp_gateway_tests::{open_session, Gateway, MockServer, Request};

/// A backend that answers every POST with `answers` in turn (the whole HTTP answer, bytes as
/// given), the last one again once they run out.
async fn canned(answers: Vec<String>) -> std::net::SocketAddr {
    use mcp_gateway_tests::wire::{read_body, read_head};
    use tokio::io::{AsyncWriteExt, BufReader};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let answers = std::sync::Arc::new(std::sync::Mutex::new(
        answers
            .into_iter()
            .collect::<std::collections::VecDeque<_>>(),
    ));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let answers = answers.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut read = BufReader::new(read);
                while let Ok(Some(head)) = read_head(&mut read, true).await {
                    let _ = read_body(&mut read, &head, true).await;
                    let answer = {
                        let mut a = answers.lock().expect("answers");
                        match a.len() {
                            0 => String::new(),
                            1 => a[0].clone(),
                            _ => a.pop_front().unwrap_or_default(),
                        }
                    };
                    if write.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// An HTTP answer of `status` with `content_type` and `body`.
fn answer(status: u16, content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status} OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn an_answer_the_gate_cannot_read_is_refused_never_passed_on() {
    let guard = MockInterceptor::start(rules()).await;
    let result = r#"{"content":[{"type":"text","text":"pay-4111-1111"}]}"#;
    let cases = [
        // a key given twice: clients take the last, the gate cannot tell which one it checked
        answer(
            200,
            "application/json",
            &format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{}},"result":{result}}}"#),
        ),
        // an array: a client takes its message
        answer(
            200,
            "application/json",
            &format!(r#"[{{"jsonrpc":"2.0","id":1,"result":{result}}}]"#),
        ),
        // a media type the gate does not read, which a lenient client parses anyway
        answer(
            200,
            "text/plain",
            &format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#),
        ),
        // the answer to another request
        answer(
            200,
            "application/json",
            &format!(r#"{{"jsonrpc":"2.0","id":99,"result":{result}}}"#),
        ),
    ];
    for (k, case) in cases.into_iter().enumerate() {
        let backend = canned(vec![case]).await;
        let gw = Gateway::start(&format!(
            "{}pools: {{ p: {{ backends: [{backend}] }} }}\nroutes:\n  - {{ path: /mcp, pool: p, mode: stateless, interceptors: [guard] }}\n",
            servers(&guard)
        ))
        .await;
        let resp = modern_call("/mcp", 1, "whoami", "{}").send(gw.addr).await;
        let v = resp.json();
        assert_eq!(v["error"]["code"], -32055, "case {k}: {v}");
        assert_eq!(v["id"], 1, "case {k}: {v}");
        assert!(
            !resp.text().contains("4111-1111"),
            "case {k}: {}",
            resp.text()
        );
    }
    // any success is read: a 203 is checked like a 200
    let backend = canned(vec![answer(
        203,
        "Application/JSON",
        &format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#),
    )])
    .await;
    let gw = Gateway::start(&format!(
        "{}pools: {{ p: {{ backends: [{backend}] }} }}\nroutes:\n  - {{ path: /mcp, pool: p, mode: stateless, interceptors: [guard] }}\n",
        servers(&guard)
    ))
    .await;
    let resp = modern_call("/mcp", 1, "whoami", "{}").send(gw.addr).await;
    assert_eq!(resp.tool_text(), "pay-[card]", "{}", resp.text());
}

#[tokio::test]
async fn a_resumed_answer_on_a_route_with_a_chain_is_refused_not_replayed_unchecked() {
    const V: &str = "2025-11-25";
    let guard = MockInterceptor::start(rules()).await;
    let backend = MockServer::legacy("pay-4111-1111", 0, V).await;
    let gw = Gateway::start(&format!(
        "{}pools: {{ legacy: {{ backends: [{}] }} }}\nroutes:\n  - {{ path: /mcp, pool: legacy, mode: stateful, interceptors: [guard] }}\n",
        servers(&guard),
        backend.addr
    ))
    .await;
    let sid = open_session(gw.addr).await;
    let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sse_progress","arguments":{"steps":3,"gap_ms":200}}}"#;
    let first = Request::post("/mcp", body)
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", V)
        .read_first_event(gw.addr)
        .await;
    let id = first
        .lines()
        .find_map(|l| l.strip_prefix("id:").map(|v| v.trim().to_owned()))
        .unwrap_or_else(|| panic!("the answer's events carry ids: {first}"));
    let resumed = Request::session_stream(&sid)
        .header("MCP-Protocol-Version", V)
        .header("Last-Event-ID", &id)
        .send(gw.addr)
        .await;
    let text = resumed.text();
    assert!(
        !text.contains("4111-1111"),
        "the result never passes unchecked: {text}"
    );
    assert!(
        text.contains("-32055"),
        "the resumed answer is refused: {text}"
    );
}

#[tokio::test]
async fn a_list_the_pins_cannot_read_is_refused_in_enforce_mode() {
    // a lone surrogate: serde refuses it, a JavaScript client reads it, and it may carry a
    // definition no one approved
    let list = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"read_file","description":"\udc00 new instructions","inputSchema":{"type":"object"}}]}}"#;
    let backend = canned(vec![answer(200, "application/json", list)]).await;
    let gw = Gateway::start(&format!(
        "pools: {{ p: {{ backends: [{backend}], tool-pinning: enforce }} }}\nroutes:\n  - {{ path: /mcp, pool: p, mode: stateless }}\n"
    ))
    .await;
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#);
    let resp = Request::post("/mcp", body)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/list")
        .send(gw.addr)
        .await;
    let text = resp.text();
    assert!(!text.contains("new instructions"), "{text}");
    assert!(text.contains("-32055"), "{text}");
}
