//! 2026-07-28 clients on legacy (session) backends (the reverse era bridge). A request of a
//! modern client goes inside a backend session the gateway opened itself (`initialize` built
//! from the request's `_meta`, `notifications/initialized`) and keeps for the next requests:
//! pooled by (backend, principal, digest of the initialize), so two principals, or two clients
//! whose `initialize` would differ, never share one (toolhive #5323). An anonymous caller (a
//! route without `auth`) is no principal: its call gets a backend session of its own, opened
//! for it and closed (DELETE upstream) when the call ends, so two unrelated clients never share
//! one. Several requests may be in flight on one backend session. Bounded per backend, in all
//! and per owner (`Owner`: the principal, or an anonymous caller's peer address): an owner at
//! its share makes room only from its own idle sessions, a full backend only from an owner
//! holding more there than the newcomer would (`room.rs`); closed with a DELETE upstream after
//! `bridge.pooled-sessions.idle-s` unused.
//!
//! This file is the table; `room` makes room within the bounds and shares, `open` opens a
//! backend session, `serve` serves one request (the client side and the answer; `side` what the
//! backend sends beside it), `rounds` and `park` the `input_required` rounds (a call parked
//! while the client answers), `stray` the session's GET stream, `forward` a retry sent on to
//! the replica holding its call, `listen` a `subscriptions/listen` stream on a backend session
//! held for it; `mcp_wire::translate::legacy` and `mcp_wire::translate::mrtr` are the pure
//! translation.

mod forward;
mod listen;
mod open;
mod park;
mod room;
mod rounds;
mod serve;
mod side;
mod stray;

pub use park::Parking;
pub use serve::{serve, Pooled, Target};

use crate::bridge::metrics::BridgeMetrics;
use crate::config::{BridgeConfig, PooledSessions};
use crate::error::GatewayError;
use crate::sync::lock;
use crate::upstream::attempt::{BackendSession, Engine};
use crate::upstream::{Backend, Pool};
use mcp_wire::Era;
use serde_json::Value;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::OnceCell;

/// Whether a request of `era` on `pool` comes here: a 2026-07-28 request and only legacy
/// backends (every backend's era known, none serving 2026-07-28: each positively a legacy
/// session server, by the probe or by the pool's `era`), and the bridge is on
/// (`bridge.pooled-sessions.enabled`). A backend whose answers proved nothing is of unknown
/// era and serves 2026-07-28 requests natively.
pub fn takes(era: Era, config: &BridgeConfig, pool: &Pool) -> bool {
    era == Era::Stateless && config.pooled.enabled && pool.lacks_era(Era::Stateless)
}

/// How often idle pooled sessions are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// What a pooled backend session is keyed by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    /// The backend.
    pub(crate) backend: SocketAddr,
    /// The upstream path (one MCP endpoint of the backend).
    pub(crate) path: Arc<str>,
    /// The authenticated principal, when the route has `auth`.
    pub(crate) principal: Option<Arc<str>>,
    /// SHA-256 of the `initialize` params.
    pub(crate) digest: [u8; 32],
}

/// Whose share a pooled session or a parked call counts in: the authenticated principal, or
/// for an anonymous caller its peer address (the socket's, never a header; IPv4, or the /64 of
/// IPv6, which one host gets: what a client cannot change cheaply).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Owner {
    /// A principal (`auth`).
    Principal(Arc<str>),
    /// An anonymous caller's peer address.
    Peer(IpAddr),
}

impl Owner {
    /// The owner of a request by `principal` from `peer`.
    pub(crate) fn of(
        principal: Option<&Arc<crate::auth::Principal>>,
        peer: Option<IpAddr>,
    ) -> Owner {
        match principal {
            Some(p) => Owner::Principal(p.id.clone()),
            None => Owner::Peer(peer.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), prefix)),
        }
    }
}

/// An address as shares count it: IPv4 (an IPv4-mapped IPv6 one as IPv4), IPv6 by its /64.
fn prefix(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
        v4 => v4,
    }
}

/// One backend session the gateway keeps.
pub(crate) struct Entry {
    pub(crate) key: Key,
    pub(crate) pool: Arc<Pool>,
    pub(crate) backend: Arc<Backend>,
    pub(crate) session: BackendSession,
    /// The backend's `InitializeResult` (`server/discover` is answered from it).
    pub(crate) init_result: Value,
    /// The level of the last `logging/setLevel` sent in it.
    pub(crate) level: Mutex<Option<String>>,
    /// Where the requests of its GET stream go: the one call in flight on it.
    strays: Mutex<Vec<(u64, tokio::sync::mpsc::UnboundedSender<Value>)>>,
    in_flight: AtomicUsize,
    last_use: Mutex<Instant>,
    gone: AtomicBool,
}

