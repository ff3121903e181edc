//! Issue 26: the gateway-wide bound on buffered resume bytes
//! (`sessions.resume.max-buffered-bytes`). Clients that open answers on a real FastMCP 1.30.0
//! server and leave after the first event hold more than the bound together: the buffers of
//! the streams unread longest are dropped (counted), the gauge stays within the bound, a
//! client resuming a dropped stream gets the documented JSON-RPC error (410 -32030
//! `evicted`), and a stream a client is reading all along loses nothing.

use mcp_gateway_tests::{assert_eventually, open_session, Gateway, PythonPeer, Request};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const V: &str = "2025-11-25";
const CAP: f64 = 8192.0;

fn progress_call(sid: &str, id: u32, steps: u32, delay_ms: u32) -> Request {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"slow_progress","arguments":{{"steps":{steps},"delay_ms":{delay_ms}}},"_meta":{{"progressToken":"p{id}"}}}}}}"#
    );
    Request::post("/mcp", body)
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", V)
}

fn resume(sid: &str, last_event_id: &str) -> Request {
    Request::bare("GET", "/mcp")
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", V)
        .header("Accept", "text/event-stream")
        .header("Last-Event-ID", last_event_id)
}

/// The `id:` of the first event of an SSE body.
fn first_id(body: &str) -> String {
    body.lines()
        .find_map(|l| l.strip_prefix("id: "))
        .expect("an event id")
        .to_owned()
}

#[tokio::test]
async fn abandoned_streams_past_the_bound_are_dropped_oldest_first_and_a_live_one_is_whole() {
    let server = PythonPeer::legacy_v1("pod-0", 0).await;
    let yaml = format!(
        "sessions:\n  resume: {{ max-bytes: 2048, max-buffered-bytes: {CAP}, window-s: 60 }}\npools:\n  legacy: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: legacy }}\n",
        server.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let sid = open_session(gw.addr).await;

    // a client that reads its answer all along (80 notifications, 100 ms apart: it outlasts the
    // abandoned ones)
    let received = Arc::new(AtomicUsize::new(0));
    let live = {
        let (addr, sid, received) = (gw.addr, sid.clone(), received.clone());
        tokio::spawn(async move {
            let (_, chunks) = progress_call(&sid, 1, 80, 100)
                .send_timed_counting(addr, &received)
                .await;
            let body: Vec<u8> = chunks.into_iter().flat_map(|(_, c)| c).collect();
            String::from_utf8(body).unwrap()
        })
    };
    assert_eventually!(
        Duration::from_secs(10),
        received.load(Ordering::Relaxed) > 0,
        "the live answer is streaming"
    );

    // 12 clients that read the priming event and leave; each answer (8 notifications and
    // the result, about 1.5 KB) is read to its end into the buffer: 18 KB against 8 KB
    let mut abandoned = Vec::new();
    for n in 0..12 {
        let first = progress_call(&sid, 100 + n, 8, 5)
            .read_first_event(gw.addr)
            .await;
        abandoned.push(first_id(&first));
        // the answer ends upstream before the next one starts: only the live one is left in
        // flight on the backend
        assert_eventually!(
            Duration::from_secs(10),
            gw.metric("mcpgw_backend_inflight_requests").await <= 1.0,
            "abandoned answer {n} ended upstream"
        );
    }
    assert_eventually!(
        Duration::from_secs(10),
        gw.metric("mcpgw_resume_evictions_total").await >= 1.0,
        "unread buffers were dropped"
    );
    // within the bound at every look while the live answer goes on
    for _ in 0..5 {
        let bytes = gw.metric("mcpgw_resume_buffered_bytes").await;
        assert!(bytes <= CAP, "{bytes} buffered over a bound of {CAP}");
        assert!(bytes > 0.0, "the newest streams are kept");
        // looks spread over the live answer's run: the bound must hold at each
        tokio::time::sleep(Duration::from_millis(150)).await;
    }

    assert!(!live.is_finished(), "the live answer went on all along");

    // the oldest abandoned answer was dropped: its client's resume is the documented error
    let refused = resume(&sid, &abandoned[0]).send(gw.addr).await;
    assert_eq!(refused.status(), 410, "{}", refused.text());
    let v: Value = refused.json();
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    assert_eq!(v["error"]["code"], -32030, "{v}");
    assert_eq!(v["error"]["data"]["reason"], "evicted", "{v}");
    assert_eq!(v["error"]["data"]["lastEventId"], abandoned[0], "{v}");
    assert!(v["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
    // the newest one is kept whole: its client gets the rest, the result included
    let kept = resume(&sid, abandoned.last().unwrap()).send(gw.addr).await;
    assert_eq!(kept.status(), 200, "{}", kept.text());
    assert_eq!(kept.text().matches("notifications/progress").count(), 8);
    assert!(kept.text().contains("\"result\""), "{}", kept.text());

    // the live answer lost nothing: 80 notifications in order, then its result
    let body = live.await.unwrap();
    assert_eq!(body.matches("notifications/progress").count(), 80, "{body}");
    let ids: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .collect();
    let token = ids[0].split('-').next().unwrap();
    for (n, id) in ids.iter().enumerate() {
        assert_eq!(*id, format!("{token}-{n}"), "no event missing: {ids:?}");
    }
    assert!(body.contains("\"result\""), "{body}");
}
