//! The response cache of cacheable 2026-07-28 results (`cache` in the config;
//! docs/caching.md): `server/discover`, the four lists and `resources/read` answered at the
//! gateway for as long as the result's `ttlMs` says, to whom its `cacheScope` allows (`public`:
//! every caller of the route; `private`: the same authorization context only). One per config
//! snapshot ([`crate::state::State`]): a reload, which may change a pool's members or eras,
//! starts with an empty cache.
//!
//! Concurrent misses of one request make one upstream request ([`Cache::flight`]): the first
//! leads, the others wait for it and look again. With `cache.store: redis`, `public` results
//! are kept in the sessions' Redis too ([`shared`]), where every replica finds them.

pub mod changes;
pub mod key;
pub mod metrics;
pub mod shared;
pub mod store;

use crate::config::cache::CacheConfig;
use crate::sync::lock;
use mcp_wire::cacheable::{Scope, Stored};
use metrics::CacheMetrics;
use shared::Shared;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use store::{Bounds, Fresh, Key, Missing, Owner, Store};
use tokio::sync::watch;

/// The notifications that say cached results changed.
const CHANGES: [&str; 4] = [
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
];

/// The response cache of one config snapshot.
pub struct Cache {
    config: CacheConfig,
    store: Mutex<Store>,
    flights: Mutex<HashMap<Key, watch::Receiver<()>>>,
    common: Common,
    /// The shared tier's epoch this memory holds results of.
    epoch: std::sync::atomic::AtomicU64,
}

/// What every snapshot's cache shares: the metric families, and the shared tier.
#[derive(Clone)]
pub struct Common {
    /// The families it counts into.
    pub metrics: CacheMetrics,
    /// The Redis tier of `cache.store: redis` (`None`: memory only).
    pub shared: Option<Arc<Shared>>,
}

/// Where a request's result may be: the route's public part, and the caller's context.
#[derive(Debug, Clone, Copy)]
pub struct Keys {
    /// The public key.
    pub public: Key,
    /// The caller's authorization context (`key::context`); `None`: it presented no
    /// credential.
    pub context: Option<Key>,
    /// The shared tier's epoch when the request was looked up ([`shared`]): what it asks
    /// upstream is kept under it (0 without a shared tier).
    pub epoch: u64,
    /// The signature of the backends `public` was made with (`key::Source::backends`).
    pub backends: u64,
    /// What of the request's head `public` was made with (`key::Source::head`).
    pub head: Key,
}

impl Keys {
    /// These keys (of a request with `body` for `method` on the route `route`) for the
    /// backends as they are now, whose signature is `backends`: the same keys when the backends
    /// did not change since the request was keyed, else its public key made again (an answer
    /// that taught the pool something, the era of the backend that gave it, is kept under the
    /// pool as it is after it). `None` when the request has no key.
    pub fn for_backends(
        self,
        (route, backends): (&str, u64),
        method: &str,
        body: &[u8],
    ) -> Option<Keys> {
        if self.backends == backends {
            return Some(self);
        }
        let source = key::Source {
            route,
            member: "",
            head: self.head,
            backends,
        };
        match key::of(source, method, body) {
            key::Keyed::Key(public) => Some(Keys {
                public,
                backends,
                ..self
            }),
            _ => None,
        }
    }

    /// The key of the result in the caller's context.
    fn private(&self) -> Option<Key> {
        self.context.map(|c| key::private(&self.public, &c))
    }

    /// The key concurrent misses share: the caller's own (a private answer serves only it),
    /// or the public one for a caller without a credential.
    fn flight(&self) -> Key {
        self.private().unwrap_or(self.public)
    }
}

/// A miss: lead the one upstream request, or wait for the one in flight.
pub enum Flight {
    /// This request asks upstream; the others wait until this is dropped.
    Lead(Leading),
    /// Another request of the same key is upstream: wait for it, then look again.
    Wait(watch::Receiver<()>),
}

/// The lead of a flight; dropped when its answer was kept (or not), which wakes the waiters.
pub struct Leading {
    cache: Arc<Cache>,
    key: Key,
    _done: watch::Sender<()>,
}

