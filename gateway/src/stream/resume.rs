//! Resumable streams: the gateway owns the event ids of every SSE stream it relays inside a
//! session, keeps each stream's events for a while, and replays them after a client's
//! `Last-Event-ID`, whether or not the backend keeps events itself.
//!
//! - An event id is `<stream token>-<sequence>`: the token (64 random bits, hex) names the
//!   stream and is unique within the session (and, with overwhelming probability, across
//!   sessions); the sequence orders its events. A backend's own id never reaches the client
//!   (the gateway keeps it to resume upstream, see `pump.rs`).
//! - A stream is found only under the session that owns it: an id from another session is
//!   exactly as unknown as a made-up one (GHSA-84j6-jc92-77jm was the replay of another
//!   session's events).
//! - Sessions that negotiated 2025-11-25 or later get a priming event (an id, `retry:`, empty
//!   data) first, as the TypeScript SDK server sends; older sessions get ids only.
//! - Each stream keeps at most `max-events` and `max-bytes`; it lives until `window` after it
//!   ended, and an unread stream (its client gone) is given up `window` after the last reader
//!   left. With a store shared by replicas (Redis) every event is also written through to it
//!   (`session::store::StreamStore`), so another replica can replay it (`remote.rs`).

use super::metrics::StreamMetrics;
use super::{Bounds, Read, StreamLog};
pub use crate::config::ResumeConfig;
use crate::error::GatewayError;
use crate::session::store::{StoredEvent, StreamStore};
use bytes::Bytes;
use dashmap::DashMap;
use mcp_wire::sse;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A stream's bounds under `config`.
fn bounds(config: &ResumeConfig) -> Bounds {
    Bounds {
        max_events: config.max_events,
        max_bytes: config.max_bytes,
    }
}

/// The first protocol version whose clients are sent priming events.
const PRIMING_FROM: &str = "2025-11-25";

/// Whether a session of `protocol_version` gets priming events (versions are dates, so they
/// compare as text).
pub fn primes(protocol_version: &str) -> bool {
    protocol_version >= PRIMING_FROM
}

/// An event id the gateway issued: `<token as 16 hex digits>-<sequence>`.
pub fn event_id(token: u64, seq: u64) -> String {
    format!("{token:016x}-{seq}")
}

/// The stream token and sequence of a gateway event id; `None` for anything else.
pub fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (token, seq) = id.trim().split_once('-')?;
    if token.len() != 16 {
        return None;
    }
    Some((u64::from_str_radix(token, 16).ok()?, seq.parse().ok()?))
}

/// A priming event: an id, the reconnection advice, empty data.
pub fn priming(id: &str, retry: Duration) -> Bytes {
    Bytes::from(format!(
        "id: {id}\nretry: {}\ndata: \n\n",
        retry.as_millis()
    ))
}

/// A gateway message as an event with an id.
pub fn message_event(id: &str, json: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(json.len() + 48);
    out.extend_from_slice(b"id: ");
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b"\nevent: message\ndata: ");
    out.extend_from_slice(json);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The keep-alive comment written on idle client streams.
pub const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// A backend event, read for relaying.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Frame {
    /// The event's lines without `id:` and `retry:` (the gateway sets both).
    lines: Vec<u8>,
    /// The backend's id, if it gave one.
    pub backend_id: Option<String>,
    /// The joined `data` (empty for a priming event or a keep-alive).
    pub data: Vec<u8>,
}

impl Frame {
    /// Reads one whole event (as `EventSplitter` cuts them).
    pub fn parse(event: &[u8]) -> Frame {
        let mut frame = Frame::default();
        let mut data = None;
        for line in sse::lines(event).filter(|l| !l.is_empty()) {
            match sse::field(line) {
                (b"id", value) => {
                    frame.backend_id = Some(String::from_utf8_lossy(value).into_owned())
                }
                (b"retry", _) => {}
                (field, value) => {
                    if field == b"data" {
                        sse::push_data(&mut data, value);
                    }
                    if !field.is_empty() {
                        frame.lines.extend_from_slice(line);
                        frame.lines.push(b'\n');
                    }
                }
            }
        }
        frame.data = data.unwrap_or_default();
        frame
    }

    /// Whether the event carries a message (not a keep-alive, not a bare id or priming).
    pub fn carries_message(&self) -> bool {
        !self.data.iter().all(u8::is_ascii_whitespace)
    }

    /// Whether the message is a JSON-RPC response (`result` or `error`).
    pub fn is_response(&self) -> bool {
        #[derive(serde::Deserialize)]
        struct Probe {
            result: Option<serde::de::IgnoredAny>,
            error: Option<serde::de::IgnoredAny>,
            method: Option<serde::de::IgnoredAny>,
        }
        serde_json::from_slice::<Probe>(&self.data)
            .is_ok_and(|p| p.method.is_none() && (p.result.is_some() || p.error.is_some()))
    }

    /// The event as the client gets it: the gateway's id, then the backend's other lines.
    pub fn with_id(&self, id: &str) -> Bytes {
        let mut out = Vec::with_capacity(self.lines.len() + id.len() + 6);
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(&self.lines);
        out.push(b'\n');
        Bytes::from(out)
    }
}

