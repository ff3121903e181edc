//! The credentials service: every second, each pool's secret files read again (on a blocking
//! thread) and the client-credentials tokens that are due refreshed (`credentials.rs`,
//! `tokens.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How often secret files are read again.
pub const REFRESH_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Reads every pool's secret files again every [`REFRESH_EVERY`] (a file is a few bytes: read
/// whole, compared to the value in use).
/// It also refreshes each pool's client-credentials token when it is due (`tokens.rs`).
pub struct CredentialsService {
    pools: Arc<dyn super::LivePools>,
    tokens: pingora_prometheus::prometheus::IntCounterVec,
    /// Whether the files are being read (on a blocking thread; one reading at a time).
    reading: Arc<AtomicBool>,
}

/// Held by a reading of the files; ends it when dropped (a panic too).
struct Reading(Arc<AtomicBool>);

impl Drop for Reading {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl CredentialsService {
    /// The service for the pools in force, counting token events in `tokens`.
    pub fn new(
        pools: Arc<dyn super::LivePools>,
        tokens: pingora_prometheus::prometheus::IntCounterVec,
    ) -> CredentialsService {
        CredentialsService {
            pools,
            tokens,
            reading: Default::default(),
        }
    }

    /// One round: the secret files read again, and the tokens due refreshed. The files are
    /// read on a blocking thread, unless the last round's reading is not done: a file on a
    /// slow or hung mount (a network volume, a secrets driver) holds that thread, never a
    /// runtime thread, where it held the token refreshes spawned beside it.
    pub(super) fn round(&self) {
        let pools = self.pools.pools();
        let files: Vec<Arc<super::Pool>> = (pools.iter())
            .filter(|(_, p)| p.credentials.reads_files())
            .map(|(_, p)| p.clone())
            .collect();
        if !files.is_empty() && !self.reading.swap(true, Ordering::AcqRel) {
            let reading = Reading(self.reading.clone());
            tokio::task::spawn_blocking(move || {
                for pool in files {
                    pool.credentials.refresh_logged(&pool.name);
                }
                drop(reading);
            });
        }
        for (_, pool) in pools {
            if pool.credentials.token().is_some_and(|t| t.refresh_due()) {
                let events = self.tokens.clone();
                tokio::spawn(async move {
                    if let Some(token) = pool.credentials.token() {
                        token.refresh(&events).await;
                    }
                });
            }
        }
    }
}

#[async_trait::async_trait]
impl pingora::services::background::BackgroundService for CredentialsService {
    async fn start(&self, mut shutdown: pingora::server::ShutdownWatch) {
        loop {
            self.round();
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = tokio::time::sleep(REFRESH_EVERY) => {}
            }
        }
    }
}
