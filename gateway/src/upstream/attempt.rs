//! The upstream attempt engine: the one place that decides which backend to try next, how
//! often to retry, what is safe to repeat, when a backend is marked failed, and that records
//! upstream latency. Every gateway-driven request goes through [`Engine::send`] (one attempt)
//! and [`Engine::each_backend`] (the one "pick → try → mark → next" loop, [`Attempts`]: the
//! era bridges drive it themselves where an attempt holds the client's session); pingora's
//! own pipeline (the stateless fast path) asks [`Engine::next_backend`] and
//! [`Engine::connect_failed`] from its phases, so all follow the same policy.
//!
//! Failover rules (pingora's `failover.md`): a request whose connection failed never reached
//! the backend and may go to another one; a request whose connection broke afterwards may
//! have had effects and is repeated only when [`mcp_wire::messages::safe_to_repeat`] says
//! so.

use super::client::{CallError, Exchange, UpstreamClient};
use super::metrics::UpstreamMetrics;
pub use super::pick::Pick;
use super::{Backend, Pool};
use crate::error::GatewayError;
use bytes::Bytes;
use mcp_wire::Era;
use pingora::http::RequestHeader;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

/// One attempt in progress (boxed: the futures of a retry loop borrow from their caller, and
/// must stay `Send` for pingora's phases).
pub type Attempt<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = Step<T>> + Send + 'a>>;

/// What one attempt on one backend came to.
pub enum Step<T> {
    /// Done: stop with this.
    Done(T),
    /// The backend could not be reached ([`Engine::send`] has marked it failed): the next one
    /// is tried.
    Unreachable,
    /// The connection broke after the request went out (or while its answer was read): the
    /// backend is marked failed; the next one is tried.
    Lost,
    /// The connection broke after a request that is not safe to repeat went out: the backend
    /// is marked failed, and the loop stops with -32013 (the request's outcome is unknown).
    Unknown,
    /// The backend answered but cannot take this: the next one is tried, nothing is marked.
    Refused,
    /// Stop trying, with this answer for the client.
    Stop(GatewayError),
}

impl<T> Step<T> {
    /// A connection that broke after the request went out: the next backend when the request
    /// is safe to repeat ([`mcp_wire::messages::safe_to_repeat`]), else the end ([`Step::Unknown`]).
    pub fn lost(repeatable: bool) -> Step<T> {
        if repeatable {
            Step::Lost
        } else {
            Step::Unknown
        }
    }
}

/// One request's way through the pool: which backend next (by its [`Pick`], within the
/// pool's `retries`), what an attempt's [`Step`] means for its backend, and the error when
/// none is left. [`Engine::each_backend`] runs it over a closure; a caller whose attempts
/// hold more than a closure can lend (the client's session while a bridged answer streams)
/// runs the same loop itself: `while let Some(b) = attempts.next() { ... attempts.settle(&b, step) }`.
pub struct Attempts<'a> {
    engine: &'a Engine,
    pool: &'a Pool,
    pick: Pick<'a>,
    tried: &'a mut Vec<SocketAddr>,
}

impl Iterator for Attempts<'_> {
    type Item = Arc<Backend>;

    /// The next backend to try (recorded as tried), or `None` when the policy says stop.
    fn next(&mut self) -> Option<Arc<Backend>> {
        let backend = self
            .engine
            .next_backend(self.pool, &self.pick, self.tried.as_slice())?;
        self.tried.push(backend.addr);
        Some(backend)
    }
}

impl Attempts<'_> {
    /// What the attempt on `backend` came to: `Some` to end with, `None` to try the next
    /// backend. A lost connection marks the backend failed (a refused one was marked by
    /// [`Engine::send`]): once per failure.
    pub fn settle<T>(&self, backend: &Backend, step: Step<T>) -> Option<Result<T, GatewayError>> {
        match step {
            Step::Done(done) => Some(Ok(done)),
            Step::Stop(err) => Some(Err(err)),
            Step::Lost => {
                self.pool.mark_failed(backend);
                None
            }
            Step::Unknown => {
                self.pool.mark_failed(backend);
                let err = GatewayError::backend_lost(&self.pool.name, &backend.label);
                Some(Err(err))
            }
            Step::Unreachable | Step::Refused => None,
        }
    }

    /// The backends tried so far, in order.
    pub fn tried(&self) -> &[SocketAddr] {
        self.tried.as_slice()
    }

    /// The error when no (more) backend is left: [`Engine::exhausted`].
    pub fn exhausted(&self) -> GatewayError {
        self.engine
            .exhausted(self.pool, &self.pick, self.tried.len())
    }
}

/// Sends gateway-driven requests upstream and holds the failover policy.
pub struct Engine {
    pub(super) client: UpstreamClient,
    metrics: UpstreamMetrics,
    /// Told when a refused connection shows a serving backend dead.
    deaths: super::deaths::Deaths,
}

