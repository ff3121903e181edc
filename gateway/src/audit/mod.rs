//! The audit trail (`audit:`, off unless set): one JSON record for each event a security
//! review asks about: every `tools/call`, `prompts/get` and `resources/read` (written once,
//! when the request ends), every authorization decision with the rule behind it, a session's
//! life (opened, moved with from and to backends and why, lost, closed) and admin actions.
//! docs/governance.md "Audit trail" lists the fields and events.
//!
//! Recording never waits: [`Audit::record`] hands the record to a bounded queue; a writer
//! thread of its own (`sink.rs`) writes the file (rotated by size), standard output and the
//! OTLP collector (`otlp.rs`). A full queue drops the record, counted in
//! `mcpgw_audit_dropped_total`. With the section absent, recording is one relaxed load and a
//! branch; callers that build a record from a request check [`Audit::on`] first.
//!
//! Records hold no credential: the caller comes from an authenticated principal
//! ([`record::Caller`]: ids and subjects, no claim values beyond `client_id`), sessions are
//! hashed, bodies are off by default and redacted when on ([`Audit::redacted`]).

mod metrics;
mod otlp;
mod record;
mod sink;

pub use metrics::AuditMetrics;
pub use record::{Caller, Record};

use crate::config::AuditConfig;
use arc_swap::ArcSwapOption;
use serde_json::Value;
use sink::Sink;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The methods an audit record is written for when their request ends (and that
/// `audit.required` refuses while the sink cannot write).
pub const AUDITED_METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// What a request noted for its audit record on the way (`RequestCtx::audit`), read when it
/// ends.
#[derive(Debug, Default, Clone)]
pub struct Noted {
    /// The authorization decision: `allow` or `deny`.
    pub decision: Option<&'static str>,
    /// The rule that decided, or why none did.
    pub rule: Option<String>,
    /// A virtual call's member.
    pub member: Option<String>,
    /// The member's pool.
    pub pool: Option<String>,
    /// The backend that served the member's request.
    pub backend: Option<String>,
}

/// The audit trail: cheap to clone, one per process (the gateway, the session manager and the
/// admin listener hold the same), reconfigured in place on reload.
#[derive(Clone)]
pub struct Audit(Arc<Inner>);

struct Inner {
    /// Whether a sink is configured: the one thing a disabled trail reads.
    on: AtomicBool,
    sink: ArcSwapOption<Sink>,
    metrics: AuditMetrics,
}

impl Default for Audit {
    fn default() -> Audit {
        Audit::new(AuditMetrics::unregistered())
    }
}

impl std::fmt::Debug for Audit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Audit").field("on", &self.on()).finish()
    }
}

impl Audit {
    /// An audit trail, off until [`Audit::configure`]d, counting into `metrics`.
    pub fn new(metrics: AuditMetrics) -> Audit {
        Audit(Arc::new(Inner {
            on: AtomicBool::new(false),
            sink: ArcSwapOption::empty(),
            metrics,
        }))
    }

    /// Applies `audit:` (at start and on every reload): an unchanged section keeps its
    /// writer; a changed one starts a new writer (the old one writes what it holds, then
    /// ends); none turns the trail off.
    pub fn configure(&self, config: Option<&AuditConfig>) {
        let current = self.0.sink.load();
        if current.as_ref().map(|s| &s.config) == config {
            return;
        }
        match config {
            Some(config) => {
                let sink = Sink::start(config.clone(), self.0.metrics.clone());
                self.0.sink.store(Some(Arc::new(sink)));
                self.0.on.store(true, Ordering::Release);
            }
            None => {
                self.0.on.store(false, Ordering::Release);
                self.0.sink.store(None);
                self.0.metrics.set_healthy(true);
            }
        }
    }

    /// Whether records are written (check before building one from a request).
    #[inline]
    pub fn on(&self) -> bool {
        self.0.on.load(Ordering::Relaxed)
    }

    /// Queues `record`; never waits (a full queue drops it, counted).
    #[inline]
    pub fn record(&self, record: Record) {
        if self.on() {
            self.send(record);
        }
    }

    fn send(&self, record: Record) {
        if let Some(sink) = self.0.sink.load().as_ref() {
            sink.send(record);
        }
    }

    /// Why `method` must be refused now (`unwritable` or `queue-full`): `audit.required` is
    /// set, `method` is one of [`AUDITED_METHODS`], and the sink cannot write. `None`: go on.
    pub fn refuses(&self, method: &str) -> Option<&'static str> {
        if !self.on() || !AUDITED_METHODS.contains(&method) {
            return None;
        }
        let sink = self.0.sink.load();
        let sink = sink.as_ref().filter(|s| s.config.required)?;
        sink.cannot_write()
    }

    /// Whether the sink writes now (true when audit is off).
    pub fn healthy(&self) -> bool {
        self.0
            .sink
            .load()
            .as_ref()
            .is_none_or(|s| s.cannot_write().is_none())
    }

    /// Waits (at most `within`) until the writer has taken every queued record: at shutdown,
    /// so records of requests that ended are not lost with the process.
    pub fn drain(&self, within: std::time::Duration) {
        let until = std::time::Instant::now() + within;
        while self.0.sink.load().as_ref().is_some_and(|s| !s.drained())
            && std::time::Instant::now() < until
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Whether records carry arguments and results (`include-bodies`).
    pub fn bodies(&self) -> bool {
        self.on()
            && self
                .0
                .sink
                .load()
                .as_ref()
                .is_some_and(|s| s.config.include_bodies)
    }

    /// `message` (a JSON-RPC message) redacted by `audit.redact` and the paths always
    /// redacted (`requestState`), as capture redacts ([`crate::capture::redact`]).
    pub fn redacted(&self, mut message: Value) -> Value {
        if let Some(sink) = self.0.sink.load().as_ref() {
            for path in &sink.config.redact {
                crate::capture::redact(&mut message, path);
            }
        }
        for outer in ["params", "result"] {
            if let Some(v) = message
                .get_mut(outer)
                .and_then(|o| o.get_mut("requestState"))
            {
                *v = Value::String(crate::capture::REDACTED.into());
            }
        }
        message
    }
}

/// A background service that, at shutdown, lets the writer take what the queue holds (at
/// most 2 s, within pingora's graceful shutdown).
pub struct DrainAtShutdown(pub Audit);

#[async_trait::async_trait]
impl pingora::services::background::BackgroundService for DrainAtShutdown {
    async fn start(&self, mut shutdown: pingora::server::ShutdownWatch) {
        let _ = shutdown.changed().await;
        let audit = self.0.clone();
        let within = std::time::Duration::from_secs(2);
        let _ = tokio::task::spawn_blocking(move || audit.drain(within)).await;
    }
}

#[cfg(test)]
mod tests;
