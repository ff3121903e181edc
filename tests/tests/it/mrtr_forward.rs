//! Issue 23, the forward path of test 3 with Rust stand-ins (fast): a retry of an
//! `input_required` call whose sealed `requestState` names another replica as the holder
//! (`bridge.advertise-url`) is forwarded there as it came (the client's credential back on it,
//! the `mcpgw-forwarded` hop header added) and the holder's answer streamed back; a holder that
//! cannot be reached is -32004 `holder-unreachable` (HTTP 503, `Retry-After`); one that drops
//! the connection after taking the retry is -32013; a retry already forwarded is never
//! forwarded again (-32602 `unknown-call`). The states are sealed here by the gateway's own
//! sealer (`mcp_wire::seal`, purpose `RequestState`, of the shared key file), standing in for
//! the replica that parked the call. Real peers: `real_peers_mrtr_replicas.rs`.

use mcp_gateway_tests::auth::sha256_hex;
use mcp_gateway_tests::harness::unique_temp_path;
use mcp_gateway_tests::{Gateway, Request};
use mcp_wire::seal::{Purpose, Sealer};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const KEY: [u8; 32] = [7; 32];

/// A replica with the shared key and its own `advertise-url`; with API keys when `auth`.
struct Rig {
    gw: Gateway,
    dir: std::path::PathBuf,
}

impl Rig {
    async fn start(auth: bool) -> Rig {
        let dir = unique_temp_path("mcpgw-mrtr-forward");
        std::fs::create_dir_all(&dir).unwrap();
        let key_file = dir.join("state.key");
        let hex: String = KEY.iter().map(|b| format!("{b:02x}")).collect();
        std::fs::write(&key_file, hex).unwrap();
        let mut yaml = format!(
            "bridge: {{ request-state-key-file: {}, advertise-url: \"http://{{{{listen}}}}\" }}\n",
            key_file.display()
        );
        if auth {
            let keys = dir.join("api-keys.txt");
            let line = format!("{} one tools\n", sha256_hex(b"k-one"));
            std::fs::write(&keys, line).unwrap();
            yaml += &mcp_gateway_tests::auth::auth_yaml("http://127.0.0.1/mcp").replace(
                "  jwt:",
                &format!("  api-keys: {{ file: {} }}\n  jwt:", keys.display()),
            );
        }
        // the backend is never reached: a retry is matched before any backend is picked
        yaml += "pools:\n  p: { era: legacy, backends: [127.0.0.1:9] }\nroutes: [ { path: /mcp, pool: p, mode: stateless } ]\n";
        Rig {
            gw: Gateway::start(&yaml).await,
            dir,
        }
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

/// A `requestState` for `tools/call ask` (no arguments) parked at `holder`, as a replica with
/// the shared key seals it.
fn sealed(principal: &str, holder: &str) -> String {
    let canon = json!(["tools/call", {"arguments": {}, "name": "ask"}]).to_string();
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let state = json!({"p": principal, "e": now_ms + 60_000, "d": sha256_hex(canon.as_bytes()),
                       "c": "parked-elsewhere", "k": "input", "h": holder});
    Sealer::new(KEY).seal(Purpose::RequestState, &[], state.to_string().as_bytes())
}

fn retry(id: u64, state: &str) -> Request {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "ask", "arguments": {},
        "inputResponses": {"input": {"action": "accept", "content": {"name": "ada"}}},
        "requestState": state,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        },
    }});
    Request::post("/mcp", body.to_string())
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "ask")
}

/// A port nothing listens on.
async fn closed_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    addr
}

/// A stand-in holder: takes one request, hands its head and body over, then answers `answer`
/// (or closes without a word when it is empty).
async fn holder(answer: Vec<u8>) -> (SocketAddr, tokio::sync::oneshot::Receiver<String>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = s.read(&mut chunk).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let len = text[..end]
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if buf.len() >= end + 4 + len {
                    break;
                }
            }
        }
        let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
        if !answer.is_empty() {
            let _ = s.write_all(&answer).await;
        }
        let _ = s.shutdown().await;
    });
    (addr, rx)
}