impl Drop for Leading {
    fn drop(&mut self) {
        lock(&self.cache.flights).remove(&self.key);
    }
}

/// Why a kept answer was not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotKept {
    /// `private` for a caller without a credential (it has no context to keep it in).
    NoContext,
    /// No room within the bounds (or larger than a context's share).
    NoRoom,
}

impl Cache {
    /// An empty cache within `config`'s bounds, counting into `common`'s families (and
    /// sharing public results through its shared tier when `config` says so).
    pub fn new(config: CacheConfig, mut common: Common) -> Cache {
        if !config.shared {
            common.shared = None;
        }
        let bounds = Bounds {
            max_bytes: config.max_bytes,
            private: config.max_private_bytes,
            per_context: config.max_bytes_per_context,
            max_ttl_ms: config.max_ttl_ms,
        };
        Cache {
            config,
            store: Mutex::new(Store::new(bounds)),
            flights: Mutex::new(HashMap::new()),
            common,
            epoch: std::sync::atomic::AtomicU64::new(u64::MAX),
        }
    }

    /// What every snapshot's cache shares (a reload's cache is made with it).
    pub fn common(&self) -> &Common {
        &self.common
    }

    /// The settings it runs with.
    pub fn config(&self) -> &CacheConfig {
        &self.config
    }

    /// The families it counts into.
    pub fn metrics(&self) -> &CacheMetrics {
        &self.common.metrics
    }

    /// A fresh result for `keys`: the public one, else the caller's own, else a public one
    /// another replica kept (the shared tier; then held here too). Why there is none:
    /// `Stale` when one was held past its time. `at` (route, method) labels a failure of the
    /// shared tier, which is then skipped (a miss, asked upstream).
    pub async fn lookup(&self, keys: &mut Keys, at: (&str, &str)) -> Result<Fresh, Missing> {
        let epoch = match &self.common.shared {
            Some(shared) => self.follow(shared, at).await,
            None => None,
        };
        let missing = match self.lookup_here(keys) {
            Ok(fresh) => return Ok(fresh),
            Err(missing) => missing,
        };
        let (Some(shared), Some(epoch)) = (&self.common.shared, epoch) else {
            return Err(missing);
        };
        keys.epoch = epoch;
        match shared.get(&keys.public, epoch).await {
            Ok(Some(mut fresh)) => {
                if fresh.stored.ttl_ms > self.config.max_ttl_ms {
                    fresh.stored = Arc::new(self.capped((*fresh.stored).clone()));
                }
                let mut store = lock(&self.store);
                store.insert_aged(keys.public, Owner::Public, &fresh, Instant::now());
                self.gauges(&store);
                Ok(fresh)
            }
            Ok(None) => Err(missing),
            Err(e) => {
                self.shared_failed(at, "looking up", &e);
                Err(missing)
            }
        }
    }

    /// The shared tier's epoch; this memory's results dropped when it moved (a replica heard
    /// a change). `None` when Redis cannot say.
    async fn follow(&self, shared: &Shared, at: (&str, &str)) -> Option<u64> {
        use std::sync::atomic::Ordering;
        match shared.epoch().await {
            Ok(epoch) => {
                if self.epoch.swap(epoch, Ordering::Relaxed) != epoch {
                    let mut store = lock(&self.store);
                    store.clear();
                    self.gauges(&store);
                }
                Some(epoch)
            }
            Err(e) => {
                self.shared_failed(at, "reading the epoch of", &e);
                None
            }
        }
    }

    /// [`Cache::lookup`] in this replica's memory only.
    fn lookup_here(&self, keys: &Keys) -> Result<Fresh, Missing> {
        let now = Instant::now();
        let mut store = lock(&self.store);
        let found = match (store.get(&keys.public, now), keys.private()) {
            (Ok(fresh), _) => Ok(fresh),
            (Err(public), Some(private)) => store.get(&private, now).map_err(|mine| {
                // either was held past its time: the request replaces a stale result
                if public == Missing::Stale {
                    public
                } else {
                    mine
                }
            }),
            (Err(public), None) => Err(public),
        };
        self.gauges(&store);
        found
    }

