//! Upstream pools: a membership that discovery can change at any time, backend states
//! (up, down by active health, draining), passive failure marking, and balancing.
//! Backends are handed out as `Arc<Backend>` and identified by address, so a request or a
//! session keeps its backend even while the membership changes under it.

pub mod attempt;
mod balance;
pub mod client;
pub mod deadline;
pub mod deaths;
pub mod discovery;
pub mod encoding;
pub mod era;
pub mod health;
pub mod metrics;
mod pick;
pub mod request;
mod tls;

use crate::config::EraSetting;
use crate::config::{Balance, PoolConfig};
use arc_swap::ArcSwap;
use mcp_wire::{BackendEra, Era};
use pingora::upstreams::peer::HttpPeer;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// One backend of a pool and its live state.
#[derive(Debug)]
pub struct Backend {
    /// Where it listens.
    pub addr: SocketAddr,
    /// `ip:port`, for labels, logs and errors.
    pub label: String,
    /// Host header sent to it.
    pub host: String,
    inflight: AtomicUsize,
    /// Milliseconds since [`epoch`] until which the backend is skipped; 0 when healthy.
    failed_until_ms: AtomicU64,
    /// Active health checks say it is down.
    down: AtomicBool,
    /// Milliseconds since [`epoch`] at which draining started; 0 when not draining.
    draining_since_ms: AtomicU64,
    /// Draining because discovery no longer lists it (not an operator's drain).
    discovery_drained: AtomicBool,
    /// Consecutive active health probe results (positive: successes, negative: failures).
    probe_streak: std::sync::atomic::AtomicI32,
    /// A connection failed and neither a probe nor a request has succeeded since: shown down
    /// (and skipped while others are left) past the failure cooldown, where health checks run.
    suspect: AtomicBool,
    /// The protocol era it serves ([`BackendEra`] as `era_code`), 0 while unknown: fixed by
    /// the pool's `era` setting, or learned by the era probe.
    era: AtomicU8,
    /// When the era probe is due next (pools with `era: detect`).
    era_probe: era::Schedule,
}

/// What a backend is doing, for admin and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendState {
    /// Takes new sessions and requests.
    Up,
    /// Active health checks fail (or a recent connection was refused).
    Down,
    /// Takes no new sessions; existing ones stay until the drain deadline.
    Draining,
}

impl BackendState {
    /// Label for JSON and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendState::Up => "up",
            BackendState::Down => "down",
            BackendState::Draining => "draining",
        }
    }
}

impl Backend {
    fn new(addr: SocketAddr, host: Option<&str>, era: EraSetting) -> Backend {
        Backend {
            addr,
            label: addr.to_string(),
            host: host.map_or_else(|| addr.to_string(), str::to_owned),
            inflight: AtomicUsize::new(0),
            failed_until_ms: AtomicU64::new(0),
            down: AtomicBool::new(false),
            draining_since_ms: AtomicU64::new(0),
            discovery_drained: AtomicBool::new(false),
            probe_streak: std::sync::atomic::AtomicI32::new(0),
            suspect: AtomicBool::new(false),
            era: AtomicU8::new(match era {
                EraSetting::Detect => 0,
                EraSetting::Fixed(e) => era_code(Some(e)),
            }),
            era_probe: era::Schedule::due_now(),
        }
    }

    /// The protocol era it serves, `None` while not known yet (a pool with `era: detect`
    /// before the probe has answered).
    pub fn era(&self) -> Option<BackendEra> {
        match self.era.load(Ordering::Relaxed) {
            1 => Some(BackendEra::Legacy),
            2 => Some(BackendEra::Modern),
            3 => Some(BackendEra::Dual),
            _ => None,
        }
    }

    /// Records the era a probe found (`None`: unknown again); returns the previous one.
    pub fn set_era(&self, era: Option<BackendEra>) -> Option<BackendEra> {
        let previous = self.era();
        self.era.store(era_code(era), Ordering::Relaxed);
        previous
    }

    /// Requests in flight right now.
    pub fn inflight(&self) -> usize {
        self.inflight.load(Ordering::Relaxed)
    }

    /// Whether a recent connection failure or the health checks mark it to be skipped.
    pub fn is_failed(&self) -> bool {
        self.down.load(Ordering::Relaxed)
            || self.suspect.load(Ordering::Relaxed)
            || self.failed_until_ms.load(Ordering::Relaxed) > now_ms()
    }