impl Engine {
    /// An engine recording into `metrics`.
    pub fn new(metrics: UpstreamMetrics) -> Engine {
        Engine {
            client: UpstreamClient::default(),
            metrics,
            deaths: super::deaths::Deaths::default(),
        }
    }

    /// Where backends known dead are announced (a refused connection here, the health checks'
    /// verdicts through the same announcer).
    pub fn deaths(&self) -> &super::deaths::Deaths {
        &self.deaths
    }

    /// The metric families the engine records into (upstream's own).
    pub(super) fn metrics(&self) -> &UpstreamMetrics {
        &self.metrics
    }

    /// Makes sure a request to `pool`'s backends can carry its credentials: its
    /// client-credentials token cached, or fetched (one fetch for every request waiting), or
    /// the answer for the client when none can be had (503 -32039).
    pub async fn credentials_ready(&self, pool: &Pool) -> Result<(), GatewayError> {
        let Some(token) = pool.credentials.token() else {
            return Ok(());
        };
        (token.ready(&self.metrics.upstream_tokens).await)
            .map_err(|failure| GatewayError::upstream_credentials(&pool.name, &failure))
    }

    /// The token a request to `pool`'s backends carries (`req`: its head, whose extensions name
    /// the caller), with its source: the pool's own, or the caller's exchanged token, cached
    /// or fetched; `None` for a pool without tokens; the answer for the client when none can be
    /// had (503 -32039; 403 -32040 when the caller's token cannot be exchanged).
    pub async fn token_for(
        &self,
        pool: &Pool,
        req: &RequestHeader,
    ) -> Result<Option<(Arc<super::tokens::TokenSource>, http::HeaderValue)>, GatewayError> {
        let source = match pool.credentials.source_for(req) {
            Ok(Some(source)) => source,
            Ok(None) => return Ok(None),
            Err(no) => return Err(GatewayError::exchange_refused(&pool.name, no.reason())),
        };
        if let Err(failure) = source.ready(&self.metrics.upstream_tokens).await {
            let callers_fault = failure.reason == "refused"
                && failure.oauth_error.is_some_and(|c| c != "invalid_client");
            return Err(if source.exchanges() && callers_fault {
                let code = failure.oauth_error.unwrap_or("other");
                GatewayError::exchange_refused(&pool.name, code)
            } else {
                GatewayError::upstream_credentials(&pool.name, &failure)
            });
        }
        match source.header() {
            Some(header) => Ok(Some((source, header))),
            // it ended since `ready` said it may be sent (a token of a moment): a request of a
            // pool with a token never goes without one
            None => {
                use super::token_request::{fail, SHORT_LIVED};
                let ended = fail(
                    SHORT_LIVED,
                    "the token ended before the request left".into(),
                );
                Err(GatewayError::upstream_credentials(&pool.name, &ended))
            }
        }
    }

    /// Where token events are counted (`mcpgw_upstream_tokens_total`).
    pub fn token_events(&self) -> &pingora_prometheus::prometheus::IntCounterVec {
        &self.metrics.upstream_tokens
    }

    /// Counts a call lost with its backend, not safe to repeat (answered -32013).
    pub fn count_lost(&self, pool: &str, method_label: &str) {
        self.metrics.count_lost(pool, method_label);
    }

    /// The next backend to try after `tried` (in order), or `None` when the policy says stop.
    pub fn next_backend(
        &self,
        pool: &Pool,
        pick: &Pick<'_>,
        tried: &[SocketAddr],
    ) -> Option<Arc<Backend>> {
        match pick {
            Pick::Request if tried.len() <= pool.retries => pool.select(tried),
            Pick::Serving(era) if tried.len() <= pool.retries => {
                pool.select_serving(tried, Some(*era))
            }
            Pick::Session { counts } if tried.len() <= pool.retries => {
                pool.select_for_session(tried, counts)
            }
            Pick::Among(only) if tried.len() <= pool.retries => {
                let members = pool.backends();
                let mut exclude = tried.to_vec();
                exclude.extend(members.iter().filter(|b| !only(b)).map(|b| b.addr));
                pool.select(&exclude)
            }
            Pick::Request | Pick::Serving(_) | Pick::Session { .. } | Pick::Among(_) => None,
            Pick::Move {
                counts,
                last_resort,
            } => {
                let mut exclude = tried.to_vec();
                exclude.extend(last_resort.as_ref().map(|b| b.addr));
                pool.select_for_session(&exclude, counts).or_else(|| {
                    last_resort
                        .clone()
                        .filter(|b| !tried.contains(&b.addr) && b.serves(Era::Legacy))
                })
            }
        }
    }

    /// The error when `pick` found no (more) backend: -32005 no-backend-of-era when the pool
    /// has backends but none serves the era `pick` needs (the typed case a bridge can take
    /// over: match on [`crate::error::ErrorKind::NoBackendOfEra`]), else -32011.
    pub fn exhausted(&self, pool: &Pool, pick: &Pick<'_>, tried: usize) -> GatewayError {
        match pick.era() {
            Some(era) if pool.lacks_era(era) => {
                GatewayError::no_backend_of_era(&pool.name, era, pool.backends().len())
            }
            _ => GatewayError::unavailable(&pool.name, tried),
        }
    }

