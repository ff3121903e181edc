//! A session's held stream read from another replica, through the shared store
//! ([`StreamStore`]).
//!
//! The replica holding the session's stream lease (`owner.rs`) keeps the backend's standalone
//! GET and writes its events, like every stream's, through to the store; it also appends the
//! stream's token to the session's list of held streams there (`owner.rs` `announce`). A
//! client GET on any other replica follows that list:
//! - it reads the newest held stream live, waiting on the store's next entries with a
//!   [`StreamFollower`] of its own (an event reaches it about one store round trip after its
//!   holder wrote it), with the gateway's own event ids;
//! - with `Last-Event-ID` it starts after that event, in that stream, and goes on into the
//!   streams that followed it (a takeover, a move), so nothing after it is missed or repeated;
//! - when nothing came for [`BLOCK`] it asks for the lease: a holder that died has stopped
//!   renewing it, so after its expiry this replica takes it over and opens the backend's GET
//!   itself (`Streams::take_over`), and the reader goes on into the new stream.

use super::Streams;
use crate::session::short;
use crate::session::store::{StoreError, StreamFollower, StreamStore};
use crate::session::SessionRecord;
use crate::upstream::Pool;
use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

/// How long one blocking read waits before the reader looks for a newer stream or a lease.
pub(super) const BLOCK: Duration = Duration::from_millis(500);
/// Failed reads in a row before the client's stream is ended (it reconnects).
const MAX_FAILURES: u32 = 6;

/// The tokens of the session's held streams, oldest first.
pub(super) async fn held_tokens(
    store: &dyn StreamStore,
    session: &str,
) -> Result<Vec<u64>, StoreError> {
    Ok(store
        .held_streams(session)
        .await?
        .into_iter()
        .map(|(t, _)| t)
        .collect())
}

/// The backend's own id of the last event of held stream `token` that had one (among its last
/// 20), to resume the backend's stream from after a takeover.
pub(super) async fn last_backend_id(
    store: &dyn StreamStore,
    session: &str,
    token: u64,
) -> Option<String> {
    let entries = store.newest(session, token, 20).await.ok()?;
    entries.into_iter().find_map(|e| e.backend)
}

/// The sequence number of the last event of stream `token` kept in the store.
pub(super) async fn last_seq(store: &dyn StreamStore, session: &str, token: u64) -> Option<u64> {
    let last = store
        .newest(session, token, 1)
        .await
        .ok()?
        .into_iter()
        .next()?;
    Some(if last.end {
        last.seq.saturating_sub(1)
    } else {
        last.seq
    })
}

/// A client GET following a session's held streams through the shared store.
pub struct SharedReader {
    streams: Arc<Streams>,
    pool: Arc<Pool>,
    rec: SessionRecord,
    store: Arc<dyn StreamStore>,
    follower: Option<Box<dyn StreamFollower>>,
    /// The held stream read now (`None` until one exists).
    token: Option<u64>,
    /// The last sequence number handed out of it (`None`: none yet, read from its start).
    cursor: Option<u64>,
    /// Its end was read.
    ended: bool,
    queue: VecDeque<Bytes>,
    failures: u32,
    done: bool,
    /// Messages the client has of the current stream beyond what the store kept of it.
    ahead: u64,
    /// Messages of the current stream to skip: the backend's replay of those.
    skip: u64,
}

impl SharedReader {
    /// A reader from the start of the newest held stream (`from: None`), or after event
    /// `seq` of held stream `token`.
    pub(super) fn new(
        streams: Arc<Streams>,
        pool: Arc<Pool>,
        rec: SessionRecord,
        store: Arc<dyn StreamStore>,
        from: Option<(u64, u64)>,
    ) -> SharedReader {
        SharedReader {
            streams,
            pool,
            rec,
            store,
            follower: None,
            token: from.map(|f| f.0),
            cursor: from.map(|f| f.1),
            ended: false,
            queue: VecDeque::new(),
            failures: 0,
            done: false,
            ahead: 0,
            skip: 0,
        }
    }

    /// The client has `n` messages of its stream that the store lacks (see `resume_shared`).
    pub(super) fn ahead(mut self, n: u64) -> SharedReader {
        self.ahead = n;
        self
    }

    /// The next event; `None` when the session's stream is over (or the store failed for good).
    pub async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.step().await {
                self.failures += 1;
                tracing::debug!(session = short(&self.rec.id), error = %e, "reading a held stream from the store failed");
                if self.failures >= MAX_FAILURES {
                    self.done = true;
                } else {
                    self.follower = None;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }

    async fn step(&mut self) -> Result<(), StoreError> {
        let Some(token) = self.token else {
            match held_tokens(&*self.store, &self.rec.id).await?.last() {
                Some(&newest) => self.token = Some(newest),
                None => {
                    // nobody holds the stream (or its holder has not said so yet)
                    if !self.streams.take_over(&self.pool, &self.rec).await {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
            return Ok(());
        };
        if !self.ended && self.read(token).await? {
            self.failures = 0;
            return Ok(());
        }
        // nothing for BLOCK, or the stream ended: a newer held stream, or take it over
        if self.newer(token).await? {
            return Ok(());
        }
        let taken = self.streams.take_over(&self.pool, &self.rec).await;
        if taken && self.newer(token).await? {
            return Ok(());
        }
        if self.ended && !taken {
            // the stream ended and none follows: the client's GET ends (it may reconnect)
            self.done = true;
        }
        Ok(())
    }

    /// Moves on to the stream after `token` in the session's list, if there is one.
    async fn newer(&mut self, token: u64) -> Result<bool, StoreError> {
        let streams = self.store.held_streams(&self.rec.id).await?;
        let known = streams.iter().any(|(t, _)| *t == token);
        let next = streams
            .iter()
            .position(|(t, _)| *t == token)
            .and_then(|i| streams.get(i + 1))
            .or_else(|| streams.last().filter(|_| !known));
        match next {
            Some(&(next, resumed)) => {
                self.token = Some(next);
                self.cursor = None;
                self.ended = false;
                // a stream resumed from the backend's own id starts with what the client may
                // have had from its holder's memory already
                self.skip = if resumed { self.ahead } else { 0 };
                self.ahead = 0;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// One blocking read of stream `token` after the cursor; whether anything came.
    async fn read(&mut self, token: u64) -> Result<bool, StoreError> {
        let follower = match self.follower.take() {
            Some(follower) => follower,
            None => self.store.follower().await?,
        };
        let follower = self.follower.insert(follower);
        let entries = follower
            .wait(&self.rec.id, token, self.cursor, 100, BLOCK)
            .await?;
        let got = !entries.is_empty();
        for entry in entries {
            if entry.end {
                self.ended = true;
                break;
            }
            self.cursor = Some(entry.seq);
            if let Some(event) = entry.event {
                if self.skip > 0 && super::Frame::parse(&event).carries_message() {
                    self.skip -= 1;
                    continue;
                }
                self.queue.push_back(event);
            }
        }
        Ok(got)
    }
}
