//! Nothing leaves the gateway that it did not decide on (issue 48, items 1, 10, 11 and 14): no
//! `Upgrade` goes to a backend and no `101` comes back to a client (a WebSocket handshake
//! relayed as is opened a raw tunnel past every check), a client's `Connection` cannot name
//! away the headers the gateway checked, and no credential the gateway accepts reaches a
//! backend, in any spelling, on any route.

use mcp_gateway_tests::auth::{auth_yaml, sha256_hex, token, RESOURCE};
use mcp_gateway_tests::mock::MockServer;
use mcp_gateway_tests::wire::read_head;
use mcp_gateway_tests::{Gateway, Request};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

fn stateless(addr: SocketAddr, mode: &str) -> String {
    format!(
        "pools:\n  p: {{ backends: [{addr}] }}\nroutes:\n  - {{ path: /mcp, pool: p, mode: {mode} }}\n"
    )
}

/// A backend that switches protocols whenever it is asked to (and, with `always`, when it is
/// not), then echoes whatever arrives: what a WebSocket server behind the gateway would do.
/// Records every head it read.
async fn switching_backend(always: bool) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(stream);
                let Ok(Some(head)) = read_head(&mut reader, true).await else {
                    return;
                };
                let raw = format!("{head:?}").to_ascii_lowercase();
                seen.lock().unwrap().push(raw);
                let asked = head
                    .header("upgrade")
                    .is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
                let stream = reader.get_mut();
                if asked || always {
                    let _ = stream
                        .write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
                        .await;
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = stream.read(&mut buf).await {
                        if n == 0 || stream.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                } else {
                    let body = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(body).await;
                }
            });
        }
    });
    (addr, heads)
}

fn websocket_get() -> Request {
    Request::bare("GET", "/mcp")
        .header("Accept", "text/event-stream")
        .header("Connection", "Upgrade")
        .header("Upgrade", "websocket")
        .header("Sec-WebSocket-Version", "13")
        .header("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
}

#[tokio::test]
async fn a_websocket_handshake_reaches_no_backend_and_no_101_reaches_the_client() {
    for mode in ["stateless", "auto"] {
        let (addr, heads) = switching_backend(false).await;
        let gw = Gateway::start(&stateless(addr, mode)).await;
        let resp = websocket_get().send(gw.addr).await;
        assert_ne!(resp.status(), 101, "{mode}: a tunnel was opened");
        let heads = heads.lock().unwrap().clone();
        for head in &heads {
            assert!(
                !head.contains("upgrade"),
                "{mode}: upstream asked to upgrade: {head}"
            );
        }
        // a POST on a route that does not check headers is cleaned the same way
        let post = Request::tools_call("/mcp", 1, "whoami")
            .header("Connection", "Upgrade")
            .header("Upgrade", "websocket");
        let resp = post.send(gw.addr).await;
        assert_ne!(resp.status(), 101, "{mode}");
    }
}

#[tokio::test]
async fn a_backend_that_switches_protocols_unasked_is_answered_for_with_json_rpc() {
    let (addr, _) = switching_backend(true).await;
    let gw = Gateway::start(&stateless(addr, "stateless")).await;
    let resp = Request::tools_call("/mcp", 7, "whoami").send(gw.addr).await;
    assert_ne!(resp.status(), 101);
    let body = resp.json();
    assert_eq!(body["id"], 7, "{body}");
    assert_eq!(body["error"]["code"], -32013, "{body}");
    assert_eq!(
        body["error"]["data"]["reason"], "switched-protocols",
        "{body}"
    );
}

#[tokio::test]
async fn a_connection_header_cannot_strip_what_the_gateway_checked() {
    let mock = MockServer::start("m").await;
    mock.set_capture(true);
    let gw = Gateway::start(&stateless(mock.addr, "stateless")).await;
    let resp = Request::tools_call("/mcp", 1, "whoami")
        .header(
            "Connection",
            "close, mcp-method, mcp-name, mcp-protocol-version",
        )
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let seen = mock.requests();
    let head = &seen.last().expect("the call went up").head;
    assert_eq!(head.header("mcp-method"), Some("tools/call"));
    assert_eq!(head.header("mcp-name"), Some("whoami"));
    assert!(head.header("connection").is_none());
    // `Connection: close, host` is answered (it was dropped without one)
    let resp = Request::tools_call("/mcp", 2, "whoami")
        .header("Connection", "close, host")
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
}

#[tokio::test]
async fn no_credential_the_gateway_accepts_reaches_a_backend_in_any_spelling_on_any_route() {
    let mock = MockServer::start("m").await;
    mock.set_capture(true);
    let dir = mcp_gateway_tests::harness::unique_temp_path("mcpgw-keys");
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("api-keys.txt");
    let digest = sha256_hex(b"k-ci-123");
    std::fs::write(&keys, format!("{digest} ci-bot tools\n")).unwrap();
    let yaml = format!(
        "{}pools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, pool: p }}\n  - {{ path: /open, upstream-path: /mcp, pool: p, auth: none }}\n",
        auth_yaml(RESOURCE).replace(
            "  jwt:",
            &format!("  api-keys: {{ file: {} }}\n  jwt:", keys.display())
        ),
        mock.addr
    );
    let gw = Gateway::start(&yaml).await;
    let bearer = format!("Bearer {}", token("alice", "tools"));
    for (path, key_spelling) in [
        ("/mcp", "X_Api_Key"),
        ("/open", "X-Api-Key"),
        ("/open", "x_api_key"),
    ] {
        let before = mock.requests().len();
        let resp = Request::tools_call(path, 1, "whoami")
            .header("Authorization", &bearer)
            .header(key_spelling, "k-ci-123")
            .send(gw.addr)
            .await;
        assert_eq!(resp.status(), 200, "{path}: {}", resp.text());
        let seen = mock.requests();
        assert_eq!(seen.len(), before + 1, "{path}");
        let head = format!("{:?}", seen[before].head).to_ascii_lowercase();
        assert!(!head.contains("authorization"), "{path}: {head}");
        assert!(
            !head.contains("k-ci-123"),
            "{path} ({key_spelling}): {head}"
        );
    }
}

/// What a recording backend saw: every byte it was sent, and how many connections it accepted
/// and saw end (a connection ends once the gateway closed it: whatever the gateway was to send
/// on it has arrived).
#[derive(Clone, Default)]
struct Recorded {
    bytes: Arc<Mutex<Vec<u8>>>,
    accepted: Arc<AtomicUsize>,
    ended: Arc<AtomicUsize>,
}

impl Recorded {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes.lock().unwrap()).into_owned()
    }

    /// Waits (within 5 s) until at least one connection was accepted and every accepted one
    /// has ended: the gateway is done with the backend, and any byte it sent was recorded.
    async fn settled(&self) {
        mcp_gateway_tests::eventually(
            "every connection to the backend ended",
            std::time::Duration::from_secs(5),
            || {
                let accepted = self.accepted.load(Ordering::SeqCst);
                accepted > 0 && self.ended.load(Ordering::SeqCst) == accepted
            },
        )
        .await;
    }
}

