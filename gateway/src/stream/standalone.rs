//! The session's standalone stream (the backend's server→client GET), held by the gateway.
//!
//! A legacy server sends requests that belong to no client request (`elicitation/create`,
//! `sampling/createMessage`, `roots/list` sent with `server.request(...)`) and notifications on
//! the session's standalone GET stream, and drops them when no such stream is open at that
//! moment. A client that calls a tool right after connecting can reach the backend before its
//! GET does (the gateway reads the two on different connections and threads), a client that
//! reconnects leaves a gap, and a session moved to another backend has no stream there until
//! the client opens one again. So the gateway opens and holds the backend's stream itself:
//! - when the client's `notifications/initialized` goes through and its `initialize` declared
//!   a capability the server can call back (sampling, elicitation, roots), before the client is
//!   answered, so nothing the client sends afterwards can overtake it;
//! - at the client's first GET otherwise;
//! - on the new backend as soon as a session that had one moves, before the request that
//!   moved it is forwarded.
//!
//! Events are cut whole into the stream's resumable log (`resume/`, gateway event ids, bounded)
//! until a client GET attaches; each client GET gets a lease (`held.rs`), and a newer GET (a
//! reconnect) supersedes the older one. The backend sees one GET per session, as it expects.
//! A client GET with `Last-Event-ID` resumes after that event: from the held stream, from
//! another stream of the session (a POST answer), or from the shared store. A held stream no
//! client has read for the resume window is closed upstream. Cost: one upstream connection
//! per session that has a stream, which the SDK clients open anyway. With resumption off, a
//! `Last-Event-ID` goes to the backend as before.

use super::held::{lock, Held, Lease, Leases};
use super::ingest::{Ended, Ingest, Leg, Seen};
use super::upstream_get::{is_stream, stream_request};
use super::{event_id, SessionLink};
use super::{parse_event_id, primes, priming, Events, Read, Refusal, SharedReader, Streams};
use crate::error::GatewayError;
use crate::session::store::Hold;
use crate::session::{short, Forwarded, Outgoing, SessionRecord};
use crate::upstream::client::Exchange;
use crate::upstream::Pool;
use pingora::http::{RequestHeader, ResponseHeader};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// How long a held stream nobody reads on this replica is kept with a shared store.
const SHARED_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// How long opening a stream may hold up the request that asked for it.
pub(super) const OPEN_TIMEOUT: Duration = Duration::from_secs(2);

/// What a client GET gets.
pub enum StreamOpened {
    /// Events to write after `head`: the held stream, a relayed stream, or a replay after
    /// `Last-Event-ID`.
    Events {
        /// The client's response head: the backend's, or `None` for a stream the gateway
        /// answers itself (a replay: the handler writes the gateway's own stream head).
        head: Option<Box<ResponseHeader>>,
        /// The events.
        events: Events,
        /// The backend the stream comes from (`None` for a replay).
        backend: Option<std::net::SocketAddr>,
    },
    /// The backend's answer to relay as it is (not a stream: 405, 409, an error), with the
    /// record it was sent under.
    Answer(Box<(Exchange, SessionRecord)>),
}

/// Whether a client's `initialize` params declare a capability the server calls back on the
/// standalone stream.
fn expects_server_requests(init_params: &str) -> bool {
    let Ok(params) = serde_json::from_str::<serde_json::Value>(init_params) else {
        return false;
    };
    let caps = params.get("capabilities");
    ["sampling", "elicitation", "roots"]
        .iter()
        .any(|c| caps.and_then(|caps| caps.get(c)).is_some())
}

