//! A session's held stream read from another replica (the Redis store).
//!
//! The replica holding the session's stream lease (`owner.rs`) keeps the backend's standalone
//! GET and writes its events, like every stream's, to the Redis stream of its token
//! (`redis.rs`); it also appends the token to the session's list of held streams,
//! `<prefix>{<session>}:held` (newest last, the last 16 kept, expiring `window` after its
//! holder stopped refreshing it). A client GET on any other replica follows that list:
//! - it reads the newest held stream live, on a Redis connection of its own (`XREAD BLOCK`,
//!   so an event reaches it about one Redis round trip after its holder wrote it), with the
//!   gateway's own event ids;
//! - with `Last-Event-ID` it starts after that event, in that stream, and goes on into the
//!   streams that followed it (a takeover, a move), so nothing after it is missed or repeated;
//! - when nothing came for [`BLOCK`] it asks for the lease: a holder that died has stopped
//!   renewing it, so after its expiry this replica takes it over and opens the backend's GET
//!   itself (`Streams::take_over`), and the reader goes on into the new stream.

use super::redis::{Entry, RedisEvents};
use super::Streams;
use crate::session::short;
use crate::session::store::{Blocking, StoreError};
use crate::session::SessionRecord;
use crate::upstream::Pool;
use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

/// How long one blocking read waits before the reader looks for a newer stream or a lease.
pub(super) const BLOCK: Duration = Duration::from_millis(500);
/// Held streams kept per session in its list.
const KEPT: i64 = 16;
/// Failed reads in a row before the client's stream is ended (it reconnects).
const MAX_FAILURES: u32 = 6;

impl RedisEvents {
    fn held_key(&self, session: &str) -> String {
        self.store.session_key(session, "held")
    }

    /// Appends `token` to the session's held streams (awaited: a client GET on another
    /// replica finds it as soon as the caller goes on).
    /// `resumed`: the stream began with the backend's replay after its own id of the previous
    /// stream's last recorded event (marked `+` in the list).
    pub(super) async fn register_held(
        &self,
        session: &str,
        token: u64,
        resumed: bool,
    ) -> Result<(), StoreError> {
        let key = self.held_key(session);
        let mut pipe = redis::pipe();
        let mark = if resumed { "+" } else { "" };
        pipe.cmd("RPUSH")
            .arg(&key)
            .arg(format!("{token:016x}{mark}"))
            .ignore();
        pipe.cmd("LTRIM").arg(&key).arg(-KEPT).arg(-1).ignore();
        pipe.cmd("PEXPIRE").arg(&key).arg(self.window_ms()).ignore();
        self.store.run::<()>(&pipe).await?;
        self.held_live.insert(key, ());
        Ok(())
    }

    /// This replica no longer holds the session's stream (the list expires `window` later).
    pub(super) fn held_ended(&self, session: &str) {
        self.held_live.remove(&self.held_key(session));
    }

    /// The backend's own id of the last event of held stream `token` that had one (among its
    /// last 20), to resume the backend's stream from after a takeover.
    pub(super) async fn last_backend_id(&self, session: &str, token: u64) -> Option<String> {
        let mut pipe = redis::pipe();
        pipe.cmd("XREVRANGE")
            .arg(self.key(session, token))
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(20);
        let (entries,): (Vec<Entry>,) = self.store.run(&pipe).await.ok()?;
        entries.into_iter().find_map(|e| e.backend)
    }

    /// The tokens of the session's held streams, oldest first.
    pub(super) async fn held_tokens(&self, session: &str) -> Result<Vec<u64>, StoreError> {
        Ok(self
            .held_streams(session)
            .await?
            .into_iter()
            .map(|(t, _)| t)
            .collect())
    }

    /// The session's held streams, oldest first, each with whether it was resumed.
    async fn held_streams(&self, session: &str) -> Result<Vec<(u64, bool)>, StoreError> {
        let mut pipe = redis::pipe();
        pipe.cmd("LRANGE")
            .arg(self.held_key(session))
            .arg(0)
            .arg(-1);
        let (tokens,): (Vec<String>,) = self.store.run(&pipe).await?;
        Ok(tokens
            .iter()
            .filter_map(|t| {
                let (hex, resumed) = match t.strip_suffix('+') {
                    Some(hex) => (hex, true),
                    None => (t.as_str(), false),
                };
                Some((u64::from_str_radix(hex, 16).ok()?, resumed))
            })
            .collect())
    }

    /// The sequence number of the last event of stream `token` kept in Redis.
    pub(super) async fn last_seq(&self, session: &str, token: u64) -> Option<u64> {
        let mut pipe = redis::pipe();
        pipe.cmd("XREVRANGE")
            .arg(self.key(session, token))
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1);
        let (entries,): (Vec<Entry>,) = self.store.run(&pipe).await.ok()?;
        let last = entries.into_iter().next()?;
        Some(if last.end {
            last.seq.saturating_sub(1)
        } else {
            last.seq
        })
    }
}

/// What `XREAD` answers: per stream key, its entries.
type XreadReply = Vec<(String, Vec<Entry>)>;

/// A client GET following a session's held streams through Redis.
pub struct SharedReader {
    streams: Arc<Streams>,
    pool: Arc<Pool>,
    rec: SessionRecord,
    events: Arc<RedisEvents>,
    conn: Option<Blocking>,
    /// The held stream read now (`None` until one exists).
    token: Option<u64>,
    /// The last sequence number handed out of it (`None`: none yet, read from its start).
    cursor: Option<u64>,
    /// Its end was read.
    ended: bool,
    queue: VecDeque<Bytes>,
    failures: u32,
    done: bool,
    /// Messages the client has of the current stream beyond what Redis kept of it.
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
        events: Arc<RedisEvents>,
        from: Option<(u64, u64)>,
    ) -> SharedReader {
        SharedReader {
            streams,
            pool,
            rec,
            events,
            conn: None,
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

    /// The client has `n` messages of its stream that Redis lacks (see `resume_shared`).
    pub(super) fn ahead(mut self, n: u64) -> SharedReader {
        self.ahead = n;
        self
    }

    /// The next event; `None` when the session's stream is over (or Redis failed for good).
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
                tracing::debug!(session = short(&self.rec.id), error = %e, "reading a held stream from Redis failed");
                if self.failures >= MAX_FAILURES {
                    self.done = true;
                } else {
                    self.conn = None;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }

    async fn step(&mut self) -> Result<(), StoreError> {
        let Some(token) = self.token else {
            match self.events.held_tokens(&self.rec.id).await?.last() {
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
        let streams = self.events.held_streams(&self.rec.id).await?;
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
        if self.conn.is_none() {
            self.conn = Some(self.events.store.blocking().await?);
        }
        let after = match self.cursor {
            Some(seq) => format!("{seq}-1"),
            None => "0-0".to_owned(),
        };
        let mut pipe = redis::pipe();
        pipe.cmd("XREAD")
            .arg("COUNT")
            .arg(100)
            .arg("BLOCK")
            .arg(BLOCK.as_millis() as u64)
            .arg("STREAMS")
            .arg(self.events.key(&self.rec.id, token))
            .arg(after);
        let conn = self.conn.as_mut().expect("connected above");
        let (reply,): (Option<XreadReply>,) = conn.run(&pipe, BLOCK).await?;
        let entries: Vec<Entry> = reply
            .into_iter()
            .flatten()
            .flat_map(|(_, entries)| entries)
            .collect();
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
