//! The session's standalone stream (the backend's server→client GET), held by the gateway.
//!
//! A legacy server sends requests that belong to no client request (`elicitation/create`,
//! `sampling/createMessage`, `roots/list` sent with `server.request(...)`) and notifications on
//! the session's standalone GET stream, and drops them when no such stream is open at that
//! moment. A client that calls a tool right after connecting can reach the backend before its
//! GET does (the gateway reads the two on different connections and threads), a client that
//! reconnects leaves a gap, and a session moved to another backend has no stream there until
//! the client opens one again. So the gateway opens and holds the backend's stream itself:
//! - when the client's `notifications/initialized` goes through and its `initialize` declared
//!   a capability the server can call back (sampling, elicitation, roots), before the client is
//!   answered, so nothing the client sends afterwards can overtake it;
//! - at the client's first GET otherwise;
//! - on the new backend as soon as a session that had one moves, before the request that
//!   moved it is forwarded.
//!
//! Events are cut whole and queued (bounded) until a client GET attaches; each client GET gets
//! a lease, and a newer GET (a reconnect) supersedes the older one. The backend sees one GET
//! per session, as it expects. Cost: one upstream connection per session that has a stream,
//! which the SDK clients open anyway. A client GET with `Last-Event-ID` (resuming a server's
//! own event store) goes to the backend as before.

use super::manager::SessionManager;
use super::{short, SessionRecord};
use crate::error::GatewayError;
use crate::mcp::headers::MCP_PROTOCOL_VERSION;
use crate::mcp::sse::{is_event_stream, EventSplitter};
use crate::session::{Forwarded, Outgoing, SessionStore};
use crate::upstream::client::Exchange;
use crate::upstream::Pool;
use bytes::Bytes;
use dashmap::DashMap;
use pingora::http::{RequestHeader, ResponseHeader};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

/// Events kept for a client that has not attached (or re-attached) yet; older ones are
/// dropped first.
const HELD_EVENTS: usize = 1024;
/// How long opening a stream may hold up the request that asked for it.
const OPEN_TIMEOUT: Duration = Duration::from_secs(2);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One held stream.
struct Held {
    generation: u64,
    head: ResponseHeader,
    queue: Mutex<Queue>,
    notify: Notify,
    task: Mutex<Option<AbortHandle>>,
}

#[derive(Default)]
struct Queue {
    events: VecDeque<Bytes>,
    /// The newest lease; older leases end.
    lease: u64,
    /// A client GET holds the newest lease right now.
    attached: bool,
    ended: bool,
    dropped: u64,
}

impl Held {
    fn push(&self, event: Bytes) {
        let mut q = lock(&self.queue);
        if !q.attached && is_comment(&event) {
            return; // a keep-alive is for a connection that is there
        }
        if q.events.len() >= HELD_EVENTS {
            q.events.pop_front();
            q.dropped += 1;
        }
        q.events.push_back(event);
        drop(q);
        self.notify.notify_waiters();
    }

    fn end(&self) {
        lock(&self.queue).ended = true;
        self.notify.notify_waiters();
    }

    fn is_live(&self) -> bool {
        !lock(&self.queue).ended
    }

    fn lease(self: &Arc<Self>) -> Lease {
        let id = {
            let mut q = lock(&self.queue);
            q.lease += 1;
            q.attached = true;
            q.lease
        };
        self.notify.notify_waiters(); // an older lease wakes up and ends
        Lease {
            held: self.clone(),
            id,
        }
    }

    /// Closes the upstream stream and ends every lease.
    fn stop(&self) {
        if let Some(task) = lock(&self.task).take() {
            task.abort();
        }
        self.end();
    }
}

/// Whether an event is only comment lines (a keep-alive).
fn is_comment(event: &[u8]) -> bool {
    event
        .split(|&b| b == b'\n' || b == b'\r')
        .filter(|line| !line.is_empty())
        .all(|line| line.starts_with(b":"))
}

