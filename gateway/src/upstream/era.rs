//! The era probe: which protocol era each backend of a pool with `era: detect` serves.
//! A background service (like health checks and discovery, never on a request's path) sends
//! a backend a 2026-07-28 `server/discover` and, unless that asked for a session the way
//! legacy servers do, a legacy `initialize` (its session is deleted again at once);
//! `mcp_wire::discover` reads the answers. A backend is legacy only when it positively is a
//! legacy session server; answers that prove nothing leave its era unknown.
//!
//! A backend is probed when it joins its pool (startup, discovery, reload), when it answers
//! again after being down (health checks, or a refused connection: a restart may bring another
//! image), and when an answer suggests its era is wrong ([`Backend::suspect_era`]). An
//! inconclusive probe (401/403, 5xx, timeout, refused) changes nothing and is repeated with a
//! backoff; so is one whose answers prove no era (the era becomes unknown): a process still
//! starting answers so for a moment, and a conclusion then would stand until the next
//! restart (issue 48). Requests sent by the prober never go through the balancing, the in-flight counts
//! or the upstream latency histogram. A changed era is logged at INFO, and every pool's
//! backends are counted by era in `mcpgw_backends{pool,era}`.

use super::attempt::Engine;
use super::clock::now_ms;
use super::metrics::UpstreamMetrics;
use super::request::{self, Target};
use super::{Backend, Pool};
use crate::config::{Config, EraSetting, PathMatch};
use async_trait::async_trait;
use bytes::Bytes;
use mcp_wire::discover::{self, Finding, Verdict};
use mcp_wire::headers::{MCP_METHOD, MCP_SESSION_ID};
use mcp_wire::{BackendEra, Era};
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// How often the service looks for probes that are due.
const TICK: Duration = Duration::from_millis(200);
/// A whole probe (one or two requests and a DELETE) gives up after this: inconclusive.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
impl Pool {
    /// Whether the pool has members but none of them serves `era` (their eras are known and
    /// all of the other one): the "no backend of this era" case, not a failure.
    pub fn lacks_era(&self, era: Era) -> bool {
        let members = self.backends();
        !members.is_empty() && !members.iter().any(|b| b.serves(era))
    }
}

impl Backend {
    /// Whether a request of `era` may go to it: its era serves it, or its era is not known
    /// yet (a pool works while its probes are pending).
    pub fn serves(&self, era: Era) -> bool {
        self.era().is_none_or(|e| e.serves(era))
    }

    /// Probes its era again soon (it came back up, or joined again). Only pools with
    /// `era: detect` run probes; elsewhere this does nothing.
    pub fn recheck_era(&self) {
        self.era_probe.now();
    }

    /// It went down (a refused connection, the health checks): whatever comes back at its
    /// address may serve another era, so its known era is not trusted until probed again.
    pub fn era_went_stale(&self) {
        if self.era().is_some() {
            self.era_probe.stale.store(true, Ordering::Relaxed);
        }
        self.era_probe.again();
    }

    /// Whether its era is in doubt since it went down ([`Backend::era_went_stale`]): it is
    /// picked only when no other backend can take the work.
    pub fn era_is_stale(&self) -> bool {
        self.era_probe.stale.load(Ordering::Relaxed)
    }

    /// The proxy's hook for an answer that suggests the known era is wrong (a 2026-07-28
    /// request answered 400 by a legacy server, a legacy `initialize` answered -32601 or
    /// -32022): probes again soon, at most once per `MIN_GAP_MS` (`era_schedule.rs`). Cheap: two atomics.
    pub fn suspect_era(&self) {
        self.era_probe.again();
    }
}

/// Whether an answer to a request of `era` suggests the backend's era is not what the gateway
/// thinks: a 2026-07-28 request refused with 400 (a legacy server: "Missing session ID") or
/// answered with a backend session; a legacy `initialize` refused with 400 (-32022) or 404
/// (-32601) by a modern-only server.
pub fn answer_suggests_other_era(era: Era, status: u16, opened_session: bool) -> bool {
    match era {
        Era::Stateless => status == 400 || (opened_session && status < 300),
        Era::Legacy => status == 400 || status == 404,
    }
}