impl Streams {
    /// A client's GET: attached to the session's held stream, opened first when needed.
    pub async fn open_stream(
        self: &Arc<Self>,
        pool: &Arc<Pool>,
        rec: SessionRecord,
        client: &RequestHeader,
        method_label: &'static str,
    ) -> Result<StreamOpened, GatewayError> {
        let last_event_id = client
            .headers
            .get("last-event-id")
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        if let Some(last) = last_event_id.as_deref().filter(|_| self.resumes()) {
            if let Some(opened) = self.resume_held(&rec, last)? {
                return Ok(opened);
            }
            if let Some(opened) = self.resume_shared(pool, &rec, last).await? {
                return Ok(opened);
            }
            let events = self.resume_after(&rec, last).await?;
            return Ok(StreamOpened::Events {
                head: None,
                events,
                backend: None,
            });
        }
        if !self.holds_streams() || last_event_id.is_some() {
            // passed through (with resumption on, relayed with the gateway's event ids)
            let out = Outgoing::get(client, method_label);
            let Forwarded { exchange, record } = self.sessions.forward(pool, rec, out).await?;
            if !self.resumes() || !is_stream(exchange.header()) {
                return Ok(StreamOpened::Answer(Box::new((exchange, record))));
            }
            let head = Some(Box::new(exchange.header().clone()));
            let backend = Some(record.binding.backend);
            let events = self.relay_stream(pool, &record, exchange);
            return Ok(StreamOpened::Events {
                head,
                events,
                backend,
            });
        }
        let opening = self.held.opening_lock(&rec.id);
        let _one_at_a_time = opening.lock().await;
        let lease = match self.held.current(&rec) {
            Some(held) => held.lease(None),
            None => {
                if let (Hold::Theirs(_), Some(mirror)) =
                    (self.lease_of(&rec).await, &self.resume.mirror)
                {
                    // another replica holds the backend's GET: its events come through Redis
                    let reader =
                        SharedReader::new(self.clone(), pool.clone(), rec, mirror.clone(), None);
                    return Ok(self.shared(reader));
                }
                let (exchange, record) = match self
                    .open_upstream(pool, rec.clone(), method_label, None)
                    .await
                {
                    Ok(opened) => opened,
                    Err(e) => {
                        self.let_lease_go(&rec).await;
                        return Err(e);
                    }
                };
                if !is_stream(exchange.header()) {
                    self.let_lease_go(&rec).await;
                    return Ok(StreamOpened::Answer(Box::new((exchange, record))));
                }
                let (lease, held) = self.install(pool, &record, exchange);
                self.announce(&record, held.log.token, false).await;
                lease
            }
        };
        Ok(self.attached(&rec, lease))
    }

    /// A client GET reading the held stream another replica holds.
    fn shared(&self, reader: SharedReader) -> StreamOpened {
        StreamOpened::Events {
            head: None,
            events: Events::shared(reader),
            backend: None,
        }
    }

    /// A `Last-Event-ID` of one of the session's held streams (any replica's, in Redis): the
    /// events after it, then the streams that followed. `None` when the id is none of them.
    async fn resume_shared(
        self: &Arc<Self>,
        pool: &Arc<Pool>,
        rec: &SessionRecord,
        last: &str,
    ) -> Result<Option<StreamOpened>, GatewayError> {
        let (Some(mirror), Some((token, seq))) = (&self.resume.mirror, parse_event_id(last)) else {
            return Ok(None);
        };
        if !super::shared::held_tokens(&**mirror, &rec.id)
            .await?
            .contains(&token)
        {
            return Ok(None);
        }
        self.resume.count_resumed();
        // events the client had from its holder's memory that never reached Redis (the holder
        // died first): a backend resuming from its own id sends them again, to be skipped
        let in_redis = super::shared::last_seq(&**mirror, &rec.id, token).await;
        let ahead = in_redis.map_or(0, |m| seq.saturating_sub(m));
        let from = Some((token, seq));
        let (streams, pool, rec) = (self.clone(), pool.clone(), rec.clone());
        let reader = SharedReader::new(streams, pool, rec, mirror.clone(), from).ahead(ahead);
        Ok(Some(self.shared(reader)))
    }

    /// Gives the stream lease up after the backend's GET could not be opened.
    async fn let_lease_go(&self, rec: &SessionRecord) {
        if let Err(e) = self.sessions.release_lease(&rec.id, &self.owner).await {
            tracing::debug!(session = short(&rec.id), error = %e, "stream lease not released");
        }
    }

