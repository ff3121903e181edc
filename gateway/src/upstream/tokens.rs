//! The OAuth token a pool's backends get (`upstream-auth.client-credentials`, RFC 6749 §4.4):
//! fetched from the token endpoint at the first request that needs it, cached, refreshed in
//! the background before it expires, and never sent once it may have expired.
//!
//! - **Single flight.** Requests that find no usable token wait on one fetch (a thousand
//!   concurrent first calls make one request to the token endpoint); a failed fetch is
//!   answered to every request for [`BACKOFF`] without asking again (503 -32039, with the
//!   time left as `Retry-After`), so an authorization server that is down is not hammered.
//! - **Lifetime.** A token of `expires_in` L seconds is used until L minus a margin
//!   (a tenth of L, at most 10 s) after its answer arrived, and refreshed in the background
//!   from 80% of L on (the credentials service looks every second); a token whose refresh
//!   fails is still used until its own end. An answer without `expires_in` counts as 60 s.
//! - **A floor of [`REFETCH_FLOOR`].** No token is fetched again for its expiry sooner than
//!   1 s after the last one arrived (nor refreshed sooner): a token that ends before (an
//!   `expires_in` down to 1e-9 s) is sent until its end, and requests after it, until the
//!   floor, are answered 503 -32039 `short-lived` with the time left as `Retry-After`; the next
//!   request after the floor makes the one fetch the others wait on. Never a token past its end,
//!   never a fetch per request.
//! - **One probe per pool for exchanges.** While a pool's token endpoint is not known to work,
//!   one caller's exchange asks it and the others wait for the outcome ([`EndpointHealth`]).
//! - **Invalidation.** A backend's 401 to a request that carried the token drops it: the next
//!   request fetches a new one (the gateway's own requests are sent again once at once).
//! - **Secrets.** The client secret is read at each fetch (a rotated file is used by the next
//!   one; a file on a blocking thread, within the endpoint's timeout); the token's header value
//!   is marked sensitive; errors and logs name the pool and the token endpoint, never the
//!   secret, the token or the endpoint's own error text.

#[cfg(test)]
use super::token_request::token_of;
use super::token_request::{self, fail, form_urlencoded, Token};
pub use super::token_request::{Failure, BACKOFF, REFETCH_FLOOR, SHORT_LIVED};
use crate::config::ClientCredentials;
use arc_swap::ArcSwapOption;
use http::HeaderValue;
use pingora_prometheus::prometheus::IntCounterVec;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The shortest time between two tokens dropped for a backend's 401: a backend that refuses
/// every token (a tool answering 401 itself, a misconfigured audience) makes one new fetch per
/// this time, not one per request (each dropping the pool's good token for every caller).
pub const REFETCH_GAP: Duration = Duration::from_secs(5);

/// What [`TokenSource::status`] tells: never the token itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenStatus {
    /// How long ago the token in use arrived (`None`: no token yet).
    pub age: Option<Duration>,
    /// How long it may still be sent (zero once it may have expired).
    pub usable_for: Option<Duration>,
    /// How long ago the last fetch or refresh failed, and why ([`Failure::reason`]); cleared
    /// by the next success.
    pub last_failure: Option<(Duration, &'static str)>,
}

/// How a token is asked for.
enum Grant {
    /// Client credentials: the gateway's own token.
    ClientCredentials,
    /// RFC 8693: the caller's `subject` token exchanged, with the gateway's own token as the
    /// `actor_token` when `actor` is set.
    Exchange {
        subject: String,
        actor: Option<Arc<TokenSource>>,
    },
}

/// `grant_type` of RFC 8693.
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of the subject, actor and requested tokens (RFC 8693 §3).
const ACCESS_TOKEN: &str = "urn:ietf:params:oauth:token-type:access_token";

/// The health of a pool's token endpoint, shared by every caller's exchange: while it is not
/// known to work (no answer yet, or a failure of the endpoint itself since), one exchange at a
/// time asks it and the others wait for the outcome; a failure then stands for every caller for
/// [`BACKOFF`] (answered at once); once it answered (a token, or a refusal of one caller's
/// token), each caller's exchange goes on at once. Twenty callers arriving together at a
/// failing endpoint make one request, not twenty.
#[derive(Debug, Default)]
pub struct EndpointHealth {
    /// The endpoint's last failure (never a refusal of one caller's token; a refusal of the
    /// gateway's client, `invalid_client`, is one), and when.
    failed: Mutex<Option<(Instant, Failure)>>,
    /// Whether the endpoint's last outcome was an answer (a token or a refusal).
    good: AtomicBool,
    /// Held by the one exchange probing the endpoint while it is not known to work.
    probe: tokio::sync::Mutex<()>,
}

