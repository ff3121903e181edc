//! The response cache of cacheable 2026-07-28 results (`cache` in the config;
//! docs/caching.md): `server/discover`, the four lists and `resources/read` answered at the
//! gateway for as long as the result's `ttlMs` says, to whom its `cacheScope` allows (`public`:
//! every caller of the route; `private`: the same authorization context only). One per config
//! snapshot ([`crate::state::State`]): a reload, which may change a pool's members or eras,
//! starts with an empty cache; what every snapshot's cache shares is [`Common`] (the
//! generations of the scopes changes drop, the shared tier, the metrics).
//!
//! A result is kept under its scopes' generations ([`scopes`]): a change a pool announces
//! drops that pool's results only. Concurrent misses of one request make one upstream request
//! ([`flight`]). With `cache.store: redis`, `public` results are kept in the sessions' Redis
//! too ([`shared`]), where every replica finds them.

pub mod changes;
pub mod flight;
pub mod heard;
pub mod key;
pub mod metrics;
pub mod scopes;
pub mod shared;
pub mod store;

use crate::config::cache::CacheConfig;
use crate::sync::lock;
pub use flight::{Flight, Leading, Outcome};
use mcp_wire::cacheable::{Scope, Stored};
use metrics::CacheMetrics;
use scopes::{Generations, Scopes};
use sha2::{Digest, Sha256};
use shared::Shared;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use store::{Bounds, Fresh, Key, Missing, Owner, Store};

/// The response cache of one config snapshot.
pub struct Cache {
    config: CacheConfig,
    store: Mutex<Store>,
    flights: Arc<flight::Flights>,
    common: Common,
}

/// What every snapshot's cache shares: the metric families, the scopes' generations, and the
/// shared tier.
#[derive(Clone)]
pub struct Common {
    /// The families it counts into.
    pub metrics: CacheMetrics,
    /// The Redis tier of `cache.store: redis` (`None`: memory only).
    pub shared: Option<Arc<Shared>>,
    /// The generation of each scope, moved by the changes heard (by any snapshot's streams).
    pub generations: Arc<Generations>,
}

/// Where a request's result may be: the route's public part, and the caller's context.
#[derive(Debug, Clone)]
pub struct Keys {
    /// The public key.
    pub public: Key,
    /// The caller's authorization context (`key::context`); `None`: it presented no
    /// credential.
    pub context: Option<Key>,
    /// The signature of the backends `public` was made with (`key::Source::backends`).
    pub backends: u64,
    /// What of the request's head `public` was made with (`key::Source::head`).
    pub head: Key,
    /// The pools whose changes drop the result.
    pub scopes: Scopes,
    /// The generations the request was looked up under (`None` before [`Cache::lookup`]).
    at: Option<At>,
}

/// The generations a request was looked up under.
#[derive(Debug, Clone, Copy)]
struct At {
    /// This process's generations of the scopes.
    local: Key,
    /// Those and the shared tier's epochs (the last known): the memory key's part.
    here: Key,
    /// The shared tier's epochs, read now (`None`: no shared tier, or Redis did not say).
    shared: Option<Key>,
}

impl Keys {
    /// The keys of a result at `public` for the caller's `context`, made from `source` (the
    /// backends' signature and what of the request's head shapes the answer), in `scopes`.
    pub fn new(public: Key, context: Option<Key>, source: &key::Source, scopes: Scopes) -> Keys {
        Keys {
            public,
            context,
            backends: source.backends,
            head: source.head,
            scopes,
            at: None,
        }
    }

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

    /// The public key in this process's memory: under the generations it was looked up in.
    fn here(&self) -> Key {
        let Some(at) = &self.at else {
            return self.public;
        };
        let mut h = Sha256::new();
        h.update(b"here");
        h.update(self.public);
        h.update(at.here);
        h.finalize().into()
    }

    /// The key of the result in the caller's context.
    fn private(&self) -> Option<Key> {
        self.context.map(|c| key::private(&self.here(), &c))
    }
}

