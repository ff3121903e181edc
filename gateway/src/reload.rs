//! Config reload without dropping connections or sessions: on SIGHUP, and when the config
//! file changes. An invalid new config is refused with every problem logged, and the running
//! one is kept. Listener addresses and thread counts need a restart (logged).

use crate::config::{self, Config};
use crate::metrics::Registrar;
use crate::state::State;
use arc_swap::ArcSwap;
use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use pingora_prometheus::prometheus::IntCounterVec;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The config reload's metric family.
#[derive(Clone)]
pub struct ReloadMetrics {
    /// `mcpgw_config_reloads_total{result}`: reloads applied or rejected (invalid config).
    pub config_reloads: IntCounterVec,
}

impl ReloadMetrics {
    /// Creates the families and registers them.
    pub fn register(families: &Registrar) -> ReloadMetrics {
        ReloadMetrics {
            config_reloads: families.counter(
                "mcpgw_config_reloads_total",
                "Config reloads, applied or rejected",
                &["result"],
            ),
        }
    }
}

/// Watches the config file and SIGHUP.
pub struct ReloadService {
    path: PathBuf,
    state: Arc<ArcSwap<State>>,
    metrics: ReloadMetrics,
    /// The file's modification time when the running config was read (taken when the
    /// service is built, right after the config was loaded, not when it starts: a change in
    /// between would otherwise be taken as the baseline and never reloaded).
    loaded: Option<SystemTime>,
}

impl ReloadService {
    /// Reloads `path` into `state`.
    pub fn new(path: PathBuf, state: Arc<ArcSwap<State>>, metrics: ReloadMetrics) -> ReloadService {
        let loaded = modified(&path);
        ReloadService {
            path,
            state,
            metrics,
            loaded,
        }
    }

    fn modified(&self) -> Option<SystemTime> {
        modified(&self.path)
    }

    /// Loads the file and swaps it in if it is valid. Returns whether it was applied.
    pub fn reload(&self) -> bool {
        let outcome = match config::load(&self.path) {
            Ok(next) => {
                self.apply(next);
                "applied"
            }
            Err(errors) => {
                self.state.load().audit.record(
                    crate::audit::Record::new("admin.reload")
                        .reason(&format!("config file {}", self.path.display()))
                        .outcome("rejected")
                        .detail(serde_json::json!({ "problems": errors.len() })),
                );
                for e in &errors {
                    tracing::error!(problem = %e, "config reload refused; keeping the running config");
                }
                "rejected"
            }
        };
        self.metrics
            .config_reloads
            .with_label_values(&[outcome])
            .inc();
        outcome == "applied"
    }

    fn apply(&self, next: Config) {
        let old = self.state.load_full();
        if next.listen != old.config.listen
            || next.admin != old.config.admin
            || next.threads != old.config.threads
        {
            tracing::warn!("listen, admin and threads changes take effect after a restart");
        }
        old.audit.configure(next.audit.as_ref());
        let audit = old.audit.clone();
        self.state.store(Arc::new(State::reload(next, &old)));
        tracing::info!(path = %self.path.display(), "config reloaded");
        audit.record(
            crate::audit::Record::new("admin.reload")
                .reason(&format!("config file {}", self.path.display()))
                .outcome("applied"),
        );
    }
}

/// `path`'s modification time (through symlinks, as a ConfigMap mounts it).
fn modified(path: &std::path::Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

#[async_trait]
impl BackgroundService for ReloadService {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let mut hangup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(error = %e, "no SIGHUP handler; reloading on file change only");
                None
            }
        };
        let mut seen = self.loaded;
        loop {
            let sighup = async {
                match hangup.as_mut() {
                    Some(h) => h.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = sighup => {
                    self.reload();
                    seen = self.modified();
                }
                _ = tokio::time::sleep(Duration::from_secs(1)) => {
                    let now = self.modified();
                    if now != seen {
                        seen = now;
                        self.reload();
                    }
                }
            }
        }
    }
}