impl EndpointHealth {
    /// The endpoint's last failure, and how long ago (for the console).
    pub fn last_failure(&self) -> Option<(Duration, &'static str)> {
        let failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        let (at, failure) = failed.as_ref()?;
        Some((
            Instant::now().saturating_duration_since(*at),
            failure.reason,
        ))
    }

    /// Takes over `previous`'s failure and health (a reload that kept the endpoint).
    pub fn carry_over(&self, previous: &EndpointHealth) {
        let failed = previous.failed.lock().unwrap_or_else(|e| e.into_inner());
        *self.failed.lock().unwrap_or_else(|e| e.into_inner()) = failed.clone();
        self.good.store(previous.known_good(), Ordering::Release);
    }

    fn known_good(&self) -> bool {
        self.good.load(Ordering::Acquire)
    }

    /// Records an exchange's outcome: an answer, or the endpoint's failure at `at`.
    fn record(&self, outcome: Result<(), &Failure>, at: Instant) {
        match outcome {
            Ok(()) => self.good.store(true, Ordering::Release),
            // a refusal is of one caller's token: the endpoint works (a refusal of the
            // gateway's own client stands for every caller)
            Err(failure)
                if failure.reason == "refused" && failure.oauth_error != Some("invalid_client") =>
            {
                self.good.store(true, Ordering::Release)
            }
            Err(failure) => {
                *self.failed.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some((at, failure.clone()));
                self.good.store(false, Ordering::Release);
            }
        }
    }
}

/// A pool's token endpoint health, shared by its callers' exchanges.
pub type SharedHealth = Arc<EndpointHealth>;

/// A token for a pool's backends: the pool's own (client credentials), or one caller's
/// exchanged token.
pub struct TokenSource {
    pool: String,
    cfg: ClientCredentials,
    grant: Grant,
    current: ArcSwapOption<Token>,
    /// Held by the one fetch in flight.
    fetching: tokio::sync::Mutex<()>,
    /// The last failed fetch, and when it happened.
    failed: Mutex<Option<(Instant, Failure)>>,
    /// The health of the token endpoint, shared by every caller's exchange of one pool:
    /// twenty callers whose exchanges fail make one request per [`BACKOFF`] to a failing
    /// authorization server, not twenty, however many arrive at once.
    endpoint: Option<SharedHealth>,
    /// When a backend's 401 last dropped the token ([`REFETCH_GAP`]).
    dropped_at: Mutex<Option<Instant>>,
    /// The `hit` counter, resolved once (a hit is every request's).
    hits: std::sync::OnceLock<pingora_prometheus::prometheus::IntCounter>,
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSource")
            .field("pool", &self.pool)
            .field("token_url", &self.cfg.client.token_url)
            .finish_non_exhaustive()
    }
}

impl TokenSource {
    /// The client-credentials token source of `pool`, with no token yet.
    pub fn new(pool: &str, cfg: &ClientCredentials) -> TokenSource {
        TokenSource::with(pool, cfg, Grant::ClientCredentials)
    }

    /// The source of one caller's exchanged token (`subject`: the token it presented; `actor`:
    /// the gateway's own, sent as the actor token), with no token yet; the endpoint's health
    /// is shared by every source sharing `endpoint`.
    pub fn exchange(
        pool: &str,
        cfg: &ClientCredentials,
        subject: String,
        actor: Option<Arc<TokenSource>>,
        endpoint: SharedHealth,
    ) -> TokenSource {
        let mut source = TokenSource::with(pool, cfg, Grant::Exchange { subject, actor });
        source.endpoint = Some(endpoint);
        source
    }

    /// Whether this source exchanges a caller's token (else it is the pool's own).
    pub fn exchanges(&self) -> bool {
        matches!(self.grant, Grant::Exchange { .. })
    }

    fn with(pool: &str, cfg: &ClientCredentials, grant: Grant) -> TokenSource {
        TokenSource {
            pool: pool.to_owned(),
            grant,
            cfg: cfg.clone(),
            current: ArcSwapOption::empty(),
            fetching: tokio::sync::Mutex::new(()),
            failed: Mutex::new(None),
            endpoint: None,
            dropped_at: Mutex::new(None),
            hits: std::sync::OnceLock::new(),
        }
    }

    /// Whether `other` asks the same endpoint for the same token (a reload keeps the token).
    pub fn same_as(&self, other: &ClientCredentials) -> bool {
        &self.cfg == other
    }

    /// Takes over `previous`'s token (a reload that left the pool's credentials as they were).
    pub fn carry_over(&self, previous: &TokenSource) {
        self.current.store(previous.current.load_full());
    }

    /// The caller's token this source exchanges (`None`: the pool's own).
    pub(super) fn subject(&self) -> Option<&str> {
        match &self.grant {
            Grant::Exchange { subject, .. } => Some(subject),
            Grant::ClientCredentials => None,
        }
    }

