//! What a change is, and whose results it drops: only a top-level notification (a `method`,
//! no `id`) read as JSON, so a tool that echoes a method name drops nothing and an escaped
//! name is heard; a change drops the results of the pool that announced it, never another's;
//! a stream in gzip is read decoded.

use super::changes::listen_saying;
use super::{request, request_at, Backend, PUBLIC};
use mcp_gateway_tests::Gateway;
use serde_json::json;
use std::io::Write;
use std::time::Duration;

/// A `tools/call` answered with an event stream whose result is the text of a change
/// notification, quotes and all.
const ECHO: &str = "SSE:event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"notifications/tools/list_changed\"}],\"echo\":{\"method\":\"notifications/tools/list_changed\"}}}\n\n";

async fn cache_says(gw: &Gateway, path: &str, id: &str) -> Option<String> {
    let r = request_at(path, id, "tools/list", json!({}), None)
        .send(gw.addr)
        .await;
    r.head.header("mcp-gateway-cache").map(str::to_owned)
}

/// A tool's result that says `notifications/tools/list_changed` (a text, a nested member) is
/// the tool's, not the server's: the kept list stays, on the fast path and on the buffered
/// relay.
#[tokio::test]
async fn a_tool_result_that_echoes_a_change_notification_drops_nothing() {
    for route_extra in ["", ", limits: { timeout-ms: 5000 }"] {
        let backend = Backend::start(
            &[("tools/list", PUBLIC), ("tools/call", ECHO)],
            Duration::ZERO,
        )
        .await;
        let gw = Gateway::start(&super::config(&backend, route_extra)).await;
        assert_eq!(cache_says(&gw, "/mcp", "1").await.as_deref(), Some("miss"));
        let call = request(
            "2",
            "tools/call",
            json!({"name": "echo", "arguments": {}}),
            None,
        )
        .send(gw.addr)
        .await;
        assert!(call.text().contains("list_changed"), "{}", call.text());
        assert_eq!(
            cache_says(&gw, "/mcp", "3").await.as_deref(),
            Some("hit"),
            "route{route_extra}"
        );
        assert_eq!(backend.count("tools/list"), 1);
    }
}

/// A change whose method is written with JSON escapes is the same change.
#[tokio::test]
async fn a_change_written_with_json_escapes_is_heard() {
    for escaped in [
        r"notifications\/tools\/list_changed",
        r"notifications/tools/list\u005fchanged",
    ] {
        let listen = listen_saying(escaped);
        let backend = Backend::start(
            &[("tools/list", PUBLIC), ("subscriptions/listen", &listen)],
            Duration::ZERO,
        )
        .await;
        let gw = Gateway::start(&super::config(&backend, "")).await;
        assert_eq!(cache_says(&gw, "/mcp", "1").await.as_deref(), Some("miss"));
        assert_eq!(cache_says(&gw, "/mcp", "2").await.as_deref(), Some("hit"));
        let heard = request(
            "3",
            "subscriptions/listen",
            json!({"notifications": {}}),
            None,
        )
        .send(gw.addr)
        .await;
        assert!(heard.text().contains("list"), "{}", heard.text());
        assert_eq!(
            cache_says(&gw, "/mcp", "4").await.as_deref(),
            Some("miss"),
            "{escaped}"
        );
    }
}

/// Two pools, each behind its route: a change pool `a`'s backend announces drops `a`'s kept
/// list and leaves `b`'s.
#[tokio::test]
async fn a_change_drops_the_results_of_the_pool_that_announced_it_and_no_other() {
    let listen = listen_saying("notifications/tools/list_changed");
    let a = Backend::start(
        &[("tools/list", PUBLIC), ("subscriptions/listen", &listen)],
        Duration::ZERO,
    )
    .await;
    let b = Backend::start(&[("tools/list", PUBLIC)], Duration::ZERO).await;
    let yaml = format!(
        "pools:\n  a: {{ backends: [{}] }}\n  b: {{ backends: [{}] }}\nroutes:\n  - {{ path: /a, pool: a }}\n  - {{ path: /b, pool: b }}\n",
        a.addr, b.addr
    );
    let gw = Gateway::start(&yaml).await;
    for path in ["/a", "/b"] {
        assert_eq!(cache_says(&gw, path, "1").await.as_deref(), Some("miss"));
    }
    let heard = super::request_at(
        "/a",
        "2",
        "subscriptions/listen",
        json!({"notifications": {}}),
        None,
    )
    .send(gw.addr)
    .await;
    assert!(heard.text().contains("list_changed"), "{}", heard.text());
    assert_eq!(cache_says(&gw, "/a", "3").await.as_deref(), Some("miss"));
    assert_eq!(
        cache_says(&gw, "/b", "4").await.as_deref(),
        Some("hit"),
        "pool b announced nothing"
    );
    assert_eq!((a.count("tools/list"), b.count("tools/list")), (2, 1));
}

/// A backend whose `subscriptions/listen` stream is gzip-coded (`Content-Encoding: gzip`) and
/// says a change: the gateway reads it decoded and drops the pool's results; the client gets
/// the bytes as sent.
#[tokio::test]
async fn a_change_on_a_gzip_coded_event_stream_is_heard() {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let events = listen_saying("notifications/tools/list_changed");
    gz.write_all(events.strip_prefix("SSE:").unwrap().as_bytes())
        .unwrap();
    let coded = gz.finish().unwrap();
    let backend = coded_backend(coded).await;
    let yaml = format!(
        "pools:\n  p: {{ backends: [{backend}] }}\nroutes:\n  - {{ path: /mcp, pool: p }}\n"
    );
    let gw = Gateway::start(&yaml).await;
    assert_eq!(cache_says(&gw, "/mcp", "1").await.as_deref(), Some("miss"));
    assert_eq!(cache_says(&gw, "/mcp", "2").await.as_deref(), Some("hit"));
    let heard = request(
        "3",
        "subscriptions/listen",
        json!({"notifications": {}}),
        None,
    )
    .header("Accept-Encoding", "gzip")
    .send(gw.addr)
    .await;
    assert_eq!(heard.head.header("content-encoding"), Some("gzip"));
    assert_eq!(cache_says(&gw, "/mcp", "4").await.as_deref(), Some("miss"));
}

/// A backend answering `tools/list` with [`PUBLIC`] and every other request with `coded`, a
/// gzip-coded event stream.
async fn coded_backend(coded: Vec<u8>) -> std::net::SocketAddr {
    use mcp_gateway_tests::wire::{read_body, read_head};
    use tokio::io::{AsyncWriteExt, BufReader};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let coded = coded.clone();
            tokio::spawn(async move {
                let (r, mut w) = stream.into_split();
                let mut r = BufReader::new(r);
                while let Ok(Some(head)) = read_head(&mut r, true).await {
                    let Ok(body) = read_body(&mut r, &head, true).await else {
                        return;
                    };
                    let msg: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                    let mut out = if msg["method"] == "tools/list" {
                        let answer = format!(
                            r#"{{"jsonrpc":"2.0","id":{},"result":{PUBLIC}}}"#,
                            msg["id"]
                        );
                        format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}", answer.len()).into_bytes()
                    } else {
                        let mut out = format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\ncontent-length: {}\r\n\r\n", coded.len()).into_bytes();
                        out.extend_from_slice(&coded);
                        out
                    };
                    if w.write_all(&out).await.is_err() {
                        return;
                    }
                    out.clear();
                }
            });
        }
    });
    addr
}
