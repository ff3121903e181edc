//! The session manager: the one owner of the session lifecycle. The proxy asks it to open,
//! look up, forward within, change settings of and end sessions; it alone talks to the
//! store, decides when a session moves (and single-flights the move), and counts.

use super::binding::{backend_session, bound_backend};
use super::metrics::SessionMetrics;
use super::observer::SessionObserver;
use super::reinit::Reason;
use super::store::{SessionStore, Ttl};
use super::{now_ms, Lookup, SessionRecord, SettingChange};
use crate::auth::Caller;
use crate::config::SessionConfig;
use crate::error::GatewayError;
use crate::upstream::attempt::Engine;
use crate::upstream::client::{CallError, Exchange};
use crate::upstream::request::{self, Target};
use crate::upstream::{Backend, Pool};
use bytes::Bytes;
use dashmap::DashMap;
use mcp_wire::Era;
use mcp_wire::RequestId;
use pingora::http::RequestHeader;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

/// Largest initialize answer or "session unknown" answer buffered for inspection.
pub(super) const ANSWER_LIMIT: usize = 1024 * 1024;
/// Tombstones (for `data.reason` on 404) are kept at least this long.
const TOMBSTONE_MIN: Duration = Duration::from_secs(600);

/// Who is asking, for the checks and counts keyed by client.
#[derive(Debug, Clone, Default)]
pub struct Requester {
    /// The identity per-client limits count by (empty when no limit needs one).
    pub identity: Arc<str>,
    /// The authenticated principal (none without authentication). A session answers only to
    /// the principal that opened it.
    pub principal: Option<Arc<str>>,
}

/// A request within a session.
pub struct Outgoing<'a> {
    /// The client's request head.
    pub client: &'a RequestHeader,
    /// The whole body (empty for GET).
    pub body: Bytes,
    /// Safe to send twice.
    pub repeatable: bool,
    /// Has a body (POST).
    pub is_post: bool,
    /// Bounded method label, for the loss metric.
    pub method_label: &'static str,
}

impl<'a> Outgoing<'a> {
    /// A GET (a stream) in the session: no body, safe to repeat.
    pub fn get(client: &'a RequestHeader, method_label: &'static str) -> Outgoing<'a> {
        Outgoing {
            client,
            body: Bytes::new(),
            repeatable: true,
            is_post: false,
            method_label,
        }
    }
}

/// A request sent within a session: the exchange (response head read) and where it went.
pub struct Forwarded {
    /// The upstream exchange.
    pub exchange: Exchange,
    /// The session as it was when the request went out (after any move).
    pub record: SessionRecord,
}

/// Owns every session: the store, the re-initialization locks, the counts.
pub struct SessionManager {
    pub(super) store: Arc<dyn SessionStore>,
    pub(super) engine: Arc<Engine>,
    /// The session lifecycle's metric families.
    pub(super) metrics: SessionMetrics,
    /// One re-initialization per session at a time.
    pub(super) locks: DashMap<Arc<str>, Arc<tokio::sync::Mutex<()>>>,
    /// Uses closer together than this are recorded once (a shared store takes no write per
    /// request).
    touch_every_ms: AtomicU64,
    ttl: std::sync::Mutex<Option<Ttl>>,
    /// Told when a session ends or moves (the streams of `stream/`).
    observer: OnceLock<Weak<dyn SessionObserver>>,
    /// The audit trail sessions' lives are recorded in (`audit_into`; off without one).
    audit: OnceLock<crate::audit::Audit>,
    /// The latest moves and losses, for the console.
    pub(super) timeline: super::Timeline,
}

impl SessionManager {
    /// Sessions kept in `store`, with upstream traffic through `engine`, counted into
    /// `metrics`.
    pub fn new(
        store: Arc<dyn SessionStore>,
        engine: Arc<Engine>,
        metrics: SessionMetrics,
    ) -> SessionManager {
        SessionManager {
            store,
            engine,
            metrics,
            locks: DashMap::new(),
            touch_every_ms: AtomicU64::new(0),
            ttl: std::sync::Mutex::new(None),
            observer: OnceLock::new(),
            audit: OnceLock::new(),
            timeline: super::Timeline::default(),
        }
    }