#[tokio::test]
async fn a_retry_whose_holder_cannot_be_reached_gets_32004_with_retry_after_and_is_counted() {
    let rig = Rig::start(false).await;
    let away = closed_port().await;
    let resp = retry(7, &sealed("", &format!("http://{away}")))
        .send(rig.gw.addr)
        .await;
    assert_eq!(resp.status(), 503, "{}", resp.text());
    assert_eq!(resp.head.header("retry-after"), Some("1"));
    let v = resp.json();
    assert_eq!(v["id"], 7);
    assert_eq!(v["error"]["code"], -32004, "{v}");
    assert_eq!(v["error"]["data"]["reason"], "holder-unreachable", "{v}");
    assert_eq!(v["error"]["data"]["kind"], "holder-unreachable", "{v}");
    assert!(
        !v.to_string().contains(&away.to_string()),
        "the holder's address is not shown to the client: {v}"
    );
    let failed = "mcpgw_mrtr_events_total{event=\"forward-failed\",pool=\"p\"}";
    assert_eq!(rig.gw.metric(failed).await, 1.0);
}

#[tokio::test]
async fn a_retry_forwarded_once_already_or_naming_this_replica_is_not_forwarded_again() {
    let rig = Rig::start(false).await;
    let (addr, mut seen) = holder(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n".to_vec()).await;
    let state = sealed("", &format!("http://{addr}"));
    let resp = retry(1, &state)
        .header("mcpgw-forwarded", "1")
        .send(rig.gw.addr)
        .await;
    assert_eq!(resp.status(), 400, "{}", resp.text());
    assert_eq!(resp.json()["error"]["data"]["reason"], "unknown-call");
    let own = sealed("", &format!("http://{}", rig.gw.addr));
    let resp = retry(2, &own).send(rig.gw.addr).await;
    assert_eq!(resp.json()["error"]["data"]["reason"], "unknown-call");
    // both were answered by this replica (unknown-call): a forward is decided, and sent,
    // before the answer, so nothing can reach the holder after it
    assert!(seen.try_recv().is_err(), "nothing reached the holder");
    let forwarded = "mcpgw_mrtr_events_total{event=\"forwarded\",pool=\"p\"}";
    assert_eq!(rig.gw.metric(forwarded).await, 0.0);
}

#[tokio::test]
async fn a_forwarded_retry_carries_the_clients_credential_and_the_holders_answer_streams_back() {
    let rig = Rig::start(true).await;
    // an SSE answer in two chunks that split the event
    let event = "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[],\"resultType\":\"x\"}}\r\n\r\n";
    let (a, b) = event.split_at(30);
    let answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    let (addr, seen) = holder(answer.into_bytes()).await;
    let state = sealed("key:one", &format!("http://{addr}"));
    let request = retry(3, &state).header("X-Api-Key", "k-one");
    let resp = request.send(rig.gw.addr).await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    assert_eq!(
        resp.json(),
        json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [], "resultType": "x"}}),
        "the holder's answer, as it sent it"
    );
    let got = tokio::time::timeout(Duration::from_secs(5), seen)
        .await
        .unwrap()
        .unwrap();
    let (head, body) = got.split_once("\r\n\r\n").unwrap();
    let head = head.to_ascii_lowercase();
    assert!(head.starts_with("post /mcp "), "{head}");
    assert!(
        head.contains("\r\nx-api-key: k-one"),
        "the credential: {head}"
    );
    assert!(
        head.contains("\r\nmcpgw-forwarded: 1"),
        "the hop marker: {head}"
    );
    assert!(head.contains("\r\nmcp-name: ask"), "{head}");
    let sent: Value = serde_json::from_str(body).unwrap();
    assert_eq!(sent["params"]["requestState"], state, "the body as it came");
    let forwarded = "mcpgw_mrtr_events_total{event=\"forwarded\",pool=\"p\"}";
    assert_eq!(rig.gw.metric(forwarded).await, 1.0);
    // another principal's retry is refused here, before anything is forwarded
    let stolen = sealed("key:other", &format!("http://{addr}"));
    let resp = retry(4, &stolen)
        .header("X-Api-Key", "k-one")
        .send(rig.gw.addr)
        .await;
    assert_eq!(resp.json()["error"]["data"]["reason"], "other-principal");
}

#[tokio::test]
async fn a_holder_that_drops_the_forwarded_retry_gives_32013_outcome_unknown() {
    let rig = Rig::start(false).await;
    let (addr, seen) = holder(Vec::new()).await;
    let resp = retry(5, &sealed("", &format!("http://{addr}")))
        .send(rig.gw.addr)
        .await;
    assert!(seen.await.is_ok(), "the holder got the retry");
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let v = resp.json();
    assert_eq!(v["id"], 5);
    assert_eq!(v["error"]["code"], -32013, "{v}");
    let failed = "mcpgw_mrtr_events_total{event=\"forward-failed\",pool=\"p\"}";
    assert_eq!(rig.gw.metric(failed).await, 1.0);
}