/// A client GET's claim on a session's held stream.
pub struct Lease {
    held: Arc<Held>,
    id: u64,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut q = lock(&self.held.queue);
        if q.lease == self.id {
            q.attached = false;
        }
    }
}

impl Lease {
    /// The backend's response head for the stream.
    pub fn head(&self) -> &ResponseHeader {
        &self.held.head
    }

    /// The next whole event; `None` when the stream ended or a newer client GET took over.
    pub async fn next(&mut self) -> Option<Bytes> {
        loop {
            let notified = self.held.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut q = lock(&self.held.queue);
                if q.lease != self.id {
                    return None;
                }
                if let Some(event) = q.events.pop_front() {
                    return Some(event);
                }
                if q.ended {
                    return None;
                }
            }
            notified.await;
        }
    }
}

/// Held streams of this gateway process, by session id.
#[derive(Default)]
pub(super) struct HeldStreams {
    held: DashMap<Arc<str>, Arc<Held>>,
    /// One opening per session at a time (so the backend never sees two GETs).
    opening: DashMap<Arc<str>, Arc<tokio::sync::Mutex<()>>>,
}

impl HeldStreams {
    /// Stops and forgets a session's stream (the session ended).
    pub(super) fn stop(&self, id: &str) {
        if let Some((_, held)) = self.held.remove(id) {
            held.stop();
        }
        self.opening.remove(id);
    }

    /// Streams held open right now.
    fn live(&self) -> usize {
        self.held.iter().filter(|h| h.is_live()).count()
    }

    /// Whether the session has (or had, on an earlier binding) a held stream.
    fn has(&self, id: &str) -> bool {
        self.held.contains_key(id)
    }

    /// The live stream of the record's binding.
    fn current(&self, rec: &SessionRecord) -> Option<Arc<Held>> {
        self.held
            .get(&rec.id)
            .filter(|h| h.generation == rec.binding.generation && h.is_live())
            .map(|h| h.clone())
    }

    fn opening_lock(&self, id: &Arc<str>) -> Arc<tokio::sync::Mutex<()>> {
        self.opening.entry(id.clone()).or_default().clone()
    }
}

/// What a client GET gets.
pub enum StreamOpened {
    /// Attached to the held stream.
    Attached(Lease),
    /// The backend's answer to relay as it is (not a stream: 405, 409, an error; or a GET
    /// passed through), with the record it was sent under.
    Answer(Box<(Exchange, SessionRecord)>),
}

/// Whether a client's `initialize` params declare a capability the server calls back on the
/// standalone stream.
fn expects_server_requests(init_params: &str) -> bool {
    let Ok(params) = serde_json::from_str::<serde_json::Value>(init_params) else {
        return false;
    };
    let caps = params.get("capabilities");
    ["sampling", "elicitation", "roots"]
        .iter()
        .any(|c| caps.and_then(|caps| caps.get(c)).is_some())
}

/// The GET the gateway sends for a held stream: its own, so it outlives client requests.
fn stream_request(rec: &SessionRecord) -> Result<RequestHeader, GatewayError> {
    let build = || -> pingora::Result<RequestHeader> {
        let mut req = RequestHeader::build("GET", rec.path.as_bytes(), Some(3))?;
        req.insert_header(http::header::ACCEPT, "text/event-stream")?;
        req.insert_header(MCP_PROTOCOL_VERSION, &*rec.protocol_version)?;
        Ok(req)
    };
    build().map_err(|e| GatewayError::internal(format!("stream request: {e}")))
}

impl SessionManager {
    /// Standalone streams held open upstream right now.
    pub fn held_streams(&self) -> usize {
        self.streams.live()
    }

