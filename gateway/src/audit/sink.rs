//! The sink: a bounded queue and the thread that writes it to the file (rotated by size, N
//! kept), standard output and the OTLP collector. A request only ever `try_send`s: a full
//! queue drops the record (counted), never waits.
//!
//! Health: the thread opens the file as soon as it starts; while the file cannot be opened or
//! written (or standard output fails) the sink is unhealthy, and the thread tries again every
//! 200 ms (the record that failed is kept and written first, so a disk that stays full does
//! not read as healthy after a mere open). A full queue reads as unhealthy too.

use super::metrics::AuditMetrics;
use super::otlp::Otlp;
use super::Record;
use crate::config::AuditConfig;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

/// How often an unhealthy sink tries again.
const RETRY: Duration = Duration::from_millis(200);
/// How long the thread waits for a record when all is well (the OTLP batch's flush period).
const IDLE: Duration = Duration::from_secs(1);

/// The request side of one configured sink: its queue and what the writer says of itself.
pub(super) struct Sink {
    tx: SyncSender<Record>,
    queued: Arc<AtomicUsize>,
    healthy: Arc<AtomicBool>,
    /// The config it was started with.
    pub(super) config: AuditConfig,
    metrics: AuditMetrics,
}

impl Sink {
    /// Starts the writer thread for `config`.
    pub(super) fn start(config: AuditConfig, metrics: AuditMetrics) -> Sink {
        let (tx, rx) = sync_channel::<Record>(config.queue);
        let queued = Arc::new(AtomicUsize::new(0));
        let healthy = Arc::new(AtomicBool::new(true));
        let mut writer = Writer {
            file: config.file.clone().map(|path| Rotating {
                path,
                file: None,
                size: 0,
                max_bytes: config.max_bytes,
                keep: config.keep,
            }),
            stdout: config.stdout,
            otlp: config.otlp.clone().map(Otlp::new),
            pending: None,
            healthy: healthy.clone(),
            queued: queued.clone(),
            metrics: metrics.clone(),
        };
        // the file is opened now, so health is known before the first record
        writer.probe();
        let spawned = std::thread::Builder::new()
            .name("mcpgw-audit".into())
            .spawn(move || writer.run(rx));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "audit: cannot start the writer thread");
            healthy.store(false, Ordering::Relaxed);
            metrics.set_healthy(false);
        }
        Sink {
            tx,
            queued,
            healthy,
            config,
            metrics,
        }
    }

    /// Queues `record`; a full queue drops it (counted).
    pub(super) fn send(&self, record: Record) {
        self.queued.fetch_add(1, Ordering::Relaxed);
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = self.tx.try_send(record)
        {
            self.queued.fetch_sub(1, Ordering::Relaxed);
            self.metrics.drop_one("queue-full");
        }
    }

    /// Whether the writer has taken every queued record.
    pub(super) fn drained(&self) -> bool {
        self.queued.load(Ordering::Relaxed) == 0
    }

    /// Why the sink cannot write now: `unwritable` (the writer is unhealthy) or `queue-full`;
    /// `None` when it can.
    pub(super) fn cannot_write(&self) -> Option<&'static str> {
        if !self.healthy.load(Ordering::Relaxed) {
            return Some("unwritable");
        }
        (self.queued.load(Ordering::Relaxed) >= self.config.queue).then_some("queue-full")
    }
}

/// The writer thread's side.
struct Writer {
    file: Option<Rotating>,
    stdout: bool,
    otlp: Option<Otlp>,
    /// The line a failed write left, written first when the sink is tried again.
    pending: Option<String>,
    healthy: Arc<AtomicBool>,
    queued: Arc<AtomicUsize>,
    metrics: AuditMetrics,
}

impl Writer {
    fn run(mut self, rx: Receiver<Record>) {
        loop {
            let healthy = self.healthy.load(Ordering::Relaxed);
            match rx.recv_timeout(if healthy { IDLE } else { RETRY }) {
                Ok(record) => {
                    self.queued.fetch_sub(1, Ordering::Relaxed);
                    self.write(&record);
                }
                Err(RecvTimeoutError::Timeout) => {
                    if !healthy {
                        self.probe();
                    }
                    if let Some(otlp) = self.otlp.as_mut() {
                        otlp.flush(&self.metrics);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        if let Some(otlp) = self.otlp.as_mut() {
            otlp.flush(&self.metrics);
        }
    }

    fn set_healthy(&self, healthy: bool) {
        if self.healthy.swap(healthy, Ordering::Relaxed) != healthy {
            self.metrics.set_healthy(healthy);
            match healthy {
                true => tracing::info!("audit: the sink writes again"),
                false => tracing::error!("audit: the sink cannot write (records are lost; with audit.required calls are refused)"),
            }
        }
    }

    /// Tries the file again: opened, and the line a failed write left written.
    fn probe(&mut self) {
        let Some(file) = self.file.as_mut() else {
            return self.set_healthy(true);
        };
        let ok = match self.pending.take() {
            Some(line) => match file.write(&line) {
                Ok(()) => true,
                Err(()) => {
                    self.pending = Some(line);
                    false
                }
            },
            None => file.open().is_ok(),
        };
        self.set_healthy(ok);
    }

    fn write(&mut self, record: &Record) {
        let line = record.line();
        self.metrics
            .records
            .with_label_values(&[record.event()])
            .inc();
        let mut ok = true;
        if let Some(file) = self.file.as_mut() {
            if let Some(pending) = self.pending.take() {
                if file.write(&pending).is_err() {
                    self.metrics.drop_one("unwritable");
                }
            }
            if file.write(&line).is_err() {
                ok = false;
                if self.pending.replace(line.clone()).is_some() {
                    self.metrics.drop_one("unwritable");
                }
            }
        }
        if self.stdout {
            let mut out = std::io::stdout().lock();
            if out
                .write_all(line.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
            {
                ok = false;
                self.metrics.drop_one("unwritable");
            }
        }
        if let Some(otlp) = self.otlp.as_mut() {
            otlp.push(record, &line, &self.metrics);
        }
        self.set_healthy(ok);
    }
}

/// The audit file, rotated to FILE.1 … FILE.keep by size.
struct Rotating {
    path: PathBuf,
    file: Option<File>,
    size: u64,
    max_bytes: u64,
    keep: usize,
}

impl Rotating {
    fn open(&mut self) -> Result<(), ()> {
        if self.file.is_some() {
            return Ok(());
        }
        match OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
        {
            Ok(f) => {
                self.size = f.metadata().map(|m| m.len()).unwrap_or(0);
                self.file = Some(f);
                Ok(())
            }
            Err(e) => {
                tracing::debug!(file = %self.path.display(), error = %e, "audit: cannot open the file");
                Err(())
            }
        }
    }

    fn write(&mut self, line: &str) -> Result<(), ()> {
        let len = line.len() as u64;
        self.open()?;
        if self.size > 0 && self.size + len > self.max_bytes {
            self.file = None;
            crate::capture::rotate(&self.path, self.keep);
            self.open()?;
        }
        let Some(f) = self.file.as_mut() else {
            return Err(());
        };
        match f.write_all(line.as_bytes()) {
            Ok(()) => {
                self.size += len;
                Ok(())
            }
            Err(e) => {
                tracing::debug!(file = %self.path.display(), error = %e, "audit: write failed");
                self.file = None;
                Err(())
            }
        }
    }
}
