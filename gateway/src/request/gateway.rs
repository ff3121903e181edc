//! [`Gateway`]: what every request the gateway serves reaches through one handle (the
//! running state, the attempt engine, sessions and their streams, the bridges, tasks, the
//! merged lists' budget, the request metrics); the pingora `ProxyHttp` impl is `proxy/`'s.

use crate::admission::metrics::AdmissionMetrics;
use crate::bridge::metrics::BridgeMetrics;
use crate::request::metrics::RequestMetrics;
use crate::session::SessionManager;
use crate::state::State;
use crate::stream::Streams;
use crate::upstream::attempt::Engine;
use arc_swap::ArcSwap;
use std::sync::Arc;

/// The result of a gateway-driven handler: done, or how it failed (`crate::error::Fail`).
pub(crate) type Handled = std::result::Result<(), crate::error::Fail>;

/// The gateway's proxy logic.
pub struct Gateway {
    pub(crate) state: Arc<ArcSwap<State>>,
    /// The per-request metric families.
    pub(crate) metrics: RequestMetrics,
    /// Requests refused by admission control (`mcpgw_rejections_total`).
    pub(crate) rejections: AdmissionMetrics,
    pub(crate) engine: Arc<Engine>,
    pub(crate) sessions: Arc<SessionManager>,
    pub(crate) streams: Arc<Streams>,
    pub(crate) captures: crate::capture::Captures,
    /// The audit trail (`audit:`; the same handle the state, the sessions and the admin
    /// listener hold): `gw.audit.record(..)`.
    pub(crate) audit: crate::audit::Audit,
    /// Legacy clients' sessions on 2026-07-28 backends.
    pub(crate) bridge: crate::bridge::Bridge,
    /// Where the tasks backends created live.
    pub(crate) tasks: Arc<crate::tasks::Tasks>,
    /// The bytes virtual servers' merged lists hold, in all and per caller.
    pub(crate) list_budget: Arc<crate::federation::budget::ListBudget>,
}

impl Gateway {
    /// A gateway serving the given (swappable) state, sessions and their streams, counting
    /// requests into `metrics` and bridged ones into `bridged`.
    pub fn new(
        state: Arc<ArcSwap<State>>,
        sessions: Arc<SessionManager>,
        streams: Arc<Streams>,
        metrics: RequestMetrics,
        bridged: BridgeMetrics,
        tasks: Arc<crate::tasks::Tasks>,
    ) -> Gateway {
        let engine = sessions.engine().clone();
        let rejections = state.load().rejections.clone();
        let audit = state.load().audit.clone();
        Gateway {
            state,
            metrics,
            rejections,
            bridge: crate::bridge::Bridge::new(engine.clone(), streams.clone(), bridged),
            engine,
            sessions,
            streams,
            captures: Default::default(),
            audit,
            tasks,
            list_budget: Default::default(),
        }
    }
}
