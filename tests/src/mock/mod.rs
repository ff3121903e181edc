//! Mock MCP servers (2026-07-28 dialect) on 127.0.0.1 with fault injection, for fast tests.
//! Behaviour is chosen by the tool a request calls, so one mock serves every scenario:
//!
//! | tool | behaviour |
//! |---|---|
//! | (any other) | JSON result whose text is the server's name |
//! | `server/discover` (method) | a 2026-07-28 discover result (tools capability, serverInfo NAME) |
//! | `sse_progress` | SSE: `arguments.steps` progress notifications `arguments.gap_ms` apart, then the result |
//! | `odd_response` | answers [`ODD_RESPONSE`] verbatim |
//! | `drop_connection` | closes the connection without answering |
//! | `drop_mid_sse` | starts an SSE answer, sends one progress event, closes |
//! | `slow` | waits `arguments.ms`, then answers |
//!
//! | `sleep` | waits `arguments.ms`, then answers (legacy flavour) |
//!
//! Every request is captured with its exact body bytes, except the gateway's era probes. The legacy flavour ([`MockServer::legacy`])
//! keeps sessions in memory like a 2025-era server: see [`legacy`].

mod claim;
pub mod era;
pub mod legacy;
pub mod modern;
pub mod plain;
mod tools;

use claim::Bound;
pub use claim::PortClaim;
use tools::{answer, write_with};

use crate::wire::{read_body, read_head, Head};

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::BufReader;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A response body with key order, whitespace, escapes and numbers a re-serializer would change.
pub const ODD_RESPONSE: &str = "{\"result\" : {\"content\":[{\"type\":\"text\",\"text\":\"caf\\u00e9 \\ud83d\\ude00\"}], \"z\":1e400, \"a\":123456789012345678901},\n \"id\":1, \"jsonrpc\":\"2.0\"}";

/// One request as the mock received it.
#[derive(Debug, Clone)]
pub struct Captured {
    /// Method, path and headers.
    pub head: Head,
    /// Exact body bytes.
    pub body: Vec<u8>,
}

/// A running mock server.
pub struct MockServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Name it answers with.
    pub name: String,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
}

struct Shared {
    name: String,
    inflight: std::sync::atomic::AtomicUsize,
    max_inflight: std::sync::atomic::AtomicUsize,
    capture: std::sync::atomic::AtomicBool,
    captured: Mutex<Vec<Captured>>,
    legacy: Option<legacy::Sessions>,
    /// Connections accepted and not yet closed.
    open: std::sync::atomic::AtomicUsize,
    /// Whether the listener is still open (false once a kill has closed it).
    listening: std::sync::atomic::AtomicBool,
}

impl MockServer {
    /// Starts a mock on a free port.
    pub async fn start(name: &str) -> MockServer {
        Self::start_on(name, 0).await
    }

    /// Starts a mock on a given port (0: any).
    pub async fn start_on(name: &str, port: u16) -> MockServer {
        Self::spawn(name, Bind::At("127.0.0.1", port), None).await
    }

    /// Starts a legacy (session-keeping) mock that negotiates `version`, on `port` (0: any).
    pub async fn legacy(name: &str, port: u16, version: &str) -> MockServer {
        Self::spawn(
            name,
            Bind::At("127.0.0.1", port),
            Some(legacy::Sessions::new(version)),
        )
        .await
    }

    /// A legacy mock on another loopback address (127.0.0.0/8), like pods that share a port.
    pub async fn legacy_at(name: &str, ip: &str, port: u16, version: &str) -> MockServer {
        Self::spawn(
            name,
            Bind::At(ip, port),
            Some(legacy::Sessions::new(version)),
        )
        .await
    }