    /// A client GET attached to the held stream: a client that joins mid-stream first gets a
    /// priming event naming the position it starts from.
    fn attached(&self, rec: &SessionRecord, lease: Lease) -> StreamOpened {
        let head = Some(Box::new(lease.head().clone()));
        let backend = Some(rec.binding.backend);
        let cursor = lease.reader.cursor();
        let token = lease.held.log.token;
        let mut events = Events::lease(lease);
        if cursor > 0 && primes(&rec.protocol_version) {
            let retry = self.resume.config().retry;
            events = events.starting_with(priming(&event_id(token, cursor - 1), retry));
        }
        StreamOpened::Events {
            head,
            events,
            backend,
        }
    }

    /// A `Last-Event-ID` of the session's held stream: a lease from the event after it.
    /// `None` when the id is not the held stream's.
    fn resume_held(
        &self,
        rec: &SessionRecord,
        last: &str,
    ) -> Result<Option<StreamOpened>, GatewayError> {
        let Some((token, seq)) = parse_event_id(last) else {
            return Ok(None);
        };
        let Some(held) = self.held.held.get(&rec.id).map(|h| h.clone()) else {
            return Ok(None);
        };
        if held.log.token != token {
            return Ok(None);
        }
        if !held.log.issued(seq) {
            return Err(self.resume.refuse(Refusal::Unknown, last));
        }
        if held.log.read(seq + 1) == Read::Evicted {
            return Err(self.resume.refuse(Refusal::Evicted, last));
        }
        self.resume.count_resumed();
        self.resume
            .count_replayed(held.log.next_seq().saturating_sub(seq + 1));
        Ok(Some(self.attached(rec, held.lease(Some(seq + 1)))))
    }

    /// Opens the held stream ahead of the client when it will be needed: after a client's
    /// `notifications/initialized` whose `initialize` declared callbacks. Bounded; failures
    /// are logged (the client's own GET opens it later).
    pub async fn hold_stream(&self, pool: &Arc<Pool>, rec: &SessionRecord) {
        if self.holds_streams() && expects_server_requests(&rec.init_params) {
            self.hold_now(pool, rec).await;
        }
    }

    /// After a session that had a held stream moved: its stream on the new backend, before
    /// the request that moved it goes there.
    pub(super) async fn rehold_after_move(&self, pool: &Arc<Pool>, rec: &SessionRecord) {
        if self.holds_streams() && (self.held.has(&rec.id) || self.had_shared(rec).await) {
            self.hold_now(pool, rec).await;
        }
    }

    /// Whether any replica held a stream for the session (its list in Redis).
    async fn had_shared(&self, rec: &SessionRecord) -> bool {
        match &self.resume.mirror {
            Some(mirror) => super::shared::held_tokens(&**mirror, &rec.id)
                .await
                .is_ok_and(|t| !t.is_empty()),
            None => false,
        }
    }

    async fn hold_now(&self, pool: &Arc<Pool>, rec: &SessionRecord) {
        let opening = self.held.opening_lock(&rec.id);
        let _one_at_a_time = opening.lock().await;
        if self.held.current(rec).is_some() {
            return;
        }
        if !self.held_here_or_there(rec).await {
            return; // another replica holds it (or the session ended)
        }
        let label = "none";
        let opened = tokio::time::timeout(OPEN_TIMEOUT, self.open_on_binding(pool, rec, label));
        let opened = opened.await;
        if !matches!(&opened, Ok(Ok(exchange)) if is_stream(exchange.header())) {
            self.let_lease_go(rec).await;
        }
        match opened {
            Ok(Ok(exchange)) if is_stream(exchange.header()) => {
                // held for a client to come: nobody attached yet
                let (_, held) = self.install(pool, rec, exchange);
                self.announce(rec, held.log.token, false).await;
            }
            Ok(Ok(exchange)) => {
                tracing::debug!(
                    session = short(&rec.id),
                    status = exchange.header().status.as_u16(),
                    "backend offers no standalone stream"
                );
                self.sessions.release(exchange);
            }
            Ok(Err(e)) => {
                tracing::debug!(session = short(&rec.id), error = %e, "standalone stream not opened")
            }
            Err(_) => tracing::debug!(
                session = short(&rec.id),
                "standalone stream not opened in time"
            ),
        }
    }

