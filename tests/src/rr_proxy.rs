//! A per-request round-robin HTTP/1.1 front for tests, on 127.0.0.1: every client connection
//! carries ONE request (head + `Content-Length` body), which goes to the next upstream (slots
//! taken in turn: A, B, A, ...) over a new connection with `Connection: close`; the upstream's
//! answer is streamed back as it arrives (SSE included) with `Connection: close` put in its
//! head, and both connections are closed when the upstream closes (or the client goes away).
//! So clients that keep connections alive still have every request served by the next
//! upstream: they reconnect when the front closes.
//!
//! Slots can be emptied and refilled ([`RrProxy::set_upstream`]) to restart what is behind
//! them; an empty slot is skipped, and a request that finds no upstream (or cannot connect)
//! is answered 502. Every request is logged ([`RrProxy::log`]) with its slot, HTTP method,
//! JSON-RPC method and the upstream's status. Also handy with one slot, in front of one
//! backend, to count the JSON-RPC requests it receives (`initialize`, say).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// The largest request or response head the front accepts.
const MAX_HEAD: usize = 64 * 1024;

/// One request the front took.
#[derive(Clone, Debug)]
pub struct Served {
    /// The slot it went to (`None`: no upstream was in place).
    pub slot: Option<usize>,
    /// The upstream address it went to.
    pub upstream: Option<SocketAddr>,
    /// HTTP method.
    pub method: String,
    /// The JSON-RPC `method` of the body, `"response"` for a JSON-RPC response (a client's
    /// answer to a server request), `None` without a JSON body.
    pub rpc: Option<String>,
    /// The upstream's status (`None` until its head arrived, or when there was none); 502 the
    /// front answered itself is recorded as `Some(502)` with [`Served::refused`] set.
    pub status: Option<u16>,
    /// The front answered 502 itself: no upstream in place, or connecting failed.
    pub refused: bool,
    /// When the request arrived, since the front started ([`RrProxy::elapsed`]).
    pub at: Duration,
}

struct State {
    /// A refused connection is retried on the other upstreams (nginx's
    /// `proxy_next_upstream error`, an L4 balancer that skips a dead endpoint).
    next_on_refusal: std::sync::atomic::AtomicBool,
    upstreams: Mutex<Vec<Option<SocketAddr>>>,
    next: AtomicUsize,
    log: Mutex<Vec<Served>>,
    started: Instant,
    /// A one-shot cut: the first answer in which the pattern appears this many times has both
    /// of its connections closed right after the chunk that completes the count.
    cut: Mutex<Option<(Vec<u8>, usize)>>,
    cuts: AtomicUsize,
}

impl State {
    /// The next slot in turn that has an upstream.
    fn pick(&self) -> Option<(usize, SocketAddr)> {
        let upstreams = self.upstreams.lock().unwrap();
        let n = upstreams.len();
        if n == 0 {
            return None;
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        (0..n).find_map(|k| {
            let slot = (start + k) % n;
            upstreams[slot].map(|addr| (slot, addr))
        })
    }

    fn record(&self, served: Served) -> usize {
        let mut log = self.log.lock().unwrap();
        log.push(served);
        log.len() - 1
    }

    fn set_status(&self, entry: usize, status: u16) {
        self.log.lock().unwrap()[entry].status = Some(status);
    }
}

/// The running front; stops (and drops every connection it holds) when dropped.
pub struct RrProxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl RrProxy {
    /// Starts a front on a free 127.0.0.1 port with these upstreams, one slot each.
    pub async fn start(upstreams: &[SocketAddr]) -> RrProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind rr proxy");
        let addr = listener.local_addr().expect("rr proxy addr");
        let state = Arc::new(State {
            next_on_refusal: std::sync::atomic::AtomicBool::new(false),
            upstreams: Mutex::new(upstreams.iter().copied().map(Some).collect()),
            next: AtomicUsize::new(0),
            log: Mutex::new(Vec::new()),
            started: Instant::now(),
            cut: Mutex::new(None),
            cuts: AtomicUsize::new(0),
        });
        let task = tokio::spawn(accept_loop(listener, state.clone()));
        RrProxy { addr, state, task }
    }

    /// `http://addr{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Puts `upstream` in `slot` (`None` takes the slot out of the rotation). Requests already
    /// forwarded keep their upstream connection.
    /// From now on, a refused connection is retried on the other upstreams in turn (as an L4
    /// balancer that skips a dead endpoint does) instead of being answered 502.
    pub fn retry_refused(&self) {
        self.state.next_on_refusal.store(true, Ordering::Relaxed);
    }