/// -32005 when a sessionless request of `era` has no backend in `pool` to go to (every
/// backend's era is known and is the other one); checked before the request is forwarded.
pub fn require(pool: &Pool, era: Era) -> Result<(), crate::error::GatewayError> {
    match era {
        Era::Stateless if pool.lacks_era(era) => Err(
            crate::error::GatewayError::no_backend_of_era(&pool.name, era, pool.backends().len()),
        ),
        _ => Ok(()),
    }
}

/// The path the probe is sent to: the upstream path of the first route that uses the pool
/// (as its pool or in a rule), `/mcp` when none does.
pub fn probe_path(config: &Config, pool: usize) -> String {
    config
        .routes
        .iter()
        .find(|r| r.pool == pool || r.rules.iter().any(|rule| rule.pool == pool))
        .map(|r| match (&r.upstream_path, &r.path) {
            (Some(up), _) => up.clone(),
            (None, PathMatch::Exact(p) | PathMatch::Prefix(p)) => p.clone(),
        })
        .unwrap_or_else(|| "/mcp".to_owned())
}

/// Probes one backend: what its answers prove about its era.
pub async fn probe(engine: &Engine, pool: &Pool, backend: &Backend, path: &str) -> Finding {
    let probe = Probe {
        engine,
        pool,
        backend,
        path,
    };
    let modern = discover::discover_body();
    let version = Some(mcp_wire::era::STATELESS_SINCE);
    let discover = Some("server/discover");
    let answer = probe.send(http::Method::POST, modern, version, None, discover);
    // A throwaway `mcp-session-id` on a refused probe is never read: nothing is stored.
    let discovered = match &answer.await {
        Some((head, body)) => {
            discover::read_discover(head.status.as_u16(), content_type(head).as_deref(), body)
        }
        None => Verdict::Inconclusive,
    };
    if matches!(discovered, Verdict::Inconclusive | Verdict::WantsSession) {
        return discover::era_of(discovered, None, false);
    }
    let initialize = discover::initialize_body();
    let legacy = probe
        .send(http::Method::POST, initialize, None, None, None)
        .await;
    let initialized = match &legacy {
        Some((head, body)) => {
            discover::read_initialize(head.status.as_u16(), content_type(head).as_deref(), body)
        }
        None => Verdict::Inconclusive,
    };
    // the probe's own session (an answer that served it; a refusal's throwaway id is no
    // session): ended at once
    let sid = legacy
        .as_ref()
        .filter(|_| initialized == Verdict::Serves)
        .and_then(|(head, _)| head.headers.get(MCP_SESSION_ID))
        .and_then(|v| v.to_str().ok());
    if let Some(sid) = sid {
        let version = Some(discover::PROBE_LEGACY_VERSION);
        let delete = http::Method::DELETE;
        let _ = probe
            .send(delete, String::new(), version, Some(sid), None)
            .await;
    }
    discover::era_of(discovered, Some(initialized), sid.is_some())
}

/// The requests of one probe of one backend.
struct Probe<'a> {
    engine: &'a Engine,
    pool: &'a Pool,
    backend: &'a Backend,
    path: &'a str,
}

impl Probe<'_> {
    /// Sends one request of the probe (made for nobody: the probe is the gateway's own) and
    /// reads its whole (bounded) answer; `None` when it got none.
    async fn send(
        &self,
        method: http::Method,
        body: String,
        version: Option<&str>,
        session: Option<&str>,
        mcp_method: Option<&str>,
    ) -> Option<(pingora::http::ResponseHeader, Bytes)> {
        let target = Target {
            path: self.path,
            host: &self.backend.host_header,
        };
        let nobody = &crate::auth::Caller::default();
        let mut req = request::own(method, target, session, version, body.len(), nobody).ok()?;
        if let Some(m) = mcp_method {
            let _ = req.insert_header(MCP_METHOD, m);
        }
        let answer = self
            .engine
            .probe(self.pool, self.backend, &req, Bytes::from(body));
        answer.await.ok()
    }
}

