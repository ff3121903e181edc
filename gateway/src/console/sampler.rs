//! The console's sampler: a background service that takes one reading a second, watched or
//! not, so a page opened during an incident has the 15 minutes before it. A reading is one
//! gather of the metrics registry and one count of sessions per backend from the store per
//! pool (the memory store counts its per-backend index; Redis answers one `HGETALL` per pool);
//! what it cost is kept and shown on the page.

use super::counters::Counters;
use super::samples::{BackendSample, Samples};
use crate::session::SessionManager;
use crate::state::State;
use arc_swap::ArcSwap;
use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use pingora_prometheus::prometheus::Registry;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a store's count may take before the reading goes on without it.
const STORE_WAIT: Duration = Duration::from_millis(500);

/// Takes the console's readings.
pub struct Sampler {
    registry: Registry,
    state: Arc<ArcSwap<State>>,
    sessions: Arc<SessionManager>,
    samples: Arc<Mutex<Samples>>,
}

impl Sampler {
    /// Reads `registry`, `state`'s pools and `sessions`' store into `samples`.
    pub fn new(
        registry: Registry,
        state: Arc<ArcSwap<State>>,
        sessions: Arc<SessionManager>,
        samples: Arc<Mutex<Samples>>,
    ) -> Sampler {
        Sampler {
            registry,
            state,
            sessions,
            samples,
        }
    }

    /// Takes one reading now.
    pub async fn sample(&self) {
        let started = Instant::now();
        let counters = Counters::read(&self.registry.gather());
        let backends = backends(&self.state.load_full(), &self.sessions).await;
        let mut samples = crate::sync::lock(&self.samples);
        samples.take(crate::session::now_ms(), counters, backends);
        samples.cost_us = started.elapsed().as_micros() as u64;
    }
}

/// Every backend of every pool: state, sessions (0 when the store does not answer in time),
/// requests in flight.
pub async fn backends(state: &State, sessions: &SessionManager) -> Vec<BackendSample> {
    let mut out = Vec::new();
    for pool in &state.pools {
        let counts = tokio::time::timeout(STORE_WAIT, sessions.backend_counts(&pool.name)).await;
        let counts = counts.ok().and_then(Result::ok).unwrap_or_default();
        let name: Arc<str> = pool.name.as_str().into();
        for b in pool.backends().iter() {
            let held = counts.iter().find(|(addr, _)| *addr == b.addr);
            out.push(BackendSample {
                pool: name.clone(),
                backend: b.label.as_str().into(),
                state: b.state().as_str(),
                sessions: held.map_or(0, |(_, n)| *n),
                inflight: b.inflight(),
                failed_ms: b.last_failure().map(|(at, _)| at),
            });
        }
    }
    out
}

#[async_trait]
impl BackgroundService for Sampler {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let mut every = tokio::time::interval(Duration::from_secs(1));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = every.tick() => self.sample().await,
            }
        }
    }
}
