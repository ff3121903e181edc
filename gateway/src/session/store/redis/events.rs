//! Stream events in Redis, so a client that reconnects to another gateway replica can resume.
//!
//! Each gateway stream is a Redis stream `<prefix>{<session>}:ev:<token>` in its session's
//! slot: entry `<seq>-1` holds event `seq` (field `e`) and the replica writing it (field `r`);
//! the entry after the last event carries `end`. Entries are capped (`MAXLEN ~ max-events`)
//! and the key expires `window` after its last write (refreshed while the stream is live).
//!
//! Writes go through one background task per replica, in order, off the relaying path: the
//! client on this replica reads its events from memory without waiting for Redis. A reader on
//! another replica polls (`XRANGE`, 50–250 ms apart: a blocking read would hold the shared
//! connection) and gives up on a stream whose writer stopped refreshing its liveness key
//! `<prefix>replica:<id>` (the writing replica died): it ends with -32013, outcome unknown.

use super::{event_id, message_event, Refusal, StreamLog};
use crate::error::GatewayError;
use crate::session::store::{RedisStore, StoreError};
use bytes::Bytes;
use dashmap::DashMap;
use redis::Value;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Writes queued for Redis before new ones are dropped (and counted as errors).
const QUEUE: usize = 16 * 1024;
/// How often this replica says it is alive; a writer silent for three of these is dead.
const ALIVE_EVERY: Duration = Duration::from_secs(1);

enum Write {
    Event {
        session: Arc<str>,
        token: u64,
        seq: u64,
        event: Bytes,
        request: Option<Arc<str>>,
        /// The backend's own id of the event, if it gave one (a takeover resumes from it).
        backend: Option<Arc<str>>,
    },
    End {
        session: Arc<str>,
        token: u64,
        next_seq: u64,
    },
}

/// This replica's writer and the readers of other replicas' streams.
pub struct RedisEvents {
    pub(super) store: Arc<RedisStore>,
    tx: mpsc::Sender<Write>,
    replica: String,
    window_ms: AtomicU64,
    max_events: AtomicUsize,
    /// Streams written right now (their keys' lifetimes are refreshed).
    live: DashMap<String, ()>,
    /// Sessions' lists of held streams this replica holds (refreshed likewise).
    pub(super) held_live: DashMap<String, ()>,
    /// The writer's queue until its task starts (on first use, inside the runtime).
    rx: std::sync::Mutex<Option<mpsc::Receiver<Write>>>,
}

impl RedisEvents {
    /// Events kept in `store`'s Redis; the writer starts with the first write.
    pub fn new(store: Arc<RedisStore>) -> Arc<RedisEvents> {
        let (tx, rx) = mpsc::channel(QUEUE);
        Arc::new(RedisEvents {
            store,
            tx,
            replica: format!("{:016x}", rand::random::<u64>()),
            window_ms: AtomicU64::new(60_000),
            max_events: AtomicUsize::new(1000),
            live: DashMap::new(),
            held_live: DashMap::new(),
            rx: std::sync::Mutex::new(Some(rx)),
        })
    }

    /// Starts the writer and liveness tasks once (inside the runtime).
    fn started(self: &Arc<Self>) {
        let rx = crate::sync::lock(&self.rx).take();
        if let Some(rx) = rx {
            tokio::spawn(write_loop(Arc::downgrade(self), rx));
            tokio::spawn(alive_loop(Arc::downgrade(self)));
        }
    }

    /// Applies `sessions.resume` bounds.
    pub fn configure(&self, window: Duration, max_events: usize) {
        self.window_ms
            .store(window.as_millis() as u64, Ordering::Relaxed);
        self.max_events.store(max_events, Ordering::Relaxed);
    }

    pub(super) fn window_ms(&self) -> u64 {
        self.window_ms.load(Ordering::Relaxed)
    }

    pub(super) fn key(&self, session: &str, token: u64) -> String {
        self.store.session_key(session, &format!("ev:{token:016x}"))
    }

    fn alive_key(&self, replica: &str) -> String {
        self.store.plain_key(&format!("replica:{replica}"))
    }

    fn send(self: &Arc<Self>, write: Write) {
        self.started();
        if self.tx.try_send(write).is_err() {
            crate::quiet::STORE.failed("stream events not written to Redis", &"the queue is full");
        }
    }

    /// Queues event `seq` of a stream, with the backend's own id of it if it gave one.
    pub fn write(self: &Arc<Self>, log: &StreamLog, seq: u64, event: Bytes, backend: Option<&str>) {
        self.send(Write::Event {
            session: log.session.clone(),
            token: log.token,
            seq,
            event,
            request: log.request.clone(),
            backend: backend.map(Arc::from),
        });
    }