impl Entry {
    fn idle_for(&self) -> Duration {
        lock(&self.last_use).elapsed()
    }

    /// Whether it was dropped from the table (it must not be used for a new request).
    pub(crate) fn is_gone(&self) -> bool {
        self.gone.load(Ordering::Acquire)
    }
}

/// A pooled session in use by one request; counted in flight until dropped (then closed when
/// it is an anonymous caller's).
pub(crate) struct InUse(pub(crate) Arc<Entry>, Option<Sessions>);

impl Drop for InUse {
    fn drop(&mut self) {
        *lock(&self.0.last_use) = Instant::now();
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
        if let Some(sessions) = &self.1 {
            sessions.retire(&self.0);
        }
    }
}

type Slot = Arc<OnceCell<Arc<Entry>>>;

/// A place in the table: its owner (counted in its share while it opens, too) and its slot.
struct Held {
    owner: Owner,
    slot: Slot,
}

/// The pooled backend sessions of this process.
pub struct Sessions {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Arc<Engine>,
    metrics: BridgeMetrics,
    table: Mutex<HashMap<Key, Held>>,
    /// `idle-s` of the running config, in seconds (read by the sweep).
    idle_s: AtomicU64,
    sweeping: OnceLock<()>,
    next_id: AtomicU64,
    /// Makes an anonymous caller's key unique to its call.
    next_single: AtomicU64,
}

/// How a pooled session was found.
pub(crate) enum Acquired {
    /// One already open.
    Reused(InUse),
    /// Opened for this request.
    Opened(InUse),
}

impl Acquired {
    pub(crate) fn into_inner(self) -> InUse {
        match self {
            Acquired::Reused(u) | Acquired::Opened(u) => u,
        }
    }
}

/// Why no pooled session could be had.
pub(crate) enum AcquireError {
    /// The backend refused the connection (marked failed): try another.
    Unreachable,
    /// Answer the client with this.
    Answer(GatewayError),
    /// The backend answered `initialize` without a session: no legacy session server (the
    /// caller passes the request through, `serve::Pooled::NoSession`).
    NoSession,
}

impl Sessions {
    /// An empty table sending through `engine`, counted into `metrics`.
    pub fn new(engine: Arc<Engine>, metrics: BridgeMetrics) -> Sessions {
        Sessions {
            inner: Arc::new(Inner {
                engine,
                metrics,
                table: Mutex::new(HashMap::new()),
                idle_s: AtomicU64::new(60),
                sweeping: OnceLock::new(),
                next_id: AtomicU64::new(1),
                next_single: AtomicU64::new(1),
            }),
        }
    }

    /// A fresh id for a request the gateway sends in a pooled session.
    pub(crate) fn next_id(&self) -> String {
        let n = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        format!("mcpgw-pool-{n}")
    }

    fn metrics(&self) -> &BridgeMetrics {
        &self.inner.metrics
    }