    /// The latest moves, re-initializations and losses (a bounded ring).
    pub fn timeline(&self) -> &super::Timeline {
        &self.timeline
    }

    /// Tells `observer` when a session ends or moves and when the config changes (set once;
    /// held weakly, as the observer holds the manager).
    pub fn observe(&self, observer: &Arc<dyn SessionObserver>) {
        let _ = self.observer.set(Arc::downgrade(observer));
    }

    /// Records sessions' lives (opened, moved, lost, closed) into `audit`.
    pub fn audit_into(&self, audit: crate::audit::Audit) {
        let _ = self.audit.set(audit);
    }

    /// Records `event` of session `rec` in `pool` when the trail is on (`more` adds the
    /// event's own fields; it runs only then): its pool, backend, principal and hashed id.
    pub(super) fn audit_session(
        &self,
        event: &'static str,
        pool: &Pool,
        rec: &SessionRecord,
        more: impl FnOnce(crate::audit::Record) -> crate::audit::Record,
    ) {
        let Some(audit) = self.audit.get().filter(|a| a.on()) else {
            return;
        };
        let record = crate::audit::Record::new(event)
            .pool(&pool.name)
            .backend(&rec.binding.backend.to_string())
            .principal_id(rec.principal.as_deref())
            .session(Some(&rec.id));
        audit.record(more(record));
    }

    pub(super) fn observer(&self) -> Option<Arc<dyn SessionObserver>> {
        self.observer.get().and_then(Weak::upgrade)
    }

    /// Publishes a session's end.
    pub(super) fn publish_ended(&self, id: &str) {
        if let Some(observer) = self.observer() {
            observer.ended(id);
        }
    }

    /// The attempt engine sessions use (shared with the stateless paths).
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The session lifecycle's metric families.
    pub fn metrics(&self) -> &SessionMetrics {
        &self.metrics
    }

    /// Applies the session config (at start and after a reload): the store's time-to-live, how
    /// often use is recorded; the observer gets it too (whether streams are held, resumption).
    pub fn configure(&self, config: &SessionConfig) {
        if let Some(observer) = self.observer() {
            observer.configured(config);
        }
        let idle = config.idle_timeout;
        let ttl = Ttl {
            idle,
            tombstone: idle.max(TOMBSTONE_MIN),
        };
        let mut current = crate::sync::lock(&self.ttl);
        if *current != Some(ttl) {
            *current = Some(ttl);
            self.store.set_ttl(ttl);
            let every = (idle.as_millis() as u64 / 16).clamp(10, 5_000);
            self.touch_every_ms.store(every, Ordering::Relaxed);
        }
    }

    /// The live session `id`, or the answer for the client: 404 -32015 with the reason it
    /// ended (a session of another principal is exactly as unknown as one never seen), or 503
    /// -32006 when the store fails.
    pub async fn lookup(
        &self,
        id: &str,
        caller: &Requester,
    ) -> Result<SessionRecord, GatewayError> {
        match self.store.get(id).await? {
            Lookup::Live(r) if r.principal != caller.principal => Lookup::Unknown.live(),
            // Tombstones do not say whose session ended: with authentication, an ended
            // session is as unknown as any other (no oracle for session ids).
            Lookup::Gone(_) if caller.principal.is_some() => Lookup::Unknown.live(),
            found => found.live(),
        }
    }