    /// A client's GET: attached to the session's held stream, opened first when needed.
    pub async fn open_stream(
        &self,
        pool: &Arc<Pool>,
        rec: SessionRecord,
        client: &RequestHeader,
        method_label: &'static str,
    ) -> Result<StreamOpened, GatewayError> {
        let resuming = client.headers.contains_key("last-event-id");
        if !self.holds_streams() || resuming {
            let out = Outgoing::get(client, method_label);
            let Forwarded { exchange, record } = self.forward(pool, rec, out).await?;
            return Ok(StreamOpened::Answer(Box::new((exchange, record))));
        }
        let opening = self.streams.opening_lock(&rec.id);
        let _one_at_a_time = opening.lock().await;
        if let Some(held) = self.streams.current(&rec) {
            return Ok(StreamOpened::Attached(held.lease()));
        }
        let (exchange, record) = self.open_upstream(pool, rec, method_label).await?;
        if !is_stream(exchange.header()) {
            return Ok(StreamOpened::Answer(Box::new((exchange, record))));
        }
        Ok(StreamOpened::Attached(self.install(&record, exchange)))
    }

    /// Opens the held stream ahead of the client when it will be needed: after a client's
    /// `notifications/initialized` whose `initialize` declared callbacks. Bounded; failures
    /// are logged (the client's own GET opens it later).
    pub async fn hold_stream(&self, pool: &Arc<Pool>, rec: &SessionRecord) {
        if self.holds_streams() && expects_server_requests(&rec.init_params) {
            self.hold_now(pool, rec).await;
        }
    }

    /// After a session that had a held stream moved: its stream on the new backend, before
    /// the request that moved it goes there.
    pub(super) async fn rehold_after_move(&self, pool: &Arc<Pool>, rec: &SessionRecord) {
        if self.holds_streams() && self.streams.has(&rec.id) {
            self.hold_now(pool, rec).await;
        }
    }

    async fn hold_now(&self, pool: &Arc<Pool>, rec: &SessionRecord) {
        let opening = self.streams.opening_lock(&rec.id);
        let _one_at_a_time = opening.lock().await;
        if self.streams.current(rec).is_some() {
            return;
        }
        let label = "none";
        let opened = tokio::time::timeout(OPEN_TIMEOUT, self.open_on_binding(pool, rec, label));
        match opened.await {
            Ok(Ok(exchange)) if is_stream(exchange.header()) => {
                // held for a client to come: nobody attached yet
                drop(self.install(rec, exchange));
            }
            Ok(Ok(exchange)) => {
                tracing::debug!(
                    session = short(&rec.id),
                    status = exchange.header().status.as_u16(),
                    "backend offers no standalone stream"
                );
                self.engine.release(exchange).await;
            }
            Ok(Err(e)) => {
                tracing::debug!(session = short(&rec.id), error = %e, "standalone stream not opened")
            }
            Err(_) => tracing::debug!(
                session = short(&rec.id),
                "standalone stream not opened in time"
            ),
        }
    }

    /// The stream's GET within the session, moving it first if needed (a client GET).
    async fn open_upstream(
        &self,
        pool: &Arc<Pool>,
        rec: SessionRecord,
        method_label: &'static str,
    ) -> Result<(Exchange, SessionRecord), GatewayError> {
        let req = stream_request(&rec)?;
        let out = Outgoing::get(&req, method_label);
        let Forwarded { exchange, record } = self.forward(pool, rec, out).await?;
        Ok((exchange, record))
    }

    /// The stream's GET on the record's current backend, without moving the session.
    async fn open_on_binding(
        &self,
        pool: &Arc<Pool>,
        rec: &SessionRecord,
        method_label: &'static str,
    ) -> Result<Exchange, GatewayError> {
        let req = stream_request(rec)?;
        self.send_on_binding(pool, rec, &Outgoing::get(&req, method_label))
            .await
    }

