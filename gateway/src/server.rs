//! Building the pingora server from a validated config: the proxy service, the admin service,
//! and the server settings that matter for throughput.

use crate::admin::AdminApp;
use crate::admission::metrics::AdmissionMetrics;
use crate::bridge::metrics::BridgeMetrics;
use crate::config::Config;
use crate::config::StoreConfig;
use crate::metrics::Registrar;
use crate::reload::{ReloadMetrics, ReloadService};
use crate::request::metrics::RequestMetrics;
use crate::request::Gateway;
use crate::session::store::{
    Cached, Instrumented, RedisEvents, RedisStore, StoreMetrics, StreamStore, Ttl,
};
use crate::session::{
    EvacuationService, ExpiryService, MemoryStore, SessionManager, SessionMetrics, SessionObserver,
    SessionStore,
};
use crate::state::State;
use crate::stream::{StreamMetrics, Streams};
use crate::upstream::attempt::Engine;
use crate::upstream::discovery::DiscoveryService;
use crate::upstream::health::HealthService;
use crate::upstream::metrics::UpstreamMetrics;
use arc_swap::ArcSwap;
use pingora::listeners::tls::TlsSettings;
use pingora::server::configuration::ServerConf;
use pingora::server::Server;
use pingora::services::background::background_service;
use pingora::services::listening::Service;
use pingora_prometheus::prometheus::Registry;
use std::sync::Arc;

/// The backend credentials (`upstream-auth`) of `config` that cannot be read now, never their
/// values: `validate` reports them, and the gateway does not start with them.
pub fn unreadable_secrets(config: &Config) -> Vec<String> {
    crate::upstream::credentials::unreadable_in(config)
}

/// Builds a ready-to-run server for `config`. Callers may add services (the demo adds its
/// backends) before calling `run_forever`.
pub fn build(config: Config, config_path: Option<std::path::PathBuf>) -> Server {
    let mut server = Server::new_with_opt_and_conf(None, server_conf(&config));
    server.bootstrap();
    warn_unguarded(&config);

    let registry = Registry::new();
    let metrics = Families::register(&registry);
    crate::quiet::register(&registry);
    let stores = Stores::open(&config, &metrics.store);
    let cache = crate::cache::Common {
        metrics: metrics.cache.clone(),
        shared: stores.results.clone(),
        generations: Arc::default(),
    };
    let audit = crate::audit::Audit::new(metrics.audit.clone());
    let pins = Arc::new(crate::pinning::Pins::new(
        stores.redis.clone(),
        metrics.pins.clone(),
        audit.clone(),
    ));
    let mut first = State::new(config.clone(), metrics.admission.clone(), cache)
        .with_audit(audit.clone())
        .with_pins(pins.clone());
    // the snapshot's servers counted into the registry (a reload carries the families over)
    first.interceptors = Arc::new(
        crate::interceptors::Interceptors::new(&config)
            .measured(metrics.interceptors.clone(), audit.clone()),
    );
    let state = Arc::new(ArcSwap::from_pointee(first));
    let engine = Arc::new(Engine::new(metrics.upstream.clone()));
    let sessions = Arc::new(SessionManager::new(
        stores.sessions,
        engine.clone(),
        metrics.sessions.clone(),
    ));
    let streams = Arc::new(Streams::new(
        sessions.clone(),
        metrics.streams.clone(),
        stores.events,
    ));
    let observer: Arc<dyn SessionObserver> = streams.clone();
    sessions.observe(&observer);
    sessions.audit_into(audit.clone());
    server.add_service(background_service(
        "audit drain",
        crate::audit::DrainAtShutdown(audit),
    ));
    sessions.configure(&config.sessions);

    let tasks = crate::tasks::Tasks::new(stores.tasks, metrics.tasks.clone());
    let gateway = Gateway::new(
        state.clone(),
        sessions.clone(),
        streams.clone(),
        metrics.requests.clone(),
        metrics.bridge.clone(),
        tasks.clone(),
    );
    add_proxy(&mut server, &config, gateway, &state, &metrics.requests);

    server.add_service(background_service(
        "session expiry",
        ExpiryService::new(sessions.clone(), state.clone()),
    ));
    server.add_service(background_service(
        "session evacuation",
        EvacuationService::new(sessions.clone(), state.clone()),
    ));
    server.add_service(background_service(
        "tool pins from redis",
        crate::pinning::sync::PinSync { pins },
    ));
    if let Some(path) = config_path {
        let reload = ReloadService::new(path, state.clone(), metrics.reloads.clone());
        server.add_service(background_service("config reload", reload));
    }
    add_backend_services(
        &mut server,
        &config,
        &state,
        engine,
        &metrics.upstream,
        &tasks,
    );
    add_telemetry(&mut server, &config);
    if let Some(admin) = config.admin {
        let registry = (registry, metrics.upstream);
        add_admin(
            &mut server,
            admin,
            (state, sessions, streams),
            registry,
            tasks,
        );
    }
    server
}

