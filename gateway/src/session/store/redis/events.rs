//! Stream events in Redis (the [`StreamStore`] of the Redis store), so a client that
//! reconnects to another gateway replica can resume.
//!
//! Each gateway stream is a Redis stream `<prefix>{<session>}:ev:<token>` in its session's
//! slot: entry `<seq>-1` holds event `seq` (field `e`), the replica writing it (field `r`), the
//! request it answers (`q`) and the backend's own id of it (`b`); the entry after the last
//! event carries `end`. Entries are capped (`MAXLEN ~ max-events`) and the key expires
//! `window` after its last write (refreshed while the stream is live).
//!
//! Writes go through one background task per replica, in order, off the relaying path: the
//! client on this replica reads its events from memory without waiting for Redis. Every
//! [`ALIVE_EVERY`] the replica sets its liveness key `<prefix>replica:<id>` (expiring after
//! three), by which a reader on another replica knows that a silent stream's writer died.
//! The sessions' lists of held streams are `held.rs`.

use super::entry::Entry;
use super::RedisStore;
use crate::session::store::streams::{
    StoredEvent, StreamEntry, StreamFollower, StreamStore, ALIVE_EVERY,
};
use crate::session::store::StoreError;
use async_trait::async_trait;
use dashmap::DashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::mpsc;

/// Writes queued for Redis before new ones are dropped (and counted as errors).
const QUEUE: usize = 16 * 1024;

enum Write {
    Event(StoredEvent),
    End {
        session: Arc<str>,
        token: u64,
        next_seq: u64,
    },
}

/// This replica's writer of stream events, and their reader.
pub struct RedisEvents {
    pub(super) store: Arc<RedisStore>,
    /// Itself, for the background tasks it starts.
    me: Weak<RedisEvents>,
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
        Arc::new_cyclic(|me| RedisEvents {
            store,
            me: me.clone(),
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
    fn started(&self) {
        let rx = crate::sync::lock(&self.rx).take();
        if let Some(rx) = rx {
            tokio::spawn(write_loop(self.me.clone(), rx));
            tokio::spawn(alive_loop(self.me.clone()));
        }
    }

    pub(super) fn window_ms(&self) -> u64 {
        self.window_ms.load(Ordering::Relaxed)
    }

    fn key(&self, session: &str, token: u64) -> String {
        self.store.event_key(session, token)
    }

    fn alive_key(&self, replica: &str) -> String {
        self.store.plain_key(&format!("replica:{replica}"))
    }

    fn send(&self, write: Write) {
        self.started();
        if self.tx.try_send(write).is_err() {
            crate::quiet::STORE.failed("stream events not written to Redis", &"the queue is full");
        }
    }

    async fn apply(&self, write: Write) -> Result<(), StoreError> {
        let window = self.window_ms.load(Ordering::Relaxed);
        let mut pipe = redis::pipe();
        match write {
            Write::Event(StoredEvent {
                session,
                token,
                seq,
                event,
                request,
                backend,
            }) => {
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
}

#[async_trait]
impl StreamStore for RedisEvents {
    fn configure(&self, window: Duration, max_events: usize) {
        self.window_ms
            .store(window.as_millis() as u64, Ordering::Relaxed);
        self.max_events.store(max_events, Ordering::Relaxed);
    }

    fn write(&self, event: StoredEvent) {
        self.send(Write::Event(event));
    }

    fn end(&self, session: &Arc<str>, token: u64, next_seq: u64) {
        self.send(Write::End {
            session: session.clone(),
            token,
            next_seq,
        });
    }

    async fn first_and_last(
        &self,
        session: &str,
        token: u64,
    ) -> Result<Option<(StreamEntry, StreamEntry)>, StoreError> {
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
        let (first, last) = (first.into_iter().next(), last.into_iter().next());
        Ok(first.zip(last).map(|(f, l)| (f.0, l.0)))
    }

    async fn after(
        &self,
        session: &str,
        token: u64,
        after: u64,
        count: usize,
    ) -> Result<Vec<StreamEntry>, StoreError> {
        let mut pipe = redis::pipe();
        pipe.cmd("XRANGE")
            .arg(self.key(session, token))
            .arg(format!("({after}-1"))
            .arg("+")
            .arg("COUNT")
            .arg(count);
        let (entries,): (Vec<Entry>,) = self.store.run(&pipe).await?;
        Ok(entries.into_iter().map(|e| e.0).collect())
    }

    async fn newest(
        &self,
        session: &str,
        token: u64,
        count: usize,
    ) -> Result<Vec<StreamEntry>, StoreError> {
        let mut pipe = redis::pipe();
        pipe.cmd("XREVRANGE")
            .arg(self.key(session, token))
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(count);
        let (entries,): (Vec<Entry>,) = self.store.run(&pipe).await?;
        Ok(entries.into_iter().map(|e| e.0).collect())
    }

    async fn writer_alive(&self, writer: &str) -> bool {
        let mut pipe = redis::pipe();
        pipe.cmd("EXISTS").arg(self.alive_key(writer));
        matches!(self.store.run::<(i64,)>(&pipe).await, Ok((1,)))
    }

    async fn register_held(
        &self,
        session: &str,
        token: u64,
        resumed: bool,
    ) -> Result<(), StoreError> {
        self.register_held_in_redis(session, token, resumed).await
    }

    fn held_ended(&self, session: &str) {
        self.held_live.remove(&self.held_key(session));
    }

    async fn held_streams(&self, session: &str) -> Result<Vec<(u64, bool)>, StoreError> {
        self.held_streams_in_redis(session).await
    }

    async fn follower(&self) -> Result<Box<dyn StreamFollower>, StoreError> {
        let conn = self.store.blocking().await?;
        let store = self.store.clone();
        Ok(Box::new(super::follower::Follower { store, conn }))
    }
}

impl RedisStore {
    /// The key of stream `token` of session `session`, in the session's slot.
    pub(super) fn event_key(&self, session: &str, token: u64) -> String {
        self.session_key(session, &format!("ev:{token:016x}"))
    }
}

async fn write_loop(events: Weak<RedisEvents>, mut rx: mpsc::Receiver<Write>) {
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
async fn alive_loop(events: Weak<RedisEvents>) {
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