    pub fn set_upstream(&self, slot: usize, upstream: Option<SocketAddr>) {
        self.state.upstreams.lock().unwrap()[slot] = upstream;
    }

    /// Replaces every slot.
    pub fn set_upstreams(&self, upstreams: &[Option<SocketAddr>]) {
        *self.state.upstreams.lock().unwrap() = upstreams.to_vec();
    }

    /// Cuts the first answer that carries `pattern` `times` times (counted per answer), right
    /// after the chunk that completes the count: the client sees its connection end midway,
    /// as when a network path breaks. One-shot.
    pub fn cut_after(&self, pattern: &str, times: usize) {
        *self.state.cut.lock().unwrap() = Some((pattern.as_bytes().to_vec(), times));
    }

    /// How many answers were cut.
    pub fn cuts(&self) -> usize {
        self.state.cuts.load(Ordering::Relaxed)
    }

    /// Time since the front started (the clock of [`Served::at`]).
    pub fn elapsed(&self) -> Duration {
        self.state.started.elapsed()
    }

    /// Every request taken so far, in arrival order.
    pub fn log(&self) -> Vec<Served> {
        self.state.log.lock().unwrap().clone()
    }

    /// How many requests went to `slot` (whatever its upstream was at the time).
    pub fn served(&self, slot: usize) -> usize {
        let log = self.state.log.lock().unwrap();
        log.iter().filter(|s| s.slot == Some(slot)).count()
    }

    /// How many requests with JSON-RPC method `rpc` went to `slot`.
    pub fn served_rpc(&self, slot: usize, rpc: &str) -> usize {
        let log = self.state.log.lock().unwrap();
        log.iter()
            .filter(|s| s.slot == Some(slot) && s.rpc.as_deref() == Some(rpc))
            .count()
    }

    /// How many requests with JSON-RPC method `rpc` the front took, over every slot.
    pub fn count_rpc(&self, rpc: &str) -> usize {
        let log = self.state.log.lock().unwrap();
        log.iter().filter(|s| s.rpc.as_deref() == Some(rpc)).count()
    }
}

impl Drop for RrProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    // the connections live in the set: aborting this task (drop) drops them all
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((client, _)) = accepted else { continue };
                let _ = client.set_nodelay(true);
                conns.spawn(serve(client, state.clone()));
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

/// Reads from `stream` into `buf` until `parse` finds a complete head; returns the head's
/// length, or `None` when the peer closed first or the head is too long.
async fn read_head(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    complete: impl Fn(&[u8]) -> Option<usize>,
) -> Option<usize> {
    loop {
        if let Some(n) = complete(buf) {
            return Some(n);
        }
        if buf.len() > MAX_HEAD {
            return None;
        }
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn request_head_len(buf: &[u8]) -> Option<usize> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    match httparse::Request::new(&mut headers).parse(buf) {
        Ok(httparse::Status::Complete(n)) => Some(n),
        _ => None,
    }
}

fn response_head_len(buf: &[u8]) -> Option<usize> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    match httparse::Response::new(&mut headers).parse(buf) {
        Ok(httparse::Status::Complete(n)) => Some(n),
        _ => None,
    }
}

/// Hop-by-hop headers the front replaces with its own `Connection: close`.
fn hop_by_hop(name: &str) -> bool {
    ["connection", "keep-alive", "proxy-connection"]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
}

async fn answer(client: &mut TcpStream, status: &str) {
    let resp = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    let _ = client.write_all(resp.as_bytes()).await;
    let _ = client.shutdown().await;
}

