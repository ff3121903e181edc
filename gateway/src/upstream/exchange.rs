//! RFC 8693 token exchange for a pool's backends (`upstream-auth.token-exchange`): the token a
//! caller presented (a JWT the gateway validated) exchanged at the token endpoint for one with
//! the pool's audience and scope, which is what the backends see.
//!
//! Each caller's exchanged tokens are cached, one per token it presented (a caller renewing its
//! token gets a new exchange), each a [`TokenSource`] with the same discipline as the pool's
//! own token (one exchange for every request waiting, refreshed before it expires, dropped on
//! a backend's 401). Bounded: `cache-per-caller` tokens per caller (the oldest dropped first),
//! `cache-callers` callers (past it, the least recently used caller is dropped), so one caller
//! presenting token after token never crowds another out, and no number of callers grows the
//! gateway past the bound (new callers arriving at once may pass it by one each).
//!
//! Callers with an API key have no token to exchange: refused (403 -32040), or given the
//! pool's own client-credentials token (`api-key-callers: client-credentials`). With
//! `actor: client-credentials` the gateway's own token goes as the `actor_token` (delegation: the
//! exchanged token's `act` names the gateway).

use super::tokens::TokenSource;
use crate::auth::Principal;
use crate::config::{ApiKeyCallers, TokenExchange};
use dashmap::DashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Why a caller has no token for the pool (answered 403 -32040).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoSubject {
    /// An API-key caller on a pool that refuses them.
    ApiKey,
    /// No caller at all (a route without `auth`), or no bearer token in its request.
    NoToken,
}

impl NoSubject {
    /// `data.reason`.
    pub fn reason(self) -> &'static str {
        match self {
            NoSubject::ApiKey => "api-key-caller",
            NoSubject::NoToken => "no-caller-token",
        }
    }
}

/// A caller's exchanged tokens: the digest of the token it presented, and the source.
type Held = Vec<([u8; 32], Arc<TokenSource>)>;

/// One caller's exchanged tokens, and when it last asked for one.
struct Caller {
    held: Mutex<Held>,
    /// The [`Exchanges::tick`] of its last request: the least recently used caller is the one
    /// dropped for a new one.
    used: AtomicU64,
}

/// Of the callers ordered by one pass over them, the least recently used share named for the
/// next evictions: a full cache makes one pass per this many new callers (a pass over every
/// caller for each new one, once full, was a caller-driven cost of its own).
const EVICTED_PER_PASS: usize = 16;

/// A pool's exchanged tokens, by caller.
pub struct Exchanges {
    pool: String,
    cfg: TokenExchange,
    /// The gateway's own token for the pool (actor token, API-key callers).
    own: Arc<TokenSource>,
    callers: DashMap<Arc<str>, Caller>,
    /// Counts requests, ordering callers by their last.
    tick: AtomicU64,
    /// The callers to drop next, least recently used last, each with its `used` when the last
    /// pass ordered them (one used since is kept).
    victims: Mutex<Vec<(Arc<str>, u64)>>,
    /// Passes made over the callers to order them.
    #[cfg(test)]
    passes: std::sync::atomic::AtomicUsize,
    /// The token endpoint's health: one exchange probes it while it is not known to work, and
    /// its failure stands for every caller ([`super::tokens::BACKOFF`]).
    endpoint: super::tokens::SharedHealth,
}

impl std::fmt::Debug for Exchanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchanges")
            .field("pool", &self.pool)
            .field("callers", &self.callers.len())
            .finish_non_exhaustive()
    }
}

impl Exchanges {
    /// What an operator may know of the exchanges: how many callers' tokens are held, the
    /// gateway's own token's status, and the token endpoint's last failure (never a token).
    pub fn status(&self) -> (usize, super::tokens::TokenStatus) {
        let mut own = self.own.status();
        if own.last_failure.is_none() {
            own.last_failure = self.endpoint.last_failure();
        }
        (self.callers.len(), own)
    }
    /// The exchanges of `pool`, none made yet.
    pub fn new(pool: &str, cfg: &TokenExchange) -> Exchanges {
        Exchanges {
            pool: pool.to_owned(),
            cfg: cfg.clone(),
            own: Arc::new(TokenSource::new(pool, &cfg.own)),
            callers: DashMap::new(),
            tick: AtomicU64::new(0),
            victims: Mutex::new(Vec::new()),
            #[cfg(test)]
            passes: Default::default(),
            endpoint: Default::default(),
        }
    }