    /// Whether it is draining (no new sessions).
    pub fn is_draining(&self) -> bool {
        self.draining_since_ms.load(Ordering::Relaxed) != 0
    }

    /// How long it has been draining.
    pub fn draining_for(&self) -> Option<Duration> {
        match self.draining_since_ms.load(Ordering::Relaxed) {
            0 => None,
            since => Some(Duration::from_millis(now_ms().saturating_sub(since))),
        }
    }

    /// Starts (or stops) draining.
    pub fn set_draining(&self, on: bool) {
        let value = if on { now_ms() } else { 0 };
        if !on || !self.is_draining() {
            self.draining_since_ms.store(value, Ordering::Relaxed);
        }
    }

    /// Records one active health probe; after `fall` failures in a row the backend is down,
    /// after `rise` successes in a row it is up again. Returns the new down state when it
    /// changed.
    pub fn record_probe(&self, ok: bool, fall: u32, rise: u32) -> Option<bool> {
        // One prober per backend: a plain load and store cannot race.
        let streak = match (ok, self.probe_streak.load(Ordering::Relaxed)) {
            (true, s) if s > 0 => s.saturating_add(1),
            (true, _) => 1,
            (false, s) if s < 0 => s.saturating_sub(1),
            (false, _) => -1,
        };
        self.probe_streak.store(streak, Ordering::Relaxed);
        if ok {
            self.suspect.store(false, Ordering::Relaxed);
        }
        let down = self.down.load(Ordering::Relaxed);
        if !down && !ok && streak <= -(fall as i32) {
            self.down.store(true, Ordering::Relaxed);
            return Some(true);
        }
        if down && ok && streak >= rise as i32 {
            self.down.store(false, Ordering::Relaxed);
            return Some(false);
        }
        None
    }

    /// The state shown to operators.
    pub fn state(&self) -> BackendState {
        if self.is_failed() {
            BackendState::Down
        } else if self.is_draining() {
            BackendState::Draining
        } else {
            BackendState::Up
        }
    }

    /// Whether it may take new work: not failed, not draining.
    fn eligible(&self) -> bool {
        !self.is_failed() && !self.is_draining()
    }
}

fn era_code(era: Option<BackendEra>) -> u8 {
    match era {
        None => 0,
        Some(BackendEra::Legacy) => 1,
        Some(BackendEra::Modern) => 2,
        Some(BackendEra::Dual) => 3,
    }
}

/// A named set of backends with a balancing algorithm.
#[derive(Debug)]
pub struct Pool {
    /// Name from config.
    pub name: String,
    /// How the backends' era is known (`era`): fixed for all, or probed per backend.
    pub era: EraSetting,
    members: ArcSwap<Vec<Arc<Backend>>>,
    host: Option<String>,
    balance: Balance,
    cursor: AtomicUsize,
    connect_timeout: Duration,
    read_timeout: Duration,
    /// Other backends tried after a refused connection.
    pub retries: usize,
    failure_cooldown: Duration,
    /// Active health checks run for this pool (they clear passive marks).
    checked: bool,
    /// How the pool's backends answer "I do not know this session".
    pub session_not_found: Vec<crate::config::NotFoundRule>,
    /// How long a draining backend keeps its sessions before they move.
    pub drain_timeout: Duration,
    /// Identity headers sent instead of the client's token (`identity-headers`).
    pub identity: crate::config::IdentityHeaders,
    /// TLS to the backends (`tls`), ready for pingora's peers.
    tls: Option<tls::PeerTls>,
}

/// The pools in force right now, each with its config: what upstream's background services
/// (health checks, discovery) read every round. The running state implements it, so they
/// never read the whole `State`.
pub trait LivePools: Send + Sync {
    /// Each pool with its config, as of now.
    fn pools(&self) -> Vec<(PoolConfig, Arc<Pool>)>;

    /// The upstream path of the MCP endpoint on the backends of the pool at `index` (as
    /// [`LivePools::pools`] lists them), where era probes go.
    fn mcp_path(&self, index: usize) -> String;
}

/// Decrements a backend's in-flight count when dropped.
#[derive(Debug)]
pub struct InflightGuard(Arc<Backend>);