    /// Holds `token` as if fetched now, for five minutes.
    #[cfg(test)]
    pub(super) fn fetched(&self, token: &str) {
        let body = serde_json::json!({"access_token": token, "expires_in": 300});
        let token = token_of(&body, Instant::now()).unwrap();
        self.current.store(Some(Arc::new(token)));
    }

    /// The header of a token that may be sent now, if there is one.
    pub fn header(&self) -> Option<HeaderValue> {
        let token = self.current.load();
        let token = token.as_ref()?;
        (Instant::now() < token.usable_until).then(|| token.header.clone())
    }

    /// A token that may be sent now: the cached one (a hit), or one fetched (one fetch for all
    /// who wait), or why there is none. An exchange while its pool's endpoint is not known to
    /// work waits for the one probing it ([`EndpointHealth`]).
    pub async fn ready(&self, events: &IntCounterVec) -> Result<(), Failure> {
        if let Some(held) = self.held(events, true) {
            return held;
        }
        let _probe = self.probe_turn().await;
        let _one = self.fetching.lock().await;
        if let Some(held) = self.held(events, true) {
            // fetched while this request waited
            return held;
        }
        if let Some(failure) = self.standing_failure() {
            return Err(failure);
        }
        self.fetch_and_store(events, "fetched").await?;
        // a token that ended on its way here (`expires_in` of a nanosecond) is not sent
        self.held(events, false).unwrap_or(Ok(()))
    }

    /// What the token in hand answers: `Ok` while it may be sent (a hit, when `hit`); a
    /// [`SHORT_LIVED`] failure once it ended within [`REFETCH_FLOOR`] of its answer (no fetch:
    /// a token of a nanosecond costs one fetch per floor, not one per request); `None` when a
    /// fetch is due.
    fn held(&self, events: &IntCounterVec, hit: bool) -> Option<Result<(), Failure>> {
        let token = self.current.load();
        let token = token.as_ref()?;
        let now = Instant::now();
        if now < token.usable_until {
            if hit {
                self.hit(events);
            }
            return Some(Ok(()));
        }
        let left = token.refetch_after.checked_duration_since(now)?;
        if left.is_zero() {
            return None;
        }
        self.count(events, SHORT_LIVED);
        let mut failure = fail(
            SHORT_LIVED,
            format!("the token ended before the {REFETCH_FLOOR:?} floor between fetches"),
        );
        failure.retry_after = left;
        Some(Err(failure))
    }