/// A buffered SSE answer with the backend's event ids, `retry:` advice and priming events
/// taken out (an answer the gateway does not make resumable, such as `initialize`'s: the
/// backend's ids mean nothing to the client, which talks to the gateway).
pub fn without_backend_ids(body: &[u8]) -> Bytes {
    let mut splitter = mcp_wire::sse::EventSplitter::default();
    let mut events = splitter.push(body);
    events.extend(splitter.push(b"\n\n")); // a last event without its blank line
    let mut out = Vec::with_capacity(body.len());
    for event in events {
        let frame = Frame::parse(&event);
        if frame.carries_message() {
            out.extend_from_slice(&frame.lines);
            out.push(b'\n');
        }
    }
    Bytes::from(out)
}

/// Why a resume was refused (the `reason` label and `data.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Never issued in this session (or not a gateway id at all).
    Unknown,
    /// Issued, but the events after it are no longer kept.
    Evicted,
}

impl Refusal {
    /// Label.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Unknown => "unknown",
            Refusal::Evicted => "evicted",
        }
    }
}

/// The streams this process relays or keeps, by token.
pub struct Resume {
    pub(super) streams: DashMap<u64, Arc<StreamLog>>,
    config: Mutex<ResumeConfig>,
    total: Arc<AtomicUsize>,
    /// `max-buffered-bytes`: the bound on `total` (`budget.rs`).
    pub(super) max_buffered: AtomicUsize,
    /// Held while the budget drops buffers (one at a time).
    pub(super) evicting: Mutex<()>,
    pub(super) metrics: StreamMetrics,
    /// Where events are also written when sessions are shared (the Redis store).
    pub(crate) mirror: Option<Arc<dyn StreamStore>>,
}

impl Resume {
    /// Streams counted into `metrics`, written through to `mirror` when one is given.
    pub fn new(metrics: StreamMetrics, mirror: Option<Arc<dyn StreamStore>>) -> Resume {
        Resume {
            streams: DashMap::new(),
            config: Mutex::new(ResumeConfig::default()),
            total: Arc::new(AtomicUsize::new(0)),
            max_buffered: AtomicUsize::new(ResumeConfig::default().max_buffered_bytes),
            evicting: Mutex::new(()),
            metrics,
            mirror,
        }
    }

    /// The settings in force.
    pub fn config(&self) -> ResumeConfig {
        crate::sync::lock(&self.config).clone()
    }

    /// Applies `sessions.resume` (at start and after a reload; running streams keep their
    /// bounds).
    pub fn configure(&self, config: &ResumeConfig) {
        if let Some(mirror) = &self.mirror {
            mirror.configure(config.window, config.max_events);
        }
        self.max_buffered
            .store(config.max_buffered_bytes, Ordering::Relaxed);
        *crate::sync::lock(&self.config) = config.clone();
    }