    /// The stream's GET within the session, moving it first if needed (a client GET).
    pub(super) async fn open_upstream(
        &self,
        pool: &Arc<Pool>,
        rec: SessionRecord,
        method_label: &'static str,
        backend_last_id: Option<&str>,
    ) -> Result<(Exchange, SessionRecord), GatewayError> {
        let req = stream_request(&rec, backend_last_id)?;
        let out = Outgoing::get(&req, method_label);
        let Forwarded { exchange, record } = self.sessions.forward(pool, rec, out).await?;
        Ok((exchange, record))
    }

    /// The stream's GET on the record's current backend, without moving the session.
    async fn open_on_binding(
        &self,
        pool: &Arc<Pool>,
        rec: &SessionRecord,
        method_label: &'static str,
    ) -> Result<Exchange, GatewayError> {
        let req = stream_request(rec, None)?;
        self.sessions
            .send_on_binding(pool, rec, &Outgoing::get(&req, method_label))
            .await
    }

    /// Starts holding `exchange` (a 2xx event stream) as the session's stream, replacing (and
    /// closing) one of an earlier binding.
    /// Returns the first lease, taken before the first event can arrive (the client GET that
    /// opened it keeps it; an eager hold drops it).
    pub(super) fn install(
        &self,
        pool: &Arc<Pool>,
        rec: &SessionRecord,
        exchange: Exchange,
    ) -> (Lease, Arc<Held>) {
        let held = Arc::new(Held {
            generation: rec.binding.generation,
            head: exchange.header().clone(),
            log: self.resume.start(
                &rec.id,
                None,
                self.resumes() && primes(&rec.protocol_version),
            ),
            leases: Mutex::new(Leases::default()),
            notify: Notify::new(),
            task: Mutex::new(None),
        });
        if let Some(old) = self.held.held.insert(rec.id.clone(), held.clone()) {
            old.stop();
        }
        let lease = held.lease(None);
        let pump = pump(
            held.clone(),
            exchange,
            (self.sessions.clone(), pool.clone(), rec.clone()),
            self.resume.clone(),
        );
        *lock(&held.task) = Some(tokio::spawn(pump).abort_handle());
        self.keep_lease(&held, rec);
        tracing::debug!(
            session = short(&rec.id),
            generation = rec.binding.generation,
            "standalone stream held"
        );
        (lease, held)
    }
}

/// Reads the backend's stream into the log until it ends, or until no client has read it for
/// the resume window (an orphaned stream gives back its upstream connection). A stream that
/// breaks marks the binding suspect (the backend may be gone: the next request moves the
/// session first); one that was merely quiet past the read timeout, or ended by the backend,
/// does not.
async fn pump(
    held: Arc<Held>,
    mut exchange: Exchange,
    (sessions, pool, rec): (Arc<dyn SessionLink>, Arc<Pool>, SessionRecord),
    resume: Arc<super::Resume>,
) {
    let log = held.log.clone();
    // With a shared store, clients on other replicas read the stream through Redis, unseen
    // here: it is kept while the session lives (the lease ends with the session).
    let window = match resume.mirror {
        Some(_) => SHARED_WINDOW,
        None => resume.config().window,
    };
    let ingest = Ingest {
        log: &log,
        resume: &resume,
        until: None,
        window,
    };
    let end = ingest
        .run(&mut exchange, Leg::Held, &mut Seen::default())
        .await;
    if end == Ended::Orphaned {
        tracing::debug!(
            session = short(&log.session),
            "an unread held stream was closed"
        );
    }
    drop(exchange);
    // The ended stream stays in the map as a mark that the session has one: a move reopens it.
    log.end();
    resume.mirror_end(&log);
    resume.retire(&log);
    if end == (Ended::Broken { quiet: false }) {
        if let Err(e) = sessions.connection_lost(&pool, &rec, None).await {
            crate::quiet::STORE.failed("a broken stream's binding was not marked", &e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_held_ahead_for_clients_the_server_can_call_back() {
        assert!(expects_server_requests(
            r#"{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}}}"#
        ));
        assert!(expects_server_requests(
            r#"{"capabilities":{"sampling":{},"roots":{"listChanged":true}}}"#
        ));
        assert!(!expects_server_requests(r#"{"capabilities":{}}"#));
        assert!(!expects_server_requests("not json"));
    }
}