/// An answer's `Content-Type`.
fn content_type(head: &pingora::http::ResponseHeader) -> Option<String> {
    head.headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Runs the era probes of every pool with `era: detect`, and counts backends by era.
pub struct EraService {
    pools: Arc<dyn super::LivePools>,
    engine: Arc<Engine>,
    metrics: UpstreamMetrics,
    /// The pools the gauge showed last tick: it is cleared only when they change, so a scrape
    /// never sees it empty between a clear and the new values.
    shown: std::sync::Mutex<Vec<String>>,
}

impl EraService {
    /// Era probes for the pools in force, sent through `engine`.
    pub fn new(pools: Arc<dyn super::LivePools>, engine: Arc<Engine>) -> EraService {
        let metrics = engine.metrics().clone();
        EraService {
            pools,
            engine,
            metrics,
            shown: Default::default(),
        }
    }

    /// Starts the probes that are due (each in a task of its own) and updates the gauges.
    pub fn tick(&self) {
        let pools = self.pools.pools();
        let names: Vec<String> = pools.iter().map(|(_, p)| p.name.clone()).collect();
        if let Ok(mut shown) = self.shown.lock() {
            if *shown != names {
                // a pool left: its series go
                self.metrics.backends_by_era.reset();
                *shown = names;
            }
        }
        for (index, (_, pool)) in pools.into_iter().enumerate() {
            let members = pool.backends();
            for era in ["legacy", "modern", "dual", "unknown"] {
                let n = members
                    .iter()
                    .filter(|b| b.era().map_or("unknown", BackendEra::as_str) == era)
                    .count();
                self.metrics
                    .backends_by_era
                    .with_label_values(&[&pool.name, era])
                    .set(n as i64);
            }
            if pool.era != EraSetting::Detect {
                continue;
            }
            let now = now_ms();
            for backend in members.iter().filter(|b| b.era_probe.claim(now)) {
                let (engine, pool, backend) = (self.engine.clone(), pool.clone(), backend.clone());
                let path = self.pools.mcp_path(index);
                let metrics = self.metrics.clone();
                tokio::spawn(async move {
                    let probed = probe(&engine, &pool, &backend, &path);
                    let found = tokio::time::timeout(PROBE_TIMEOUT, probed)
                        .await
                        .unwrap_or(Finding::Inconclusive);
                    record(&metrics, &pool, &backend, found);
                });
            }
        }
    }
}

/// Records one probe's finding: the era (logged when it changed), unknown, or another try
/// later.
fn record(metrics: &UpstreamMetrics, pool: &Pool, backend: &Backend, found: Finding) {
    metrics
        .era_probes
        .with_label_values(&[&pool.name, found.as_str()])
        .inc();
    match found {
        Finding::Era(era) => {
            backend.era_probe.finish(true, now_ms());
            changed(pool, backend, Some(era), "probed");
        }
        Finding::Unknown => {
            // it answered, but nothing it said proves an era: unknown (it takes both eras, so
            // it is no longer held back as stale), and asked again with the backoff, since a
            // process still starting (or an image being replaced) answers so for a moment
            backend.era_probe.stale.store(false, Ordering::Relaxed);
            backend.era_probe.finish(false, now_ms());
            changed(pool, backend, None, "probed");
        }
        Finding::Inconclusive => {
            backend.era_probe.finish(false, now_ms());
            tracing::debug!(pool = %pool.name, backend = %backend.label, "era probe inconclusive; retried later");
        }
    }
}

/// Sets a backend's era, logged at INFO when it changed.
fn changed(pool: &Pool, backend: &Backend, era: Option<BackendEra>, why: &str) {
    let previous = backend.set_era(era);
    if previous != era {
        tracing::info!(
            pool = %pool.name,
            backend = %backend.label,
            era = era.map_or("unknown", BackendEra::as_str),
            previous = previous.map_or("unknown", BackendEra::as_str),
            why,
            "backend era changed"
        );
    }
}

impl Pool {
    /// The reverse bridge's `initialize` on `backend` opened no session: whatever was probed
    /// or declared, it is no legacy session server. Its era is unknown from now on (2026-07-28
    /// requests go to it natively) and, in a pool with `era: detect`, probed again at once.
    pub fn opened_no_session(&self, backend: &Backend) {
        changed(
            self,
            backend,
            None,
            "the bridge's initialize opened no session",
        );
        backend.recheck_era();
    }
}

#[async_trait]
impl BackgroundService for EraService {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        loop {
            self.tick();
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = tokio::time::sleep(TICK) => {}
            }
        }
    }
}

#[cfg(test)]
#[path = "era_tests.rs"]
mod tests;
