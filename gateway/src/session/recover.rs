//! Moving a session off a failed backend: one move per session at a time (later requests
//! adopt its result), the backend chosen by the attempt engine, the client's `initialize`
//! replayed (`reinit.rs`), and the binding swapped under generation fencing. A move starts on
//! demand (a request) or in the background (`evacuate.rs`); both share the single flight.

use super::binding::backend_session;
use super::manager::SessionManager;
use super::reinit::{self, Failed, Reason};
use super::store::Rebound;
use super::{short, Binding, GoneReason, SessionRecord};
use crate::auth::Caller;
use crate::error::GatewayError;
use crate::telemetry;
use crate::upstream::attempt::{Pick, Step};
use crate::upstream::own::BackendSession;
use crate::upstream::{Backend, Pool};
use opentelemetry::KeyValue;
use std::sync::Arc;
use std::time::Duration;

/// How long one replica's claim to move a session holds others off (the replay of an
/// `initialize` and its settings takes well under a second).
const MOVE_CLAIM: Duration = Duration::from_secs(5);

/// What started a move (a metric label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trigger {
    /// A request of the session found its binding unusable.
    OnDemand,
    /// Its backend was known dead before the session's next request (`evacuate.rs`): a move
    /// another replica has claimed is left to it instead of waited for.
    Background,
}

impl Trigger {
    fn as_str(self) -> &'static str {
        match self {
            Trigger::OnDemand => "on-demand",
            Trigger::Background => "background",
        }
    }
}

/// A session's place in the single-flight map, held while a request waits for or runs its
/// move. Dropping it (the move done, or the request cancelled while it waited) removes the
/// entry when no other request holds it, so a cancelled waiter leaves nothing behind.
///
/// Fields drop in the order they are declared: the slot's own `lock` first, then `_sweep`,
/// which removes the entry when only the map's reference is left.
struct FlightSlot<'a> {
    lock: Arc<tokio::sync::Mutex<()>>,
    _sweep: Sweep<'a>,
}

impl<'a> FlightSlot<'a> {
    fn take(
        locks: &'a dashmap::DashMap<Arc<str>, Arc<tokio::sync::Mutex<()>>>,
        id: &'a Arc<str>,
    ) -> FlightSlot<'a> {
        let lock = locks.entry(id.clone()).or_default().clone();
        FlightSlot {
            lock,
            _sweep: Sweep { locks, id },
        }
    }

    fn lock(&self) -> &tokio::sync::Mutex<()> {
        &self.lock
    }
}

/// Removes a session's single-flight entry, when dropped, if no one holds it any more.
struct Sweep<'a> {
    locks: &'a dashmap::DashMap<Arc<str>, Arc<tokio::sync::Mutex<()>>>,
    id: &'a Arc<str>,
}

impl Drop for Sweep<'_> {
    fn drop(&mut self) {
        self.locks
            .remove_if(self.id, |_, l| Arc::strong_count(l) == 1);
    }
}

impl SessionManager {
    /// Moves `seen` (the record as the caller saw it) to a surviving backend, or returns the
    /// binding someone else already moved it to. Concurrent requests of one session share
    /// one move. Errors are answers for the client: 503 when no backend is reachable (the
    /// session is kept), 404 `reinit-failed` when the session cannot continue anywhere.
    pub(super) async fn recover(
        &self,
        pool: &Arc<Pool>,
        seen: &SessionRecord,
        reason: Reason,
        caller: &Caller,
    ) -> Result<SessionRecord, GatewayError> {
        self.recover_as(pool, seen, reason, Trigger::OnDemand, caller)
            .await
    }

    /// [`SessionManager::recover`] for `trigger`: the same single flight, so a request that
    /// arrives during its session's background move waits for that move and adopts it. The
    /// replay is made for `caller` (the client request's; nobody for a background move).
    pub(super) async fn recover_as(
        &self,
        pool: &Arc<Pool>,
        seen: &SessionRecord,
        reason: Reason,
        trigger: Trigger,
        caller: &Caller,
    ) -> Result<SessionRecord, GatewayError> {
        let slot = FlightSlot::take(&self.locks, &seen.id);
        let _single_flight = slot.lock().lock().await;
        self.recover_locked(pool, seen, reason, trigger, caller)
            .await
    }

