//! Both bridges' state in this process (`Bridge`): the engine they send through, their
//! metrics and streams' settings, the legacy clients' `server/discover` cache, calls and
//! listens, and the modern clients' pooled backend sessions and parked calls.

use super::legacy_clients::{Discovered, Listens, Live};
use super::metrics::BridgeMetrics;
use super::modern_clients::{Parking, Sessions};
use crate::upstream::attempt::Engine;
use std::sync::Arc;

/// Both bridges' state in this process.
pub struct Bridge {
    pub(super) engine: Arc<Engine>,
    /// Both bridges' metric families.
    pub(super) metrics: BridgeMetrics,
    /// The session streams' settings (the keep-alive interval of the streams it serves).
    pub(super) streams: Arc<crate::stream::Streams>,
    /// Legacy clients: the `server/discover` cache.
    pub(super) discovered: Discovered,
    /// Legacy clients: what calls wait for.
    pub(super) live: Live,
    /// Legacy clients: the `subscriptions/listen` streams feeding their GET streams.
    pub(super) listens: Listens,
    /// Modern clients: backend sessions kept on legacy backends.
    pub(super) pooled: Sessions,
    /// Modern clients: their calls parked for input.
    pub(super) parking: Parking,
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
            pooled: Sessions::new(engine.clone(), metrics.clone()),
            parking: Parking::new(engine.clone(), metrics.clone()),
            engine,
            metrics,
            streams,
            discovered: Default::default(),
            live: Default::default(),
            listens: Default::default(),
        }
    }

    /// How often a quiet stream to the client carries a keep-alive comment.
    pub(super) fn keep_alive(&self) -> std::time::Duration {
        self.streams.resume_config().keep_alive
    }
}
