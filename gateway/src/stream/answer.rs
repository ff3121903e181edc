//! The reading side of a resumable answer: a task that reads a backend's SSE answer into the
//! stream's log whether or not a client is reading, and the entry points the proxy calls
//! (relay an answer, resume after a `Last-Event-ID`).
//!
//! The client's connection is not the answer's lifeline: when it drops, the task goes on
//! reading until the answer ends (the client that comes back gets the rest, the result
//! included) or until nobody has read the stream for `window` (the request is then cancelled
//! upstream). When the backend closes an answer early after giving its own event ids (a
//! server with an event store polling its client), the task resumes upstream with the
//! backend's id on the session's backend and the client sees one stream.

use super::{event_id, message_event, primes, Frame, LogReader, Refusal, StreamLog};
use crate::error::GatewayError;
use crate::mcp::sse::EventSplitter;
use crate::mcp::RequestId;
use crate::session::{short, Outgoing, SessionManager, SessionRecord};
use crate::upstream::client::Exchange;
use crate::upstream::Pool;
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The request an answer belongs to.
pub struct AnswerOf {
    /// The JSON-RPC id (for the final error event and cancellation); `None` for a GET stream.
    pub id: Option<RequestId>,
    /// The route's or tool's deadline, if any.
    pub deadline: Option<Duration>,
    /// When the deadline passes.
    pub until: Option<Instant>,
    /// The method label (metrics).
    pub method_label: &'static str,
}

/// Events for one client response: live, replayed, or both.
pub struct Events {
    first: Option<Bytes>,
    source: Source,
}

enum Source {
    Lease(Box<crate::stream::Lease>),
    Local(LogReader),
    Remote(Box<super::redis::RemoteReader>),
}

impl Events {
    /// Events of a local stream from `reader`'s cursor.
    pub(crate) fn local(reader: LogReader) -> Events {
        Events {
            first: None,
            source: Source::Local(reader),
        }
    }

    /// Events of the session's held stream, for as long as the lease is the newest.
    pub(crate) fn lease(lease: crate::stream::Lease) -> Events {
        Events {
            first: None,
            source: Source::Lease(Box::new(lease)),
        }
    }

    /// Events another replica is writing, read from the shared store.
    pub(crate) fn remote(reader: super::redis::RemoteReader) -> Events {
        Events {
            first: None,
            source: Source::Remote(Box::new(reader)),
        }
    }

    /// Writes `event` before the stream's own (a priming event for a client that attaches
    /// mid-stream).
    pub(crate) fn starting_with(mut self, event: Bytes) -> Events {
        self.first = Some(event);
        self
    }

    /// The next event; `None` when the stream is over.
    pub async fn next(&mut self) -> Option<Bytes> {
        if let Some(first) = self.first.take() {
            return Some(first);
        }
        match &mut self.source {
            Source::Lease(lease) => lease.next().await,
            Source::Local(reader) => reader.next().await,
            Source::Remote(reader) => reader.next().await,
        }
    }
}

/// How reading an answer ended.
enum End {
    Done,
    /// The response arrived on a stream that may stay open (closed, not reused).
    Answered,
    TimedOut,
    Broken,
    Orphaned,
}

impl SessionManager {
    /// The resumable-stream settings in force.
    pub fn resume_config(&self) -> super::ResumeConfig {
        self.resume.config()
    }

    /// Whether answers and streams in sessions are relayed with gateway event ids.
    pub fn resumes(&self) -> bool {
        self.resume.config().enabled
    }

    /// Relays an SSE answer of `rec`'s backend through a resumable stream: the answer is read
    /// by a task of its own; the client reads the returned events.
    pub fn relay_answer(
        self: &Arc<Self>,
        pool: &Arc<Pool>,
        rec: &SessionRecord,
        of: AnswerOf,
        exchange: Exchange,
    ) -> Events {
        let log = self
            .resume
            .start(&rec.id, of.id.as_ref(), primes(&rec.protocol_version));
        let reader = log.reader(0);
        let task = pump(self.clone(), pool.clone(), rec.clone(), log, of, exchange);
        tokio::spawn(task);
        Events::local(reader)
    }

    /// Relays a GET stream of the backend (not held by the gateway) with the gateway's event
    /// ids.
    pub(crate) fn relay_stream(
        self: &Arc<Self>,
        pool: &Arc<Pool>,
        rec: &SessionRecord,
        exchange: Exchange,
    ) -> Events {
        let of = AnswerOf {
            id: None,
            deadline: None,
            until: None,
            method_label: "none",
        };
        self.relay_answer(pool, rec, of, exchange)
    }

    /// A client's GET with `Last-Event-ID` for a stream that is not the session's held
    /// stream: the events after it (replayed, then live while the stream goes on), here or
    /// from the shared store; a defined refusal otherwise.
    pub async fn resume_after(
        &self,
        rec: &SessionRecord,
        last_event_id: &str,
    ) -> Result<Events, GatewayError> {
        let found = self.resume.find_local(&rec.id, last_event_id);
        let refusal = match found {
            Ok((log, cursor)) => {
                self.resume.count_resumed();
                self.resume
                    .count_replayed(log.next_seq().saturating_sub(cursor));
                return Ok(Events::local(log.reader(cursor)));
            }
            Err(refusal) => refusal,
        };
        if let (Refusal::Unknown, Some(mirror)) = (refusal, &self.resume.mirror) {
            match mirror.reader(&rec.id, last_event_id).await {
                Ok(Ok(reader)) => {
                    self.resume.count_resumed();
                    self.resume.count_replayed(reader.backlog());
                    return Ok(Events::remote(reader));
                }
                Ok(Err(refusal)) => return Err(self.resume.refuse(refusal, last_event_id)),
                Err(e) => return Err(e),
            }
        }
        Err(self.resume.refuse(refusal, last_event_id))
    }