    /// Starts holding `exchange` (a 2xx event stream) as the session's stream, replacing (and
    /// closing) one of an earlier binding.
    /// Returns the first lease, taken before the first event can arrive (the client GET that
    /// opened it keeps it; an eager hold drops it).
    fn install(&self, rec: &SessionRecord, exchange: Exchange) -> Lease {
        let held = Arc::new(Held {
            generation: rec.binding.generation,
            head: exchange.header().clone(),
            queue: Mutex::new(Queue::default()),
            notify: Notify::new(),
            task: Mutex::new(None),
        });
        if let Some(old) = self.streams.held.insert(rec.id.clone(), held.clone()) {
            old.stop();
        }
        let lease = held.lease();
        let pump = pump(held.clone(), exchange, self.store.clone(), rec.id.clone());
        *lock(&held.task) = Some(tokio::spawn(pump).abort_handle());
        tracing::debug!(
            session = short(&rec.id),
            generation = rec.binding.generation,
            "standalone stream held"
        );
        lease
    }
}

fn is_stream(head: &ResponseHeader) -> bool {
    let content_type = head
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    head.status.is_success() && is_event_stream(content_type)
}

/// Reads the backend's stream into the queue until it ends. A stream that breaks marks the
/// binding suspect (the backend may be gone: the next request moves the session first); one
/// that was merely quiet past the read timeout, or ended by the backend, does not.
async fn pump(held: Arc<Held>, mut exchange: Exchange, store: Arc<dyn SessionStore>, id: Arc<str>) {
    let mut splitter = EventSplitter::default();
    let broken = loop {
        match exchange.chunk().await {
            Ok(Some(chunk)) => {
                for event in splitter.push(&chunk) {
                    held.push(event);
                }
            }
            Ok(None) => break false,
            Err(e) => break e.etype() != &pingora::ErrorType::ReadTimedout,
        }
    };
    // The ended stream stays in the map as a mark that the session has one: a move reopens it.
    held.end();
    if broken {
        if let Err(e) = store.mark_stale(&id, held.generation).await {
            tracing::warn!(session = short(&id), error = %e, "a broken stream's binding was not marked");
        }
    }
    let dropped = lock(&held.queue).dropped;
    if dropped > 0 {
        tracing::warn!(
            session = short(&id),
            dropped,
            "held stream events dropped (no client read them in time)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_held_ahead_for_clients_the_server_can_call_back() {
        assert!(expects_server_requests(
            r#"{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}}}"#
        ));
        assert!(expects_server_requests(
            r#"{"capabilities":{"sampling":{},"roots":{"listChanged":true}}}"#
        ));
        assert!(!expects_server_requests(r#"{"capabilities":{}}"#));
        assert!(!expects_server_requests("not json"));
    }

    #[tokio::test]
    async fn a_newer_lease_takes_over_and_queued_events_wait_for_it() {
        let held = Arc::new(Held {
            generation: 1,
            head: ResponseHeader::build(200, None).unwrap(),
            queue: Mutex::new(Queue::default()),
            notify: Notify::new(),
            task: Mutex::new(None),
        });
        held.push(Bytes::from_static(b": keep-alive for nobody\n\n"));
        let mut first = held.lease();
        held.push(Bytes::from_static(b"data: 1\n\n"));
        assert_eq!(first.next().await.as_deref(), Some(&b"data: 1\n\n"[..]));
        drop(first);
        // no client reads: events wait, keep-alives do not
        held.push(Bytes::from_static(b"data: 2\n\n"));
        held.push(Bytes::from_static(b": ping\r\n\r\n"));
        let mut stale = Lease {
            held: held.clone(),
            id: 1,
        };
        let mut second = held.lease();
        assert_eq!(stale.next().await, None, "superseded");
        assert_eq!(second.next().await.as_deref(), Some(&b"data: 2\n\n"[..]));
        let waiting = tokio::spawn(async move { second.next().await });
        tokio::task::yield_now().await;
        held.push(Bytes::from_static(b"data: 3\n\n"));
        assert_eq!(waiting.await.unwrap().as_deref(), Some(&b"data: 3\n\n"[..]));
        let mut third = held.lease();
        held.end();
        assert_eq!(third.next().await, None);
    }
}
