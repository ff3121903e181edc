//! The response cache of cacheable 2026-07-28 results (`cache` in the config;
//! docs/caching.md): `server/discover`, the four lists and `resources/read` answered at the
//! gateway for as long as the result's `ttlMs` says, to whom its `cacheScope` allows (`public`:
//! every caller of the route; `private`: the same authorization context only). One per config
//! snapshot ([`crate::state::State`]): a reload, which may change a pool's members or eras,
//! starts with an empty cache.
//!
//! Concurrent misses of one request make one upstream request ([`Cache::flight`]): the first
//! leads, the others wait for it and look again.

pub mod key;
pub mod metrics;
pub mod store;

use crate::config::cache::CacheConfig;
use crate::sync::lock;
use mcp_wire::cacheable::{Scope, Stored};
use metrics::CacheMetrics;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use store::{Bounds, Fresh, Key, Owner, Store};
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
    metrics: CacheMetrics,
}

/// Where a request's result may be: the route's public part, and the caller's context.
#[derive(Debug, Clone, Copy)]
pub struct Keys {
    /// The public key.
    pub public: Key,
    /// The caller's authorization context (`key::context`); `None`: it presented no
    /// credential.
    pub context: Option<Key>,
}

impl Keys {
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
    /// An empty cache within `config`'s bounds, counting into `metrics`.
    pub fn new(config: CacheConfig, metrics: CacheMetrics) -> Cache {
        let bounds = Bounds {
            max_bytes: config.max_bytes,
            per_context: config.max_bytes_per_context,
        };
        Cache {
            config,
            store: Mutex::new(Store::new(bounds)),
            flights: Mutex::new(HashMap::new()),
            metrics,
        }
    }

    /// The settings it runs with.
    pub fn config(&self) -> &CacheConfig {
        &self.config
    }

    /// The families it counts into.
    pub fn metrics(&self) -> &CacheMetrics {
        &self.metrics
    }

    /// A fresh result for `keys`: the public one, else the caller's own.
    pub fn lookup(&self, keys: &Keys) -> Option<Fresh> {
        let now = Instant::now();
        let mut store = lock(&self.store);
        let found = store.get(&keys.public, now);
        let found = found.or_else(|| keys.private().and_then(|k| store.get(&k, now)));
        self.gauges(&store);
        found
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

    /// Keeps `stored` where its scope says; the results dropped for room are counted as
    /// `evicted` on `route`/`method`.
    pub fn keep(&self, keys: &Keys, stored: Stored, at: (&str, &str)) -> Result<(), NotKept> {
        // a private result is kept under the caller's context, and counts in its share
        let (key, owner) = match (stored.scope, keys.private(), keys.context) {
            (Scope::Public, _, _) => (keys.public, Owner::Public),
            (Scope::Private, Some(key), Some(context)) => (key, Owner::Private(context)),
            (Scope::Private, _, _) => return Err(NotKept::NoContext),
        };
        let mut store = lock(&self.store);
        let inserted = store.insert(key, owner, Arc::new(stored), Instant::now());
        self.gauges(&store);
        drop(store);
        if inserted.evicted > 0 {
            let evicted = self
                .metrics
                .events
                .with_label_values(&[at.0, at.1, "evicted"]);
            evicted.inc_by(inserted.evicted as u64);
        }
        inserted.kept.then_some(()).ok_or(NotKept::NoRoom)
    }

    /// A notification a backend sent on a stream the gateway relays: one that says a list or
    /// a resource changed drops every result held (the cache does not tell which server's
    /// results a change touches: dropping them all is never wrong, only slower); how many.
    pub fn heard(&self, method: &str) -> usize {
        if !CHANGES.contains(&method) {
            return 0;
        }
        let mut store = lock(&self.store);
        let dropped = store.clear();
        self.gauges(&store);
        dropped
    }

    fn gauges(&self, store: &Store) {
        let (bytes, entries) = store.held();
        self.metrics
            .bytes
            .with_label_values::<&str>(&[])
            .set(bytes as i64);
        self.metrics
            .entries
            .with_label_values::<&str>(&[])
            .set(entries as i64);
    }
}
