//! What streams keep in the session store beside the sessions, so that any replica serves
//! them: [`StreamStore`], the events of every stream written through (a reconnecting client's
//! `Last-Event-ID` replayed on another replica), each session's list of held streams, and
//! [`StreamFollower`], a held stream read live as its holder writes it. `stream/` reaches it
//! only through this interface; how it lies in the store is the store's (`redis/events.rs`,
//! `redis/held.rs`). The stream lease is the [`SessionStore`](super::SessionStore)'s own
//! (`lease.rs`).
//!
//! The memory store has none: one process holds every session and every stream, which it
//! replays from its own memory, so `Streams` is given no `StreamStore` with it.

use super::StoreError;
use async_trait::async_trait;
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;

/// How often a writing replica says it is alive; a writer silent for three of these is dead.
pub const ALIVE_EVERY: Duration = Duration::from_secs(1);

/// One event of a stream, to write through.
pub struct StoredEvent {
    /// The stream's session.
    pub session: Arc<str>,
    /// The stream's token (its gateway event ids are `<token>-<seq>`).
    pub token: u64,
    /// The event's sequence number in its stream.
    pub seq: u64,
    /// The event's frame, as the client reads it.
    pub event: Bytes,
    /// The id of the request the stream answers (raw JSON), for an answer's stream.
    pub request: Option<Arc<str>>,
    /// The backend's own id of the event, if it gave one (a takeover resumes from it).
    pub backend: Option<Arc<str>>,
}

/// One entry of a stream read back from the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamEntry {
    /// The event's sequence number (for the end mark: the one after the last event).
    pub seq: u64,
    /// The event's frame (`None` for the end mark).
    pub event: Option<Bytes>,
    /// The replica that wrote it.
    pub writer: String,
    /// The id of the request the stream answers (raw JSON), if it answers one.
    pub request: Option<String>,
    /// The backend's own id of the event.
    pub backend: Option<String>,
    /// The stream's end mark.
    pub end: bool,
}

/// Streams kept in a store shared by replicas.
#[async_trait]
pub trait StreamStore: Send + Sync {
    /// Applies `sessions.resume` bounds: how long a stream is kept after its last write, and
    /// about how many events of it.
    fn configure(&self, window: Duration, max_events: usize);
    /// Queues an event for writing, in order and off the relaying path (a full queue drops
    /// it, once logged per outage).
    fn write(&self, event: StoredEvent);
    /// Queues a stream's end after its events (`next_seq`: the sequence number after the
    /// last event).
    fn end(&self, session: &Arc<str>, token: u64, next_seq: u64);
    /// The first and the last entry of stream `token` of `session`; `None` when none is kept.
    async fn first_and_last(
        &self,
        session: &str,
        token: u64,
    ) -> Result<Option<(StreamEntry, StreamEntry)>, StoreError>;
    /// Up to `count` entries of stream `token` after sequence number `after`, oldest first.
    async fn after(
        &self,
        session: &str,
        token: u64,
        after: u64,
        count: usize,
    ) -> Result<Vec<StreamEntry>, StoreError>;
    /// The last `count` entries of stream `token`, newest first.
    async fn newest(
        &self,
        session: &str,
        token: u64,
        count: usize,
    ) -> Result<Vec<StreamEntry>, StoreError>;
    /// Whether replica `writer` said it was alive in the last three [`ALIVE_EVERY`].
    async fn writer_alive(&self, writer: &str) -> bool;
    /// Appends stream `token` to the session's held streams (newest last, the last 16 kept,
    /// kept while this replica holds it and a window after); `resumed`: it began with the
    /// backend's replay after its own id of the previous stream's last recorded event.
    async fn register_held(
        &self,
        session: &str,
        token: u64,
        resumed: bool,
    ) -> Result<(), StoreError>;
    /// This replica no longer holds the session's stream (its list expires a window later).
    fn held_ended(&self, session: &str);
    /// The session's held streams, oldest first, each with whether it was resumed.
    async fn held_streams(&self, session: &str) -> Result<Vec<(u64, bool)>, StoreError>;
    /// A reader of its own for waiting on a held stream's next events.
    async fn follower(&self) -> Result<Box<dyn StreamFollower>, StoreError>;
}

/// Waits on a stream's next events (its own connection: a wait holds it up).
#[async_trait]
pub trait StreamFollower: Send {
    /// Up to `count` entries of stream `token` of `session` after sequence number `after`
    /// (`None`: from its start), waiting at most `block` for the first.
    async fn wait(
        &mut self,
        session: &str,
        token: u64,
        after: Option<u64>,
        count: usize,
        block: Duration,
    ) -> Result<Vec<StreamEntry>, StoreError>;
}