    /// Sends a request within the session on its backend, moving the session first when its
    /// backend is down, gone, drained past its deadline or known bad, and again when the
    /// backend refuses the connection, forgot the session, or (for a request safe to repeat)
    /// broke the connection. A request that may have had effects is never sent twice: its
    /// loss is -32013.
    pub async fn forward(
        &self,
        pool: &Arc<Pool>,
        mut rec: SessionRecord,
        out: Outgoing<'_>,
    ) -> Result<Forwarded, GatewayError> {
        for _ in 0..=pool.backends().len() + 1 {
            let backend = match bound_backend(pool, &rec) {
                Ok(b) => b,
                Err(reason) => {
                    rec = self.moved(pool, &rec, reason, &out).await?;
                    continue;
                }
            };
            let req = in_session_request(pool, &rec, &backend, &out)?;
            let body = out.body.clone();
            match self
                .engine
                .send(pool, &backend, &req, body, out.repeatable)
                .await
            {
                Err(CallError::Connect(_)) => {
                    rec = self.moved(pool, &rec, Reason::ConnectRefused, &out).await?;
                }
                Err(CallError::Credentials(e)) => return Err(*e),
                Err(CallError::Lost(_)) => {
                    self.store
                        .mark_stale(&rec.id, rec.binding.generation)
                        .await?;
                    if !out.repeatable {
                        self.count_lost(pool, out.method_label);
                        return Err(GatewayError::backend_lost(&pool.name, &backend.label));
                    }
                    rec = self.moved(pool, &rec, Reason::ConnectionLost, &out).await?;
                }
                Ok(ex) => {
                    let status = ex.header().status.as_u16();
                    if !pool.session_not_found.iter().any(|r| r.status == status) {
                        return Ok(Forwarded {
                            exchange: ex,
                            record: rec,
                        });
                    }
                    // boxed: the answer is read and judged only for a refusal's status
                    match Box::pin(self.refusal(pool, &backend, ex, status)).await {
                        Ok(exchange) => {
                            return Ok(Forwarded {
                                exchange,
                                record: rec,
                            })
                        }
                        Err(reason) => rec = self.moved(pool, &rec, reason, &out).await?,
                    }
                }
            }
        }
        Err(GatewayError::unavailable(&pool.name, pool.backends().len()))
    }

    /// A backend answered with a status the pool reads as "session not found": the answer
    /// is read and judged. The exchange (its answer buffered) when it is a real answer to
    /// pass on; the reason to move the session when the backend forgot it, or when a pod of
    /// the other era took the address.
    async fn refusal(
        &self,
        pool: &Arc<Pool>,
        backend: &Arc<Backend>,
        mut ex: Exchange,
        status: u16,
    ) -> Result<Exchange, Reason> {
        let content_type = ex
            .header()
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let answer = ex.read_all(ANSWER_LIMIT).await.unwrap_or_default();
        let rules = &pool.session_not_found;
        let readable = match crate::upstream::encoding::is_encoded(ex.header()) {
            true => crate::upstream::encoding::decode(ex.header(), answer.clone(), ANSWER_LIMIT)
                .unwrap_or_default(),
            false => answer.clone(),
        };
        if super::is_not_found(rules, status, content_type.as_deref(), &readable) {
            self.engine.release(ex);
            return Err(Reason::SessionUnknown);
        }
        if crate::upstream::era::answer_suggests_other_era(Era::Legacy, status, false) {
            // a pod of the other era may have taken the address: probe it again
            backend.suspect_era();
            if backend.era_is_stale() {
                // it went down and came back, not probed since: the refusal is a
                // new image's and the request never ran there; move the session
                self.engine.release(ex);
                return Err(Reason::EraChanged);
            }
        }
        Ok(ex.with_buffered(answer))
    }

    /// Moves the session; a call (not a stream) then finds the session's held stream on the
    /// new backend already open.
    async fn moved(
        &self,
        pool: &Arc<Pool>,
        rec: &SessionRecord,
        reason: Reason,
        out: &Outgoing<'_>,
    ) -> Result<SessionRecord, GatewayError> {
        // boxed: a move (re-initialize, replay) is the rare case, and `forward` awaits this
        // inline on its hot path, where an unboxed move would be copied on every call
        // the re-initialization is made for this client's caller (a pool exchanging its token)
        let caller = Caller::of(&out.client.extensions);
        let moved = Box::pin(self.recover(pool, rec, reason, &caller)).await?;
        if let Some(observer) = self.observer().filter(|_| out.is_post) {
            observer.moved(pool, &moved).await;
        }
        Ok(moved)
    }

    /// One attempt on the record's current backend, without moving the session.
    pub async fn send_on_binding(
        &self,
        pool: &Arc<Pool>,
        rec: &SessionRecord,
        out: &Outgoing<'_>,
    ) -> Result<Exchange, GatewayError> {
        let backend =
            bound_backend(pool, rec).map_err(|_| GatewayError::unavailable(&pool.name, 0))?;
        let req = in_session_request(pool, rec, &backend, out)?;
        let body = out.body.clone();
        self.engine
            .send(pool, &backend, &req, body, out.repeatable)
            .await
            .map_err(|e| match e {
                CallError::Connect(_) => GatewayError::unavailable(&pool.name, 1),
                CallError::Lost(_) => GatewayError::backend_lost(&pool.name, &backend.label),
                CallError::Credentials(e) => *e,
            })
    }

