//! Upstream pools: a membership that discovery can change at any time, backend states
//! (up, down by active health, draining), passive failure marking, and balancing.
//! Backends are handed out as `Arc<Backend>` and identified by address, so a request or a
//! session keeps its backend even while the membership changes under it.

pub mod attempt;
mod backend;
mod balance;
pub mod client;
mod clock;
mod credential_errors;
pub mod credentials;
pub mod credentials_service;
pub mod deadline;
pub mod deaths;
pub mod discovery;
pub mod encoding;
pub mod era;
mod era_schedule;
pub mod exchange;
pub mod health;
mod membership;
pub mod metrics;
pub mod own;
mod pick;
pub mod request;
mod secrets;
mod tls;
mod token_request;
pub mod tokens;
pub mod tool_headers;

use crate::config::EraSetting;
use crate::config::{Balance, PoolConfig};
use arc_swap::ArcSwap;
pub use backend::{Backend, BackendState, InflightGuard};
use clock::now_ms;
use mcp_wire::Era;
pub use membership::Membership;
use pingora::upstreams::peer::HttpPeer;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A named set of backends with a balancing algorithm.
#[derive(Debug)]
pub struct Pool {
    /// Name from config.
    pub name: String,
    /// How the backends' era is known (`era`): fixed for all, or probed per backend.
    pub era: EraSetting,
    members: ArcSwap<Membership>,
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
    /// The backends' own credentials (`upstream-auth`), read from their secrets.
    pub credentials: credentials::Credentials,
    /// TLS to the backends (`tls`), ready for pingora's peers.
    tls: Option<tls::PeerTls>,
    /// The `Mcp-Param-*` headers its tools' schemas ask for, by upstream path, as their
    /// lists said (new with each config: a reload may change what is behind a path).
    pub tool_headers: tool_headers::ToolHeaders,
    /// A digest of its config that shapes answers (`host`, `tls`, `identity-headers`,
    /// `upstream-auth`), in [`Pool::signature`].
    shape: u64,
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

/// Work a backend holds that outlives a request, by pool: the tasks it created that have not
/// ended (implemented by `tasks::Tasks`). A backend that discovery no longer finds stays in
/// its pool, draining, while it holds some (see [`Pool::sync`]).
pub trait HeldWork: Send + Sync {
    /// The backends of `pool` holding work now.
    fn holding(&self, pool: &str) -> std::collections::HashSet<SocketAddr>;
}

/// The digest of a pool's config that shapes its answers ([`Pool::signature`]): the same config
/// gives the same digest in every process of one build.
fn shape(cfg: &PoolConfig) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    let text = format!(
        "{:?} {:?} {:?} {:?}",
        cfg.host, cfg.tls, cfg.identity_headers, cfg.upstream_auth
    );
    text.hash(&mut h);
    h.finish()
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
            members: ArcSwap::from_pointee(Membership::new(members)),
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
            credentials: credentials::Credentials::load(&cfg.name, &cfg.upstream_auth),
            tls: cfg
                .tls
                .as_ref()
                .map(|t| tls::PeerTls::new(t, cfg.host.as_deref())),
            tool_headers: tool_headers::ToolHeaders::default(),
            shape: shape(cfg),
        }
    }

    /// A pool with `cfg`'s settings whose members carry over from `previous`: backends that
    /// stay keep their state and counters; with discovery, the discovered members stay.
    pub fn carry_over(cfg: &PoolConfig, previous: &Pool) -> Pool {
        let pool = Pool::new(cfg);
        pool.credentials
            .carry_over(&previous.credentials, &cfg.upstream_auth);
        let old = previous.backends();
        let addrs: Vec<SocketAddr> = if cfg.discovery.is_some() {
            old.iter().map(|b| b.addr).collect()
        } else {
            cfg.backends.clone()
        };
        let members = addrs
            .iter()
            .map(|a| match old.get(*a) {
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
        pool.members.store(Arc::new(Membership::new(members)));
        pool
    }

    /// The current members (a snapshot: later changes do not affect it).
    pub fn backends(&self) -> Arc<Membership> {
        self.members.load_full()
    }

    /// A digest of what the pool's answers may depend on: its members' addresses, the era
    /// each serves, how many times each stopped serving (its generation), whether any answers
    /// (not all down), and the config that shapes answers. The response cache keys results by
    /// it, so a change of any (discovery, a reload, the era probe, the pool going down, a
    /// backend that failed and came back, perhaps another version at the same address) is a
    /// new key, never a result of the backends that were.
    pub fn signature(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        self.shape.hash(&mut h);
        let members = self.members.load();
        for b in members.iter() {
            b.addr.hash(&mut h);
            b.era.load(Ordering::Relaxed).hash(&mut h);
            b.generation.load(Ordering::Relaxed).hash(&mut h);
        }
        (members.iter())
            .any(|b| b.state() != BackendState::Down)
            .hash(&mut h);
        h.finish()
    }

    /// Applies a discovered membership: new addresses join at once; members that are no
    /// longer discovered drain (no new sessions; their sessions stay until `drain_timeout`)
    /// and leave the pool after it, or later while they are `holding` work (tasks that have
    /// not ended reach their pod until they end or expire); a drained member that is
    /// discovered again is undrained.
    pub fn sync(
        &self,
        discovered: &[SocketAddr],
        drain_timeout: Duration,
        holding: &std::collections::HashSet<SocketAddr>,
    ) -> MembershipChange {
        let current = self.backends();
        let discovered_set: HashSet<SocketAddr> = discovered.iter().copied().collect();
        let mut keep: Vec<SocketAddr> = discovered.to_vec();
        let mut drained = Vec::new();
        for b in current.iter() {
            if discovered_set.contains(&b.addr) {
                if b.discovery_drained.swap(false, Ordering::Relaxed) {
                    b.set_draining(false);
                }
            } else {
                if !b.discovery_drained.swap(true, Ordering::Relaxed) {
                    b.set_draining(true);
                }
                if b.draining_for().is_some_and(|d| d < drain_timeout) || holding.contains(&b.addr)
                {
                    keep.push(b.addr);
                    drained.push(b.addr);
                }
            }
        }
        let mut change = self.set_members(&keep);
        change.drained = drained;
        change
    }

    /// Replaces the membership with `addrs`; backends that stay keep their state and counters.
    pub fn set_members(&self, addrs: &[SocketAddr]) -> MembershipChange {
        let current = self.backends();
        let mut change = MembershipChange::default();
        let next: Vec<Arc<Backend>> = addrs
            .iter()
            .map(|addr| match current.get(*addr) {
                Some(b) => b.clone(),
                None => {
                    change.added.push(*addr);
                    Arc::new(Backend::new(*addr, self.host.as_deref(), self.era))
                }
            })
            .collect();
        let next = Membership::new(next);
        change.removed = current
            .iter()
            .filter(|b| !next.contains(b.addr))
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
        balance::pick(self.balance, &self.cursor, &members, &good)
            .or_else(|| balance::pick(self.balance, &self.cursor, &members, &untried))
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
        // each member's count in one pass over `counts` (a search per member was quadratic)
        let mut sessions = vec![0; members.len()];
        for (addr, n) in counts {
            if let Some(i) = members.position(*addr) {
                sessions[i] = *n;
            }
        }
        let pick = |eligible_only: bool| {
            let offset = self.cursor.fetch_add(1, Ordering::Relaxed);
            let n = members.len().max(1);
            (0..members.len())
                .filter(|&i| !tried.contains(&members[i].addr))
                .filter(|&i| members[i].serves(Era::Legacy))
                .filter(|&i| {
                    !eligible_only || (members[i].eligible() && !members[i].era_is_stale())
                })
                .min_by_key(|&i| (sessions[i], (i + n - offset % n) % n))
                .map(|i| members[i].clone())
        };
        pick(true).or_else(|| pick(false))
    }

    /// The member at `addr`, if it is still one.
    pub fn find(&self, addr: SocketAddr) -> Option<Arc<Backend>> {
        self.backends().get(addr).cloned()
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
        self.mark_failed_for(backend, "connection-lost")
    }

    /// [`Pool::mark_failed`], noting `what` failed (`connect-refused`, `connection-lost`).
    pub(super) fn mark_failed_for(&self, backend: &Backend, what: &'static str) -> bool {
        backend.note_failure(what);
        let was_serving = !backend.is_failed();
        if was_serving {
            // what answers after it may be another program: a new generation
            backend.generation.fetch_add(1, Ordering::Relaxed);
        }
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

    /// The pingora peer for a backend, with this pool's timeouts (boxed: pingora takes it
    /// boxed, and an exchange keeps it so).
    pub fn peer(&self, backend: &Backend) -> Box<HttpPeer> {
        let mut peer = Box::new(match &self.tls {
            None => HttpPeer::new(backend.addr, false, String::new()),
            Some(tls) => tls.peer(backend.addr),
        });
        peer.options.connection_timeout = Some(self.connect_timeout);
        peer.options.read_timeout = Some(self.read_timeout);
        peer.options.idle_timeout = Some(Duration::from_secs(60));
        // one header map per answer, not two (a carried pingora-core change): the answer's
        // header names reach the client titled (standard) or lowercase (others)
        peer.options.keep_response_header_case = false;
        // an answer that is an event stream (a listen, a call's progress, a session's GET) is
        // read into a buffer sized for events, not 64 KiB: a held stream keeps it all along (a
        // carried pingora-core change)
        peer.options.event_stream_body_buf_size = Some(client::STREAM_BODY_BUFFER);
        peer.options.http_upstream_request_policy = REQUEST_POLICY;
        peer
    }
}

/// How pingora cleans a client's head before the pass-through path's filter sees it: the
/// standard hop-by-hop fields go, and no upgrade is ever forwarded (pingora's default forwards
/// a WebSocket handshake, which opened a tunnel past every check: issue 48). The fields a
/// client's `Connection` names are left to `request::drop_hop_by_hop`, which keeps the ones the
/// gateway checked (pingora's default strips `Mcp-Method` when it is named, and refuses
/// `Connection: close, host` with no answer the client can read).
const REQUEST_POLICY: pingora::upstreams::peer::HttpUpstreamRequestPolicy =
    pingora::upstreams::peer::HttpUpstreamRequestPolicy {
        strip_hop_by_hop: true,
        strip_connection_nominated: false,
        reject_malformed_connection_nominations: false,
        h1_upgrade: pingora::upstreams::peer::H1UpgradePolicy::Deny,
    };

#[cfg(test)]
mod tests;
