//! Writing a session's events to the client: one loop for relayed answers, held streams and
//! replays. It sends keep-alive comments when the stream is idle, notices a client that went
//! away without waiting for the next event (its slot and connections are given back at once),
//! and ends a POST answer early when SSE polling is on (the client resumes with
//! `Last-Event-ID`).

use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::stream::Events;
use crate::stream::KEEP_ALIVE;
use bytes::Bytes;
use std::time::Duration;
use tokio::time::Instant;

/// How writing events ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// The stream ended and the client has all of it.
    Ended,
    /// The client went away (or could not be written to); the stream goes on without it.
    ClientGone,
    /// Closed by the gateway at `poll-after`; the client resumes.
    Polled,
}

/// Writes `events` to the client (its response head already written) until the stream ends,
/// the client goes away, or `close_at` passes.
pub async fn write_events(
    session: &mut impl Client,
    mut events: Events,
    keep_alive: Duration,
    close_at: Option<Instant>,
) -> Written {
    loop {
        let wake = Instant::now() + keep_alive;
        let wake = close_at.map_or(wake, |c| c.min(wake));
        let next = tokio::select! {
            next = tokio::time::timeout_at(wake, events.next()) => next,
            // the request body is read: this returns only when the client closes
            _ = session.gone() => return Written::ClientGone,
        };
        let chunk = match next {
            Ok(Some(event)) => event,
            Ok(None) => {
                return match answer::end(session).await {
                    Ok(()) => Written::Ended,
                    Err(_) => Written::ClientGone,
                };
            }
            Err(_) if close_at.is_some_and(|c| c <= Instant::now()) => {
                return match answer::end(session).await {
                    Ok(()) => Written::Polled,
                    Err(_) => Written::ClientGone,
                };
            }
            Err(_) => Bytes::from_static(KEEP_ALIVE),
        };
        if answer::event(session, chunk).await.is_err() {
            return Written::ClientGone;
        }
    }
}
