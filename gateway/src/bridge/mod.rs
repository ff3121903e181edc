//! The era bridge, in one home: the gateway serving a client of one MCP era with backends of
//! the other ([eras.md](../../../docs/eras.md)).
//!
//! - `legacy_clients`: a legacy (2025-11-25 and earlier) client's session on 2026-07-28
//!   backends; the gateway keeps the session and sends each request on its own.
//! - `modern_clients`: 2026-07-28 clients on legacy (session) backends, their requests sent
//!   inside backend sessions the gateway opens and keeps.
//! - `config` and `advertise`: the `bridge` section of the config file (file structs, typed
//!   settings, validation). Leaves: `crate::config` imports them and they import only
//!   `config/problems.rs`.
//! - `errors`: the named constructors of the bridges' errors (their kinds, codes and statuses
//!   are rows of the error table, `crate::error`).
//! - `answer` (reading an upstream answer's messages) and `client` (writing to the client) are
//!   shared by both; `metrics`, both bridges' metric families.
//!
//! The pure translation between the eras is `mcp_wire::translate`; the proxy only dispatches
//! to the two entry points (`proxy/stateful/bridged.rs`, `proxy/bridged.rs`).

mod answer;
mod client;
mod errors;
pub mod legacy_clients;
pub mod metrics;
pub mod modern_clients;

pub use client::{ListFilter, Served};

use crate::upstream::attempt::Engine;
use metrics::BridgeMetrics;
use std::sync::Arc;

/// Both bridges' state in this process.
pub struct Bridge {
    engine: Arc<Engine>,
    /// Both bridges' metric families.
    metrics: BridgeMetrics,
    /// The session streams' settings (the keep-alive interval of the streams it serves).
    streams: Arc<crate::stream::Streams>,
    /// Legacy clients: the `server/discover` cache.
    discovered: legacy_clients::Discovered,
    /// Legacy clients: what calls wait for.
    live: legacy_clients::Live,
    /// Legacy clients: the `subscriptions/listen` streams feeding their GET streams.
    listens: legacy_clients::Listens,
    /// Modern clients: backend sessions kept on legacy backends.
    pooled: modern_clients::Sessions,
    /// Modern clients: their calls parked for input.
    parking: modern_clients::Parking,
}

impl Bridge {
    /// A bridge sending through `engine`, its streams kept alive as `streams` says, counted
    /// into `metrics`.
    pub fn new(
        engine: Arc<Engine>,
        streams: Arc<crate::stream::Streams>,
        metrics: BridgeMetrics,
    ) -> Bridge {
        Bridge {
            pooled: modern_clients::Sessions::new(engine.clone(), metrics.clone()),
            parking: modern_clients::Parking::new(engine.clone(), metrics.clone()),
            engine,
            metrics,
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
}