    /// Whether a request whose connection to its latest backend failed may try another:
    /// within the pool's `retries` and while untried backends remain.
    pub fn may_retry(&self, pool: &Pool, tried: &[SocketAddr]) -> bool {
        tried.len() <= pool.retries && tried.len() < pool.backends().len()
    }

    /// Records a failed connection: the backend is skipped for the failure cooldown.
    pub fn connect_failed(&self, pool: &Pool, backend: &Backend) {
        if pool.mark_failed_for(backend, "connect-refused") {
            self.deaths
                .announce(&pool.name, backend.addr, "connect-refused");
        }
        self.metrics
            .upstream_connect_failures
            .with_label_values(&[&pool.name, &backend.label])
            .inc();
    }

    /// Records upstream latency: from the request going out to its response head.
    pub fn observe_latency(&self, pool: &Pool, sent: Instant) {
        self.metrics
            .upstream_duration
            .with_label_values(&[&pool.name])
            .observe(sent.elapsed().as_secs_f64());
    }

    /// One attempt: sends `req` and `body` to `backend` and reads the response head. Counts
    /// the request in flight on the backend for as long as the exchange lives, marks the
    /// backend (failed on a refused connection, fine on an answer) and records latency.
    pub async fn send(
        &self,
        pool: &Pool,
        backend: &Arc<Backend>,
        req: &RequestHeader,
        body: Bytes,
        repeatable: bool,
    ) -> Result<Exchange, CallError> {
        // every request the gateway sends a backend carries the pool's credentials, its own
        // (re-initializations, probes, held streams) as much as the client's; a token the
        // backend refuses (401) is dropped and the request sent once more with a new one (a
        // refused request was not run)
        let mut refused_once = false;
        loop {
            let token = if pool.credentials.has_token() {
                // boxed: pools without a token do not carry its future
                Box::pin(self.token_for(pool, req))
                    .await
                    .map_err(|e| CallError::Credentials(Box::new(e)))?
            } else {
                None
            };
            let with_credentials;
            let header = token.as_ref().map(|(_, h)| h);
            // built with `request::identify`, the head carries the credentials already
            let req = if pool.credentials.is_empty() || pool.credentials.applied(req, header) {
                req
            } else {
                let mut own = req.clone();
                pool.credentials.apply(&mut own);
                if let Some((_, header)) = &token {
                    let _ = own.insert_header(http::header::AUTHORIZATION, header.clone());
                }
                with_credentials = own;
                &with_credentials
            };
            let inflight = Pool::track(backend);
            let sent = Instant::now();
            match self
                .client
                .send(pool.peer(backend), req, body.clone(), repeatable)
                .await
            {
                Ok(exchange) => {
                    pool.mark_ok(backend);
                    self.observe_latency(pool, sent);
                    let refused = exchange.header().status == 401;
                    if let (false, true, Some((source, header))) = (refused_once, refused, &token) {
                        if source.invalidate(header, &self.metrics.upstream_tokens) {
                            refused_once = true;
                            continue;
                        }
                    }
                    return Ok(exchange.counted(inflight));
                }
                Err(e) => {
                    if let CallError::Connect(_) = e {
                        self.connect_failed(pool, backend);
                    }
                    return Err(e);
                }
            }
        }
    }

    /// The backends of `pool` by `pick` for one request, recorded in `tried` ([`Attempts`]).
    pub fn attempts<'a>(
        &'a self,
        pool: &'a Pool,
        pick: Pick<'a>,
        tried: &'a mut Vec<SocketAddr>,
    ) -> Attempts<'a> {
        Attempts {
            engine: self,
            pool,
            pick,
            tried,
        }
    }

    /// The one retry loop: picks backends by `pick` (recording them in `tried`) and runs
    /// `attempt` on each until one is done, one says stop, or the policy runs out (then
    /// -32011 backend-unavailable).
    pub async fn each_backend<'a, T>(
        &self,
        pool: &Pool,
        pick: Pick<'_>,
        tried: &mut Vec<SocketAddr>,
        mut attempt: impl FnMut(Arc<Backend>) -> Attempt<'a, T>,
    ) -> Result<T, GatewayError> {
        // no backend is tried without the pool's credentials
        if pool.credentials.token().is_some() {
            Box::pin(self.credentials_ready(pool)).await?;
        }
        let mut attempts = self.attempts(pool, pick, tried);
        while let Some(backend) = attempts.next() {
            let step = attempt(backend.clone()).await;
            if let Some(end) = attempts.settle(&backend, step) {
                return end;
            }
        }
        Err(attempts.exhausted())
    }

    /// Returns a finished exchange's connection to the pool.
    pub fn release(&self, exchange: Exchange) {
        self.client.release(exchange);
    }
}

#[cfg(test)]
#[path = "attempt_tests.rs"]
mod tests;
