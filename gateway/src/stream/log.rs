//! One relayed stream's events, kept in order with their sequence numbers so a client can
//! read them live and read them again after a reconnect (`Last-Event-ID`).
//!
//! Bounded by events and bytes: the oldest go first, and a resume from before the oldest kept
//! event is refused (`evicted`) rather than replayed with a hole. Readers keep a cursor, so a
//! live reader and a replaying reader of the same stream do not disturb each other.

use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
use tokio::time::Instant;

/// Per-stream bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Events kept.
    pub max_events: usize,
    /// Bytes of events kept.
    pub max_bytes: usize,
}

/// A stream's events and state.
pub struct StreamLog {
    /// The gateway session the stream belongs to.
    pub session: Arc<str>,
    /// The stream's token (the first half of its event ids).
    pub token: u64,
    /// The JSON-RPC id (as JSON text) of the request this stream answers; `None` for a
    /// session's standalone stream.
    pub request: Option<Arc<str>>,
    bounds: Bounds,
    inner: Mutex<Inner>,
    notify: Notify,
    /// Wakes the stream's reading task when its last reader leaves (one stored permit, so
    /// a leave between its check and its wait is not missed).
    detached: Notify,
    /// Wakes the reading task waiting for a lagging reader (one stored permit).
    progress: Notify,
    /// Wakes the tasks waiting for the end ([`StreamLog::until_ended`]), at the end only.
    finished: Notify,
    /// Bytes buffered across every stream of the process (the gauge).
    total: Arc<AtomicUsize>,
}

struct Inner {
    events: VecDeque<(u64, Bytes)>,
    next_seq: u64,
    bytes: usize,
    ended: bool,
    /// Attached readers and the sequence number each reads next: events a reader has not
    /// had are never dropped (the stream's reading task waits instead), so bounds cost a
    /// slow client time, never events.
    readers: Vec<(u64, u64)>,
    next_reader: u64,
    /// When the last reader left (or the stream started without one).
    detached_at: Instant,
}

/// What a read at a cursor found.
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    /// The event with this sequence number.
    Event(u64, Bytes),
    /// Nothing new yet.
    Pending,
    /// The stream ended and the cursor is past its last event.
    Ended,
    /// Events after the cursor were dropped (bounds): the stream cannot continue without a gap.
    Evicted,
}

use crate::sync::lock;

impl StreamLog {
    /// An empty stream of `session`.
    pub fn new(session: Arc<str>, token: u64, bounds: Bounds, total: Arc<AtomicUsize>) -> Self {
        StreamLog {
            session,
            token,
            request: None,
            bounds,
            inner: Mutex::new(Inner {
                events: VecDeque::new(),
                next_seq: 0,
                bytes: 0,
                ended: false,
                readers: Vec::new(),
                next_reader: 0,
                detached_at: Instant::now(),
            }),
            notify: Notify::new(),
            detached: Notify::new(),
            progress: Notify::new(),
            finished: Notify::new(),
            total,
        }
    }

    /// The same stream, answering request `id` (JSON text).
    pub fn answering(mut self, id: Option<Arc<str>>) -> Self {
        self.request = id;
        self
    }

    /// The last event pushed and its sequence number.
    pub fn last(&self) -> Option<(u64, Bytes)> {
        lock(&self.inner).events.back().cloned()
    }

    /// The sequence number the next event gets.
    pub fn next_seq(&self) -> u64 {
        lock(&self.inner).next_seq
    }

    /// Appends an event made by `frame` from its sequence number; drops the oldest beyond the
    /// bounds. Returns the sequence number. Ignored after the end.
    pub fn push(&self, frame: impl FnOnce(u64) -> Bytes) -> Option<u64> {
        let mut inner = lock(&self.inner);
        if inner.ended {
            return None;
        }
        let seq = inner.next_seq;
        let event = frame(seq);
        inner.next_seq += 1;
        inner.bytes += event.len();
        self.total.fetch_add(event.len(), Ordering::Relaxed);
        inner.events.push_back((seq, event));
        self.trim(&mut inner);
        drop(inner);
        self.notify.notify_waiters();
        Some(seq)
    }

    /// Drops the oldest events beyond the bounds that every attached reader has had (the
    /// newest event always stays).
    fn trim(&self, inner: &mut Inner) {
        let floor = inner.readers.iter().map(|r| r.1).min().unwrap_or(u64::MAX);
        while inner.events.len() > 1
            && (inner.events.len() > self.bounds.max_events || inner.bytes > self.bounds.max_bytes)
            && inner.events.front().is_some_and(|(seq, _)| *seq < floor)
        {
            if let Some((_, old)) = inner.events.pop_front() {
                inner.bytes -= old.len();
                self.total.fetch_sub(old.len(), Ordering::Relaxed);
            }
        }
    }

    /// Whether the stream holds more than its bounds (an attached reader lags behind).
    pub fn full(&self) -> bool {
        let inner = lock(&self.inner);
        inner.events.len() > self.bounds.max_events || inner.bytes > self.bounds.max_bytes
    }