/// Why a kept answer was not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotKept {
    /// `private` for a caller without a credential (it has no context to keep it in).
    NoContext,
    /// No room within the bounds (or larger than a context's share).
    NoRoom,
    /// A change was heard in its scopes since it was looked up: it may be of before.
    Changed,
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
            flights: Arc::default(),
            common,
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

    /// A fresh result for `keys`, taking the generations of its scopes now: the public one,
    /// else the caller's own, else a public one another replica kept (the shared tier; then
    /// held here too). Why there is none: `Stale` when one was held past its time. `at`
    /// (route, method) labels a failure of the shared tier, which is then skipped (a miss,
    /// asked upstream, and not written to Redis).
    pub async fn lookup(&self, keys: &mut Keys, at: (&str, &str)) -> Result<Fresh, Missing> {
        let epochs = match &self.common.shared {
            Some(shared) => {
                let (known, read) = shared.epochs(&keys.scopes).await;
                if let Err(e) = &read {
                    self.shared_failed(at, "reading the epochs of", e);
                }
                Some((known, read.is_ok()))
            }
            None => None,
        };
        keys.at = Some(self.take(&keys.scopes, epochs));
        let missing = match self.lookup_here(keys) {
            Ok(fresh) => return Ok(fresh),
            Err(missing) => missing,
        };
        let (Some(shared), Some(epochs)) = (&self.common.shared, keys.at.and_then(|a| a.shared))
        else {
            return Err(missing);
        };
        match shared.get(&keys.public, &epochs).await {
            Ok(Some(mut fresh)) => {
                if fresh.stored.ttl_ms > self.config.max_ttl_ms {
                    fresh.stored = Arc::new(self.capped((*fresh.stored).clone()));
                }
                let mut store = lock(&self.store);
                store.insert_aged(keys.here(), Owner::Public, &fresh, Instant::now());
                self.gauges(&store);
                Ok(fresh)
            }
            Ok(None) => Err(missing),
            Err(shared::Read::Failed(e)) => {
                self.shared_failed(at, "looking up", &e);
                Err(missing)
            }
            Err(shared::Read::Forged) => {
                self.metrics().count(at.0, at.1, "shared-forged");
                tracing::warn!(
                    route = at.0,
                    method = at.1,
                    "a cache entry in Redis failed its integrity check: ignored"
                );
                Err(missing)
            }
        }
    }

    /// The generations of `scopes` now, with the shared tier's epochs (`(digest, read now)`).
    fn take(&self, scopes: &[String], epochs: Option<(Key, bool)>) -> At {
        let local = self.common.generations.at(scopes);
        let mut h = Sha256::new();
        h.update(local);
        if let Some((known, _)) = &epochs {
            h.update(known);
        }
        At {
            local,
            here: h.finalize().into(),
            shared: epochs.filter(|(_, read)| *read).map(|(known, _)| known),
        }
    }

    /// Takes the generations of `keys`' scopes again, without asking Redis (a waiter whose
    /// leader kept nothing: a change may have moved them meanwhile).
    pub fn retake(&self, keys: &mut Keys) {
        let known = self.common.shared.as_ref().map(|s| s.known(&keys.scopes));
        let was = keys.at.and_then(|a| a.shared);
        let epochs = known.map(|k| (k, was == Some(k)));
        keys.at = Some(self.take(&keys.scopes, epochs));
    }

    /// [`Cache::lookup`] in this replica's memory only, under the generations taken then.
    pub fn lookup_here(&self, keys: &Keys) -> Result<Fresh, Missing> {
        let now = Instant::now();
        let mut store = lock(&self.store);
        let found = match (store.get(&keys.here(), now), keys.private()) {
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

    /// Joins or leads the flight of `keys`: the public key's, or (`private`: the leader said
    /// the result is per caller) the caller's own.
    pub fn flight(&self, keys: &Keys, private: bool) -> Flight {
        self.flights.join(Self::flight_key(keys, private))
    }

    /// Takes the lead of the flight of `keys` (a waiter that waited its longest): the ones
    /// waiting for the leader before wait for this one now.
    pub fn take_lead(&self, keys: &Keys, private: bool) -> Leading {
        self.flights.take(Self::flight_key(keys, private))
    }

    fn flight_key(keys: &Keys, private: bool) -> Key {
        match keys.private() {
            Some(mine) if private => mine,
            _ => keys.public,
        }
    }

    /// Keeps `stored` where its scope says (a public result in the shared tier too: spawned,
    /// waited for at most [`shared::PUT_WAIT`], and never when reading the epochs at lookup
    /// failed); the results dropped for room are counted as `evicted` on
    /// `route`/`method`. Not kept when a change was heard in its scopes since it was looked up.
    pub async fn keep(&self, keys: &Keys, stored: Stored, at: (&str, &str)) -> Result<(), NotKept> {
        let taken = keys.at.ok_or(NotKept::Changed)?;
        if self.common.generations.moved(&keys.scopes, &taken.local) {
            return Err(NotKept::Changed);
        }
        // never longer than `max-ttl-ms`: what a hit serves says so
        let stored = Arc::new(self.capped(stored));
        self.keep_here(keys, stored.clone(), at)?;
        if let (Some(shared), Scope::Public, Some(epochs)) =
            (&self.common.shared, stored.scope, taken.shared)
        {
            let budget = self.config.shared_max_bytes;
            let metrics = self.metrics().clone();
            let (route, method) = (at.0.to_owned(), at.1.to_owned());
            let failed = move |e: shared::Unshared| {
                metrics.count(&route, &method, "shared-error");
                tracing::debug!(error = %e.0, "the cache's shared store failed keeping a result");
            };
            match shared.put_behind((keys.public, epochs), stored, budget, failed) {
                // a replica asked next finds it; a slow Redis costs at most the bound
                Ok(put) => drop(tokio::time::timeout(shared::PUT_WAIT, put).await),
                Err(skipped) => self.metrics().count(at.0, at.1, skipped.label()),
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
            (Scope::Public, _, _) => (keys.here(), Owner::Public),
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

    /// A notification a backend of the pool `scope` sent on a stream the gateway relays or
    /// holds: one that says a list or a resource changed ([`changes::is_change`]) drops that
    /// pool's results (and the merged answers it is part of), in every config snapshot's cache
    /// and, by moving the pool's epoch in the shared tier (one write per scope per short
    /// interval, however many it hears), on every replica. Whether it was a change.
    pub fn heard(&self, scope: &str, method: &str) -> bool {
        if !changes::is_change(method) {
            return false;
        }
        self.changed(scope);
        true
    }

    /// A change in `scope` (heard on a stream read by [`changes::Changes`]).
    pub fn changed(&self, scope: &str) {
        self.common.generations.bump(scope);
        if let Some(shared) = &self.common.shared {
            let metrics = self.metrics().clone();
            shared.announce(scope, move |e| {
                metrics.count("", "", "shared-error");
                tracing::warn!(error = %e.0, "the cache's shared store did not take a change: other replicas serve their results until their ttl");
            });
        }
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

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
