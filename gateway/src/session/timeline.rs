//! The sessions' timeline: what happened to sessions that an operator watches for during a
//! rollout (a session re-initialized on another backend, a move that failed, a session lost, a
//! request whose backend went away mid-answer), kept in a bounded ring in memory for the
//! console. The manager records every event the metrics count; session ids appear only
//! hashed (`session_hash`), so a page never holds an id that could be replayed.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Events kept: the newest push the oldest out (a pod's evacuation of thousands of sessions
/// shows its latest moves, and the ring never grows with them).
pub const CAPACITY: usize = 256;

/// One event of a session's life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionEvent {
    /// Its place in the timeline (increasing, never reused): a reader asks for those after
    /// the last it saw.
    pub seq: u64,
    /// Wall-clock milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// `reinitialized`, `move-failed`, `lost` or `request-lost`.
    pub kind: &'static str,
    /// The session's pool.
    pub pool: String,
    /// The session id's hash (`session_hash::hash_session`).
    pub session: String,
    /// The backend it left (or was on).
    pub from: Option<SocketAddr>,
    /// The backend it went to.
    pub to: Option<SocketAddr>,
    /// Why: the re-initialization's reason, `version-mismatch`, or the method whose answer
    /// was lost.
    pub reason: &'static str,
    /// What started a move: `on-demand` or `background` (empty for other events).
    pub trigger: &'static str,
}

/// What one event says, before the timeline numbers and times it.
#[derive(Debug, Clone, Copy)]
pub struct Happened<'a> {
    /// See [`SessionEvent::kind`].
    pub kind: &'static str,
    /// The pool's name.
    pub pool: &'a str,
    /// The session's id (hashed when recorded).
    pub session: &'a str,
    /// See [`SessionEvent::from`].
    pub from: Option<SocketAddr>,
    /// See [`SessionEvent::to`].
    pub to: Option<SocketAddr>,
    /// See [`SessionEvent::reason`].
    pub reason: &'static str,
    /// See [`SessionEvent::trigger`].
    pub trigger: &'static str,
}

/// The bounded ring of session events.
#[derive(Debug, Default)]
pub struct Timeline {
    events: Mutex<VecDeque<SessionEvent>>,
    next: AtomicU64,
}

impl Timeline {
    /// Records `what` now. A move is rare next to requests: one short lock per event.
    pub fn record(&self, what: Happened<'_>) {
        let event = SessionEvent {
            seq: self.next.fetch_add(1, Ordering::Relaxed) + 1,
            at_ms: super::now_ms(),
            kind: what.kind,
            pool: what.pool.to_owned(),
            session: crate::session_hash::hash_session(what.session),
            from: what.from,
            to: what.to,
            reason: what.reason,
            trigger: what.trigger,
        };
        let mut events = crate::sync::lock(&self.events);
        if events.len() == CAPACITY {
            events.pop_front();
        }
        events.push_back(event);
    }

    /// The events after `seq` still held, oldest first (0: every event held).
    pub fn after(&self, seq: u64) -> Vec<SessionEvent> {
        let events = crate::sync::lock(&self.events);
        events.iter().filter(|e| e.seq > seq).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moved(session: &str) -> Happened<'_> {
        Happened {
            kind: "reinitialized",
            pool: "p",
            session,
            from: Some("127.0.0.1:1".parse().unwrap()),
            to: Some("127.0.0.1:2".parse().unwrap()),
            reason: "backend-down",
            trigger: "on-demand",
        }
    }

    #[test]
    fn the_ring_keeps_the_newest_events_and_never_the_session_id() {
        let timeline = Timeline::default();
        for i in 0..CAPACITY + 10 {
            timeline.record(moved(&format!("session-{i}")));
        }
        let all = timeline.after(0);
        assert_eq!(all.len(), CAPACITY);
        assert_eq!(all[0].seq, 11);
        assert_eq!(all.last().unwrap().seq, (CAPACITY + 10) as u64);
        assert!(all.iter().all(|e| !e.session.contains("session")));
        assert_eq!(timeline.after(all.last().unwrap().seq - 2).len(), 2);
    }
}
