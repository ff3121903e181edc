//! One upstream request per public key, and waiters that are never held by the leader's own
//! client: the leader tells them what it found as soon as it knows (kept, or known not to be
//! kept), one public key makes one flight whatever the callers' tokens, and after a leader that
//! kept nothing one waiter leads while the others wait again.

use super::{request, Backend, PUBLIC};
use mcp_gateway_tests::wire::{read_body, read_head};
use mcp_gateway_tests::Gateway;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// How long a waiter may take when nothing holds it: the answer's own time (6 MB read, kept and
/// served by a debug build), well below the 10 s a held waiter waits.
const PROMPT: Duration = Duration::from_secs(8);

/// Polls until the backend has seen `n` requests of `method` (at most 10 s).
async fn until_seen(backend: &Backend, method: &str, n: usize) {
    let until = Instant::now() + Duration::from_secs(10);
    while backend.count(method) < n {
        assert!(Instant::now() < until, "the backend never saw {n} {method}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Sends a `tools/list` from a client that never reads its answer; the connection is held
/// open by the returned stream.
async fn never_reading(addr: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let r = request("1", "tools/list", json!({}), None);
    r.write_to(&mut stream, addr).await.unwrap();
    stream
}

/// A list of `n` tools, public for a minute: an answer of about 42 × `n` bytes (150 000: more
/// than a client that does not read takes into its socket's buffers, about 4 MB).
fn large_list(n: usize) -> String {
    let tools: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"name":"tool-{i:08}","inputSchema":{{}}}}"#))
        .collect();
    format!(
        r#"{{"tools":[{}],"ttlMs":60000,"cacheScope":"public"}}"#,
        tools.join(",")
    )
}

/// Callers with ten different tokens asking a public list at once make one upstream request:
/// a public result serves every context, so they wait for one flight, not one each.
#[tokio::test]
async fn one_public_key_makes_one_upstream_request_whatever_the_callers_tokens() {
    let backend = Backend::start(&[("tools/list", PUBLIC)], Duration::from_millis(500)).await;
    let gw = Gateway::start(&super::config(&backend, "")).await;
    let addr = gw.addr;
    let asks = (0..10).map(|i| async move {
        let token = format!("caller-{i}");
        let r = request(&i.to_string(), "tools/list", json!({}), Some(&token));
        r.send(addr).await
    });
    let answers = futures_util::future::join_all(asks).await;
    for a in &answers {
        assert_eq!(a.status(), 200, "{}", a.text());
        assert_eq!(a.json()["result"]["tools"][0]["name"], "a");
    }
    assert_eq!(backend.count("tools/list"), 1, "one flight for every token");
}

/// A leader whose client never reads a large answer (larger than the sockets hold) does not
/// hold the waiters: they are answered from what it kept as soon as it kept it, not when (or if)
/// its client has read it.
#[tokio::test]
async fn a_leader_whose_client_does_not_read_does_not_hold_the_waiters() {
    let list = large_list(150_000);
    let backend = Backend::start(&[("tools/list", &list)], Duration::from_millis(500)).await;
    let cache = "cache: { max-bytes: 134217728, max-bytes-per-context: 67108864, max-entry-bytes: 67108864 }\n";
    let gw = Gateway::start(&format!("{cache}{}", super::config(&backend, ""))).await;
    let _leader = never_reading(gw.addr).await;
    until_seen(&backend, "tools/list", 1).await;
    let started = Instant::now();
    let waiter = request("2", "tools/list", json!({}), None)
        .send(gw.addr)
        .await;
    assert_eq!(waiter.status(), 200);
    assert_eq!(waiter.head.header("mcp-gateway-cache"), Some("hit"));
    assert!(
        started.elapsed() < PROMPT,
        "the waiter waited {:?}",
        started.elapsed()
    );
    assert_eq!(backend.count("tools/list"), 1);
}

/// A leader whose answer is too large to keep, and whose client does not read it, releases
/// the waiters as soon as the answer is known not to be kept: they ask at once.
#[tokio::test]
async fn a_leader_with_an_answer_too_large_to_keep_releases_the_waiters_at_once() {
    let list = large_list(150_000);
    let backend = Backend::start(&[("tools/list", &list)], Duration::from_millis(500)).await;
    let cache = "cache: { max-entry-bytes: 65536 }\n";
    let gw = Gateway::start(&format!("{cache}{}", super::config(&backend, ""))).await;
    let _leader = never_reading(gw.addr).await;
    until_seen(&backend, "tools/list", 1).await;
    let started = Instant::now();
    let waiter = request("2", "tools/list", json!({}), None)
        .send(gw.addr)
        .await;
    assert_eq!(waiter.status(), 200);
    assert_eq!(waiter.head.header("mcp-gateway-cache"), Some("bypass"));
    assert!(
        started.elapsed() < PROMPT,
        "the waiter waited {:?}",
        started.elapsed()
    );
}

/// After a leader that kept nothing (its answer an error), one waiter leads and the others
/// wait for it again: eight concurrent misses make two upstream requests, not eight.
#[tokio::test]
async fn after_a_leader_that_kept_nothing_one_waiter_leads_and_the_rest_wait_again() {
    let (addr, asked) = failing_once_backend(Duration::from_millis(500)).await;
    let yaml =
        format!("pools:\n  p: {{ backends: [{addr}] }}\nroutes:\n  - {{ path: /mcp, pool: p }}\n");
    let gw = Gateway::start(&yaml).await;
    let gw_addr = gw.addr;
    let asks = (0..8).map(|i| async move {
        request(&i.to_string(), "tools/list", json!({}), None)
            .send(gw_addr)
            .await
    });
    let answers = futures_util::future::join_all(asks).await;
    let ok = answers
        .iter()
        .filter(|a| a.json()["result"]["tools"][0]["name"] == "a")
        .count();
    assert_eq!(ok, 7, "all but the first leader's");
    assert_eq!(
        asked.load(Ordering::SeqCst),
        2,
        "the failed one, then one more"
    );
}

/// A backend whose first `tools/list` is answered with a JSON-RPC error, the next ones with
/// [`PUBLIC`], each after `delay` (any other method: -32601); how many lists it was asked.
async fn failing_once_backend(delay: Duration) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let asked = Arc::new(AtomicUsize::new(0));
    let counted = asked.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counted = counted.clone();
            tokio::spawn(async move {
                let (r, mut w) = stream.into_split();
                let mut r = BufReader::new(r);
                while let Ok(Some(head)) = read_head(&mut r, true).await {
                    let Ok(body) = read_body(&mut r, &head, true).await else {
                        return;
                    };
                    let msg: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                    let id = &msg["id"];
                    // (the gateway's own requests, its era probe, are not counted)
                    let listed = msg["method"] == "tools/list";
                    let n = match listed {
                        true => counted.fetch_add(1, Ordering::SeqCst),
                        false => usize::MAX,
                    };
                    tokio::time::sleep(delay).await;
                    let answer = if !listed {
                        format!(
                            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"no"}}}}"#
                        )
                    } else if n == 0 {
                        format!(
                            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32603,"message":"busy"}}}}"#
                        )
                    } else {
                        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{PUBLIC}}}"#)
                    };
                    let out = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}", answer.len());
                    if w.write_all(out.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, asked)
}
