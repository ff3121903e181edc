//! Prometheus metric families of the gateway, registered into a registry that is passed in
//! (never global statics). Labels are bounded: route and pool names come from config, methods
//! from [`mcp_wire::KNOWN_METHODS`], backends from the pool lists.

mod backends;
mod resolved;

use resolved::{EraMetrics, BACKEND_ERAS};
pub use resolved::{Resolved, RouteMetrics};

use pingora_prometheus::prometheus::{
    exponential_buckets, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry,
};
use std::sync::Arc;

/// All metric families.
#[derive(Clone)]
pub struct Metrics {
    /// `mcpgw_requests_total{route,method,outcome}`: finished requests; outcome is `ok`, the
    /// upstream status class (`4xx`, `5xx`), the gateway error kind, or what a 200 answer
    /// said: `tool-error` (a result with `isError: true`), `rpc-error` (a JSON-RPC error).
    pub requests: IntCounterVec,
    /// `mcpgw_rpc_errors_total{route,method,code}`: JSON-RPC errors backends answered with
    /// HTTP 200, by code (JSON-RPC's reserved range, else `other`).
    pub rpc_errors: IntCounterVec,
    /// `mcpgw_request_duration_seconds{route,method}`: time from request head to last byte.
    pub request_duration: HistogramVec,
    /// `mcpgw_upstream_duration_seconds{pool}`: from sending a request upstream to its
    /// response head.
    pub upstream_duration: HistogramVec,
    /// `mcpgw_tool_calls_total{route,tool,outcome}`: `tools/call` requests; `tool` only from
    /// the configured `metric-tools`, else `other`.
    pub tool_calls: IntCounterVec,
    /// `mcpgw_requests_by_era_total{era}`: requests by protocol era.
    pub requests_by_era: IntCounterVec,
    /// `mcpgw_upstream_connect_failures_total{pool,backend}`: refused or timed-out connects.
    pub upstream_connect_failures: IntCounterVec,
    /// `mcpgw_backend_inflight_requests{pool,backend}`: requests in flight per backend.
    pub backend_inflight: IntGaugeVec,
    /// `mcpgw_backend_up{pool,backend}`: 1 unless a recent connect failure marks it.
    pub backend_up: IntGaugeVec,
    /// `mcpgw_sessions_active{pool,backend}`: gateway sessions bound to each backend.
    pub sessions_active: IntGaugeVec,
    /// `mcpgw_sessions_created_total{pool}`: sessions created by a client's initialize.
    pub sessions_created: IntCounterVec,
    /// `mcpgw_session_reinits_total{pool,reason}`: sessions moved to another backend by
    /// replaying initialize; reason is backend-down, connect-refused, session-unknown or
    /// connection-lost.
    pub session_reinits: IntCounterVec,
    /// `mcpgw_session_moves_started_total{pool,trigger}`: moves this replica began
    /// (re-initializing on a survivor), by trigger: `on-demand` (a request found the binding
    /// unusable) or `background` (the backend was known dead: `session/evacuate.rs`).
    pub session_moves_started: IntCounterVec,
    /// `mcpgw_session_moves_finished_total{pool,trigger,outcome}`: those moves finished:
    /// `moved`, `lost-race` (another replica moved it first), `failed`.
    pub session_moves_finished: IntCounterVec,
    /// `mcpgw_sessions_ended_total{pool,reason}`: sessions ended: expired, deleted, or lost
    /// (version-mismatch: no backend could take them over).
    pub sessions_ended: IntCounterVec,
    /// `mcpgw_discovery_changes_total{pool,change}`: members added, draining (no longer
    /// discovered) and removed by discovery.
    pub discovery_changes: IntCounterVec,
    /// `mcpgw_backend_draining{pool,backend}`: 1 while a backend drains.
    pub backend_draining: IntGaugeVec,
    /// `mcpgw_backends{pool,era}`: backends per protocol era (legacy, modern, dual, unknown).
    pub backends_by_era: IntGaugeVec,
    /// `mcpgw_era_probes_total{pool,result}`: era probes by result (legacy, modern, dual,
    /// inconclusive).
    pub era_probes: IntCounterVec,
    /// `mcpgw_open_streams{route}`: server→client SSE streams (GET) open right now.
    pub open_streams: IntGaugeVec,
    /// `mcpgw_held_streams`: sessions' standalone streams the gateway holds open upstream (one
    /// upstream connection each).
    pub held_streams: IntGaugeVec,
    /// `mcpgw_config_reloads_total{result}`: reloads applied or rejected (invalid config).
    pub config_reloads: IntCounterVec,
    /// `mcpgw_rejections_total{reason}`: requests refused by admission control: rate-limited,
    /// overloaded, session-limit, body-too-large.
    pub rejections: IntCounterVec,
    /// `mcpgw_inflight_calls_lost_total{pool,method}`: calls whose backend died mid-answer and
    /// that were not safe to repeat (answered with -32013).
    pub inflight_lost: IntCounterVec,
    /// `mcpgw_store_duration_seconds{op}`: session store operations (get, create, rebind, ...).
    pub store_duration: HistogramVec,
    /// `mcpgw_store_errors_total{op}`: session store operations that failed (the request was
    /// answered with -32006 where one was waiting).
    pub store_errors: IntCounterVec,
    /// `mcpgw_store_unavailable_total`: outages of the session store as this replica saw them
    /// (one per outage, however many requests it met).
    pub store_unavailable: IntCounterVec,
    /// `mcpgw_store_fallbacks_total{op}`: operations done without the store during an outage:
    /// `get` (a session served from this replica's copy), `touch` and `update_settings`
    /// (queued, written when it is back), `dropped` (over the queue's bounds).
    pub store_fallbacks: IntCounterVec,
    /// `mcpgw_streams_resumed_total`: client GETs with `Last-Event-ID` that were served.
    pub streams_resumed: IntCounterVec,
    /// `mcpgw_events_replayed_total`: events written again to a client that resumed.
    pub events_replayed: IntCounterVec,
    /// `mcpgw_held_stream_takeovers_total`: held streams this replica took over after
    /// nobody held them (their holder died, or their stream ended), by `resumed`: whether the
    /// backend was asked for what it sent since (its own event id).
    pub held_stream_takeovers: IntCounterVec,
    /// `mcpgw_resumes_refused_total{reason}`: resumes answered -32030 (`unknown`, `evicted`).
    pub resumes_refused: IntCounterVec,
    /// `mcpgw_resume_buffered_bytes`: bytes of stream events kept in this process for replay.
    pub resume_buffered_bytes: IntGaugeVec,
    /// `mcpgw_resume_streams`: streams kept in this process for replay (live or in their
    /// window).
    pub resume_streams: IntGaugeVec,
    /// `mcpgw_resume_evictions_total`: buffers of unread streams dropped to keep the process
    /// within `sessions.resume.max-buffered-bytes`.
    pub resume_evictions: IntCounterVec,
    /// `mcpgw_requests_by_eras_total{client_era,backend_era}`: finished requests by the
    /// client's era (legacy, stateless) and the era of the backend that answered (legacy,
    /// modern, dual, unknown; `none` when the gateway answered itself).
    pub requests_by_eras: IntCounterVec,
    /// `mcpgw_bridge_rounds_total{pool}`: `input_required` rounds the bridge fulfilled for
    /// legacy clients (server→client requests sent, call retried).
    pub bridge_rounds: IntCounterVec,
    /// `mcpgw_bridge_errors_total{pool,kind}`: bridged calls answered with a bridge error
    /// (missing-client-capability, bridge-rounds-exceeded, not-bridged, input-not-given,
    /// untranslatable).
    pub bridge_errors: IntCounterVec,
    /// `mcpgw_pooled_sessions{pool}`: backend sessions the gateway holds open on legacy
    /// backends for 2026-07-28 clients (the reverse bridge).
    pub pooled_sessions: IntGaugeVec,
    /// `mcpgw_pooled_session_events_total{pool,event}`: pooled backend sessions `opened`,
    /// `reused`, `expired` (idle, DELETE sent), `evicted` (room for another), `dropped` (the
    /// backend forgot it or died).
    pub pooled_session_events: IntCounterVec,
    /// `mcpgw_mrtr_parked{pool}`: calls of legacy backends parked while a 2026-07-28 client
    /// answers an `input_required`.
    pub mrtr_parked: IntGaugeVec,
    /// `mcpgw_mrtr_events_total{pool,event}`: `parked` (an `input_required` round answered),
    /// `resumed` (its retry taken), `expired` (nobody retried: answered upstream), `refused`
    /// (the client lacked the capability: -32021), `bad-state` (a retry refused: -32602),
    /// `forwarded` / `forward-failed` (a retry sent on to the replica holding its call).
    pub mrtr_events: IntCounterVec,
    /// Every family name registered, for checking dashboards and alerts against.
    pub names: Vec<String>,
    /// The era families' children, resolved once.
    eras: Arc<EraMetrics>,
}