    /// Completes when a reader made progress or left (one stored permit).
    pub async fn progressed(&self) {
        self.progress.notified().await;
    }

    /// Ends the stream: readers get what is left, then `Ended`.
    pub fn end(&self) {
        lock(&self.inner).ended = true;
        self.notify.notify_waiters();
        self.finished.notify_waiters();
    }

    /// Completes when the stream has ended (at once if it has): no wake-up before, whatever
    /// the stream carries.
    pub async fn until_ended(&self) {
        loop {
            let finished = self.finished.notified();
            tokio::pin!(finished);
            finished.as_mut().enable();
            if self.ended() {
                return;
            }
            finished.await;
        }
    }

    /// Whether the stream ended.
    pub fn ended(&self) -> bool {
        lock(&self.inner).ended
    }

    /// Since when no reader is attached (`None` while one is).
    pub fn unread_since(&self) -> Option<Instant> {
        let inner = lock(&self.inner);
        inner.readers.is_empty().then_some(inner.detached_at)
    }

    /// Completes when the last reader left (at once if it left since the previous call).
    pub async fn last_reader_left(&self) {
        self.detached.notified().await;
    }

    /// Since when nobody reads the stream, while it keeps events and nobody reads it (what the
    /// gateway-wide bound may drop, `budget.rs`).
    pub fn unread_with_events(&self) -> Option<Instant> {
        let inner = lock(&self.inner);
        (inner.readers.is_empty() && !inner.events.is_empty()).then_some(inner.detached_at)
    }

    /// Drops every kept event while nobody reads the stream (the gateway-wide bound); returns
    /// the bytes freed (0 when a reader attached meanwhile). The stream goes on: later events
    /// are kept again, and a resume from before them is refused as `evicted`, never replayed
    /// with a hole.
    pub fn drop_unread(&self) -> usize {
        let mut inner = lock(&self.inner);
        if !inner.readers.is_empty() {
            return 0;
        }
        let freed = std::mem::take(&mut inner.bytes);
        inner.events.clear();
        self.total.fetch_sub(freed, Ordering::Relaxed);
        freed
    }

    /// Bytes kept.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        lock(&self.inner).bytes
    }

    /// Whether `seq` names an event this stream issued (kept or not).
    pub fn issued(&self, seq: u64) -> bool {
        seq < lock(&self.inner).next_seq
    }

    /// The event at `cursor` (the first with a sequence number ≥ `cursor`).
    pub fn read(&self, cursor: u64) -> Read {
        let inner = lock(&self.inner);
        let first = inner.events.front().map(|(s, _)| *s);
        match first {
            Some(first) if cursor < first => Read::Evicted,
            Some(first) if cursor < inner.next_seq => {
                let (seq, event) = &inner.events[(cursor - first) as usize];
                Read::Event(*seq, event.clone())
            }
            None if cursor < inner.next_seq => Read::Evicted,
            _ if inner.ended => Read::Ended,
            _ => Read::Pending,
        }
    }

    /// A reader from `cursor`, counted as attached while it lives.
    pub fn reader(self: &Arc<Self>, cursor: u64) -> LogReader {
        let id = {
            let mut inner = lock(&self.inner);
            inner.next_reader += 1;
            let id = inner.next_reader;
            inner.readers.push((id, cursor));
            id
        };
        LogReader {
            log: self.clone(),
            cursor,
            id,
        }
    }

    /// Records that reader `id` reads `cursor` next.
    fn advance(&self, id: u64, cursor: u64) {
        let mut inner = lock(&self.inner);
        if let Some(r) = inner.readers.iter_mut().find(|r| r.0 == id) {
            r.1 = cursor;
        }
        self.trim(&mut inner);
        drop(inner);
        self.progress.notify_one();
    }
}

