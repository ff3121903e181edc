//! The era bridge: a legacy (2025-11-25 and earlier) client's session on 2026-07-28 backends.
//!
//! The gateway keeps the client's session as on any stateful route (its own session id, the
//! stored `initialize`, the settings, the principal; `session::SessionManager::open_bridged`),
//! answers `initialize` itself from a backend's `server/discover` (cached per backend),
//! answers `ping`, `logging/setLevel` and the client's notifications itself, serves the
//! client's GET stream (keep-alives; a modern backend has none), and sends every other request
//! as a 2026-07-28 request balanced on its own over the modern backends: nothing is pinned, so
//! a dead pod costs nothing. An `input_required` answer becomes real server→client requests on
//! the call's SSE answer; the client's responses (its POSTs) are taken here and the call is
//! retried with `inputResponses` and `requestState`, for at most [`MAX_ROUNDS`] rounds.
//!
//! The translation itself is pure and lives in `mcp_wire::translate`; this module is the
//! behaviour: `upstream` (which backend, the `server/discover` cache), `answer` (reading a
//! modern answer's messages), `call` (the rounds of one call), `live` (what a call waits for:
//! the client's responses, cancellations, the GET streams), `listen` (the `subscriptions/
//! listen` stream that feeds a GET stream the session's subscriptions), `http` (the client
//! side), `get` (the client's GET stream).

mod answer;
mod call;
mod get;
mod http;
mod listen;
mod live;
pub mod pooled;
mod upstream;

pub use get::get;
pub use http::{delete, initialize, post, Failed, Served, Target};
pub use listen::listen_body_len;

use crate::config::DualBackends;
use crate::error::GatewayError;
use crate::metrics::Metrics;
use crate::upstream::attempt::Engine;
use crate::upstream::{Backend, BackendState, Pool};
use mcp_wire::{BackendEra, Era};
use std::sync::Arc;
use std::time::Duration;

/// Most `input_required` rounds one call may take (the TypeScript SDK's legacy shim allows 8
/// too); the next one is answered -32032 `bridge-rounds-exceeded`.
pub const MAX_ROUNDS: usize = 8;
/// How long the gateway waits for the client's answer to one server→client request
/// (human-paced: an elicitation waits for a person; the TypeScript shim waits 600 s too); then
/// -32034 `input-not-given`.
pub const INPUT_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a backend's `server/discover` result is reused when it says `ttlMs: 0` or
/// nothing (the TypeScript SDK's default): the capabilities of a running pod do not change.
pub const DISCOVER_REUSE: Duration = Duration::from_secs(30);
/// The longest a backend's `server/discover` result is reused, whatever its `ttlMs` says (a
/// pod's capabilities may change with its next rollout; the cache must not hold it for days).
pub const DISCOVER_TTL_MAX: Duration = Duration::from_secs(300);

/// The bridge's state in this process: the `server/discover` cache and what calls wait for.
pub struct Bridge {
    engine: Arc<Engine>,
    /// The session streams' settings (the keep-alive interval of the GET streams it serves).
    streams: Arc<crate::stream::Streams>,
    discovered: upstream::Discovered,
    live: live::Live,
    listens: listen::Listens,
    /// Backend sessions kept on legacy backends for 2026-07-28 clients.
    pooled: pooled::Sessions,
    /// Their calls parked for a 2026-07-28 client's input.
    parking: pooled::Parking,
}

impl Bridge {
    /// A bridge sending through `engine`, its streams kept alive as `streams` says.
    pub fn new(engine: Arc<Engine>, streams: Arc<crate::stream::Streams>) -> Bridge {
        Bridge {
            pooled: pooled::Sessions::new(engine.clone()),
            parking: pooled::Parking::new(engine.clone()),
            engine,
            streams,
            discovered: Default::default(),
            live: Default::default(),
            listens: Default::default(),
        }
    }

    /// How often a quiet stream to the client carries a keep-alive comment.
    fn keep_alive(&self) -> std::time::Duration {
        self.streams.resume_config().keep_alive
    }

    /// Whether a legacy client's new session on `pool` is bridged: no backend serves it
    /// natively and one serves it bridged (ready ones decide; when none is ready, any).
    pub fn bridges(pool: &Pool, dual: DualBackends) -> bool {
        let members = pool.backends();
        let decide = |ready_only: bool| {
            let considered = || {
                members
                    .iter()
                    .filter(move |b| !ready_only || b.state() == BackendState::Up)
            };
            if considered().any(|b| serves_native(b, dual)) {
                Some(false)
            } else if considered().any(|b| serves_bridged(b, dual)) {
                Some(true)
            } else {
                None
            }
        };
        decide(true).or_else(|| decide(false)).unwrap_or(false)
    }
}

/// Counts a finished request by the client's era and the era of the backend that answered it
/// (`mcpgw_requests_by_eras_total`).
pub fn count_eras(metrics: &Metrics, client: Era, backend: Option<&Backend>) {
    let backend_era = match backend {
        None => "none",
        Some(b) => b.era().map_or("unknown", BackendEra::as_str),
    };
    metrics.count_eras(client, backend_era);
}

/// Counts a bridge error answered to a legacy client (`mcpgw_bridge_errors_total`).
pub(crate) fn count_error(metrics: &Metrics, pool: &str, e: &GatewayError) {
    use crate::error::ErrorKind::*;
    if matches!(
        e.kind,
        MissingClientCapability
            | BridgeRoundsExceeded
            | NotBridged
            | InputNotGiven
            | Untranslatable
    ) {
        metrics
            .bridge_errors
            .with_label_values(&[pool, e.kind.as_str()])
            .inc();
    }
}

/// Whether `b` takes a legacy client's session natively: a legacy backend, one of unknown era
/// (as before eras were known), or a dual one on a route that keeps dual backends native.
pub fn serves_native(b: &Backend, dual: DualBackends) -> bool {
    match b.era() {
        None | Some(BackendEra::Legacy) => true,
        Some(BackendEra::Dual) => dual == DualBackends::Native,
        Some(BackendEra::Modern) => false,
    }
}

/// Whether `b` takes a bridged session's requests: a modern backend, or a dual one on a route
/// that bridges dual backends.
pub fn serves_bridged(b: &Backend, dual: DualBackends) -> bool {
    match b.era() {
        Some(BackendEra::Modern) => true,
        Some(BackendEra::Dual) => dual == DualBackends::Bridge,
        None | Some(BackendEra::Legacy) => false,
    }
}