impl Metrics {
    /// Creates the families and registers them.
    pub fn new(registry: &Registry) -> Metrics {
        let names = std::cell::RefCell::new(vec![
            "mcpgw_request_duration_seconds".to_owned(),
            "mcpgw_upstream_duration_seconds".to_owned(),
        ]);
        let counter = |name: &str, help: &str, labels: &[&str]| {
            names.borrow_mut().push(name.to_owned());
            let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
            registry
                .register(Box::new(c.clone()))
                .expect("unique metric");
            c
        };
        let gauge = |name: &str, help: &str, labels: &[&str]| {
            names.borrow_mut().push(name.to_owned());
            let g = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric");
            registry
                .register(Box::new(g.clone()))
                .expect("unique metric");
            g
        };
        let request_duration = HistogramVec::new(
            HistogramOpts::new(
                "mcpgw_request_duration_seconds",
                "Time from request head to the last response byte",
            )
            .buckets(exponential_buckets(0.0005, 2.0, 16).expect("valid buckets")),
            &["route", "method"],
        )
        .expect("valid metric");
        registry
            .register(Box::new(request_duration.clone()))
            .expect("unique metric");
        let upstream_duration = HistogramVec::new(
            HistogramOpts::new(
                "mcpgw_upstream_duration_seconds",
                "From sending a request upstream to its response head",
            )
            .buckets(exponential_buckets(0.0005, 2.0, 16).expect("valid buckets")),
            &["pool"],
        )
        .expect("valid metric");
        registry
            .register(Box::new(upstream_duration.clone()))
            .expect("unique metric");
        let mut metrics = Metrics {
            names: Vec::new(),
            eras: Arc::new(EraMetrics {
                by_era: Resolved::new(2),
                by_eras: Resolved::new(2 * BACKEND_ERAS.len()),
            }),
            upstream_duration,
            tool_calls: counter(
                "mcpgw_tool_calls_total",
                "tools/call requests by route, tool (configured metric-tools only) and outcome",
                &["route", "tool", "outcome"],
            ),
            requests: counter(
                "mcpgw_requests_total",
                "Finished requests by route, MCP method and outcome",
                &["route", "method", "outcome"],
            ),
            rpc_errors: counter(
                "mcpgw_rpc_errors_total",
                "JSON-RPC errors answered with HTTP 200, by route, method and code",
                &["route", "method", "code"],
            ),
            request_duration,
            requests_by_era: counter(
                "mcpgw_requests_by_era_total",
                "Requests by MCP protocol era (legacy, stateless)",
                &["era"],
            ),
            upstream_connect_failures: counter(
                "mcpgw_upstream_connect_failures_total",
                "Upstream connections refused or timed out",
                &["pool", "backend"],
            ),
            backend_inflight: gauge(
                "mcpgw_backend_inflight_requests",
                "Requests in flight per backend",
                &["pool", "backend"],
            ),
            backend_up: gauge(
                "mcpgw_backend_up",
                "1 when the backend is not marked failed by a recent connect failure",
                &["pool", "backend"],
            ),
            sessions_active: gauge(
                "mcpgw_sessions_active",
                "Gateway sessions bound to each backend",
                &["pool", "backend"],
            ),
            sessions_created: counter(
                "mcpgw_sessions_created_total",
                "Sessions created by a client's initialize",
                &["pool"],
            ),
            session_reinits: counter(
                "mcpgw_session_reinits_total",
                "Sessions re-initialized on another backend, by reason",
                &["pool", "reason"],
            ),
            session_moves_started: counter(
                "mcpgw_session_moves_started_total",
                "Session moves begun by this replica, by trigger (on-demand, background)",
                &["pool", "trigger"],
            ),
            session_moves_finished: counter(
                "mcpgw_session_moves_finished_total",
                "Session moves finished, by trigger and outcome (moved, lost-race, failed)",
                &["pool", "trigger", "outcome"],
            ),
            sessions_ended: counter(
                "mcpgw_sessions_ended_total",
                "Sessions ended, by reason (expired, deleted, version-mismatch)",
                &["pool", "reason"],
            ),
            discovery_changes: counter(
                "mcpgw_discovery_changes_total",
                "Pool membership changes by discovery: added, draining, removed",
                &["pool", "change"],
            ),
            backend_draining: gauge(
                "mcpgw_backend_draining",
                "1 while a backend drains (no new sessions)",
                &["pool", "backend"],
            ),
            backends_by_era: gauge(
                "mcpgw_backends",
                "Backends per protocol era: legacy, modern, dual, unknown (probe pending)",
                &["pool", "era"],
            ),
            era_probes: counter(
                "mcpgw_era_probes_total",
                "Era probes (server/discover, then initialize) by result",
                &["pool", "result"],
            ),
            open_streams: gauge(
                "mcpgw_open_streams",
                "Server-to-client SSE streams (GET) open right now",
                &["route"],
            ),
            store_duration: {
                let h = HistogramVec::new(
                    HistogramOpts::new(
                        "mcpgw_store_duration_seconds",
                        "Session store operations, by operation",
                    )
                    .buckets(vec![
                        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                        0.25, 1.0,
                    ]),
                    &["op"],
                )
                .expect("valid metric");
                registry
                    .register(Box::new(h.clone()))
                    .expect("unique metric");
                names
                    .borrow_mut()
                    .push("mcpgw_store_duration_seconds".to_owned());
                h
            },
            store_errors: counter(
                "mcpgw_store_errors_total",
                "Session store operations that failed, by operation",
                &["op"],
            ),
            store_unavailable: counter(
                "mcpgw_store_unavailable_total",
                "Outages of the session store seen by this replica",
                &[],
            ),
            store_fallbacks: counter(
                "mcpgw_store_fallbacks_total",
                "Session store operations done without the store during an outage, by operation",
                &["op"],
            ),
            held_streams: gauge(
                "mcpgw_held_streams",
                "Sessions' standalone streams held open upstream by the gateway",
                &[],
            ),
            config_reloads: counter(
                "mcpgw_config_reloads_total",
                "Config reloads, applied or rejected",
                &["result"],
            ),
            rejections: counter(
                "mcpgw_rejections_total",
                "Requests refused by admission control, by reason",
                &["reason"],
            ),
            inflight_lost: counter(
                "mcpgw_inflight_calls_lost_total",
                "Calls lost with their backend that were not safe to repeat",
                &["pool", "method"],
            ),
            streams_resumed: counter(
                "mcpgw_streams_resumed_total",
                "Client GETs with Last-Event-ID that were served",
                &[],
            ),
            events_replayed: counter(
                "mcpgw_events_replayed_total",
                "Events written again to clients that resumed a stream",
                &[],
            ),
            held_stream_takeovers: counter(
                "mcpgw_held_stream_takeovers_total",
                "Held streams this replica took over when nobody held them, by whether the backend resumed them from its own event id",
                &["resumed"],
            ),
            resumes_refused: counter(
                "mcpgw_resumes_refused_total",
                "Resumes refused (-32030), by reason",
                &["reason"],
            ),
            resume_buffered_bytes: gauge(
                "mcpgw_resume_buffered_bytes",
                "Bytes of stream events kept in this process for replay",
                &[],
            ),
            requests_by_eras: counter(
                "mcpgw_requests_by_eras_total",
                "Finished requests by client era and the era of the backend that answered",
                &["client_era", "backend_era"],
            ),
            bridge_rounds: counter(
                "mcpgw_bridge_rounds_total",
                "input_required rounds the era bridge fulfilled for legacy clients",
                &["pool"],
            ),
            bridge_errors: counter(
                "mcpgw_bridge_errors_total",
                "Bridged calls answered with a bridge error, by kind",
                &["pool", "kind"],
            ),
            pooled_sessions: gauge(
                "mcpgw_pooled_sessions",
                "Backend sessions held open on legacy backends for 2026-07-28 clients",
                &["pool"],
            ),
            pooled_session_events: counter(
                "mcpgw_pooled_session_events_total",
                "Pooled backend sessions opened, reused, expired, evicted, dropped",
                &["pool", "event"],
            ),
            mrtr_parked: gauge(
                "mcpgw_mrtr_parked",
                "Calls of legacy backends parked for a 2026-07-28 client's input",
                &["pool"],
            ),
            mrtr_events: counter(
                "mcpgw_mrtr_events_total",
                "input_required rounds for 2026-07-28 clients on legacy backends: parked, resumed, expired, refused, bad-state, forwarded, forward-failed",
                &["pool", "event"],
            ),
            resume_streams: gauge(
                "mcpgw_resume_streams",
                "Streams kept in this process for replay (live or within their window)",
                &[],
            ),
            resume_evictions: counter(
                "mcpgw_resume_evictions_total",
                "Buffers of unread streams dropped to stay within sessions.resume.max-buffered-bytes",
                &[],
            ),
        };
        metrics.names = names.into_inner();
        metrics
    }
}