    fn shared_failed(&self, at: (&str, &str), doing: &str, e: &shared::Unshared) {
        self.metrics().count(at.0, at.1, "shared-error");
        tracing::debug!(route = at.0, method = at.1, error = %e.0, "the cache's shared store failed {doing} a result");
    }

    /// Joins or leads the flight of `keys`.
    pub fn flight(self: &Arc<Self>, keys: &Keys) -> Flight {
        let key = keys.flight();
        let mut flights = lock(&self.flights);
        if let Some(rx) = flights.get(&key) {
            return Flight::Wait(rx.clone());
        }
        let (tx, rx) = watch::channel(());
        flights.insert(key, rx);
        Flight::Lead(Leading {
            cache: self.clone(),
            key,
            _done: tx,
        })
    }

    /// Keeps `stored` where its scope says (a public result in the shared tier too); the
    /// results dropped for room are counted as `evicted` on `route`/`method`.
    pub async fn keep(&self, keys: &Keys, stored: Stored, at: (&str, &str)) -> Result<(), NotKept> {
        // never longer than `max-ttl-ms`: what a hit serves says so
        let stored = Arc::new(self.capped(stored));
        self.keep_here(keys, stored.clone(), at)?;
        if let (Some(shared), Scope::Public) = (&self.common.shared, stored.scope) {
            // awaited: a replica asked next finds it (a miss already waited for a backend)
            if let Err(e) = shared.put(&keys.public, &stored, keys.epoch).await {
                self.shared_failed(at, "keeping", &e);
            }
        }
        Ok(())
    }

    /// `stored` with its `ttlMs` at most `cache.max-ttl-ms`.
    pub fn capped(&self, mut stored: Stored) -> Stored {
        stored.ttl_ms = stored.ttl_ms.min(self.config.max_ttl_ms);
        stored
    }

    /// [`Cache::keep`] in this replica's memory.
    fn keep_here(&self, keys: &Keys, stored: Arc<Stored>, at: (&str, &str)) -> Result<(), NotKept> {
        // a private result is kept under the caller's context, and counts in its share
        let (key, owner) = match (stored.scope, keys.private(), keys.context) {
            (Scope::Public, _, _) => (keys.public, Owner::Public),
            (Scope::Private, Some(key), Some(context)) => (key, Owner::Private(context)),
            (Scope::Private, _, _) => return Err(NotKept::NoContext),
        };
        let mut store = lock(&self.store);
        let inserted = store.insert(key, owner, stored, Instant::now());
        self.gauges(&store);
        drop(store);
        if inserted.evicted > 0 {
            let evicted = self
                .metrics()
                .events
                .with_label_values(&[at.0, at.1, "evicted"]);
            evicted.inc_by(inserted.evicted as u64);
        }
        inserted.kept.then_some(()).ok_or(NotKept::NoRoom)
    }

    /// A notification a backend sent on a stream the gateway relays: one that says a list or
    /// a resource changed drops every result held (the cache does not tell which server's
    /// results a change touches: dropping them all is never wrong, only slower), here and, by
    /// moving the shared tier's epoch, on every replica; how many were held here.
    pub fn heard(&self, method: &str) -> usize {
        if !CHANGES.contains(&method) {
            return 0;
        }
        let mut store = lock(&self.store);
        let dropped = store.clear();
        self.gauges(&store);
        drop(store);
        if let Some(shared) = self.common.shared.clone() {
            let metrics = self.metrics().clone();
            // the stream that heard it goes on relaying meanwhile
            tokio::spawn(async move {
                if let Err(e) = shared.changed().await {
                    metrics.count("", "", "shared-error");
                    tracing::warn!(error = %e.0, "the cache's shared store did not take a change: other replicas serve their results until their ttl");
                }
            });
        }
        dropped
    }

    fn gauges(&self, store: &Store) {
        let (bytes, entries) = store.held();
        self.metrics()
            .bytes
            .with_label_values::<&str>(&[])
            .set(bytes as i64);
        self.metrics()
            .entries
            .with_label_values::<&str>(&[])
            .set(entries as i64);
    }
}