impl Drop for StreamLog {
    fn drop(&mut self) {
        let bytes = lock(&self.inner).bytes;
        self.total.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// A cursor on a stream that waits for new events.
pub struct LogReader {
    log: Arc<StreamLog>,
    cursor: u64,
    id: u64,
}

impl LogReader {
    /// The next event, waiting for it; `None` at the end. Events dropped under a slow reader
    /// are skipped (a live reader cannot be sent back in time).
    pub async fn next(&mut self) -> Option<Bytes> {
        loop {
            let notified = self.log.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.log.read(self.cursor) {
                Read::Event(seq, event) => {
                    // the previous events were handed out: they may go
                    self.log.advance(self.id, seq);
                    self.cursor = seq + 1;
                    return Some(event);
                }
                Read::Ended => return None,
                Read::Evicted => {
                    let first = lock(&self.log.inner).events.front().map(|(s, _)| *s);
                    self.cursor = first.unwrap_or_else(|| self.log.next_seq());
                    continue;
                }
                Read::Pending => notified.await,
            }
        }
    }

    /// The sequence number of the next event this reader returns.
    pub fn cursor(&self) -> u64 {
        self.cursor
    }
}

impl Drop for LogReader {
    fn drop(&mut self) {
        let mut inner = lock(&self.log.inner);
        inner.readers.retain(|r| r.0 != self.id);
        if inner.readers.is_empty() {
            inner.detached_at = Instant::now();
            self.log.detached.notify_one();
        }
        self.log.trim(&mut inner);
        drop(inner);
        self.log.progress.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_log(max_events: usize, max_bytes: usize) -> (Arc<StreamLog>, Arc<AtomicUsize>) {
        let total = Arc::new(AtomicUsize::new(0));
        let bounds = Bounds {
            max_events,
            max_bytes,
        };
        (
            Arc::new(StreamLog::new("s".into(), 7, bounds, total.clone())),
            total,
        )
    }

    fn ev(seq: u64) -> Bytes {
        Bytes::from(format!("data: {seq}\n\n"))
    }

    #[tokio::test]
    async fn readers_replay_from_their_cursor_and_follow_live() {
        let (log, _) = new_log(10, 1 << 20);
        log.push(ev);
        log.push(ev);
        let mut late = log.reader(1);
        assert_eq!(late.next().await, Some(ev(1)));
        let waiting = tokio::spawn(async move { (late.next().await, late.next().await) });
        tokio::task::yield_now().await;
        log.push(ev);
        log.end();
        assert_eq!(waiting.await.unwrap(), (Some(ev(2)), None));
        assert_eq!(
            log.reader(0).next().await,
            Some(ev(0)),
            "replayable after the end"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn until_ended_waits_for_the_end_only() {
        let (log, _) = new_log(10, 1 << 20);
        let waiter = {
            let log = log.clone();
            tokio::spawn(async move { log.until_ended().await })
        };
        log.push(ev);
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        assert!(!waiter.is_finished(), "an event is not the end");
        log.end();
        tokio::time::timeout(std::time::Duration::from_secs(1), waiter)
            .await
            .expect("woken by the end")
            .unwrap();
        // already ended: at once
        log.until_ended().await;
    }

    #[test]
    fn bounds_drop_the_oldest_and_a_resume_before_them_is_refused() {
        let (log, total) = new_log(3, 1 << 20);
        for _ in 0..5 {
            log.push(ev);
        }
        assert_eq!(log.read(1), Read::Evicted);
        assert_eq!(log.read(2), Read::Event(2, ev(2)));
        assert_eq!(log.read(5), Read::Pending);
        assert!(log.issued(4) && !log.issued(5));
        assert_eq!(total.load(Ordering::Relaxed), 3 * ev(0).len());
        let (small, _) = new_log(100, 2 * ev(0).len());
        for _ in 0..4 {
            small.push(ev);
        }
        assert_eq!(small.bytes(), 2 * ev(0).len());
        drop(small);
        drop(log);
        assert_eq!(
            total.load(Ordering::Relaxed),
            0,
            "the gauge returns to zero"
        );
    }

    #[tokio::test]
    async fn an_attached_reader_that_lags_loses_nothing_and_holds_the_writer_back() {
        let (log, _) = new_log(2, 1 << 20);
        let mut slow = log.reader(0);
        for _ in 0..5 {
            log.push(ev);
        }
        assert!(log.full(), "kept for the reader: the writer must wait");
        for seq in 0..5 {
            assert_eq!(slow.next().await, Some(ev(seq)));
        }
        assert!(!log.full(), "read: trimmed to the bounds");
        drop(slow);
        assert_eq!(log.read(0), Read::Evicted);
    }

    #[tokio::test]
    async fn dropping_an_unread_stream_frees_its_bytes_and_refuses_a_resume_into_the_gap() {
        let (log, total) = new_log(10, 1 << 20);
        let reader = log.reader(0);
        log.push(ev);
        log.push(ev);
        assert_eq!(log.unread_with_events(), None, "read: not a candidate");
        assert_eq!(log.drop_unread(), 0, "a stream being read keeps its events");
        drop(reader);
        assert!(log.unread_with_events().is_some());
        assert_eq!(log.drop_unread(), 2 * ev(0).len());
        assert_eq!(total.load(Ordering::Relaxed), 0);
        assert_eq!(log.unread_with_events(), None, "nothing left to drop");
        assert_eq!(log.read(0), Read::Evicted, "events after 0 are gone");
        assert_eq!(
            log.read(2),
            Read::Pending,
            "a client that had everything goes on"
        );
        log.push(ev);
        assert_eq!(log.read(1), Read::Evicted);
        assert_eq!(log.read(2), Read::Event(2, ev(2)));
        assert_eq!(total.load(Ordering::Relaxed), ev(0).len());
    }

    #[test]
    fn attachment_is_counted() {
        let (log, _) = new_log(10, 1 << 20);
        assert!(log.unread_since().is_some());
        let r = log.reader(0);
        assert!(log.unread_since().is_none());
        drop(r);
        assert!(log.unread_since().is_some());
    }
}
