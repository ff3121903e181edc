//! `Streams`: the streams of every session of this process (held standalone streams and
//! resumable answers), configured from the session config, and told by the session manager
//! when a session ends or moves (`SessionObserver`). What it does with them is in the files
//! of each concern (`answer.rs`, `standalone.rs`, `remote.rs`, `shared.rs`).

use super::held::HeldStreams;
use super::link::SessionLink;
use super::metrics::StreamMetrics;
use super::resume::{Resume, ResumeConfig};
use crate::config::SessionConfig;
use crate::session::store::StreamStore;
use crate::session::{SessionObserver, SessionRecord};
use crate::upstream::Pool;
use async_trait::async_trait;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The streams of every session of this process: held standalone streams and resumable
/// answers.
pub struct Streams {
    pub(super) sessions: Arc<dyn SessionLink>,
    /// Standalone streams held for sessions (`sessions.hold-streams`).
    pub(super) held: HeldStreams,
    pub(super) hold_streams: AtomicBool,
    /// Resumable streams (`sessions.resume`).
    pub(super) resume: Arc<Resume>,
    /// This process's name as a stream-lease owner (random, per start).
    pub(super) owner: Arc<str>,
}

impl Streams {
    /// Streams of `sessions`' sessions, counted into `metrics`, written through to `mirror`
    /// when one is given (a store shared by replicas).
    pub fn new(
        sessions: Arc<dyn SessionLink>,
        metrics: StreamMetrics,
        mirror: Option<Arc<dyn StreamStore>>,
    ) -> Streams {
        Streams {
            sessions,
            held: HeldStreams::default(),
            hold_streams: AtomicBool::new(true),
            resume: Arc::new(Resume::new(metrics, mirror)),
            owner: format!("{:016x}", rand::random::<u64>()).into(),
        }
    }

    /// Applies the session config: whether streams are held, `sessions.resume`.
    pub fn configure(&self, config: &SessionConfig) {
        self.hold_streams
            .store(config.hold_streams, Ordering::Relaxed);
        self.resume.configure(&config.resume);
    }

    /// Whether standalone streams are held by the gateway (`sessions.hold-streams`).
    pub fn holds_streams(&self) -> bool {
        self.hold_streams.load(Ordering::Relaxed)
    }

    /// The resumable-stream settings in force.
    pub fn resume_config(&self) -> ResumeConfig {
        self.resume.config()
    }

    /// Whether answers and streams in sessions are relayed with gateway event ids.
    pub fn resumes(&self) -> bool {
        self.resume.config().enabled
    }

    /// Standalone streams held open upstream right now.
    pub fn held_streams(&self) -> usize {
        self.held.live()
    }

    /// Bytes of events buffered in this process and streams kept (the gauges).
    pub fn resume_buffered(&self) -> (usize, usize) {
        (self.resume.buffered_bytes(), self.resume.streams())
    }

    /// Sets the stream gauges (at scrape time, off the hot path): held streams, bytes
    /// buffered and streams kept for replay.
    pub fn publish_gauges(&self) {
        let m = &self.resume.metrics;
        m.held_streams
            .with_label_values::<&str>(&[])
            .set(self.held_streams() as i64);
        let (bytes, streams) = self.resume_buffered();
        m.resume_buffered_bytes
            .with_label_values::<&str>(&[])
            .set(bytes as i64);
        m.resume_streams
            .with_label_values::<&str>(&[])
            .set(streams as i64);
    }
}

#[async_trait]
impl SessionObserver for Streams {
    fn ended(&self, id: &str) {
        self.held.stop(id);
    }

    async fn moved(&self, pool: &Arc<Pool>, rec: &SessionRecord) {
        self.rehold_after_move(pool, rec).await;
    }

    fn configured(&self, config: &SessionConfig) {
        self.configure(config);
    }
}