    /// Legacy mocks on several loopback addresses, all on one port (like pods behind a
    /// headless Service): the first binds port 0, the others that port on their address; if
    /// one of them is taken there, all start over on another port.
    pub async fn legacy_same_port(pods: &[(&str, &str)], version: &str) -> Vec<MockServer> {
        'attempt: for _ in 0..20 {
            let mut port = 0;
            let mut mocks = Vec::new();
            for (name, ip) in pods {
                match TcpListener::bind((*ip, port)).await {
                    Ok(listener) => {
                        port = listener.local_addr().expect("addr").port();
                        let sessions = Some(legacy::Sessions::new(version));
                        mocks.push(Self::serve_on(name, listener, None, sessions));
                    }
                    Err(_) => continue 'attempt,
                }
            }
            return mocks;
        }
        panic!("no port was free on every one of {pods:?}");
    }

    /// A legacy mock on `claim`'s address: a pod that can die and come back at the same
    /// address ([`MockServer::kill`], then `legacy_on` again with the same claim).
    pub async fn legacy_on(claim: &PortClaim, name: &str, version: &str) -> MockServer {
        Self::spawn(
            name,
            Bind::Claimed(claim),
            Some(legacy::Sessions::new(version)),
        )
        .await
    }

    async fn spawn(name: &str, bind: Bind<'_>, legacy: Option<legacy::Sessions>) -> MockServer {
        let listener = match bind {
            Bind::At(ip, port) => {
                // A just-killed mock on the same port releases its listener asynchronously.
                let mut attempts = 0;
                loop {
                    match TcpListener::bind((ip, port)).await {
                        Ok(l) => break l,
                        Err(_) if port != 0 && attempts < 100 => {
                            attempts += 1;
                            // a bounded retry of the bind itself, the event waited for
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                        Err(e) => panic!("bind mock on port {port}: {e}"),
                    }
                }
            }
            Bind::Claimed(claim) => claim.listen().await,
        };
        let claim = match bind {
            Bind::Claimed(claim) => Some(claim.clone()),
            Bind::At(..) => None,
        };
        Self::serve_on(name, listener, claim, legacy)
    }

    fn serve_on(
        name: &str,
        listener: TcpListener,
        claim: Option<PortClaim>,
        legacy: Option<legacy::Sessions>,
    ) -> MockServer {
        let addr = listener.local_addr().expect("addr");
        let shared = Arc::new(Shared {
            name: name.to_owned(),
            inflight: Default::default(),
            max_inflight: Default::default(),
            capture: std::sync::atomic::AtomicBool::new(true),
            captured: Mutex::new(Vec::new()),
            legacy,
            open: Default::default(),
            listening: std::sync::atomic::AtomicBool::new(true),
        });
        let (stop, stopped) = watch::channel(false);
        let serving = shared.clone();
        let bound = Bound {
            listener: Some(listener),
            claim,
        };
        tokio::spawn(async move {
            let bound = bound;
            let listener = bound.listener.as_ref().expect("listening");
            let mut stopped_accept = stopped.clone();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        // Like real servers (uvicorn, node): a head and body written apart must
                        // not wait for a delayed ACK.
                        let _ = stream.set_nodelay(true);
                        let (shared, mut stopped) = (serving.clone(), stopped.clone());
                        shared.open.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        tokio::spawn(async move {
                            // the connection is closed when `serve` is dropped, at the end of
                            // the select
                            tokio::select! {
                                _ = serve(stream, &shared) => {}
                                _ = stopped.changed() => {}
                            }
                            shared.open.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                        });
                    }
                    _ = stopped_accept.changed() => break,
                }
            }
            drop(bound);
            serving
                .listening
                .store(false, std::sync::atomic::Ordering::SeqCst);
        });
        MockServer {
            addr,
            name: name.to_owned(),
            shared,
            stop,
        }
    }

    /// Whether requests are recorded (on by default; off for long benchmark runs).
    pub fn set_capture(&self, on: bool) {
        self.shared
            .capture
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// The requests this mock is answering right now (a GET stream counts while it is open).
    pub fn in_flight(&self) -> usize {
        self.shared
            .inflight
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The most requests this mock was answering at once.
    pub fn max_concurrent(&self) -> usize {
        self.shared
            .max_inflight
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The legacy session table (legacy flavour only).
    pub fn sessions(&self) -> &legacy::Sessions {
        self.shared.legacy.as_ref().expect("a legacy mock")
    }

    /// Stops listening and drops every open connection (like a killed process).
    pub fn kill(&self) {
        let _ = self.stop.send(true);
    }

    /// Kills the mock and waits until it has closed its listener and every connection it had
    /// open (each a FIN at the gateway's pooled connection before this returns), as for a pod
    /// that died before the next call. The gateway reads those FINs on its own time: nothing
    /// it exposes says when its pool has dropped them, so a call sent at once can still, rarely,
    /// find a pooled connection closed under it and get -32013, like a call in flight (the
    /// tests for that use [`MockServer::kill`]).
    pub async fn die(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        self.kill();
        let shared = &self.shared;
        crate::eventually(
            &format!("{} closed its listener and connections", self.name),
            Duration::from_secs(5),
            || !shared.listening.load(SeqCst) && shared.open.load(SeqCst) == 0,
        )
        .await;
    }

    /// Requests received so far.
    pub fn requests(&self) -> Vec<Captured> {
        self.shared.captured.lock().expect("lock").clone()
    }

    /// Number of requests received so far.
    pub fn count(&self) -> usize {
        self.shared.captured.lock().expect("lock").len()
    }

    /// Requests with this JSON-RPC method received so far.
    pub fn count_method(&self, method: &str) -> usize {
        let needle = format!("\"method\":\"{method}\"");
        self.requests()
            .iter()
            .filter(|r| String::from_utf8_lossy(&r.body).contains(&needle))
            .count()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.kill();
    }
}

enum Bind<'a> {
    /// `TcpListener::bind((ip, port))`: port 0 picks a free one, held for the mock's life.
    At(&'a str, u16),
    /// The claim's address.
    Claimed(&'a PortClaim),
}

async fn serve(stream: TcpStream, shared: &Shared) {
    let mut reader = BufReader::new(stream);
    loop {
        let Ok(Some(head)) = read_head(&mut reader, true).await else {
            return;
        };
        let Ok(body) = read_body(&mut reader, &head, true).await else {
            return;
        };
        // The gateway's era probes are not client traffic: tests count what clients sent.
        if shared.capture.load(std::sync::atomic::Ordering::Relaxed) && !is_era_probe(&head, &body)
        {
            shared.captured.lock().expect("lock").push(Captured {
                head: head.clone(),
                body: body.clone(),
            });
        }
        let name = shared.name.as_str();
        let stream = reader.get_mut();
        let now = shared
            .inflight
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        shared
            .max_inflight
            .fetch_max(now, std::sync::atomic::Ordering::SeqCst);
        let _done = Decrement(&shared.inflight);
        let keep = match &shared.legacy {
            Some(sessions) => match sessions.gate(name, &head, &body) {
                legacy::Gate::Answer(a) => write_with(stream, a.status, &a.headers, &a.body).await,
                legacy::Gate::Stream => legacy::stream(stream).await,
                legacy::Gate::Pass => answer(stream, name, &head, &body).await,
            },
            None => answer(stream, name, &head, &body).await,
        };
        if !keep {
            return;
        }
    }
}

/// Whether a request is one of the gateway's era probes (`server/discover`, or the legacy
/// `initialize` with the probe's client name).
pub fn is_era_probe(head: &Head, body: &[u8]) -> bool {
    head.header("mcp-method") == Some("server/discover")
        || memchr_contains(body, b"\"mcp-gateway-era-probe\"")
}

fn memchr_contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

struct Decrement<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for Decrement<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}
