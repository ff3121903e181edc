//! Everything built from one config: router, pools. Swapped whole on reload.

use crate::admission::metrics::AdmissionMetrics;
use crate::admission::Admission;
use crate::config::Config;
use crate::downstream::guard::PeerGuard;
use crate::routing::Router;
use crate::upstream::Pool;
use std::sync::Arc;

/// The running configuration, compiled.
pub struct State {
    /// The validated config it was built from.
    pub config: Config,
    /// Compiled routes.
    pub router: Router,
    /// Pools, indexed as in `config.pools`.
    pub pools: Vec<Arc<Pool>>,
    /// Admission limits.
    pub admission: Admission,
    /// Admission's metric family, for the connections the listener refuses (the same
    /// registry across reloads).
    pub rejections: AdmissionMetrics,
    /// The listener's allowed hosts and origins.
    pub guard: PeerGuard,
    /// Who may call (`auth`); `None`: anyone.
    pub auth: Option<Arc<crate::auth::Auth>>,
    /// The response cache of this snapshot (a reload starts an empty one).
    pub cache: Arc<crate::cache::Cache>,
    /// The interceptor servers routes' chains run (`interceptors`).
    pub interceptors: Arc<crate::interceptors::Interceptors>,
    /// The audit trail (one per process, carried over and reconfigured on reload).
    pub audit: crate::audit::Audit,
    /// The pools' tool pins (the same across reloads).
    pub pins: Arc<crate::pinning::Pins>,
}

/// The running state hands upstream's background services the pools in force.
impl crate::upstream::LivePools for arc_swap::ArcSwap<State> {
    fn pools(&self) -> Vec<(crate::config::PoolConfig, Arc<Pool>)> {
        let state = self.load();
        state
            .config
            .pools
            .iter()
            .cloned()
            .zip(state.pools.iter().cloned())
            .collect()
    }

    fn mcp_path(&self, index: usize) -> String {
        crate::upstream::era::probe_path(&self.load().config, index)
    }
}

/// The running state hands the listener the client timeouts in force.
impl crate::downstream::CurrentTimeouts for arc_swap::ArcSwap<State> {
    fn client_timeouts(&self) -> crate::config::ClientTimeouts {
        self.load().config.client_timeouts
    }

    fn max_connections(&self) -> Option<usize> {
        self.load().config.limits.max_connections
    }

    fn max_connections_per_client(&self) -> Option<usize> {
        self.load().config.limits.max_connections_per_client
    }

    fn connection_refused(&self, per_client: bool) {
        let reason = match per_client {
            true => "client-connections",
            false => "connections",
        };
        self.load().rejections.rejected(reason);
    }
}

/// The running state hands the session sweep what it reads.
impl crate::session::SweepSource for arc_swap::ArcSwap<State> {
    fn session_config(&self) -> crate::config::SessionConfig {
        self.load().config.sessions.clone()
    }

    fn pools(&self) -> Vec<Arc<Pool>> {
        self.load().pools.clone()
    }

    fn prune_limits(&self) {
        self.load().admission.prune();
    }
}

impl State {
    /// The pool at `index` (as routes name them); an internal error if the index is stale.
    pub fn pool(&self, index: usize) -> Result<Arc<Pool>, crate::error::GatewayError> {
        self.pools
            .get(index)
            .cloned()
            .ok_or_else(|| crate::error::GatewayError::internal(format!("no pool {index}")))
    }

    /// Compiles a validated config.
    pub fn new(config: Config, rejections: AdmissionMetrics, cache: crate::cache::Common) -> State {
        State {
            // none pinned until `with_pins` hands the process's pins
            pins: Arc::new(crate::pinning::Pins::new(
                None,
                crate::pinning::metrics::PinMetrics::unregistered(),
                crate::audit::Audit::default(),
            )),
            rejections,
            audit: crate::audit::Audit::default(),
            cache: Arc::new(crate::cache::Cache::new(config.cache.clone(), cache)),
            interceptors: Arc::new(crate::interceptors::Interceptors::new(&config)),
            auth: config
                .auth
                .as_ref()
                .map(|a| Arc::new(crate::auth::Auth::new(a))),
            guard: PeerGuard::new(&config),
            router: Router::new(&config),
            admission: Admission::new(&config.limits, &config.routes),
            pools: config
                .pools
                .iter()
                .map(|p| Arc::new(Pool::new(p)))
                .collect(),
            config,
        }
    }

    /// The same state recording into `audit` (the process's one trail), configured with
    /// this state's `audit:` section.
    pub fn with_audit(mut self, audit: crate::audit::Audit) -> State {
        audit.configure(self.config.audit.as_ref());
        self.audit = audit;
        self
    }

    /// The snapshot with the process's tool pins (one per process, carried over on reload),
    /// configured for its pools.
    pub fn with_pins(mut self, pins: Arc<crate::pinning::Pins>) -> State {
        pins.configure(&self.config);
        self.pins = pins;
        self
    }

    /// Compiles a reloaded config, carrying over what must survive a reload (not the cache's
    /// results: they may be stale under it): backends that
    /// stay keep their sessions, health and drain state; discovered members stay until the
    /// next discovery round. (Admission counts restart: requests admitted under the old limits
    /// give their slots back to the old counters.)
    pub fn reload(config: Config, old: &State) -> State {
        let pools = config
            .pools
            .iter()
            .map(|cfg| match old.pools.iter().find(|p| p.name == cfg.name) {
                Some(previous) => Arc::new(Pool::carry_over(cfg, previous)),
                None => Arc::new(Pool::new(cfg)),
            })
            .collect();
        // An unchanged auth section keeps its fetched keys and verified tokens.
        let auth = match (&config.auth, &old.auth) {
            (Some(a), Some(previous)) if old.config.auth.as_ref() == Some(a) => {
                Some(previous.clone())
            }
            (Some(a), _) => Some(Arc::new(crate::auth::Auth::new(a))),
            (None, _) => None,
        };
        // Cached results may be stale under the new config (a pool's members, a route's
        // backends): the new snapshot starts with an empty cache.
        let cache = crate::cache::Cache::new(config.cache.clone(), old.cache.common().clone());
        // pins outlive snapshots: the new config's pools and pins files applied
        old.pins.configure(&config);
        State {
            pins: old.pins.clone(),
            rejections: old.rejections.clone(),
            audit: old.audit.clone(),
            cache: Arc::new(cache),
            // a server whose config is unchanged keeps its list (and legacy session)
            interceptors: Arc::new(
                crate::interceptors::Interceptors::new(&config).carry_over(&old.interceptors),
            ),
            auth,
            guard: PeerGuard::new(&config),
            router: Router::new(&config),
            admission: Admission::new(&config.limits, &config.routes),
            pools,
            config,
        }
    }
}
