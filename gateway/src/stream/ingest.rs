//! The one ingest loop: reads a backend's SSE stream into its log (whole events, the gateway's
//! ids, written through to the mirror), whether or not a client is reading, until the backend
//! ends it, it breaks, its deadline passes, or nobody has read it for the resume window. A
//! reader that lags a whole buffer behind holds the backend's stream back. Used by the held
//! standalone stream (`standalone.rs`) and the answer pump (`answer.rs`).

use super::{event_id, Frame, Resume, StreamLog};
use crate::upstream::client::Exchange;
use mcp_wire::sse::EventSplitter;
use std::time::Duration;
use tokio::time::Instant;

/// Which backend stream is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Leg {
    /// A session's standalone stream.
    Held,
    /// An answer to a POST.
    Answer,
    /// The rest of an answer the backend closed early, resumed with its own event id: a GET
    /// the backend may keep open, so it ends at the response.
    Resumed,
}

/// How reading a stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// The backend ended the stream.
    Closed,
    /// The response arrived on a resumed stream (closed, not reused).
    Answered,
    /// The request's deadline passed.
    TimedOut,
    /// Nobody read the stream for the resume window.
    Orphaned,
    /// The stream broke; `quiet` when it was only quiet past the read timeout.
    Broken {
        /// The read timed out (no sign the backend is gone).
        quiet: bool,
    },
}

/// What the backend said about its own stream, across the legs of one answer.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// The backend's latest event id.
    backend_id: Option<String>,
    /// The response came (noted only for backends that give event ids: no JSON parse per
    /// event for the others).
    answered: bool,
}

impl Seen {
    fn note(&mut self, frame: &Frame, leg: Leg) {
        if frame.backend_id.is_some() {
            self.backend_id = frame.backend_id.clone();
        }
        if leg != Leg::Held && frame.carries_message() {
            self.answered |= self.backend_id.is_some() && frame.is_response();
        }
    }

    /// The backend id to resume an unfinished answer from, if the backend gave one.
    pub(super) fn resume_from(&self) -> Option<&str> {
        self.backend_id.as_deref().filter(|_| !self.answered)
    }
}

/// Where a stream is read to and how long it may run.
#[derive(Clone, Copy)]
pub(super) struct Ingest<'a> {
    /// The stream's log.
    pub log: &'a StreamLog,
    /// Where the log's events are mirrored.
    pub resume: &'a Resume,
    /// The request's deadline, if any.
    pub until: Option<Instant>,
    /// How long a stream nobody reads is kept.
    pub window: Duration,
}

impl Ingest<'_> {
    /// Reads `exchange` into the log until it ends.
    pub(super) async fn run(self, exchange: &mut Exchange, leg: Leg, seen: &mut Seen) -> Ended {
        let Ingest {
            log,
            resume,
            until,
            window,
        } = self;
        let mut splitter = EventSplitter::default();
        loop {
            let orphaned_at = log.unread_since().map(|t| t + window);
            let wake = match (until, orphaned_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let next = tokio::select! {
                next = async {
                    match wake {
                        Some(at) => tokio::time::timeout_at(at, exchange.chunk()).await.ok(),
                        None => Some(exchange.chunk().await),
                    }
                } => next,
                // the last reader left: the window starts now
                _ = log.last_reader_left(), if orphaned_at.is_none() => continue,
            };
            let chunk = match next {
                None => {
                    let now = Instant::now();
                    if until.is_some_and(|u| u <= now) {
                        return Ended::TimedOut;
                    }
                    if log.unread_since().is_some_and(|t| t + window <= now) {
                        return Ended::Orphaned;
                    }
                    continue;
                }
                Some(Ok(Some(chunk))) => chunk,
                Some(Ok(None)) => return Ended::Closed,
                Some(Err(e)) => {
                    let quiet = e.etype() == &pingora::ErrorType::ReadTimedout;
                    return Ended::Broken { quiet };
                }
            };
            for event in splitter.push(&chunk) {
                let frame = Frame::parse(&event);
                seen.note(&frame, leg);
                if frame.carries_message() {
                    log.push(|seq| frame.with_id(&event_id(log.token, seq)));
                    resume.mirror_last_from(log, frame.backend_id.as_deref());
                }
            }
            // a reader that lags a whole buffer behind holds the backend's stream back
            while log.full() && log.unread_since().is_none() {
                log.progressed().await;
            }
            if leg == Leg::Resumed && seen.answered {
                return Ended::Answered;
            }
        }
    }
}