/// A backend that records every byte it is sent, and answers each request with a JSON-RPC
/// result.
async fn recording_backend() -> (SocketAddr, Recorded) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let recorded = Recorded::default();
    let seen = recorded.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let seen = seen.clone();
            seen.accepted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut reader = BufReader::new(stream);
                serve_recorded(&mut reader, &seen.bytes).await;
                seen.ended.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    (addr, recorded)
}

/// Serves one connection of the recording backend until it ends.
async fn serve_recorded(reader: &mut BufReader<tokio::net::TcpStream>, seen: &Mutex<Vec<u8>>) {
    while let Ok(Some(head)) = read_head(reader, true).await {
        seen.lock()
            .unwrap()
            .extend_from_slice(format!("{head:?}").as_bytes());
        let Ok(body) = mcp_gateway_tests::wire::read_body(reader, &head, true).await else {
            return;
        };
        seen.lock().unwrap().extend_from_slice(&body);
        let answer = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            answer.len()
        );
        let stream = reader.get_mut();
        if stream.write_all(head.as_bytes()).await.is_err()
            || stream.write_all(answer).await.is_err()
        {
            return;
        }
    }
}

/// Issue 48, item 9: on the fast path the body is checked against `Mcp-Name` as it streams,
/// after a backend was picked and the head written. The head used to go out when the refused
/// request's upstream connection was dropped (pingora flushes a stream's write buffer when it
/// is dropped): the backend saw a request head it never got the body of. A sixth carried
/// pingora-core change drops a head whose body never came whole with its stream, unsent.
#[tokio::test]
async fn a_body_refused_on_the_fast_path_sends_nothing_to_the_backend() {
    let (addr, seen) = recording_backend().await;
    let gw = Gateway::start(&format!(
        "pools:\n  p: {{ backends: [{addr}], era: modern }}\nroutes:\n  - {{ path: /mcp, pool: p, mode: stateless }}\n"
    ))
    .await;
    let mut lying = Request::tools_call("/mcp", 3, "whoami");
    for (name, value) in lying.headers.iter_mut() {
        if name.eq_ignore_ascii_case("mcp-name") {
            *value = "other".into();
        }
    }
    let resp = lying.send(gw.addr).await;
    assert_eq!(resp.status(), 400, "{}", resp.text());
    assert_eq!(resp.json()["error"]["code"], -32020);
    // the gateway's connection for the refused request has ended: what it sent is recorded
    seen.settled().await;
    assert!(seen.text().is_empty(), "the backend saw: {}", seen.text());
    // and an honest call goes through whole
    let resp = Request::tools_call("/mcp", 4, "whoami").send(gw.addr).await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    assert!(seen.text().contains("\"whoami\""));
}