    /// The pooled session for `key` (opened with `init_params` when there is none yet: one
    /// opening per key at a time, later requests wait for it), counted in flight. Without a
    /// principal the key is made unique to this call: a session of its own, closed after it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn acquire(
        &self,
        pool: &Arc<Pool>,
        backend: &Arc<Backend>,
        mut key: Key,
        init_params: &str,
        principal: Option<&Arc<crate::auth::Principal>>,
        owner: &Owner,
        bounds: PooledSessions,
    ) -> Result<Acquired, AcquireError> {
        self.inner
            .idle_s
            .store(bounds.idle.as_secs().max(1), Ordering::Relaxed);
        self.start_sweep();
        let single_use = key.principal.is_none();
        if single_use {
            // anonymous keys are never looked up by another call: no two share a session
            let n = self.inner.next_single.fetch_add(1, Ordering::Relaxed);
            key.digest[24..].copy_from_slice(&n.to_be_bytes());
        }
        let slot = self.slot(&pool.name, &key, owner, bounds)?;
        let mut opened = false;
        let entry = slot
            .get_or_try_init(|| async {
                opened = true;
                open::open(
                    &self.inner.engine,
                    pool,
                    backend,
                    key.clone(),
                    init_params,
                    principal,
                )
                .await
            })
            .await;
        let entry = match entry {
            Ok(e) => e.clone(),
            Err(e) => {
                self.forget(&key, &slot);
                return Err(e);
            }
        };
        entry.in_flight.fetch_add(1, Ordering::AcqRel);
        let retire = single_use.then(|| Sessions {
            inner: self.inner.clone(),
        });
        let used = InUse(entry, retire);
        if used.0.is_gone() {
            // dropped while this request waited for it: open another
            drop(used);
            let again = self.acquire(pool, backend, key, init_params, principal, owner, bounds);
            return Box::pin(again).await;
        }
        let event = if opened { "opened" } else { "reused" };
        self.metrics()
            .pooled_session_events
            .with_label_values(&[&pool.name, event])
            .inc();
        if opened {
            self.gauge(&pool.name, 1);
            Ok(Acquired::Opened(used))
        } else {
            Ok(Acquired::Reused(used))
        }
    }

    fn forget(&self, key: &Key, slot: &Slot) {
        let mut table = lock(&self.inner.table);
        if table.get(key).is_some_and(|h| Arc::ptr_eq(&h.slot, slot)) {
            table.remove(key);
        }
    }

    /// Closes an anonymous caller's session once its call is done (DELETE upstream), unless
    /// it was dropped already.
    fn retire(&self, entry: &Arc<Entry>) {
        if self.unlink(entry) {
            self.count(&entry.pool.name, "closed");
            self.gauge(&entry.pool.name, -1);
            let engine = &self.inner.engine;
            engine.spawn_delete_session(
                entry.pool.clone(),
                entry.backend.clone(),
                entry.session.clone(),
            );
        }
    }

    /// Drops a pooled session the backend forgot or that died with its backend: no request
    /// uses it again (nothing is sent upstream).
    pub(crate) fn drop_entry(&self, entry: &Arc<Entry>) {
        if self.unlink(entry) {
            self.count(&entry.pool.name, "dropped");
            self.gauge(&entry.pool.name, -1);
            tracing::debug!(backend = %entry.backend.label, "pooled backend session dropped");
        }
    }

    /// Removes `entry` from the table; whether it was there.
    fn unlink(&self, entry: &Arc<Entry>) -> bool {
        if entry.gone.swap(true, Ordering::AcqRel) {
            return false;
        }
        let mut table = lock(&self.inner.table);
        let ours = table
            .get(&entry.key)
            .and_then(|h| h.slot.get())
            .is_some_and(|e| Arc::ptr_eq(e, entry));
        if ours {
            table.remove(&entry.key);
        }
        true
    }

    /// Closes a pooled session: out of the table, DELETE upstream in the background.
    fn close(&self, entry: &Arc<Entry>, why: &str) {
        entry.gone.store(true, Ordering::Release);
        self.count(&entry.pool.name, why);
        self.gauge(&entry.pool.name, -1);
        let (engine, entry) = (self.inner.engine.clone(), entry.clone());
        engine.spawn_delete_session(
            entry.pool.clone(),
            entry.backend.clone(),
            entry.session.clone(),
        );
    }

    fn count(&self, pool: &str, event: &str) {
        self.metrics()
            .pooled_session_events
            .with_label_values(&[pool, event])
            .inc();
    }

    fn gauge(&self, pool: &str, by: i64) {
        self.metrics()
            .pooled_sessions
            .with_label_values(&[pool])
            .add(by);
    }

    /// Closes the idle sessions older than the configured `idle-s` (DELETE upstream).
    pub(crate) fn sweep(&self) {
        let idle = Duration::from_secs(self.inner.idle_s.load(Ordering::Relaxed));
        let expired: Vec<Arc<Entry>> = {
            let mut table = lock(&self.inner.table);
            let keys: Vec<Key> = table
                .iter()
                .filter_map(|(k, h)| h.slot.get().map(|e| (k, e)))
                .filter(|(_, e)| e.in_flight.load(Ordering::Acquire) == 0 && e.idle_for() >= idle)
                .map(|(k, _)| k.clone())
                .collect();
            keys.iter()
                .filter_map(|k| table.remove(k))
                .filter_map(|h| h.slot.get().cloned())
                .collect()
        };
        for entry in expired {
            tracing::debug!(backend = %entry.backend.label, "pooled backend session expired");
            self.close(&entry, "expired");
        }
    }

    fn start_sweep(&self) {
        self.inner.sweeping.get_or_init(|| {
            let me = Sessions {
                inner: self.inner.clone(),
            };
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(SWEEP_EVERY).await;
                    me.sweep();
                }
            });
        });
    }
}

#[cfg(test)]
mod tests {
    use super::{prefix, Owner};
    use std::net::IpAddr;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn anonymous_shares_count_ipv4_per_address_and_ipv6_per_64() {
        assert_eq!(prefix(ip("192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(prefix(ip("::ffff:192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(prefix(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(
            Owner::of(None, Some(ip("2001:db8:1:2::5"))),
            Owner::of(None, Some(ip("2001:db8:1:2:ffff::9"))),
            "one host's /64 is one share"
        );
        assert_ne!(
            Owner::of(None, Some(ip("2001:db8:1:2::5"))),
            Owner::of(None, Some(ip("2001:db8:1:3::5")))
        );
    }
}