    async fn recover_locked(
        &self,
        pool: &Arc<Pool>,
        seen: &SessionRecord,
        reason: Reason,
        trigger: Trigger,
        caller: &Caller,
    ) -> Result<SessionRecord, GatewayError> {
        let current = self.store.get_fresh(&seen.id).await?.live()?;
        if current.binding.generation != seen.binding.generation {
            return Ok(current); // another request of this session already moved it
        }
        if let Some(theirs) = self.claim_or_adopt(&current, trigger).await? {
            return Ok(theirs);
        }
        // A backend that forgot the session may still be alive; one that is down is tried
        // last (it may be the only one, and back by now). A drained backend is never the last
        // resort: that is what it drains from.
        let last_resort = match reason {
            Reason::SessionUnknown | Reason::Drained => None,
            _ => pool.find(current.binding.backend),
        };
        let counts = self.store.backend_counts(&pool.name).await?;
        let pick = Pick::Move {
            counts: &counts,
            last_resort,
        };
        // A drained backend is not tried at all; every other one is recorded when tried.
        let mut tried = match reason {
            Reason::Drained => vec![current.binding.backend],
            _ => Vec::new(),
        };
        let current = &current;
        self.count_move(pool, trigger, None);
        let binding = self
            .engine
            .each_backend(pool, pick, &mut tried, |backend: Arc<Backend>| {
                Box::pin(self.replay_on(pool, backend, current, reason, caller))
            })
            .await
            .inspect_err(|_| {
                self.count_move(pool, trigger, Some("failed"));
                self.note(
                    pool,
                    current,
                    None,
                    ("move-failed", reason.as_str()),
                    trigger,
                );
            })?;
        let rebound = self
            .rebind(pool, current, binding, (reason, trigger), caller)
            .await;
        if let Ok(moved) = &rebound {
            telemetry::event(
                "mcp.session.reinitialized",
                vec![
                    KeyValue::new("mcp_gateway.from", current.binding.backend.to_string()),
                    KeyValue::new("mcp_gateway.to", moved.binding.backend.to_string()),
                    KeyValue::new("mcp_gateway.reason", reason.as_str()),
                    KeyValue::new("mcp_gateway.generation", moved.binding.generation as i64),
                ],
            );
        }
        rebound
    }

    /// Claims the move of `current` in the store; when another replica holds the claim, the
    /// record to go on with instead: unchanged for a background move (the other replica moves
    /// it, a request here adopts it), or that replica's move once it is there. `None`: this
    /// replica moves it (it claimed the move, or the other replica did not finish).
    async fn claim_or_adopt(
        &self,
        current: &SessionRecord,
        trigger: Trigger,
    ) -> Result<Option<SessionRecord>, GatewayError> {
        let generation = current.binding.generation;
        if self
            .store
            .claim_move(&current.id, generation, MOVE_CLAIM)
            .await?
        {
            return Ok(None);
        }
        if trigger == Trigger::Background {
            return Ok(Some(current.clone()));
        }
        if let Some(moved) = self.await_move(&current.id, generation).await? {
            return Ok(Some(moved));
        }
        tracing::warn!(
            session = short(&current.id),
            "the replica moving this session did not finish; moving it here"
        );
        Ok(None)
    }

    /// One try of a move: `current`'s `initialize` and settings replayed on `backend` for
    /// `caller` (a span of its own), and what that try says to the attempt loop.
    async fn replay_on(
        &self,
        pool: &Arc<Pool>,
        backend: Arc<Backend>,
        current: &SessionRecord,
        reason: Reason,
        caller: &Caller,
    ) -> Step<(Binding, Arc<Backend>)> {
        let replay = reinit::replay(&self.engine, pool, &backend, current, caller);
        let replayed = telemetry::child(
            "mcp.session.reinitialize",
            reinit_attributes(current, &backend, reason),
            replay,
            |r| if r.is_ok() { "ok" } else { "failed" },
        );
        match replayed.await {
            Ok(binding) => Step::Done((binding, backend)),
            Err(Failed::Unreachable) => Step::Unreachable,
            Err(Failed::Lost) => Step::Lost,
            Err(Failed::Refused) => Step::Refused,
            Err(Failed::Credentials(e)) => Step::Stop(*e),
            Err(Failed::VersionMismatch(got)) => {
                Step::Stop(self.version_mismatch(pool, current, got).await)
            }
        }
    }