    /// Queues a stream's end.
    pub fn end(self: &Arc<Self>, log: &StreamLog) {
        self.send(Write::End {
            session: log.session.clone(),
            token: log.token,
            next_seq: log.next_seq(),
        });
    }

    async fn apply(&self, write: Write) -> Result<(), StoreError> {
        let window = self.window_ms.load(Ordering::Relaxed);
        let mut pipe = redis::pipe();
        match write {
            Write::Event {
                session,
                token,
                seq,
                event,
                request,
                backend,
            } => {
                let key = self.key(&session, token);
                let cap = self.max_events.load(Ordering::Relaxed);
                let xadd = pipe.cmd("XADD");
                xadd.arg(&key)
                    .arg("MAXLEN")
                    .arg("~")
                    .arg(cap)
                    .arg(format!("{seq}-1"))
                    .arg("e")
                    .arg(&event[..])
                    .arg("r")
                    .arg(&self.replica);
                if let Some(request) = &request {
                    xadd.arg("q").arg(&**request);
                }
                if let Some(backend) = &backend {
                    xadd.arg("b").arg(&**backend);
                }
                xadd.ignore();
                pipe.cmd("PEXPIRE").arg(&key).arg(window).ignore();
                self.live.insert(key, ());
            }
            Write::End {
                session,
                token,
                next_seq,
            } => {
                let key = self.key(&session, token);
                pipe.cmd("XADD")
                    .arg(&key)
                    .arg(format!("{next_seq}-1"))
                    .arg("end")
                    .arg("1")
                    .ignore();
                pipe.cmd("PEXPIRE").arg(&key).arg(window).ignore();
                self.live.remove(&key);
            }
        }
        self.store.run::<()>(&pipe).await
    }

    /// A reader of `session`'s stream after `last_event_id`, or why there is none.
    pub async fn reader(
        self: &Arc<Self>,
        session: &str,
        last_event_id: &str,
    ) -> Result<Result<RemoteReader, Refusal>, GatewayError> {
        let Some((token, seq)) = super::parse_event_id(last_event_id) else {
            return Ok(Err(Refusal::Unknown));
        };
        let key = self.key(session, token);
        let mut pipe = redis::pipe();
        pipe.cmd("XRANGE")
            .arg(&key)
            .arg("-")
            .arg("+")
            .arg("COUNT")
            .arg(1);
        pipe.cmd("XREVRANGE")
            .arg(&key)
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1);
        let (first, last): (Vec<Entry>, Vec<Entry>) = self.store.run(&pipe).await?;
        let (Some(first), Some(last)) = (first.first(), last.first()) else {
            return Ok(Err(Refusal::Unknown));
        };
        let issued = if last.end { last.seq } else { last.seq + 1 };
        if seq >= issued {
            return Ok(Err(Refusal::Unknown));
        }
        if first.seq > seq + 1 {
            return Ok(Err(Refusal::Evicted));
        }
        Ok(Ok(RemoteReader {
            events: self.clone(),
            session: session.into(),
            key,
            token,
            cursor: seq,
            owner: first.owner.clone(),
            request: first.request.clone(),
            queue: VecDeque::new(),
            done: false,
            backlog: issued - seq - 1,
            quiet: Duration::ZERO,
        }))
    }

    async fn alive(&self, replica: &str) -> bool {
        let mut pipe = redis::pipe();
        pipe.cmd("EXISTS").arg(self.alive_key(replica));
        matches!(self.store.run::<(i64,)>(&pipe).await, Ok((1,)))
    }
}

async fn write_loop(events: std::sync::Weak<RedisEvents>, mut rx: mpsc::Receiver<Write>) {
    // one WARN per outage of the store (`quiet::STORE`), not one per event
    while let Some(write) = rx.recv().await {
        let Some(events) = events.upgrade() else {
            return;
        };
        if let Err(e) = events.apply(write).await {
            crate::quiet::STORE.failed("a stream event was not written to Redis", &e);
        }
    }
}

