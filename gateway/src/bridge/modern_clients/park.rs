//! Calls parked while a 2026-07-28 client answers an `input_required` (the reverse bridge's
//! multi round-trip requests): the backend's call stays open (its pooled session in use, its
//! SSE answer unread) under a random id until the client's retry takes it, or its expiry
//! passes, when the backend's request is answered for the client (an elicitation cancelled,
//! others refused, `translate::mrtr::declined`), the call cancelled upstream and the
//! expiry counted. Bounded in all and per owner (`bridge.parked`: the principal, or an
//! anonymous caller's peer address): past a bound the call is not parked but ended upstream
//! the same way (the backend's request refused, the call cancelled) and the client gets
//! -32018 `parked-calls`. Parked calls do not count toward `limits.max-inflight` (no request
//! of the client's is in flight while its call waits; their own bound holds them).

use super::owner::Owner;
use super::sessions::InUse;
use crate::bridge::answer::Messages;
use crate::bridge::metrics::BridgeMetrics;
use crate::config::ParkedBounds;
use crate::error::GatewayError;
use crate::sync::lock;
use crate::upstream::attempt::Engine;
use mcp_wire::seal::Sealer;
use mcp_wire::translate::mrtr;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a call ended upstream may take to answer by itself before it is cancelled.
const ENDS_WITHIN: Duration = Duration::from_secs(2);

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
    /// Whose share it counts in.
    pub(super) owner: Owner,
}

/// The parked calls by id, and how many each owner has.
#[derive(Default)]
struct Calls {
    by_id: HashMap<String, Parked>,
    per_owner: HashMap<Owner, usize>,
}

impl Calls {
    fn remove(&mut self, id: &str) -> Option<Parked> {
        let call = self.by_id.remove(id)?;
        if let Some(n) = self.per_owner.get_mut(&call.owner) {
            *n -= 1;
            if *n == 0 {
                self.per_owner.remove(&call.owner);
            }
        }
        Some(call)
    }
}

/// Why a call was not parked: the bound reached (`scope`, `limit`); the call is given back.
pub(super) struct Full {
    pub(super) call: Parked,
    pub(super) scope: &'static str,
    pub(super) limit: usize,
}

/// The parked calls of this process and the key sealing their states.
pub struct Parking {
    inner: Arc<Inner>,
    /// Sends retries on to the replica holding their call (`forward.rs`).
    pub(super) forwarder: crate::upstream::client::UpstreamClient,
}

struct Inner {
    engine: Arc<Engine>,
    metrics: BridgeMetrics,
    calls: Mutex<Calls>,
    sealer: OnceLock<Arc<Sealer>>,
    sweeping: OnceLock<()>,
}

impl Parking {
    /// No parked call yet.
    pub fn new(engine: Arc<Engine>, metrics: BridgeMetrics) -> Parking {
        Parking {
            inner: Arc::new(Inner {
                engine,
                metrics,
                calls: Mutex::new(Calls::default()),
                sealer: OnceLock::new(),
                sweeping: OnceLock::new(),
            }),
            forwarder: Default::default(),
        }
    }

    /// The one sealer (`crate::sealer`): of `key` (from the config) the first time, else of the
    /// process's random key, for the life of the process.
    pub(crate) fn sealer(&self, key: Option<[u8; 32]>) -> &Sealer {
        self.inner.sealer.get_or_init(|| crate::sealer::sealer(key))
    }

    fn metrics(&self) -> &BridgeMetrics {
        &self.inner.metrics
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

    /// Parks `call` within `bounds`; its id.
    pub(super) fn park(&self, call: Parked, bounds: ParkedBounds) -> Result<String, Box<Full>> {
        self.start_sweep();
        let id = uuid::Uuid::new_v4().simple().to_string();
        let pool = call.used.0.pool.name.clone();
        {
            let mut calls = lock(&self.inner.calls);
            let mine = calls.per_owner.get(&call.owner).copied().unwrap_or(0);
            let full = if mine >= bounds.max_per_principal {
                Some(("principal", bounds.max_per_principal))
            } else if calls.by_id.len() >= bounds.max {
                Some(("gateway", bounds.max))
            } else {
                None
            };
            if let Some((scope, limit)) = full {
                drop(calls);
                self.count(&pool, "over-limit");
                return Err(Box::new(Full { call, scope, limit }));
            }
            *calls.per_owner.entry(call.owner.clone()).or_default() += 1;
            calls.by_id.insert(id.clone(), call);
        }
        self.count(&pool, "parked");
        self.metrics().mrtr_parked.with_label_values(&[&pool]).inc();
        Ok(id)
    }

    /// Takes the parked call `id` for its retry, when it is still parked.
    pub(super) fn take(&self, id: &str) -> Option<Parked> {
        let call = lock(&self.inner.calls).remove(id)?;
        let pool = &call.used.0.pool.name;
        self.count(pool, "resumed");
        self.metrics().mrtr_parked.with_label_values(&[pool]).dec();
        Some(call)
    }

    /// Ends a call upstream that will not be resumed: `answer` to the backend's request first
    /// (its tool goes on with it and usually ends at once), then its answer read for up to
    /// [`ENDS_WITHIN`]; only a call still running then is cancelled (`reason`). A cancellation
    /// sent at once would race the tool's own answer, and FastMCP 1.30 ends the whole backend
    /// session, with every other call parked on it, when the two meet (issue 32's CI run).
    /// Then the call is dropped (its pooled session freed: an anonymous caller's closed).
    pub(super) fn end_upstream(&self, call: Parked, answer: String, reason: &str) {
        let engine = self.inner.engine.clone();
        let cancel = mcp_wire::messages::cancelled(&call.up_id, reason);
        tokio::spawn(async move {
            let Parked {
                used,
                mut messages,
                up_id,
                strays,
                ..
            } = call;
            let entry = used.0.clone();
            let post = |message: String| {
                let sent = engine.post_in_session(
                    &entry.pool,
                    &entry.backend,
                    &entry.session,
                    message,
                    &entry.caller,
                );
                tokio::time::timeout(Duration::from_secs(2), sent)
            };
            if post(answer).await.is_ok() {
                let ended = tokio::time::timeout(ENDS_WITHIN, messages.response_to(&up_id)).await;
                if matches!(ended, Ok(Ok(true))) {
                    messages.finish(&engine).await;
                } else {
                    let _ = post(cancel).await;
                    drop(messages);
                }
            }
            drop(strays);
            drop(used);
        });
    }

    /// Answers the expired parked calls upstream for their clients.
    pub(crate) fn sweep(&self) {
        let now = Instant::now();
        let expired: Vec<Parked> = {
            let mut calls = lock(&self.inner.calls);
            let ids: Vec<String> = calls
                .by_id
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
            // the answer first (the tool goes on with it), then the cancellation
            let refusal = GatewayError::input_not_retried_upstream();
            let (code, message) = (refusal.kind.code(), &refusal.message);
            let declined = mrtr::declined(&call.server_id, &call.method, code, message);
            self.end_upstream(call, declined, "the client did not retry in time");
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