async fn serve(mut client: TcpStream, state: Arc<State>) {
    let mut buf = Vec::new();
    let Some(head_len) = read_head(&mut client, &mut buf, request_head_len).await else {
        return;
    };
    // the request head, rewritten with Connection: close
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    req.parse(&buf[..head_len]).expect("parsed before");
    let method = req.method.unwrap_or("").to_owned();
    let mut out = format!("{} {} HTTP/1.1\r\n", method, req.path.unwrap_or("/")).into_bytes();
    let mut content_length = 0usize;
    let mut chunked = false;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            content_length = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
        }
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = true;
        }
        if hop_by_hop(h.name) {
            continue;
        }
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"connection: close\r\n\r\n");
    if chunked {
        answer(&mut client, "501 Not Implemented").await;
        return;
    }
    // the body
    let mut body = buf[head_len..].to_vec();
    while body.len() < content_length {
        let mut chunk = vec![0u8; (content_length - body.len()).min(64 * 1024)];
        match client.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    body.truncate(content_length);
    let rpc = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| match v.get("method") {
            Some(m) => m.as_str().map(str::to_owned),
            None if v.get("result").is_some() || v.get("error").is_some() => {
                Some("response".to_owned())
            }
            None => None,
        });
    let picked = state.pick();
    let entry = state.record(Served {
        slot: picked.map(|p| p.0),
        upstream: picked.map(|p| p.1),
        method,
        rpc,
        status: None,
        refused: false,
        at: state.started.elapsed(),
    });
    let refuse = |state: &State| {
        let mut log = state.log.lock().unwrap();
        log[entry].status = Some(502);
        log[entry].refused = true;
    };
    let Some((slot, upstream_addr)) = picked else {
        refuse(&state);
        answer(&mut client, "502 Bad Gateway").await;
        return;
    };
    let connected = match TcpStream::connect(upstream_addr).await {
        Ok(s) => Some(s),
        Err(_) => connect_another(&state, entry, slot).await,
    };
    let Some(mut upstream) = connected else {
        refuse(&state);
        answer(&mut client, "502 Bad Gateway").await;
        return;
    };
    let _ = upstream.set_nodelay(true);
    out.extend_from_slice(&body);
    if upstream.write_all(&out).await.is_err() {
        return; // the client sees its connection closed, as with a dying server
    }
    let (mut client_rd, mut client_wr) = client.split();
    let relay = async {
        // the response head, with Connection: close put in
        let mut buf = Vec::new();
        let head_len = read_head(&mut upstream, &mut buf, response_head_len).await?;
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut resp = httparse::Response::new(&mut headers);
        resp.parse(&buf[..head_len]).ok()?;
        let status = resp.code.unwrap_or(0);
        state.set_status(entry, status);
        let mut head =
            format!("HTTP/1.1 {} {}\r\n", status, resp.reason.unwrap_or("")).into_bytes();
        for h in resp.headers.iter().filter(|h| !hop_by_hop(h.name)) {
            head.extend_from_slice(h.name.as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(h.value);
            head.extend_from_slice(b"\r\n");
        }
        head.extend_from_slice(b"connection: close\r\n\r\n");
        head.extend_from_slice(&buf[head_len..]);
        client_wr.write_all(&head).await.ok()?;
        // the rest, as it comes, until the upstream closes
        let mut chunk = vec![0u8; 64 * 1024];
        let mut seen = count(&state, &buf[head_len..]);
        loop {
            let n = upstream.read(&mut chunk).await.ok()?;
            if n == 0 {
                return Some(());
            }
            client_wr.write_all(&chunk[..n]).await.ok()?;
            seen += count(&state, &chunk[..n]);
            if cut_now(&state, seen) {
                return None;
            }
        }
    };
    // a client that goes away (closes its stream) ends the upstream connection too
    let client_gone = async {
        let mut sink = [0u8; 1024];
        while let Ok(n) = client_rd.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    };
    tokio::select! {
        _ = relay => {}
        _ = client_gone => {}
    }
    let _ = client.shutdown().await;
}

/// Occurrences of the cut pattern in `bytes` (0 when no cut is armed).
fn count(state: &State, bytes: &[u8]) -> usize {
    match &*state.cut.lock().unwrap() {
        Some((pattern, _)) if !pattern.is_empty() => bytes
            .windows(pattern.len())
            .filter(|w| *w == &pattern[..])
            .count(),
        _ => 0,
    }
}

/// Whether an answer that carried the pattern `seen` times is cut now (disarming the cut).
fn cut_now(state: &State, seen: usize) -> bool {
    let mut cut = state.cut.lock().unwrap();
    if cut.as_ref().is_some_and(|(_, times)| seen >= *times) {
        *cut = None;
        state.cuts.fetch_add(1, Ordering::Relaxed);
        return true;
    }
    false
}

/// After a refused connection to `slot`: the other upstreams in turn, when the proxy retries
/// refusals; the log entry then names the one that took the request.
async fn connect_another(state: &State, entry: usize, slot: usize) -> Option<TcpStream> {
    if !state.next_on_refusal.load(Ordering::Relaxed) {
        return None;
    }
    let others: Vec<(usize, SocketAddr)> = {
        let upstreams = state.upstreams.lock().unwrap();
        let n = upstreams.len();
        (1..n)
            .filter_map(|k| upstreams[(slot + k) % n].map(|a| ((slot + k) % n, a)))
            .collect()
    };
    for (other, addr) in others {
        if let Ok(stream) = TcpStream::connect(addr).await {
            let mut log = state.log.lock().unwrap();
            log[entry].slot = Some(other);
            log[entry].upstream = Some(addr);
            return Some(stream);
        }
    }
    None
}