impl Drop for InflightGuard {
    fn drop(&mut self) {
        self.0.inflight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A change of membership.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MembershipChange {
    /// Addresses that joined.
    pub added: Vec<SocketAddr>,
    /// Addresses that left.
    pub removed: Vec<SocketAddr>,
    /// Members no longer discovered, draining until they leave.
    pub drained: Vec<SocketAddr>,
}

impl Pool {
    /// Builds a pool from its config.
    pub fn new(cfg: &PoolConfig) -> Pool {
        let members = cfg
            .backends
            .iter()
            .map(|addr| Arc::new(Backend::new(*addr, cfg.host.as_deref(), cfg.era)))
            .collect();
        Pool {
            name: cfg.name.clone(),
            era: cfg.era,
            members: ArcSwap::from_pointee(members),
            host: cfg.host.clone(),
            balance: cfg.balance,
            cursor: AtomicUsize::new(0),
            connect_timeout: cfg.connect_timeout,
            read_timeout: cfg.read_timeout,
            retries: cfg.retries,
            failure_cooldown: cfg.failure_cooldown,
            checked: cfg.health.is_some(),
            session_not_found: cfg.session_not_found.clone(),
            drain_timeout: cfg.drain_timeout,
            identity: cfg.identity_headers.clone(),
            tls: cfg
                .tls
                .as_ref()
                .map(|t| tls::PeerTls::new(t, cfg.host.as_deref())),
        }
    }

    /// A pool with `cfg`'s settings whose members carry over from `previous`: backends that
    /// stay keep their state and counters; with discovery, the discovered members stay.
    pub fn carry_over(cfg: &PoolConfig, previous: &Pool) -> Pool {
        let pool = Pool::new(cfg);
        let old = previous.backends();
        let addrs: Vec<SocketAddr> = if cfg.discovery.is_some() {
            old.iter().map(|b| b.addr).collect()
        } else {
            cfg.backends.clone()
        };
        let members = addrs
            .iter()
            .map(|a| match old.iter().find(|b| b.addr == *a) {
                Some(b) => {
                    if !pool.checked {
                        b.suspect.store(false, Ordering::Relaxed);
                    }
                    match (cfg.era, previous.era) {
                        (EraSetting::Fixed(era), _) => {
                            b.set_era(Some(era));
                        }
                        // declared before, detected now: probe it
                        (EraSetting::Detect, EraSetting::Fixed(_)) => b.recheck_era(),
                        (EraSetting::Detect, EraSetting::Detect) => {}
                    }
                    b.clone()
                }
                None => Arc::new(Backend::new(*a, cfg.host.as_deref(), cfg.era)),
            })
            .collect();
        pool.members.store(Arc::new(members));
        pool
    }

    /// The current members (a snapshot: later changes do not affect it).
    pub fn backends(&self) -> Arc<Vec<Arc<Backend>>> {
        self.members.load_full()
    }

    /// Applies a discovered membership: new addresses join at once; members that are no
    /// longer discovered drain (no new sessions; their sessions stay until `drain_timeout`)
    /// and leave the pool after it; a drained member that is discovered again is undrained.
    pub fn sync(&self, discovered: &[SocketAddr], drain_timeout: Duration) -> MembershipChange {
        let current = self.backends();
        let mut keep: Vec<SocketAddr> = discovered.to_vec();
        for b in current.iter() {
            if discovered.contains(&b.addr) {
                if b.discovery_drained.swap(false, Ordering::Relaxed) {
                    b.set_draining(false);
                }
            } else {
                if !b.discovery_drained.swap(true, Ordering::Relaxed) {
                    b.set_draining(true);
                }
                if b.draining_for().is_some_and(|d| d < drain_timeout) {
                    keep.push(b.addr);
                }
            }
        }
        let mut change = self.set_members(&keep);
        change.drained = current
            .iter()
            .filter(|b| !discovered.contains(&b.addr) && keep.contains(&b.addr))
            .map(|b| b.addr)
            .collect();
        change
    }

    /// Replaces the membership with `addrs`; backends that stay keep their state and counters.
    pub fn set_members(&self, addrs: &[SocketAddr]) -> MembershipChange {
        let current = self.backends();
        let mut change = MembershipChange::default();
        let next: Vec<Arc<Backend>> = addrs
            .iter()
            .map(|addr| match current.iter().find(|b| b.addr == *addr) {
                Some(b) => b.clone(),
                None => {
                    change.added.push(*addr);
                    Arc::new(Backend::new(*addr, self.host.as_deref(), self.era))
                }
            })
            .collect();
        change.removed = current
            .iter()
            .filter(|b| !addrs.contains(&b.addr))
            .map(|b| b.addr)
            .collect();
        if !change.added.is_empty() || !change.removed.is_empty() {
            self.members.store(Arc::new(next));
        }
        change
    }

    /// Picks a backend for a request, not in `tried`, preferring eligible ones (not failed,
    /// not draining). A failed mark is a hint, not a verdict: when only marked or draining
    /// backends are left, one of them is tried.
    pub fn select(&self, tried: &[SocketAddr]) -> Option<Arc<Backend>> {
        self.select_serving(tried, None)
    }

    /// [`Pool::select`] among the backends that serve `era` (any backend when `None`).
    pub fn select_serving(&self, tried: &[SocketAddr], era: Option<Era>) -> Option<Arc<Backend>> {
        let members = self.backends();
        let untried = |b: &Backend| !tried.contains(&b.addr) && era.is_none_or(|era| b.serves(era));
        let good = |b: &Backend| untried(b) && b.eligible() && !b.era_is_stale();
        balance::pick(self, &members, &good)
            .or_else(|| balance::pick(self, &members, &untried))
            .map(|i| members[i].clone())
    }

    /// Picks the backend for a new (or moving) session: the fewest sessions (by `counts`,
    /// from the session store) among those not tried, preferring eligible ones, so a new pod
    /// gets new sessions at once. Draining backends take new sessions only when nothing else
    /// is left. Only backends that serve legacy sessions (legacy, dual, or not known yet).
    pub fn select_for_session(
        &self,
        tried: &[SocketAddr],
        counts: &[(SocketAddr, usize)],
    ) -> Option<Arc<Backend>> {
        let members = self.backends();
        let sessions = |b: &Backend| {
            counts
                .iter()
                .find(|(a, _)| *a == b.addr)
                .map_or(0, |(_, n)| *n)
        };
        let pick = |eligible_only: bool| {
            let offset = self.cursor.fetch_add(1, Ordering::Relaxed);
            let n = members.len().max(1);
            (0..members.len())
                .filter(|&i| !tried.contains(&members[i].addr))
                .filter(|&i| members[i].serves(Era::Legacy))
                .filter(|&i| {
                    !eligible_only || (members[i].eligible() && !members[i].era_is_stale())
                })
                .min_by_key(|&i| (sessions(&members[i]), (i + n - offset % n) % n))
                .map(|i| members[i].clone())
        };
        pick(true).or_else(|| pick(false))
    }

    /// The member at `addr`, if it is still one.
    pub fn find(&self, addr: SocketAddr) -> Option<Arc<Backend>> {
        self.backends().iter().find(|b| b.addr == addr).cloned()
    }

    /// Counts a request in flight on a backend until the guard drops.
    pub fn track(backend: &Arc<Backend>) -> InflightGuard {
        backend.inflight.fetch_add(1, Ordering::Relaxed);
        InflightGuard(backend.clone())
    }

    /// Marks a backend to be skipped for the failure cooldown (passive health). Where health
    /// checks run, it also stays down after the cooldown until a probe or a request succeeds.
    /// Returns whether it was serving until now (a death to announce).
    pub fn mark_failed(&self, backend: &Backend) -> bool {
        let was_serving = !backend.is_failed();
        let until = now_ms() + self.failure_cooldown.as_millis() as u64;
        backend.failed_until_ms.store(until, Ordering::Relaxed);
        if self.era == EraSetting::Detect {
            backend.era_went_stale();
        }
        if self.checked {
            backend.suspect.store(true, Ordering::Relaxed);
        }
        was_serving
    }

    /// Clears a failure mark after a successful connection.
    /// A backend that was marked and answers again may be a restarted one (another image):
    /// its era is probed again.
    pub fn mark_ok(&self, backend: &Backend) {
        let mut was_failed = false;
        if backend.failed_until_ms.load(Ordering::Relaxed) != 0 {
            backend.failed_until_ms.store(0, Ordering::Relaxed);
            was_failed = true;
        }
        if backend.suspect.load(Ordering::Relaxed) {
            backend.suspect.store(false, Ordering::Relaxed);
            was_failed = true;
        }
        if was_failed {
            backend.recheck_era();
        }
    }

    /// Whether any backend may take work.
    pub fn any_ready(&self) -> bool {
        self.backends().iter().any(|b| b.eligible())
    }

    /// The pingora peer for a backend, with this pool's timeouts.
    pub fn peer(&self, backend: &Backend) -> HttpPeer {
        let mut peer = match &self.tls {
            None => HttpPeer::new(backend.addr, false, String::new()),
            Some(tls) => tls.peer(backend.addr),
        };
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