    /// The winner of a move ends the session it left on a backend that is still alive (a
    /// drained pod, a connection lost to a live one), so no backend keeps an orphan until its
    /// own expiry. A backend that said it does not know the session, or is down, is spared.
    /// The DELETE is made for `caller`, the one the move was made for.
    pub(super) fn delete_left_behind(
        &self,
        pool: &Arc<Pool>,
        left: &SessionRecord,
        reason: Reason,
        caller: &Caller,
    ) {
        if reason == Reason::SessionUnknown {
            return;
        }
        let Some(old) = pool.find(left.binding.backend).filter(|b| !b.is_failed()) else {
            return;
        };
        self.engine
            .spawn_delete_session(pool.clone(), old, backend_session(left), caller.clone());
    }

    /// Waits (bounded by the claim's lifetime) until the session is at a newer generation.
    async fn await_move(
        &self,
        id: &str,
        generation: u64,
    ) -> Result<Option<SessionRecord>, GatewayError> {
        let deadline = tokio::time::Instant::now() + MOVE_CLAIM;
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let current = self.store.get_fresh(id).await?.live()?;
            if current.binding.generation != generation {
                return Ok(Some(current));
            }
        }
        Ok(None)
    }

    async fn version_mismatch(
        &self,
        pool: &Pool,
        current: &SessionRecord,
        got: String,
    ) -> GatewayError {
        tracing::warn!(session = short(&current.id), expected = %current.protocol_version, got, "re-initialization negotiated another protocol version");
        self.publish_ended(&current.id);
        if let Err(e) = self.store.end(&current.id, GoneReason::ReinitFailed).await {
            return e.into();
        }
        self.count_ended(pool, "version-mismatch");
        let what = ("lost", "version-mismatch");
        self.note(pool, current, None, what, Trigger::OnDemand);
        GatewayError::session_not_found("reinit-failed")
            .with("expectedProtocolVersion", current.protocol_version.as_ref())
            .with("negotiatedProtocolVersion", got)
    }

    /// Swaps the binding under generation fencing. The loser of a race (another replica moved
    /// the session first) adopts the winner's binding and deletes the backend session it made.
    async fn rebind(
        &self,
        pool: &Arc<Pool>,
        current: &SessionRecord,
        (binding, backend): (Binding, Arc<Backend>),
        (reason, trigger): (Reason, Trigger),
        caller: &Caller,
    ) -> Result<SessionRecord, GatewayError> {
        let made = BackendSession {
            id: binding.backend_session.clone(),
            path: current.path.clone(),
            protocol_version: current.protocol_version.clone(),
        };
        let outcome = self
            .store
            .rebind(&current.id, current.binding.generation, binding)
            .await;
        let lost = match outcome {
            Ok(Rebound::Won(record)) => {
                self.metrics
                    .session_reinits
                    .with_label_values(&[&pool.name, reason.as_str()])
                    .inc();
                self.count_move(pool, trigger, Some("moved"));
                let what = ("reinitialized", reason.as_str());
                self.note(pool, current, Some(record.binding.backend), what, trigger);
                tracing::info!(session = short(&record.id), from = %current.binding.backend, to = %record.binding.backend, generation = record.binding.generation, reason = reason.as_str(), trigger = trigger.as_str(), "session re-initialized");
                self.delete_left_behind(pool, current, reason, caller);
                return Ok(record);
            }
            Ok(Rebound::Lost(lookup)) => {
                self.count_move(pool, trigger, Some("lost-race"));
                Ok(lookup)
            }
            Err(e) => {
                self.count_move(pool, trigger, Some("failed"));
                Err(e)
            }
        };
        self.engine
            .spawn_delete_session(pool.clone(), backend, made, caller.clone());
        lost?.live()
    }
}

