//! Moving the sessions of a backend known dead before their next call, as a background
//! service: upstream announces a death (a health probe marked the backend down, or it refused a
//! connection: `upstream/deaths.rs`), the store's per-backend index lists its sessions, and
//! each is moved by the same single-flighted, fenced move a request would start
//! (`recover.rs`), so a call that arrives meanwhile waits only for its own session's move.
//!
//! Bounded: at most `sessions.background-moves-per-second` moves begin per second on this
//! replica (over every dead backend at once), at most [`CONCURRENT`] run at a time, and an
//! evacuation stops when the backend answers again. With a shared store every replica hears of
//! the death from its own checks; the move claim in the store gives each session to one of
//! them, and the others skip it rather than wait.

use super::expiry::SweepSource;
use super::recover::Trigger;
use super::reinit::Reason;
use super::{short, Lookup, SessionManager};
use crate::auth::Caller;
use crate::upstream::deaths::Death;
use crate::upstream::Pool;
use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// Background moves in flight at once on this replica.
pub const CONCURRENT: usize = 16;

/// What one background move came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evacuated {
    /// This replica moved the session.
    Moved,
    /// Nothing to do: it ended, it had moved already, or another replica is moving it.
    Skipped,
    /// The move failed (no survivor took it); its next request tries again.
    Failed,
}

impl SessionManager {
    /// Moves session `id` off `dead` (as the store has it now) in the background.
    pub async fn evacuate_one(
        &self,
        pool: &Arc<Pool>,
        id: &str,
        dead: SocketAddr,
        reason: Reason,
    ) -> Evacuated {
        let seen = match self.store.get_fresh(id).await {
            Ok(Lookup::Live(rec)) if rec.binding.backend == dead => rec,
            Ok(_) => return Evacuated::Skipped,
            Err(e) => {
                crate::quiet::STORE.failed("a background session move could not read", &e);
                return Evacuated::Failed;
            }
        };
        match self
            .recover_as(pool, &seen, reason, Trigger::Background, &Caller::default())
            .await
        {
            Ok(moved) if moved.binding.generation == seen.binding.generation => Evacuated::Skipped,
            Ok(moved) => {
                // the session's held stream reopens on the new backend, as after any move
                if let Some(observer) = self.observer() {
                    observer.moved(pool, &moved).await;
                }
                Evacuated::Moved
            }
            Err(e) => {
                tracing::debug!(session = short(id), error = %e, "background session move failed");
                Evacuated::Failed
            }
        }
    }
}

/// Spaces the starts of moves: one per `1 / rate` seconds, across every evacuation.
#[derive(Debug)]
pub struct Pacer {
    next: Mutex<Instant>,
}

impl Default for Pacer {
    fn default() -> Pacer {
        Pacer {
            next: Mutex::new(Instant::now()),
        }
    }
}

impl Pacer {
    /// Waits for the next start slot at `per_second` (at least 1).
    pub async fn wait(&self, per_second: u32) {
        let gap = Duration::from_secs_f64(1.0 / f64::from(per_second.max(1)));
        let slot = {
            let mut next = crate::sync::lock(&self.next);
            let slot = (*next).max(Instant::now());
            *next = slot + gap;
            slot
        };
        tokio::time::sleep_until(slot).await;
    }
}

/// The background mover.
pub struct EvacuationService {
    sessions: Arc<SessionManager>,
    source: Arc<dyn SweepSource>,
    pacer: Arc<Pacer>,
    slots: Arc<Semaphore>,
    /// Backends being evacuated now (a second announcement of one is ignored).
    running: Arc<Mutex<HashSet<(String, SocketAddr)>>>,
}

impl EvacuationService {
    /// Moves the sessions of dead backends of the pools `source` has in force.
    pub fn new(sessions: Arc<SessionManager>, source: Arc<dyn SweepSource>) -> EvacuationService {
        EvacuationService {
            sessions,
            source,
            pacer: Arc::default(),
            slots: Arc::new(Semaphore::new(CONCURRENT)),
            running: Arc::default(),
        }
    }

    /// Starts the evacuation of `death`'s backend, unless one runs already.
    fn spawn(&self, death: Death) {
        if self.source.session_config().background_moves_per_second == 0 {
            return;
        }
        let key = (death.pool.clone(), death.backend);
        if !crate::sync::lock(&self.running).insert(key.clone()) {
            return;
        }
        let job = Evacuation {
            sessions: self.sessions.clone(),
            source: self.source.clone(),
            pacer: self.pacer.clone(),
            slots: self.slots.clone(),
        };
        let running = self.running.clone();
        tokio::spawn(async move {
            job.run(&death).await;
            crate::sync::lock(&running).remove(&key);
        });
    }

    /// After missed announcements: every backend of every pool that reads down now.
    fn rescan(&self) {
        for pool in self.source.pools() {
            for backend in pool.backends().iter().filter(|b| b.is_failed()) {
                self.spawn(Death {
                    pool: pool.name.clone(),
                    backend: backend.addr,
                    cause: "probe",
                });
            }
        }
    }
}

/// One dead backend's evacuation.
struct Evacuation {
    sessions: Arc<SessionManager>,
    source: Arc<dyn SweepSource>,
    pacer: Arc<Pacer>,
    slots: Arc<Semaphore>,
}

impl Evacuation {
    async fn run(&self, death: &Death) {
        let Some(pool) = self
            .source
            .pools()
            .into_iter()
            .find(|p| p.name == death.pool)
        else {
            return;
        };
        let ids = match self
            .sessions
            .store
            .sessions_on(&pool.name, death.backend)
            .await
        {
            Ok(ids) => ids,
            Err(e) => {
                crate::quiet::STORE
                    .failed("the sessions of a dead backend could not be listed", &e);
                return;
            }
        };
        if ids.is_empty() {
            return;
        }
        let reason = match death.cause {
            "connect-refused" => Reason::ConnectRefused,
            _ => Reason::BackendDown,
        };
        tracing::info!(pool = %pool.name, backend = %death.backend, sessions = ids.len(), cause = death.cause, "moving the sessions of a dead backend");
        let mut moves = tokio::task::JoinSet::new();
        for id in ids {
            let rate = self.source.session_config().background_moves_per_second;
            // stopped by a reload, or the backend answers again (a blip): leave the rest
            if rate == 0 || pool.find(death.backend).is_some_and(|b| !b.is_failed()) {
                break;
            }
            self.pacer.wait(rate).await;
            let Ok(slot) = self.slots.clone().acquire_owned().await else {
                break;
            };
            let (sessions, pool, dead) = (self.sessions.clone(), pool.clone(), death.backend);
            moves.spawn(async move {
                let done = sessions.evacuate_one(&pool, &id, dead, reason).await;
                drop(slot);
                done
            });
        }
        let (mut moved, mut failed) = (0, 0);
        while let Some(done) = moves.join_next().await {
            match done {
                Ok(Evacuated::Moved) => moved += 1,
                Ok(Evacuated::Failed) => failed += 1,
                _ => {}
            }
        }
        tracing::info!(pool = %pool.name, backend = %death.backend, moved, failed, "sessions of a dead backend moved");
    }
}

#[async_trait]
impl BackgroundService for EvacuationService {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let mut deaths = self.sessions.engine().deaths().subscribe();
        loop {
            tokio::select! {
                _ = shutdown.changed() => return,
                death = deaths.recv() => match death {
                    Ok(death) => self.spawn(death),
                    Err(RecvError::Lagged(_)) => self.rescan(),
                    Err(RecvError::Closed) => return,
                },
            }
        }
    }
}

#[cfg(test)]
#[path = "evacuate_tests.rs"]
mod tests;