/// The admin listener at `admin`, with the console and its sampler (one reading a second,
/// watched or not: `console/sampler.rs`).
fn add_admin(
    server: &mut Server,
    admin: std::net::SocketAddr,
    (state, sessions, streams): (Arc<ArcSwap<State>>, Arc<SessionManager>, Arc<Streams>),
    (registry, upstream): (Registry, UpstreamMetrics),
    tasks: Arc<crate::tasks::Tasks>,
) {
    let samples = Arc::new(std::sync::Mutex::new(crate::console::Samples::new(
        crate::session::now_ms(),
    )));
    let sampler = crate::console::Sampler::new(
        registry.clone(),
        state.clone(),
        sessions.clone(),
        samples.clone(),
    );
    server.add_service(background_service("console sampler", sampler));
    let app = AdminApp::new(
        (state.clone(), sessions, streams),
        registry,
        upstream,
        tasks,
        samples,
    );
    // its connections watched and bounded as the client listener's are
    let mut service = Service::new("admin".into(), crate::admin_auth::guarded(app, state));
    service.add_tcp(&admin.to_string());
    service.threads = Some(1);
    server.add_service(service);
}

/// pingora's settings: `threads`, and the ones that matter for throughput and shutdown.
fn server_conf(config: &Config) -> ServerConf {
    ServerConf {
        threads: config.threads,
        // Keep enough idle upstream connections that a busy pool never reconnects per request.
        upstream_keepalive_pool_size: 1024,
        grace_period_seconds: Some(0),
        graceful_shutdown_timeout_seconds: Some(5),
        ..ServerConf::default()
    }
}

/// Where sessions are kept, and with a shared store where stream events and task records are.
struct Stores {
    sessions: Arc<dyn SessionStore>,
    events: Option<Arc<dyn StreamStore>>,
    tasks: Option<Arc<dyn crate::tasks::store::TaskStore>>,
    /// The response cache's shared tier (used when `cache.store: redis`).
    results: Option<Arc<crate::cache::shared::Shared>>,
    /// The sessions' Redis, where tool pins are shared (`None`: the memory store).
    redis: Option<Arc<RedisStore>>,
}

impl Stores {
    /// The stores `sessions.store` names: memory, or Redis for sessions, stream events, task
    /// records and the response cache's public results alike.
    fn open(config: &Config, metrics: &StoreMetrics) -> Stores {
        let ttl = Ttl {
            idle: config.sessions.idle_timeout,
            tombstone: config.sessions.idle_timeout,
        };
        match &config.sessions.store {
            StoreConfig::Memory => Stores {
                sessions: Arc::new(MemoryStore::new(ttl)),
                events: None,
                tasks: None,
                results: None,
                redis: None,
            },
            // measured where it meets the network; a per-replica cache of recent records in front
            StoreConfig::Redis(redis) => {
                let redis = Arc::new(RedisStore::new(redis.clone(), ttl));
                // stream events beside the sessions, so any replica can replay them
                let events = RedisEvents::new(redis.clone());
                // task records beside them, so any replica routes a task's polls
                let tasks = Arc::new(crate::tasks::RedisTasks(redis.clone()));
                // public cached results beside them, so any replica answers from them
                // (their MACs made with the sealer's key: every replica's, when it is configured)
                let sealer = crate::sealer::sealer(config.bridge.request_state_key);
                let results = Arc::new(crate::cache::shared::Shared::new(redis.clone(), sealer));
                let measured = Arc::new(Instrumented::new(redis.clone(), metrics.clone()));
                Stores {
                    redis: Some(redis),
                    sessions: Arc::new(Cached::measured(measured, metrics.clone())),
                    events: Some(events),
                    tasks: Some(tasks),
                    results: Some(results),
                }
            }
        }
    }
}

/// The proxy service clients reach: `gateway` behind the per-connection guard, on `listen`
/// (with TLS when `listen-tls` is set).
fn add_proxy(
    server: &mut Server,
    config: &Config,
    gateway: Gateway,
    state: &Arc<ArcSwap<State>>,
    metrics: &RequestMetrics,
) {
    let connections = metrics.client_connections.with_label_values::<&str>(&[]);
    let proxy = pingora::proxy::http_proxy(&server.configuration, gateway);
    let guarded = crate::downstream::Guarded::new(proxy, state.clone(), connections);
    let guarded = match client_tls(config) {
        Some(tls) => guarded.with_tls(tls),
        None => guarded,
    };
    let mut proxy = Service::new("mcp-gateway".into(), guarded);
    proxy.add_listener(crate::downstream::client_endpoint(
        &config.listen.to_string(),
    ));
    proxy.threads = Some(config.threads);
    server.add_service(proxy);
}

/// `listen-tls`'s certificate when it is set; a certificate or key that cannot be loaded ends
/// the process.
fn client_tls(config: &Config) -> Option<TlsSettings> {
    let tls = config.listen_tls.as_ref()?;
    match crate::downstream::tls::ReloadingCert::new(&tls.cert, &tls.key) {
        Ok(cert) => Some(cert.settings()),
        Err(e) => {
            tracing::error!(error = %e, "listen-tls: cannot load the certificate or key");
            std::process::exit(1);
        }
    }
}