    /// For an exchange while its pool's endpoint is not known to work: the turn to probe it,
    /// after any probe before (which may have settled its health). `None`: go on at once.
    async fn probe_turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        let health = self.endpoint.as_deref()?;
        if health.known_good() {
            return None;
        }
        let turn = health.probe.lock().await;
        (!health.known_good()).then_some(turn)
    }

    /// What an operator may know of the token: its age, how long it may still be sent, and
    /// the last failure to get one (never the token).
    pub fn status(&self) -> TokenStatus {
        let now = Instant::now();
        let token = self.current.load();
        let failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        TokenStatus {
            age: token
                .as_ref()
                .map(|t| now.saturating_duration_since(t.received)),
            usable_for: token
                .as_ref()
                .map(|t| t.usable_until.saturating_duration_since(now)),
            last_failure: failed
                .as_ref()
                .map(|(at, f)| (now.saturating_duration_since(*at), f.reason)),
        }
    }

    /// Whether the token in use should be refreshed now.
    pub fn refresh_due(&self) -> bool {
        let token = self.current.load();
        token
            .as_ref()
            .is_some_and(|t| Instant::now() >= t.refresh_at)
    }

    /// Refreshes the token in use (in the background: requests go on with the old one, which
    /// is still usable until its own end).
    pub async fn refresh(&self, events: &IntCounterVec) {
        let _one = self.fetching.lock().await;
        if !self.refresh_due() || self.standing_failure().is_some() {
            return;
        }
        if let Err(f) = self.fetch_and_store(events, "refreshed").await {
            tracing::warn!(pool = %self.pool, reason = f.reason, detail = %f.detail,
                "a backend token could not be refreshed: the current one is used until it expires");
        }
    }

    /// Drops the token if it is still `used` (a backend answered 401 to a request that carried
    /// it), unless a 401 dropped one less than [`REFETCH_GAP`] ago; whether it was. A token
    /// kept so is counted `invalidation-held`: the 401 is the backend's answer, and the token
    /// endpoint is asked at most once per gap however many requests are refused.
    pub fn invalidate(&self, used: &HeaderValue, events: &IntCounterVec) -> bool {
        let current = self.current.load();
        if current
            .as_ref()
            .is_none_or(|t| t.header.as_bytes() != used.as_bytes())
        {
            return false;
        }
        let now = Instant::now();
        let same = {
            let mut dropped = self.dropped_at.lock().unwrap_or_else(|e| e.into_inner());
            let may = dropped.is_none_or(|at| may_drop(at, now));
            if may {
                *dropped = Some(now);
            }
            may
        };
        if !same {
            self.count(events, "invalidation-held");
        }
        if same {
            self.current.store(None);
            self.count(events, "invalidated");
            tracing::info!(pool = %self.pool, "a backend refused the pool's token (401): a new one is fetched");
        }
        same
    }

    fn hit(&self, events: &IntCounterVec) {
        let hits = self
            .hits
            .get_or_init(|| events.with_label_values(&[&self.pool, "hit"]));
        hits.inc();
    }

    fn count(&self, events: &IntCounterVec, event: &str) {
        events.with_label_values(&[&self.pool, event]).inc();
    }

    /// The last failure while it stands (this source's, or the endpoint's for the pool), with
    /// the time left.
    fn standing_failure(&self) -> Option<Failure> {
        let standing = |slot: &Mutex<Option<(Instant, Failure)>>| {
            let failed = slot.lock().unwrap_or_else(|e| e.into_inner());
            let (at, failure) = failed.as_ref()?;
            let left = BACKOFF.checked_sub(at.elapsed())?;
            let mut failure = failure.clone();
            failure.retry_after = left.max(Duration::from_millis(1));
            Some(failure)
        };
        standing(&self.failed)
            .or_else(|| (self.endpoint.as_deref()).and_then(|h| standing(&h.failed)))
    }

    async fn fetch_and_store(&self, events: &IntCounterVec, event: &str) -> Result<(), Failure> {
        let fetched = Box::pin(self.fetch(events)).await;
        if let Some(health) = self.endpoint.as_deref() {
            health.record(fetched.as_ref().map(|_| ()), Instant::now());
        }
        match fetched {
            Ok(token) => {
                self.current.store(Some(Arc::new(token)));
                *self.failed.lock().unwrap_or_else(|e| e.into_inner()) = None;
                self.count(events, event);
                Ok(())
            }
            Err(failure) => {
                self.count(events, &format!("failed-{}", failure.reason));
                tracing::error!(pool = %self.pool, token_url = %self.cfg.client.token_url,
                    reason = failure.reason, detail = %failure.detail,
                    "no token for the pool's backends: its requests are answered 503 -32039");
                let failed = Some((Instant::now(), failure.clone()));
                *self.failed.lock().unwrap_or_else(|e| e.into_inner()) = failed;
                Err(failure)
            }
        }
    }

    /// One request to the token endpoint.
    async fn fetch(&self, events: &IntCounterVec) -> Result<Token, Failure> {
        let client = &self.cfg.client;
        let secret = super::secrets::read_secret_off_runtime(&client.client_secret, client.timeout)
            .await
            .map_err(|detail| fail("secret-unreadable", detail))?;
        let form = match &self.grant {
            Grant::ClientCredentials => form_urlencoded(&[("grant_type", "client_credentials")]),
            Grant::Exchange { subject, actor } => {
                let mut pairs = vec![
                    ("grant_type", TOKEN_EXCHANGE),
                    ("subject_token", subject.as_str()),
                    ("subject_token_type", ACCESS_TOKEN),
                    ("requested_token_type", ACCESS_TOKEN),
                ];
                let actor_token = match actor {
                    Some(own) => {
                        // boxed: the gateway's own token is fetched through the same code
                        Box::pin(own.ready(events)).await?;
                        own.header()
                    }
                    None => None,
                };
                let actor_token = actor_token.as_ref().and_then(|h| {
                    let text = h.to_str().ok()?;
                    Some(text.strip_prefix("Bearer ").unwrap_or(text).to_owned())
                });
                if let Some(token) = actor_token.as_deref() {
                    pairs.push(("actor_token", token));
                    pairs.push(("actor_token_type", ACCESS_TOKEN));
                }
                form_urlencoded(&pairs)
            }
        };
        let (form, headers) = token_request::form(form, &self.cfg, &secret)?;
        let url = &client.token_url;
        let posted = tokio::time::timeout(
            client.timeout,
            crate::fetch::post_form(url, &headers, form, token_request::ANSWER_LIMIT),
        )
        .await
        .map_err(|_| fail("timeout", format!("no answer within {:?}", client.timeout)))?
        .map_err(|e| fail("unreachable", e))?;
        token_request::answer(posted.status.as_u16(), &posted.body, Instant::now())
    }
}

/// Whether a 401 at `now` may drop a token, the last one dropped so at `last`.
fn may_drop(last: Instant, now: Instant) -> bool {
    now.saturating_duration_since(last) >= REFETCH_GAP
}

#[cfg(test)]
#[path = "tokens_tests.rs"]
mod tests;