impl SessionManager {
    /// Puts what happened to `rec` (`kind`, `reason`) on the timeline.
    fn note(
        &self,
        pool: &Pool,
        rec: &SessionRecord,
        to: Option<std::net::SocketAddr>,
        (kind, reason): (&'static str, &'static str),
        trigger: Trigger,
    ) {
        let event = match kind {
            "reinitialized" => "session.moved",
            "lost" => "session.lost",
            _ => "session.move-failed",
        };
        let to_label = to.map(|a| a.to_string());
        self.audit_session(event, pool, rec, |r| {
            r.moved(Some(&rec.binding.backend.to_string()), to_label.as_deref())
                .reason(reason)
                .detail(serde_json::json!({ "trigger": trigger.as_str() }))
        });
        self.timeline.record(super::timeline::Happened {
            kind,
            pool: &pool.name,
            session: &rec.id,
            from: Some(rec.binding.backend),
            to,
            reason,
            trigger: if kind == "lost" { "" } else { trigger.as_str() },
        });
    }

    /// Counts a move begun (`outcome` `None`) or finished with `outcome`.
    fn count_move(&self, pool: &Pool, trigger: Trigger, outcome: Option<&str>) {
        let metrics = &self.metrics;
        match outcome {
            None => metrics
                .session_moves_started
                .with_label_values(&[&pool.name, trigger.as_str()])
                .inc(),
            Some(outcome) => metrics
                .session_moves_finished
                .with_label_values(&[&pool.name, trigger.as_str(), outcome])
                .inc(),
        }
    }
}

/// The attributes of one re-initialization attempt's span.
fn reinit_attributes(rec: &SessionRecord, to: &Backend, reason: Reason) -> Vec<KeyValue> {
    vec![
        KeyValue::new("mcp_gateway.from", rec.binding.backend.to_string()),
        KeyValue::new("server.address", to.label.clone()),
        KeyValue::new("mcp_gateway.reason", reason.as_str()),
    ]
}

#[cfg(test)]
mod tests {
    use super::Trigger;
    use crate::auth::Caller;
    use crate::config::parse;
    use crate::session::reinit::Reason;
    use crate::session::store::Ttl;
    use crate::session::{now_ms, Binding, MemoryStore, SessionManager, SessionRecord, Settings};
    use crate::upstream::attempt::Engine;
    use crate::upstream::Pool;
    use std::future::Future;
    use std::sync::Arc;
    use std::task::Poll;
    use std::time::Duration;

    #[tokio::test]
    async fn a_request_cancelled_while_it_waits_for_its_sessions_move_leaves_no_lock_behind() {
        let yaml = "pools: { p: { backends: [127.0.0.1:1] } }\nroutes: [ { path: /mcp, pool: p, mode: stateful } ]\n";
        let pool = Arc::new(Pool::new(&parse(yaml).unwrap().pools[0]));
        let upstream = crate::metrics::scratch(crate::upstream::metrics::UpstreamMetrics::register);
        let metrics = crate::metrics::scratch(crate::session::SessionMetrics::register);
        let store = Arc::new(MemoryStore::new(Ttl {
            idle: Duration::from_secs(60),
            tombstone: Duration::from_secs(60),
        }));
        let sessions = SessionManager::new(store, Arc::new(Engine::new(upstream)), metrics);
        let seen = SessionRecord {
            id: crate::session::new_session_id(),
            pool: "p".into(),
            client: "".into(),
            principal: None,
            path: "/mcp".into(),
            init_params: "{}".into(),
            protocol_version: "2025-11-25".into(),
            binding: Binding {
                backend: "127.0.0.1:1".parse().unwrap(),
                backend_session: "b".into(),
                generation: 1,
                stale: false,
            },
            settings: Settings::default(),
            last_use_ms: now_ms(),
        };
        // another request's move holds the session's lock...
        let held = sessions.locks.entry(seen.id.clone()).or_default().clone();
        let guard = held.lock().await;
        // ...this one waits for it...
        let nobody = Caller::default();
        let mut waiting = Box::pin(sessions.recover_as(
            &pool,
            &seen,
            Reason::BackendDown,
            Trigger::OnDemand,
            &nobody,
        ));
        let first = std::future::poll_fn(|cx| Poll::Ready(waiting.as_mut().poll(cx).is_pending()));
        assert!(first.await, "the request waits for the move in progress");
        // ...the move ends (its holder gone), and the waiting request is cancelled before it runs
        drop(guard);
        drop(held);
        drop(waiting);
        assert!(
            sessions.locks.is_empty(),
            "{} lock entries left behind",
            sessions.locks.len()
        );
    }
}