    /// The token source for `principal`, who presented `bearer` (the token it authenticated
    /// with, without `Bearer `), or why there is none.
    pub fn source_for(
        &self,
        principal: Option<&Principal>,
        bearer: Option<&str>,
    ) -> Result<Arc<TokenSource>, NoSubject> {
        let principal = principal.ok_or(NoSubject::NoToken)?;
        if principal.id.starts_with("key:") {
            return match self.cfg.api_key_callers {
                ApiKeyCallers::ClientCredentials => Ok(self.own.clone()),
                ApiKeyCallers::Refuse => Err(NoSubject::ApiKey),
            };
        }
        let subject = bearer.filter(|b| !b.is_empty()).ok_or(NoSubject::NoToken)?;
        let digest = digest(subject);
        let tick = self.tick.fetch_add(1, Ordering::Relaxed);
        if let Some(caller) = self.callers.get(&principal.id) {
            caller.used.store(tick, Ordering::Relaxed);
            let mut held = caller.held.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, source)) = held.iter().find(|(d, _)| *d == digest) {
                return Ok(source.clone());
            }
            let source = self.source(subject);
            held.push((digest, source.clone()));
            if held.len() > self.cfg.per_caller {
                held.remove(0);
            }
            return Ok(source);
        }
        if self.callers.len() >= self.cfg.callers {
            self.make_room();
        }
        let source = self.source(subject);
        let caller = (self.callers.entry(principal.id.clone())).or_insert_with(|| Caller {
            held: Mutex::new(Vec::new()),
            used: AtomicU64::new(tick),
        });
        (caller.held.lock().unwrap_or_else(|e| e.into_inner())).push((digest, source.clone()));
        Ok(source)
    }

    /// Takes over `previous`'s tokens when it exchanged them as these exchanges do (a reload
    /// that left the pool's `token-exchange` as it was): the gateway's own, each caller's, each
    /// caller's recency, and the endpoint's health (a failure that still stands). A reload dropped
    /// them all: every caller's next request made an exchange at once, a stampede at the
    /// token endpoint. The sources are made anew (their actor token is this pool's own), each
    /// with the token its predecessor holds.
    pub fn carry_over(&self, previous: &Exchanges) {
        if previous.cfg != self.cfg {
            return;
        }
        self.own.carry_over(&previous.own);
        self.endpoint.carry_over(&previous.endpoint);
        for caller in previous.callers.iter() {
            let held = caller.held.lock().unwrap_or_else(|e| e.into_inner());
            let carried: Held = (held.iter())
                .filter_map(|(digest, before)| {
                    let source = self.source(before.subject()?);
                    source.carry_over(before);
                    Some((*digest, source))
                })
                .collect();
            let used = AtomicU64::new(caller.used.load(Ordering::Relaxed));
            let held = Mutex::new(carried);
            self.callers
                .insert(caller.key().clone(), Caller { held, used });
        }
        (self.tick).store(previous.tick.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// How many callers have exchanged tokens kept.
    #[cfg(test)]
    pub fn callers(&self) -> usize {
        self.callers.len()
    }

    fn source(&self, subject: &str) -> Arc<TokenSource> {
        let actor = self.cfg.actor.then(|| self.own.clone());
        Arc::new(TokenSource::exchange(
            &self.pool,
            &self.cfg.own,
            subject.to_owned(),
            actor,
            self.endpoint.clone(),
        ))
    }

    /// Drops the least recently used caller (the cache is full): the next of the victims the
    /// last pass named that was not used since, or, when none is left, the next of a new pass.
    /// Before, each new caller made a pass over all of them, and then dropped any one.
    fn make_room(&self) {
        let mut victims = self.victims.lock().unwrap_or_else(|e| e.into_inner());
        for pass in [false, true] {
            if pass {
                *victims = self.least_recently_used();
            }
            while let Some((caller, seen)) = victims.pop() {
                let unused = |_: &Arc<str>, c: &Caller| c.used.load(Ordering::Relaxed) == seen;
                if self.callers.remove_if(&caller, unused).is_some() {
                    return;
                }
            }
        }
    }

    /// One pass over the callers: the least recently used [`EVICTED_PER_PASS`]-th of them (at
    /// least one), least recently used last.
    fn least_recently_used(&self) -> Vec<(Arc<str>, u64)> {
        #[cfg(test)]
        self.passes.fetch_add(1, Ordering::Relaxed);
        let mut all: Vec<(Arc<str>, u64)> = (self.callers.iter())
            .map(|c| (c.key().clone(), c.used.load(Ordering::Relaxed)))
            .collect();
        let n = (all.len() / EVICTED_PER_PASS).max(1);
        if n < all.len() {
            all.select_nth_unstable_by_key(n, |(_, used)| *used);
            all.truncate(n);
        }
        all.sort_unstable_by_key(|(_, used)| std::cmp::Reverse(*used));
        all
    }
}

fn digest(token: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ClientAuth, ClientCredentials, OAuthClient, SecretSource};

    fn cfg(per_caller: usize, callers: usize, api: ApiKeyCallers) -> TokenExchange {
        TokenExchange {
            own: ClientCredentials {
                client: OAuthClient {
                    token_url: "http://127.0.0.1:9/token".into(),
                    client_id: "gw".into(),
                    client_secret: SecretSource::Env("X".into()),
                    auth: ClientAuth::Basic,
                    timeout: std::time::Duration::from_secs(1),
                },
                scope: None,
                audience: Some("a".into()),
                resource: None,
            },
            api_key_callers: api,
            actor: false,
            per_caller,
            callers,
        }
    }

    fn principal(id: &str) -> Principal {
        Principal {
            id: id.into(),
            subject: id.into(),
            scopes: vec![],
            claims: Default::default(),
        }
    }

    #[test]
    fn each_caller_and_token_has_its_source_within_the_bounds() {
        let x = Exchanges::new("p", &cfg(2, 2, ApiKeyCallers::Refuse));
        let (alice, bob) = (principal("i|alice"), principal("i|bob"));
        let a1 = x.source_for(Some(&alice), Some("t1")).unwrap();
        assert!(Arc::ptr_eq(
            &a1,
            &x.source_for(Some(&alice), Some("t1")).unwrap()
        ));
        let b1 = x.source_for(Some(&bob), Some("t1")).unwrap();
        assert!(
            !Arc::ptr_eq(&a1, &b1),
            "the same token string of another caller"
        );
        // alice presents token after token: only her own oldest goes
        let _ = x.source_for(Some(&alice), Some("t2")).unwrap();
        let _ = x.source_for(Some(&alice), Some("t3")).unwrap();
        assert!(!Arc::ptr_eq(
            &a1,
            &x.source_for(Some(&alice), Some("t1")).unwrap()
        ));
        assert!(Arc::ptr_eq(
            &b1,
            &x.source_for(Some(&bob), Some("t1")).unwrap()
        ));
        // a third caller past `callers`: room is made
        let _ = x
            .source_for(Some(&principal("i|carol")), Some("t"))
            .unwrap();
        assert!(x.callers() <= 2);
        assert_eq!(
            x.source_for(Some(&principal("key:k")), Some("k")).err(),
            Some(NoSubject::ApiKey)
        );
        assert_eq!(x.source_for(None, None).err(), Some(NoSubject::NoToken));
        assert_eq!(
            x.source_for(Some(&alice), None).err(),
            Some(NoSubject::NoToken)
        );
        let y = Exchanges::new("p", &cfg(2, 2, ApiKeyCallers::ClientCredentials));
        let own = y.source_for(Some(&principal("key:k")), None).unwrap();
        assert!(!own.exchanges());
    }

    /// A full cache drops its least recently used caller for a new one (before: every caller
    /// whose token was not fetched, or any one), and orders them by one pass per
    /// [`EVICTED_PER_PASS`] new callers, not one per new caller.
    #[test]
    fn a_full_cache_drops_the_least_recently_used_caller() {
        let x = Exchanges::new("p", &cfg(2, 64, ApiKeyCallers::Refuse));
        let ask = |n: usize| x.source_for(Some(&principal(&format!("i|c{n}"))), Some("t"));
        for n in 0..64 {
            ask(n).unwrap();
        }
        // c0 comes back: c1 is the least recently used now
        ask(0).unwrap();
        let kept = |n: usize| x.callers.contains_key(format!("i|c{n}").as_str());
        ask(64).unwrap();
        assert!(!kept(1) && kept(0) && kept(2), "c1 dropped");
        assert_eq!(x.callers(), 64);
        // the pass named c1 to c4: c2 comes back before its turn and is kept
        ask(2).unwrap();
        ask(65).unwrap();
        ask(66).unwrap();
        assert!(kept(2) && !kept(3) && !kept(4) && kept(5));
        assert_eq!(x.passes.load(Ordering::Relaxed), 1);
        // none left of that pass: the next orders them again
        ask(67).unwrap();
        assert!(!kept(5) && kept(6));
        assert_eq!(x.passes.load(Ordering::Relaxed), 2);
        assert_eq!(x.callers(), 64);
        for n in 68..68 + 64 {
            ask(n).unwrap();
        }
        assert_eq!(x.callers(), 64);
        assert!(x.passes.load(Ordering::Relaxed) <= 2 + 64 / 4 + 1);
        assert!((68..68 + 64).all(kept), "the newest callers are kept");
    }

    /// An endpoint that accepts and closes at once (an `unreachable` failure), the exchanges
    /// of a pool asking it, a counter of token events, and the number of connections it took.
    fn failing_endpoint() -> (
        Exchanges,
        pingora_prometheus::prometheus::IntCounterVec,
        Arc<std::sync::atomic::AtomicUsize>,
    ) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = accepts.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                drop(stream);
            }
        });
        std::env::set_var("MCPGW_TEST_EXCHANGE_SECRET", "s");
        let mut c = cfg(2, 64, ApiKeyCallers::Refuse);
        c.own.client.token_url = format!("http://127.0.0.1:{port}/token");
        c.own.client.client_secret = SecretSource::Env("MCPGW_TEST_EXCHANGE_SECRET".into());
        let events = pingora_prometheus::prometheus::IntCounterVec::new(
            pingora_prometheus::prometheus::Opts::new("t", "t"),
            &["pool", "event"],
        )
        .unwrap();
        (Exchanges::new("p", &c), events, accepts)
    }

    /// Twenty distinct callers arriving at once at a pool whose token endpoint fails: one
    /// exchange probes it, the others wait for its outcome and get its failure; one request in
    /// all (before: each caller's exchange asked, 15 to 20 requests).
    #[tokio::test]
    async fn twenty_callers_at_once_at_a_failing_endpoint_make_one_request() {
        let (x, events, accepts) = failing_endpoint();
        let sources: Vec<_> = (0..20)
            .map(|i| {
                let caller = principal(&format!("i|caller-{i}"));
                x.source_for(Some(&caller), Some("token")).unwrap()
            })
            .collect();
        let all = futures_util::future::join_all(sources.iter().map(|s| s.ready(&events))).await;
        for failed in all {
            assert_eq!(failed.unwrap_err().reason, "unreachable");
        }
        assert_eq!(accepts.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    /// Twenty callers whose exchanges fail at an unreachable endpoint: one connection attempt
    /// while the failure stands, not one per caller (issue 48, item 12).
    #[tokio::test]
    async fn a_failing_endpoint_backs_off_for_the_whole_pool() {
        let (x, events, accepts) = failing_endpoint();
        for i in 0..20 {
            let caller = principal(&format!("i|caller-{i}"));
            let source = x.source_for(Some(&caller), Some("token")).unwrap();
            let failed = source.ready(&events).await.unwrap_err();
            assert_ne!(failed.reason, "refused");
        }
        assert_eq!(accepts.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