    /// Bytes of events buffered in this process.
    pub fn buffered_bytes(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    /// Streams kept in this process.
    pub fn streams(&self) -> usize {
        self.streams.len()
    }

    /// A new stream of `session`; with `primed`, its first event is the priming event.
    pub fn start(
        &self,
        session: &Arc<str>,
        request: Option<&mcp_wire::RequestId>,
        primed: bool,
    ) -> Arc<StreamLog> {
        let config = self.config();
        let token = loop {
            let token = rand::random::<u64>();
            if !self.streams.contains_key(&token) {
                break token;
            }
        };
        let log = StreamLog::new(session.clone(), token, bounds(&config), self.total.clone());
        let log = Arc::new(log.answering(request.map(|id| id.as_json().into())));
        if primed {
            log.push(|seq| priming(&event_id(token, seq), config.retry));
            self.mirror_last(&log);
        }
        self.streams.insert(token, log.clone());
        log
    }

    /// Writes the stream's newest event through to the shared store (with the Redis store).
    pub fn mirror_last(&self, log: &StreamLog) {
        self.mirror_last_from(log, None);
    }

    /// [`Resume::mirror_last`], with the backend's own id of the event. Every kept event
    /// passes here, so this is also where the process is kept within `max-buffered-bytes`
    /// (`budget.rs`).
    pub fn mirror_last_from(&self, log: &StreamLog, backend_id: Option<&str>) {
        if let (Some(mirror), Some((seq, event))) = (&self.mirror, log.last()) {
            mirror.write(StoredEvent {
                session: log.session.clone(),
                token: log.token,
                seq,
                event,
                request: log.request.clone(),
                backend: backend_id.map(Arc::from),
            });
        }
        self.keep_within_budget();
    }

    /// Writes the stream's end through to the shared store.
    pub fn mirror_end(&self, log: &StreamLog) {
        if let Some(mirror) = &self.mirror {
            mirror.end(&log.session, log.token, log.next_seq());
        }
    }

    /// Forgets an ended stream once its window has passed.
    pub fn retire(self: &Arc<Self>, log: &Arc<StreamLog>) {
        let window = self.config().window;
        let resume = self.clone();
        let token = log.token;
        tokio::spawn(async move {
            tokio::time::sleep(window).await;
            resume.streams.remove(&token);
        });
    }

    /// The stream of `session` that issued `last_event_id` and the cursor after that event.
    pub fn find_local(
        &self,
        session: &str,
        last_event_id: &str,
    ) -> Result<(Arc<StreamLog>, u64), Refusal> {
        let (token, seq) = parse_event_id(last_event_id).ok_or(Refusal::Unknown)?;
        let log = self
            .streams
            .get(&token)
            .map(|l| l.clone())
            .filter(|l| &*l.session == session && l.issued(seq))
            .ok_or(Refusal::Unknown)?;
        match log.read(seq + 1) {
            Read::Evicted => Err(Refusal::Evicted),
            _ => Ok((log, seq + 1)),
        }
    }

    /// Counts a resume that was served.
    pub fn count_resumed(&self) {
        self.metrics
            .streams_resumed
            .with_label_values::<&str>(&[])
            .inc();
    }

    /// Counts a held stream taken over from nobody; `resumed` when the backend was asked for
    /// its events since the last one relayed (its own event id).
    pub fn count_takeover(&self, resumed: bool) {
        let resumed = if resumed { "true" } else { "false" };
        self.metrics
            .held_stream_takeovers
            .with_label_values(&[resumed])
            .inc();
    }

    /// Counts an event written again after a resume.
    pub fn count_replayed(&self, events: u64) {
        self.metrics
            .events_replayed
            .with_label_values::<&str>(&[])
            .inc_by(events);
    }

    /// The answer to a refused resume, counted.
    pub fn refuse(&self, refusal: Refusal, last_event_id: &str) -> GatewayError {
        self.metrics
            .resumes_refused
            .with_label_values(&[refusal.as_str()])
            .inc();
        GatewayError::resume_unavailable(refusal.as_str(), last_event_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_round_trip_and_nothing_else_parses() {
        let id = event_id(0xdead_beef, 42);
        assert_eq!(id, "00000000deadbeef-42");
        assert_eq!(parse_event_id(&id), Some((0xdead_beef, 42)));
        for bad in [
            "",
            "42",
            "abc-1",
            "00000000deadbeef-",
            "00000000deadbeef-x",
            "0000000000000000000-1",
        ] {
            assert_eq!(parse_event_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn backend_ids_and_retry_are_replaced_by_the_gateways() {
        let f = Frame::parse(
            b"id: backend-7\r\nretry: 5\r\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n",
        );
        assert_eq!(f.backend_id.as_deref(), Some("backend-7"));
        assert_eq!(f.data, b"{\"a\":\n1}");
        assert_eq!(
            &f.with_id("g-1")[..],
            b"id: g-1\nevent: message\ndata: {\"a\":\ndata: 1}\n\n"
        );
        assert!(f.carries_message());
        let priming = Frame::parse(b"id: 0\nretry: 1000\ndata: \n\n");
        assert!(!priming.carries_message());
        assert!(!Frame::parse(b": ping\n\n").carries_message());
    }

    #[test]
    fn buffered_answers_lose_the_backends_ids_and_priming() {
        let body = b"id: backend-1\r\ndata: \r\nretry: 300\r\n\r\nid: backend-2\r\nevent: message\r\ndata: {\"id\":0}\r\n\r\n";
        assert_eq!(
            &without_backend_ids(body)[..],
            b"event: message\ndata: {\"id\":0}\n\n"
        );
    }

    #[test]
    fn responses_are_told_from_requests_and_notifications() {
        let r = |s: &str| Frame::parse(format!("data: {s}\n\n").as_bytes()).is_response();
        assert!(r(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(r(
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}"#
        ));
        assert!(!r(
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#
        ));
        assert!(!r(
            r#"{"jsonrpc":"2.0","id":9,"method":"elicitation/create","params":{}}"#
        ));
        assert!(!r("not json"));
    }

    #[test]
    fn priming_starts_at_2025_11_25() {
        assert!(primes("2025-11-25") && primes("2026-07-28"));
        assert!(!primes("2025-06-18") && !primes("2025-03-26"));
    }

    #[tokio::test]
    async fn a_stream_is_found_only_under_its_own_session() {
        let registry = Resume::new(crate::metrics::scratch(StreamMetrics::register), None);
        let a: Arc<str> = "session-a".into();
        let log = registry.start(&a, None, true);
        log.push(|seq| message_event(&event_id(log.token, seq), b"{}"));
        let id = event_id(log.token, 0);
        assert!(registry.find_local("session-a", &id).is_ok());
        assert_eq!(
            registry.find_local("session-b", &id).err(),
            Some(Refusal::Unknown)
        );
        let never = event_id(log.token, 5);
        assert_eq!(
            registry.find_local("session-a", &never).err(),
            Some(Refusal::Unknown)
        );
        assert_eq!(
            registry.find_local("session-a", "7").err(),
            Some(Refusal::Unknown)
        );
    }
}
