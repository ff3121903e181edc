//! Calls parked while a 2026-07-28 client answers an `input_required` (the reverse bridge's
//! multi round-trip requests): the backend's call stays open (its pooled session in use, its
//! SSE answer unread) under a random id until the client's retry takes it, or its expiry
//! passes, when the backend's request is answered for the client (an elicitation cancelled,
//! others refused, `mcp::bridge::mrtr::declined`), the call cancelled upstream and the
//! expiry counted.

use super::super::answer::Messages;
use super::InUse;
use crate::mcp::bridge::mrtr::{self, Sealer};
use crate::metrics::Metrics;
use crate::sync::lock;
use crate::upstream::attempt::Engine;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How often expired parked calls are looked for.
const SWEEP_EVERY: Duration = Duration::from_millis(500);

/// A call waiting for the client's input.
pub(super) struct Parked {
    /// Its pooled session (in use while parked).
    pub(super) used: InUse,
    /// The rest of the backend's answer.
    pub(super) messages: Messages,
    /// The gateway's id of the call in the backend session.
    pub(super) up_id: String,
    /// The id of the backend's request the client answers.
    pub(super) server_id: Value,
    /// Its method.
    pub(super) method: String,
    /// HTTP status of the backend's answer.
    pub(super) status: u16,
    /// When it is answered for the client.
    pub(super) expires: Instant,
    /// Its registration for the session's GET stream requests.
    pub(super) strays: Option<super::stray::Strays>,
}

/// The parked calls of this process and the key sealing their states.
pub struct Parking {
    inner: Arc<Inner>,
    /// Sends retries on to the replica holding their call (`forward.rs`).
    pub(super) forwarder: crate::upstream::client::UpstreamClient,
}

struct Inner {
    engine: Arc<Engine>,
    calls: Mutex<HashMap<String, Parked>>,
    sealer: OnceLock<Sealer>,
    sweeping: OnceLock<()>,
}

impl Parking {
    /// No parked call yet.
    pub fn new(engine: Arc<Engine>) -> Parking {
        Parking {
            inner: Arc::new(Inner {
                engine,
                calls: Mutex::new(HashMap::new()),
                sealer: OnceLock::new(),
                sweeping: OnceLock::new(),
            }),
            forwarder: Default::default(),
        }
    }

    /// The sealer: `key` (from the config) the first time, else a random one, for the life of
    /// the process.
    pub(crate) fn sealer(&self, key: Option<[u8; 32]>) -> &Sealer {
        self.inner
            .sealer
            .get_or_init(|| key.map_or_else(Sealer::random, Sealer::new))
    }

    fn metrics(&self) -> &Metrics {
        self.inner.engine.metrics()
    }

    fn count(&self, pool: &str, event: &str) {
        self.metrics()
            .mrtr_events
            .with_label_values(&[pool, event])
            .inc();
    }

    /// Counts a round refused because the client lacked the capability (-32021).
    pub(crate) fn refused(&self, pool: &str) {
        self.count(pool, "refused");
    }

    /// Counts a retry whose `requestState` was refused (-32602).
    pub(crate) fn refused_state(&self, pool: &str) {
        self.count(pool, "bad-state");
    }

    /// Parks `call`; its id.
    pub(super) fn park(&self, call: Parked) -> String {
        self.start_sweep();
        let id = uuid::Uuid::new_v4().simple().to_string();
        let pool = call.used.0.pool.name.clone();
        lock(&self.inner.calls).insert(id.clone(), call);
        self.count(&pool, "parked");
        self.metrics().mrtr_parked.with_label_values(&[&pool]).inc();
        id
    }

    /// Takes the parked call `id` for its retry, when it is still parked.
    pub(super) fn take(&self, id: &str) -> Option<Parked> {
        let call = lock(&self.inner.calls).remove(id)?;
        let pool = &call.used.0.pool.name;
        self.count(pool, "resumed");
        self.metrics().mrtr_parked.with_label_values(&[pool]).dec();
        Some(call)
    }

    /// Answers the expired parked calls upstream for their clients.
    pub(crate) fn sweep(&self) {
        let now = Instant::now();
        let expired: Vec<Parked> = {
            let mut calls = lock(&self.inner.calls);
            let ids: Vec<String> = calls
                .iter()
                .filter(|(_, c)| c.expires <= now)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| calls.remove(id)).collect()
        };
        for call in expired {
            let entry = call.used.0.clone();
            self.count(&entry.pool.name, "expired");
            self.metrics()
                .mrtr_parked
                .with_label_values(&[&entry.pool.name])
                .dec();
            tracing::debug!(method = %call.method, backend = %entry.backend.label, "a parked call expired; answered upstream");
            let engine = self.inner.engine.clone();
            let declined = mrtr::declined(&call.server_id, &call.method);
            let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": call.up_id, "reason": "the client did not retry in time"}});
            // in order: the answer first (the tool goes on with it), then the cancellation
            tokio::spawn(async move {
                for message in [declined, cancel.to_string()] {
                    let sent = engine.post_in_session(
                        &entry.pool,
                        &entry.backend,
                        &entry.session,
                        message,
                    );
                    if tokio::time::timeout(Duration::from_secs(2), sent)
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
            });
            // dropping the call closes its answer stream and frees its pooled session
            drop(call);
        }
    }

    fn start_sweep(&self) {
        self.inner.sweeping.get_or_init(|| {
            let me = Parking {
                inner: self.inner.clone(),
                forwarder: Default::default(),
            };
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(SWEEP_EVERY).await;
                    me.sweep();
                }
            });
        });
    }
}
