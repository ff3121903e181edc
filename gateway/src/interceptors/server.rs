//! One interceptor server: its endpoint and what its `interceptors/list` said, kept as long as
//! the answer's `ttlMs` allows (`list-ttl-ms` without one; kept between 1 s and an hour).
//! A stale list is used while one refresh runs beside the request (never two at once); a
//! server whose list is not known yet is asked by the first request, the others wait for that
//! one answer; a failed ask is remembered for a second, so a server that is down costs one
//! attempt a second, not one per request.

use super::client::{Endpoint, Failure};
use super::metrics::InterceptorMetrics;
use super::wire::{self, Listed};
use crate::config::InterceptorServerConfig;
use crate::upstream::client::UpstreamClient;
use arc_swap::ArcSwapOption;
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The shortest a list is kept (a `ttlMs` of 0 does not make one ask per request).
const MIN_TTL: Duration = Duration::from_secs(1);
/// The longest a list is kept.
const MAX_TTL: Duration = Duration::from_secs(3600);
/// How long a failed ask stands before the next request asks again.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// What a server listed, and until when it is used without asking again.
#[derive(Debug)]
pub struct Listing {
    /// Its interceptors, at most `max-interceptors`.
    pub items: Vec<Listed>,
    /// Until when it is fresh.
    pub fresh_until: Instant,
}

/// A failed ask, remembered for [`RETRY_AFTER`].
#[derive(Debug)]
struct Failed {
    failure: Failure,
    at: Instant,
}

/// One interceptor server.
pub struct Server {
    /// Its config.
    pub config: InterceptorServerConfig,
    /// Its endpoint.
    pub endpoint: Endpoint,
    list: ArcSwapOption<Listing>,
    failed: ArcSwapOption<Failed>,
    /// One refresh in flight.
    refreshing: AtomicBool,
    /// The first ask, single-flighted.
    first: tokio::sync::Mutex<()>,
}

impl Server {
    /// The server of `config`, its list not known yet.
    pub fn new(config: &InterceptorServerConfig) -> Server {
        Server {
            endpoint: Endpoint::new(config),
            config: config.clone(),
            list: ArcSwapOption::empty(),
            failed: ArcSwapOption::empty(),
            refreshing: AtomicBool::new(false),
            first: tokio::sync::Mutex::new(()),
        }
    }

    /// Its list as last known (maybe stale), without asking.
    pub fn known(&self) -> Option<Arc<Listing>> {
        self.list.load_full()
    }

    /// Its list: the one known (a stale one refreshed beside this request), else asked now.
    pub async fn listing(
        self: &Arc<Self>,
        http: &Arc<UpstreamClient>,
        metrics: &InterceptorMetrics,
    ) -> Result<Arc<Listing>, Failure> {
        if let Some(list) = self.known() {
            if list.fresh_until <= Instant::now() && !self.refreshing.swap(true, Ordering::AcqRel) {
                let (me, http, metrics) = (self.clone(), http.clone(), metrics.clone());
                tokio::spawn(async move {
                    let _ = me.ask(&http, &metrics).await;
                    me.refreshing.store(false, Ordering::Release);
                });
            }
            return Ok(list);
        }
        let _one = self.first.lock().await;
        if let Some(list) = self.known() {
            return Ok(list);
        }
        if let Some(failed) = self.failed.load_full() {
            if failed.at.elapsed() < RETRY_AFTER {
                return Err(failed.failure.clone());
            }
        }
        self.ask(http, metrics).await
    }

    /// Asks `interceptors/list` and keeps the answer; a failure is remembered (a stale list is
    /// kept, and used until the next refresh).
    async fn ask(
        &self,
        http: &UpstreamClient,
        metrics: &InterceptorMetrics,
    ) -> Result<Arc<Listing>, Failure> {
        self.endpoint
            .credentials()
            .refresh_logged(self.endpoint.name());
        let answer = self
            .endpoint
            .call(http, &metrics.tokens, "interceptors/list", Map::new())
            .await
            .and_then(|result| self.listing_of(&result));
        let result = match &answer {
            Ok(_) => "ok",
            Err(f) => f.reason(),
        };
        metrics
            .lists
            .with_label_values(&[&self.config.name, result])
            .inc();
        match answer {
            Ok(listing) => {
                let listing = Arc::new(listing);
                self.list.store(Some(listing.clone()));
                self.failed.store(None);
                Ok(listing)
            }
            Err(failure) => {
                tracing::warn!(server = %self.config.name, detail = %failure.detail(), "an interceptor server's list cannot be had");
                if let Some(stale) = self.known() {
                    // used again until the next attempt, a second from now
                    self.list.store(Some(Arc::new(Listing {
                        items: stale.items.clone(),
                        fresh_until: Instant::now() + RETRY_AFTER,
                    })));
                }
                self.failed.store(Some(Arc::new(Failed {
                    failure: failure.clone(),
                    at: Instant::now(),
                })));
                Err(failure)
            }
        }
    }

    /// Reads an `interceptors/list` result: each readable entry, at most `max-interceptors`;
    /// an unreadable one is left out (logged).
    fn listing_of(&self, result: &Value) -> Result<Listing, Failure> {
        let entries = (result.get("interceptors").and_then(Value::as_array))
            .ok_or_else(|| Failure::Garbage("a list without `interceptors`".into()))?;
        if entries.len() > self.config.max_listed {
            tracing::warn!(server = %self.config.name, listed = entries.len(), kept = self.config.max_listed, "an interceptor server lists more interceptors than max-interceptors: the rest are left out");
        }
        let mut items: Vec<Listed> = Vec::new();
        for entry in entries.iter().take(self.config.max_listed) {
            match wire::listed(entry) {
                Ok(l) if items.iter().any(|i| i.name == l.name) => {
                    tracing::warn!(server = %self.config.name, interceptor = %l.name, "an interceptor listed twice: the first is kept");
                }
                Ok(l) => items.push(l),
                Err(why) => {
                    tracing::warn!(server = %self.config.name, %why, "an interceptor left out")
                }
            }
        }
        let ttl = (result.get("ttlMs").and_then(Value::as_u64))
            .map(Duration::from_millis)
            .unwrap_or(self.config.list_ttl)
            .clamp(MIN_TTL, MAX_TTL);
        Ok(Listing {
            items,
            fresh_until: Instant::now() + ttl,
        })
    }

    /// A server of the same config taking over `previous`'s list (a reload).
    pub fn keeps(&self, previous: &Server) -> bool {
        self.config == previous.config
    }
}