/// Says this replica is alive and keeps its live streams' keys from expiring.
async fn alive_loop(events: std::sync::Weak<RedisEvents>) {
    let mut tick = tokio::time::interval(ALIVE_EVERY);
    loop {
        tick.tick().await;
        let Some(events) = events.upgrade() else {
            return;
        };
        let ttl = 3 * ALIVE_EVERY.as_millis() as u64;
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(events.alive_key(&events.replica))
            .arg(1)
            .arg("PX")
            .arg(ttl)
            .ignore();
        let _ = events.store.run::<()>(&pipe).await;
        let window = events.window_ms.load(Ordering::Relaxed);
        let mut keys: Vec<String> = events.live.iter().map(|k| k.key().clone()).collect();
        keys.extend(events.held_live.iter().map(|k| k.key().clone()));
        for key in keys {
            // one key per pipeline: keys of different sessions live in different cluster slots
            let mut pipe = redis::pipe();
            pipe.cmd("PEXPIRE").arg(&key).arg(window).ignore();
            let _ = events.store.run::<()>(&pipe).await;
        }
    }
}

/// One stream entry.
pub(super) struct Entry {
    pub(super) seq: u64,
    pub(super) event: Option<Bytes>,
    owner: String,
    request: Option<String>,
    /// The backend's own id of the event.
    pub(super) backend: Option<String>,
    pub(super) end: bool,
}

impl redis::FromRedisValue for Entry {
    fn from_redis_value(v: Value) -> Result<Self, redis::ParsingError> {
        let (id, fields): (String, Vec<(String, Vec<u8>)>) = redis::from_redis_value(v)?;
        let seq = id
            .split_once('-')
            .and_then(|(s, _)| s.parse().ok())
            .ok_or_else(|| redis::ParsingError::from("not a gateway stream entry"))?;
        let mut entry = Entry {
            seq,
            event: None,
            owner: String::new(),
            request: None,
            backend: None,
            end: false,
        };
        for (name, value) in fields {
            match name.as_str() {
                "e" => entry.event = Some(Bytes::from(value)),
                "r" => entry.owner = String::from_utf8_lossy(&value).into_owned(),
                "q" => entry.request = Some(String::from_utf8_lossy(&value).into_owned()),
                "b" => entry.backend = Some(String::from_utf8_lossy(&value).into_owned()),
                "end" => entry.end = true,
                _ => {}
            }
        }
        Ok(entry)
    }
}

/// Reads a stream another replica writes, from Redis.
pub struct RemoteReader {
    events: Arc<RedisEvents>,
    session: Arc<str>,
    key: String,
    token: u64,
    /// The last sequence number handed out.
    cursor: u64,
    owner: String,
    request: Option<String>,
    queue: VecDeque<Bytes>,
    done: bool,
    backlog: u64,
    quiet: Duration,
}

impl RemoteReader {
    /// Events already written when the reader was made (replayed rather than live).
    pub fn backlog(&self) -> u64 {
        self.backlog
    }

    /// The next event; `None` at the end. A stream whose writer died ends with -32013.
    pub async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            if self.done {
                return None;
            }
            match self.fetch().await {
                Ok(true) => self.quiet = Duration::ZERO,
                Ok(false) => {
                    if self.quiet >= 3 * ALIVE_EVERY && !self.events.alive(&self.owner).await {
                        self.writer_died();
                        continue;
                    }
                    let pause = Duration::from_millis(50 + 50 * self.quiet.as_secs().min(4));
                    tokio::time::sleep(pause).await;
                    self.quiet += pause;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "reading stream events from Redis failed");
                    self.writer_died();
                }
            }
        }
    }

    /// Reads what follows the cursor; whether anything came.
    async fn fetch(&mut self) -> Result<bool, StoreError> {
        let mut pipe = redis::pipe();
        pipe.cmd("XRANGE")
            .arg(&self.key)
            .arg(format!("({}-1", self.cursor))
            .arg("+")
            .arg("COUNT")
            .arg(100);
        let (entries,): (Vec<Entry>,) = self.events.store.run(&pipe).await?;
        let got = !entries.is_empty();
        for entry in entries {
            if entry.end {
                self.done = true;
                break;
            }
            self.cursor = entry.seq;
            if let Some(event) = entry.event {
                self.queue.push_back(event);
            }
        }
        Ok(got)
    }

    /// The replica writing the stream is gone: the answer's outcome is unknown.
    fn writer_died(&mut self) {
        let err = GatewayError::backend_lost("gateway", "the replica relaying this answer")
            .with("session", crate::session::short(&self.session));
        let id = event_id(self.token, self.cursor + 1);
        let request = self
            .request
            .as_deref()
            .and_then(mcp_wire::RequestId::from_json);
        let body = err.body(&request.unwrap_or_else(mcp_wire::RequestId::null));
        self.queue.push_back(message_event(&id, &body));
        self.done = true;
    }
}