    /// Bytes of events buffered in this process and streams kept (the gauges).
    pub fn resume_buffered(&self) -> (usize, usize) {
        (self.resume.buffered_bytes(), self.resume.streams())
    }

    /// Opens the rest of an answer the backend closed early, from the backend's own event id.
    async fn resume_upstream(
        &self,
        pool: &Arc<Pool>,
        rec: &SessionRecord,
        backend_id: &str,
        method_label: &'static str,
    ) -> Result<Exchange, GatewayError> {
        let req = super::standalone::stream_request(rec, Some(backend_id))?;
        let ex = self
            .send_on_binding(pool, rec, &Outgoing::get(&req, method_label))
            .await?;
        if super::standalone::is_stream(ex.header()) {
            Ok(ex)
        } else {
            let status = ex.header().status.as_u16();
            self.engine.release(ex).await;
            Err(GatewayError::backend_lost(
                &pool.name,
                &format!("resume answered {status}"),
            ))
        }
    }
}

/// Reads `exchange` into `log` until the answer ends, then closes the log with what the
/// client must know (a deadline or a lost backend as a final event with an id).
async fn pump(
    manager: Arc<SessionManager>,
    pool: Arc<Pool>,
    rec: SessionRecord,
    log: Arc<StreamLog>,
    of: AnswerOf,
    mut exchange: Exchange,
) {
    let window = manager.resume.config().window;
    let mut splitter = EventSplitter::default();
    let mut backend_id: Option<String> = None;
    let mut answered = false;
    let mut resumed_upstream = false;
    let end = loop {
        let orphaned_at = log.unread_since().map(|t| t + window);
        let wake = match (of.until, orphaned_at) {
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
        match next {
            None => {
                let now = Instant::now();
                if of.until.is_some_and(|u| u <= now) {
                    break End::TimedOut;
                }
                if log.unread_since().is_some_and(|t| t + window <= now) {
                    break End::Orphaned;
                }
            }
            Some(Ok(Some(chunk))) => {
                for event in splitter.push(&chunk) {
                    let frame = Frame::parse(&event);
                    if frame.backend_id.is_some() {
                        backend_id = frame.backend_id.clone();
                    }
                    if frame.carries_message() {
                        // whether the response came matters only to resume a backend's own
                        // stream: no JSON parse per event for servers that give no ids
                        answered |= backend_id.is_some() && frame.is_response();
                        log.push(|seq| frame.with_id(&event_id(log.token, seq)));
                        manager.resume.mirror_last(&log);
                    }
                }
                // a reader that lags a whole buffer behind holds the upstream back
                while log.full() && log.unread_since().is_none() {
                    log.progressed().await;
                }
                if answered && resumed_upstream {
                    // a resumed stream is a GET the backend may keep open: the answer is whole
                    break End::Answered;
                }
            }
            Some(Ok(None)) => {
                let Some(from) = backend_id.as_deref().filter(|_| !answered) else {
                    break End::Done;
                };
                match manager
                    .resume_upstream(&pool, &rec, from, of.method_label)
                    .await
                {
                    Ok(rest) => {
                        manager
                            .engine
                            .release(std::mem::replace(&mut exchange, rest))
                            .await;
                        splitter = EventSplitter::default();
                        resumed_upstream = true;
                    }
                    Err(e) => {
                        tracing::debug!(session = short(&rec.id), error = %e, "answer not resumed upstream");
                        break End::Broken;
                    }
                }
            }
            Some(Err(_)) => break End::Broken,
        }
    };
    let final_error = match end {
        End::Done => {
            manager.engine.release(exchange).await;
            None
        }
        End::Answered => {
            drop(exchange);
            None
        }
        End::TimedOut => {
            drop(exchange);
            if let Some(id) = &of.id {
                manager.cancel(&pool, &rec, id);
            }
            let backend = rec.binding.backend.to_string();
            let deadline = of.deadline.unwrap_or_default();
            Some(GatewayError::deadline(&pool.name, &backend, deadline))
        }
        End::Broken => {
            let counted = of.id.as_ref().map(|_| of.method_label);
            if let Err(e) = manager.connection_lost(&pool, &rec, counted).await {
                tracing::warn!(error = %e, "a lost binding was not marked");
            }
            let backend = rec.binding.backend.to_string();
            of.id
                .is_some()
                .then(|| GatewayError::backend_lost(&pool.name, &backend))
        }
        End::Orphaned => {
            drop(exchange);
            if let Some(id) = &of.id {
                manager.cancel(&pool, &rec, id);
            }
            tracing::debug!(
                session = short(&rec.id),
                "an answer nobody read was given up"
            );
            None
        }
    };
    if let (Some(e), Some(id)) = (final_error, &of.id) {
        let body = e.body(id);
        log.push(|seq| message_event(&event_id(log.token, seq), &body));
        manager.resume.mirror_last(&log);
    }
    log.end();
    manager.resume.mirror_end(&log);
    if let Err(e) = manager.used(&rec).await {
        tracing::warn!(error = %e, "session use not recorded");
    }
    manager.resume.retire(&log);
}
