//! Upstream pools: backends, balancing and passive failure marking.
//! (Discovery and active health checks arrive with the pools-for-rollouts work.)

mod balance;
pub mod client;

use crate::config::{Balance, PoolConfig};
use pingora::upstreams::peer::HttpPeer;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// One backend of a pool and its live counters.
#[derive(Debug)]
pub struct Backend {
    /// Where it listens.
    pub addr: SocketAddr,
    /// `ip:port`, for labels, logs and errors.
    pub label: String,
    /// Host header sent to it.
    pub host: String,
    inflight: AtomicUsize,
    sessions: AtomicUsize,
    /// Milliseconds since [`epoch`] until which the backend is skipped; 0 when healthy.
    failed_until_ms: AtomicU64,
}

impl Backend {
    /// Requests in flight right now.
    pub fn inflight(&self) -> usize {
        self.inflight.load(Ordering::Relaxed)
    }

    /// Gateway sessions bound to it.
    pub fn sessions(&self) -> usize {
        self.sessions.load(Ordering::Relaxed)
    }

    /// Whether a recent connection failure marks it to be skipped.
    pub fn is_failed(&self) -> bool {
        self.failed_until_ms.load(Ordering::Relaxed) > now_ms()
    }
}

/// A named set of backends with a balancing algorithm.
#[derive(Debug)]
pub struct Pool {
    /// Name from config.
    pub name: String,
    /// Backends in config order.
    pub backends: Vec<Backend>,
    balance: Balance,
    cursor: AtomicUsize,
    connect_timeout: Duration,
    read_timeout: Duration,
    /// Other backends tried after a refused connection.
    pub retries: usize,
    failure_cooldown: Duration,
}

/// Decrements a backend's in-flight count when dropped.
#[derive(Debug)]
pub struct InflightGuard {
    pool: std::sync::Arc<Pool>,
    backend: usize,
}

impl Drop for InflightGuard {
    fn drop(&mut self) {
        self.pool.backends[self.backend]
            .inflight
            .fetch_sub(1, Ordering::Relaxed);
    }
}

impl Pool {
    /// Builds a pool from its config.
    pub fn new(cfg: &PoolConfig) -> Pool {
        Pool {
            name: cfg.name.clone(),
            backends: cfg
                .backends
                .iter()
                .map(|addr| Backend {
                    addr: *addr,
                    label: addr.to_string(),
                    host: cfg.host.clone().unwrap_or_else(|| addr.to_string()),
                    inflight: AtomicUsize::new(0),
                    sessions: AtomicUsize::new(0),
                    failed_until_ms: AtomicU64::new(0),
                })
                .collect(),
            balance: cfg.balance,
            cursor: AtomicUsize::new(0),
            connect_timeout: cfg.connect_timeout,
            read_timeout: cfg.read_timeout,
            retries: cfg.retries,
            failure_cooldown: cfg.failure_cooldown,
        }
    }

    /// Picks a backend not in `tried`, preferring ones not marked failed. A failed mark is a
    /// hint, not a verdict: when only marked backends are left, one of them is tried.
    pub fn select(&self, tried: &[usize]) -> Option<usize> {
        let eligible = |i: usize| !tried.contains(&i);
        let healthy = |i: usize| eligible(i) && !self.backends[i].is_failed();
        balance::pick(self, &healthy).or_else(|| balance::pick(self, &eligible))
    }

    /// Picks the backend for a new (or moving) session: the fewest sessions among those not
    /// tried, preferring ones not marked failed, so a new pod gets new sessions at once.
    pub fn select_for_session(&self, tried: &[usize]) -> Option<usize> {
        let eligible = |i: &usize| !tried.contains(i);
        let pick = |healthy_only: bool| {
            let offset = self.cursor.fetch_add(1, Ordering::Relaxed);
            let n = self.backends.len().max(1);
            (0..self.backends.len())
                .filter(eligible)
                .filter(|&i| !healthy_only || !self.backends[i].is_failed())
                .min_by_key(|&i| (self.backends[i].sessions(), (i + n - offset % n) % n))
        };
        pick(true).or_else(|| pick(false))
    }

    /// The index of the backend at `addr`.
    pub fn index_of(&self, addr: SocketAddr) -> Option<usize> {
        self.backends.iter().position(|b| b.addr == addr)
    }

    /// Counts a session bound to (`opened`) or leaving (`!opened`) the backend at `addr`.
    pub fn count_session(&self, addr: SocketAddr, opened: bool) {
        if let Some(b) = self.index_of(addr) {
            let counter = &self.backends[b].sessions;
            if opened {
                counter.fetch_add(1, Ordering::Relaxed);
            } else {
                let _ = counter
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
            }
        }
    }

    /// Counts a request in flight on a backend until the guard drops.
    pub fn track(self: &std::sync::Arc<Self>, backend: usize) -> InflightGuard {
        self.backends[backend]
            .inflight
            .fetch_add(1, Ordering::Relaxed);
        InflightGuard {
            pool: self.clone(),
            backend,
        }
    }

    /// Marks a backend to be skipped for the failure cooldown (passive health).
    pub fn mark_failed(&self, backend: usize) {
        let until = now_ms() + self.failure_cooldown.as_millis() as u64;
        self.backends[backend]
            .failed_until_ms
            .store(until, Ordering::Relaxed);
    }

    /// Clears a failure mark after a successful connection.
    pub fn mark_ok(&self, backend: usize) {
        let b = &self.backends[backend];
        if b.failed_until_ms.load(Ordering::Relaxed) != 0 {
            b.failed_until_ms.store(0, Ordering::Relaxed);
        }
    }

    /// Whether any backend is not marked failed.
    pub fn any_ready(&self) -> bool {
        self.backends.iter().any(|b| !b.is_failed())
    }

    /// The pingora peer for a backend, with this pool's timeouts.
    pub fn peer(&self, backend: usize) -> HttpPeer {
        let mut peer = HttpPeer::new(self.backends[backend].addr, false, String::new());
        peer.options.connection_timeout = Some(self.connect_timeout);
        peer.options.read_timeout = Some(self.read_timeout);
        peer.options.idle_timeout = Some(Duration::from_secs(60));
        peer
    }
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    epoch().elapsed().as_millis() as u64 + 1
}

#[cfg(test)]
mod tests;
