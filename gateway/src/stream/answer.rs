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

use super::ingest::{Ended, Ingest, Leg, Seen};
use super::{event_id, message_event, primes, LogReader, Refusal, StreamLog, Streams};
use crate::auth::Caller;
use crate::error::GatewayError;
use crate::session::{short, Outgoing, SessionRecord};
use crate::upstream::client::Exchange;
use crate::upstream::Pool;
use bytes::Bytes;
use mcp_wire::RequestId;
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
    /// Whom the request was made for: a cancellation upstream is made for it too.
    pub caller: Caller,
}

/// Events for one client response: live, replayed, or both.
pub struct Events {
    first: Option<Bytes>,
    source: Source,
}

enum Source {
    Lease(Box<crate::stream::Lease>),
    Local(LogReader),
    Remote(Box<super::remote::RemoteReader>),
    Shared(Box<super::SharedReader>),
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
    pub(crate) fn remote(reader: super::remote::RemoteReader) -> Events {
        Events {
            first: None,
            source: Source::Remote(Box::new(reader)),
        }
    }

    /// The session's held stream, held by another replica, read through the shared store.
    pub(crate) fn shared(reader: super::SharedReader) -> Events {
        Events {
            first: None,
            source: Source::Shared(Box::new(reader)),
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
            Source::Shared(reader) => reader.next().await,
        }
    }
}

impl Streams {
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
    pub(super) fn relay_stream(
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
            caller: Caller::default(),
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
            match super::remote::reader(mirror, &rec.id, last_event_id).await {
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

    /// Opens the rest of an answer the backend closed early, from the backend's own event id.
    async fn resume_upstream(
        &self,
        pool: &Arc<Pool>,
        rec: &SessionRecord,
        backend_id: &str,
        method_label: &'static str,
    ) -> Result<Exchange, GatewayError> {
        let req = super::upstream_get::stream_request(rec, Some(backend_id))?;
        let ex = self
            .sessions
            .send_on_binding(pool, rec, &Outgoing::get(&req, method_label))
            .await?;
        if super::upstream_get::is_stream(ex.header()) {
            Ok(ex)
        } else {
            let status = ex.header().status.as_u16();
            self.sessions.release(ex);
            Err(GatewayError::backend_lost(
                &pool.name,
                &format!("resume answered {status}"),
            ))
        }
    }
}

/// Reads `exchange` into `log` until the answer ends (resuming upstream when the backend
/// closes it early after giving its own event ids), then closes the log with what the client
/// must know (a deadline or a lost backend as a final event with an id).
async fn pump(
    streams: Arc<Streams>,
    pool: Arc<Pool>,
    rec: SessionRecord,
    log: Arc<StreamLog>,
    of: AnswerOf,
    mut exchange: Exchange,
) {
    let sessions = &streams.sessions;
    let ingest = Ingest {
        log: &log,
        resume: &streams.resume,
        until: of.until,
        window: streams.resume.config().window,
    };
    let end = read_answer(
        &streams,
        ingest,
        &pool,
        &rec,
        of.method_label,
        &mut exchange,
    )
    .await;
    let final_error = match end {
        Ended::Closed => {
            sessions.release(exchange);
            None
        }
        Ended::Answered => {
            drop(exchange);
            None
        }
        Ended::TimedOut => {
            drop(exchange);
            if let Some(id) = &of.id {
                sessions.cancel(&pool, &rec, id, &of.caller);
            }
            let backend = rec.binding.backend.to_string();
            let deadline = of.deadline.unwrap_or_default();
            Some(GatewayError::deadline(&pool.name, &backend, deadline))
        }
        Ended::Broken { .. } => {
            let counted = of.id.as_ref().map(|_| of.method_label);
            if let Err(e) = sessions.connection_lost(&pool, &rec, counted).await {
                crate::quiet::STORE.failed("a lost binding was not marked", &e);
            }
            let backend = rec.binding.backend.to_string();
            of.id
                .is_some()
                .then(|| GatewayError::backend_lost(&pool.name, &backend))
        }
        Ended::Orphaned => {
            drop(exchange);
            if let Some(id) = &of.id {
                sessions.cancel(&pool, &rec, id, &of.caller);
            }
            tracing::debug!(
                session = short(&rec.id),
                "an answer nobody read was given up"
            );
            None
        }
    };
    close(&streams, &log, &rec, final_error, of.id.as_ref()).await;
}

/// Reads the answer into the log until it ends, resuming upstream (on the session's backend,
/// from the backend's own event id) each time the backend closes it early after giving its
/// ids; `exchange` is left the leg read last.
async fn read_answer(
    streams: &Streams,
    ingest: Ingest<'_>,
    pool: &Arc<Pool>,
    rec: &SessionRecord,
    method_label: &'static str,
    exchange: &mut Exchange,
) -> Ended {
    let mut seen = Seen::default();
    let mut leg = Leg::Answer;
    loop {
        let end = ingest.run(exchange, leg, &mut seen).await;
        let (Ended::Closed, Some(from)) = (end, seen.resume_from()) else {
            return end;
        };
        match streams.resume_upstream(pool, rec, from, method_label).await {
            Ok(rest) => {
                streams.sessions.release(std::mem::replace(exchange, rest));
                leg = Leg::Resumed;
            }
            Err(e) => {
                tracing::debug!(session = short(&rec.id), error = %e, "answer not resumed upstream");
                return Ended::Broken { quiet: false };
            }
        }
    }
}

/// Closes the log: the final error (for a request, as an event with an id) first, then the end,
/// here and in the mirror; the session's use is recorded and the log retired.
async fn close(
    streams: &Streams,
    log: &Arc<StreamLog>,
    rec: &SessionRecord,
    final_error: Option<GatewayError>,
    id: Option<&RequestId>,
) {
    if let (Some(e), Some(id)) = (final_error, id) {
        let body = e.body(id);
        log.push(|seq| message_event(&event_id(log.token, seq), &body));
        streams.resume.mirror_last(log);
    }
    log.end();
    streams.resume.mirror_end(log);
    if let Err(e) = streams.sessions.used(rec).await {
        crate::quiet::STORE.failed("session use not recorded", &e);
    }
    streams.resume.retire(log);
}