/// The services that keep the backends current: their credentials, discovery, era probes and
/// health checks.
fn add_backend_services(
    server: &mut Server,
    config: &Config,
    state: &Arc<ArcSwap<State>>,
    engine: Arc<Engine>,
    metrics: &UpstreamMetrics,
    tasks: &Arc<crate::tasks::Tasks>,
) {
    let deaths = engine.deaths().clone();
    // always on: a reload may give a pool credentials (pools without any cost nothing)
    let credentials = crate::upstream::credentials_service::CredentialsService::new(
        state.clone(),
        metrics.upstream_tokens.clone(),
    );
    server.add_service(background_service("backend credentials", credentials));
    if config.pools.iter().any(|p| p.discovery.is_some()) {
        let discovery =
            DiscoveryService::new(state.clone(), metrics.clone()).holding(tasks.clone());
        server.add_service(background_service("discovery", discovery));
    }
    // probes only pools with `era: detect`; the gauge of backends by era covers every pool
    server.add_service(background_service(
        "era probes",
        crate::upstream::era::EraService::new(state.clone(), engine),
    ));
    // on by default (a TCP connect), so a dead backend reads down until it answers again
    if config.pools.iter().any(|p| p.health.is_some()) {
        server.add_service(background_service(
            "health checks",
            HealthService::new(state.clone()).announcing(deaths),
        ));
    }
}

/// OpenTelemetry traces when `tracing` is set, flushed at shutdown; they stay off (said once)
/// when they cannot start.
fn add_telemetry(server: &mut Server, config: &Config) {
    let Some(traces) = &config.tracing else {
        return;
    };
    match crate::telemetry::init(traces) {
        Ok(()) => {
            server.add_service(background_service(
                "telemetry flush",
                crate::telemetry::FlushAtShutdown,
            ));
        }
        Err(e) => tracing::error!(error = %e, "OpenTelemetry traces stay off"),
    }
}

/// Every concern's metric families, registered once at start into the one registry `/metrics`
/// reads; each goes to the concern that owns it (`metrics/mod.rs`).
pub struct Families {
    /// The proxy's per-request families.
    pub requests: RequestMetrics,
    /// Admission control's.
    pub admission: AdmissionMetrics,
    /// Upstream's: attempts, backends, discovery, eras.
    pub upstream: UpstreamMetrics,
    /// The session lifecycle's.
    pub sessions: SessionMetrics,
    /// The session store's.
    pub store: StoreMetrics,
    /// Streams'.
    pub streams: StreamMetrics,
    /// The era bridges'.
    pub bridge: BridgeMetrics,
    /// The config reload's.
    pub reloads: ReloadMetrics,
    /// The task records'.
    pub tasks: crate::tasks::metrics::TaskMetrics,
    /// The response cache's.
    pub cache: crate::cache::metrics::CacheMetrics,
    /// The audit trail's.
    pub audit: crate::audit::AuditMetrics,
    /// The interceptors'.
    pub interceptors: crate::interceptors::metrics::InterceptorMetrics,
    /// Tool pinning's.
    pub pins: crate::pinning::metrics::PinMetrics,
    /// Every family name registered, for checking dashboards and alerts against.
    pub names: Vec<String>,
}

impl Families {
    /// Registers every concern's families into `registry`.
    pub fn register(registry: &Registry) -> Families {
        let families = Registrar::new(registry);
        let mut all = Families {
            requests: RequestMetrics::register(&families),
            admission: AdmissionMetrics::register(&families),
            upstream: UpstreamMetrics::register(&families),
            sessions: SessionMetrics::register(&families),
            store: StoreMetrics::register(&families),
            streams: StreamMetrics::register(&families),
            bridge: BridgeMetrics::register(&families),
            reloads: ReloadMetrics::register(&families),
            tasks: crate::tasks::metrics::TaskMetrics::register(&families),
            cache: crate::cache::metrics::CacheMetrics::register(&families),
            audit: crate::audit::AuditMetrics::register(&families),
            interceptors: crate::interceptors::metrics::InterceptorMetrics::register(&families),
            pins: crate::pinning::metrics::PinMetrics::register(&families),
            names: Vec::new(),
        };
        all.names = families.names();
        all
    }
}

/// A listener that browsers may reach on a non-loopback address, without `allowed-hosts` or
/// `allowed-origins`, lets any page's requests (DNS rebinding) through: said once at startup.
fn warn_unguarded(config: &Config) {
    if config.listen.ip().is_loopback() {
        return;
    }
    for (key, list) in [
        ("allowed-hosts", &config.allowed_hosts),
        ("allowed-origins", &config.allowed_origins),
    ] {
        if list.is_empty() {
            tracing::warn!(
                listen = %config.listen,
                "{key} is not set on a non-loopback listener: any Host or browser Origin is \
                 served (DNS rebinding); set it to the names clients use"
            );
        }
    }
}