    fn count_lost(&self, pool: &Pool, method_label: &str) {
        self.engine.count_lost(&pool.name, method_label);
    }

    /// The session's backend broke the connection after its answer began: the binding is
    /// suspect (the next request moves the session first); a POST's outcome is unknown
    /// (counted with `method_label`, `None` for a stream).
    pub async fn connection_lost(
        &self,
        pool: &Pool,
        rec: &SessionRecord,
        method_label: Option<&'static str>,
    ) -> Result<(), GatewayError> {
        if let Some(method) = method_label {
            self.count_lost(pool, method);
            self.timeline.record(super::timeline::Happened {
                kind: "request-lost",
                pool: &pool.name,
                session: &rec.id,
                from: Some(rec.binding.backend),
                to: None,
                reason: method,
                trigger: "",
            });
        }
        Ok(self
            .store
            .mark_stale(&rec.id, rec.binding.generation)
            .await?)
    }

    /// Records use of the session (at most once per `touch_every_ms`).
    pub async fn used(&self, rec: &SessionRecord) -> Result<(), GatewayError> {
        let now = now_ms();
        if now.saturating_sub(rec.last_use_ms) >= self.touch_every_ms.load(Ordering::Relaxed) {
            self.store.touch(&rec.id, now).await?;
        }
        Ok(())
    }

    /// Keeps a session-scoped setting the backend accepted, to replay after a move.
    pub async fn remember(
        &self,
        rec: &SessionRecord,
        change: SettingChange,
    ) -> Result<(), GatewayError> {
        Ok(self.store.update_settings(&rec.id, change).await?)
    }

    /// Tells the session's backend that request `id` is cancelled (its deadline passed), in
    /// the background: the client's answer does not wait for it. The notification is made
    /// for `caller`, the request's.
    pub fn cancel(&self, pool: &Arc<Pool>, rec: &SessionRecord, id: &RequestId, caller: &Caller) {
        let Some(backend) = pool.find(rec.binding.backend) else {
            return;
        };
        let message = mcp_wire::messages::deadline_cancelled(id.as_json());
        self.engine.spawn_notify(
            pool.clone(),
            backend,
            backend_session(rec),
            message,
            caller.clone(),
        );
    }

    /// Takes, renews or takes over the stream lease of session `id` for `owner`
    /// (`store/lease.rs`).
    pub async fn hold_lease(
        &self,
        id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<super::store::Hold, GatewayError> {
        Ok(self.store.hold_lease(id, owner, ttl).await?)
    }

    /// Gives up `owner`'s stream lease of session `id`.
    pub async fn release_lease(&self, id: &str, owner: &str) -> Result<(), GatewayError> {
        Ok(self.store.release_lease(id, owner).await?)
    }

    /// Whether the session store answers (readiness).
    pub async fn store_ready(&self) -> Result<(), GatewayError> {
        Ok(self.store.ping().await?)
    }

    /// Live sessions in all.
    pub async fn count(&self) -> Result<usize, GatewayError> {
        Ok(self.store.count().await?)
    }

    /// Live sessions per backend of `pool`.
    pub async fn backend_counts(
        &self,
        pool: &str,
    ) -> Result<Vec<(SocketAddr, usize)>, GatewayError> {
        Ok(self.store.backend_counts(pool).await?)
    }

    /// The record of a session as the store holds it (admin API).
    pub async fn inspect(&self, id: &str) -> Result<Lookup, GatewayError> {
        Ok(self.store.get_fresh(id).await?)
    }
}

/// The client's request as it goes to the session's backend.
fn in_session_request(
    pool: &Pool,
    rec: &SessionRecord,
    backend: &Backend,
    out: &Outgoing<'_>,
) -> Result<RequestHeader, GatewayError> {
    let target = Target {
        path: &rec.path,
        host: &backend.host_header,
    };
    let len = out.is_post.then_some(out.body.len());
    let session = Some(&*rec.binding.backend_session);
    let mut req = request::forwarded(out.client, target, session, len)?;
    request::identify(&mut req, pool);
    Ok(req)
}
