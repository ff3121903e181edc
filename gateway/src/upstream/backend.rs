//! One backend of a pool and its live state: address and peer host, in-flight count,
//! passive failure marks and their cooldown, draining, the era it was found to serve, and the
//! guard that counts a request in flight for as long as it lives.

use super::clock::now_ms;
use super::era_schedule;
use crate::config::EraSetting;
use mcp_wire::BackendEra;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One backend of a pool and its live state.
#[derive(Debug)]
pub struct Backend {
    /// Where it listens.
    pub addr: SocketAddr,
    /// `ip:port`, for labels, logs and errors.
    pub label: String,
    /// Host header sent to it (built once, not per request; the config checks it).
    pub host_header: http::HeaderValue,
    pub(super) inflight: AtomicUsize,
    /// Milliseconds since [`epoch`](super::clock::epoch) until which the backend is skipped; 0 when healthy.
    pub(super) failed_until_ms: AtomicU64,
    /// Active health checks say it is down.
    pub(super) down: AtomicBool,
    /// Milliseconds since [`epoch`](super::clock::epoch) at which draining started; 0 when not draining.
    pub(super) draining_since_ms: AtomicU64,
    /// Draining because discovery no longer lists it (not an operator's drain).
    pub(super) discovery_drained: AtomicBool,
    /// Consecutive active health probe results (positive: successes, negative: failures).
    pub(super) probe_streak: std::sync::atomic::AtomicI32,
    /// A connection failed and neither a probe nor a request has succeeded since: shown down
    /// (and skipped while others are left) past the failure cooldown, where health checks run.
    pub(super) suspect: AtomicBool,
    /// The protocol era it serves ([`BackendEra`] as `era_code`), 0 while unknown: fixed by
    /// the pool's `era` setting, or learned by the era probe.
    pub(super) era: AtomicU8,
    /// When the era probe is due next (pools with `era: detect`).
    pub(super) era_probe: era_schedule::Schedule,
    /// How many times it stopped serving (marked failed, or found down by the health checks):
    /// what answers after it may be another program at the same address (a new version
    /// behind a Service's address), so the pool's signature holds it.
    pub(super) generation: AtomicU64,
    /// The last failure seen (wall-clock milliseconds, and what failed), for operators.
    last_failure: std::sync::Mutex<Option<(u64, &'static str)>>,
}

/// What a backend is doing, for admin and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendState {
    /// Takes new sessions and requests.
    Up,
    /// Active health checks fail (or a recent connection was refused).
    Down,
    /// Takes no new sessions; existing ones stay until the drain deadline.
    Draining,
}

impl BackendState {
    /// Label for JSON and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendState::Up => "up",
            BackendState::Down => "down",
            BackendState::Draining => "draining",
        }
    }
}

/// `host` as a header value; `ip:port` when there is none (or it is not one: the config
/// refuses such a `host`, so only a test could pass it).
#[expect(
    clippy::expect_used,
    reason = "a SocketAddr prints as digits, hex, dots, colons, brackets and `%`: always a header value"
)]
fn host_header(addr: SocketAddr, host: Option<&str>) -> http::HeaderValue {
    host.and_then(|h| http::HeaderValue::from_str(h).ok())
        .unwrap_or_else(|| {
            http::HeaderValue::from_str(&addr.to_string()).expect("ip:port is a header value")
        })
}

impl Backend {
    pub(super) fn new(addr: SocketAddr, host: Option<&str>, era: EraSetting) -> Backend {
        Backend {
            addr,
            label: addr.to_string(),
            host_header: host_header(addr, host),
            inflight: AtomicUsize::new(0),
            failed_until_ms: AtomicU64::new(0),
            down: AtomicBool::new(false),
            draining_since_ms: AtomicU64::new(0),
            discovery_drained: AtomicBool::new(false),
            probe_streak: std::sync::atomic::AtomicI32::new(0),
            suspect: AtomicBool::new(false),
            era: AtomicU8::new(match era {
                EraSetting::Detect => 0,
                EraSetting::Fixed(e) => era_code(Some(e)),
            }),
            era_probe: era_schedule::Schedule::due_now(),
            generation: AtomicU64::new(0),
            last_failure: std::sync::Mutex::new(None),
        }
    }

    /// The protocol era it serves, `None` while not known yet (a pool with `era: detect`
    /// before the probe has answered).
    pub fn era(&self) -> Option<BackendEra> {
        match self.era.load(Ordering::Relaxed) {
            1 => Some(BackendEra::Legacy),
            2 => Some(BackendEra::Modern),
            3 => Some(BackendEra::Dual),
            _ => None,
        }
    }

    /// Records the era a probe found (`None`: unknown again); returns the previous one.
    pub fn set_era(&self, era: Option<BackendEra>) -> Option<BackendEra> {
        let previous = self.era();
        self.era.store(era_code(era), Ordering::Relaxed);
        previous
    }

    /// Requests in flight right now.
    pub fn inflight(&self) -> usize {
        self.inflight.load(Ordering::Relaxed)
    }

    /// Its last failure: when it began (wall-clock milliseconds since the Unix epoch,
    /// comparable across replicas) and what failed: `connect-refused`, `connection-lost` or
    /// `probe-failed`. Failures while it is marked failed already continue that failure.
    pub fn last_failure(&self) -> Option<(u64, &'static str)> {
        *crate::sync::lock(&self.last_failure)
    }

    /// Notes a failure of `what` now, or, while the backend is marked failed already, its
    /// failure goes on (a probe failing every interval does not move when it went down).
    /// A failure is rare next to requests: the lock is off their path.
    pub(super) fn note_failure(&self, what: &'static str) {
        let mut last = crate::sync::lock(&self.last_failure);
        if last.is_some() && self.is_failed() {
            return;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        *last = Some((now, what));
    }

    /// Whether a recent connection failure or the health checks mark it to be skipped.
    pub fn is_failed(&self) -> bool {
        self.down.load(Ordering::Relaxed)
            || self.suspect.load(Ordering::Relaxed)
            || self.failed_until_ms.load(Ordering::Relaxed) > now_ms()
    }

    /// Whether it is draining (no new sessions).
    pub fn is_draining(&self) -> bool {
        self.draining_since_ms.load(Ordering::Relaxed) != 0
    }

    /// How long it has been draining.
    pub fn draining_for(&self) -> Option<Duration> {
        match self.draining_since_ms.load(Ordering::Relaxed) {
            0 => None,
            since => Some(Duration::from_millis(now_ms().saturating_sub(since))),
        }
    }

    /// Starts (or stops) draining.
    pub fn set_draining(&self, on: bool) {
        let value = if on { now_ms() } else { 0 };
        if !on || !self.is_draining() {
            self.draining_since_ms.store(value, Ordering::Relaxed);
        }
    }

    /// Records one active health probe; after `fall` failures in a row the backend is down,
    /// after `rise` successes in a row it is up again. Returns the new down state when it
    /// changed.
    pub fn record_probe(&self, ok: bool, fall: u32, rise: u32) -> Option<bool> {
        // One prober per backend: a plain load and store cannot race.
        let streak = match (ok, self.probe_streak.load(Ordering::Relaxed)) {
            (true, s) if s > 0 => s.saturating_add(1),
            (true, _) => 1,
            (false, s) if s < 0 => s.saturating_sub(1),
            (false, _) => -1,
        };
        self.probe_streak.store(streak, Ordering::Relaxed);
        if ok {
            self.suspect.store(false, Ordering::Relaxed);
        } else {
            self.note_failure("probe-failed");
        }
        let down = self.down.load(Ordering::Relaxed);
        if !down && !ok && streak <= -(fall as i32) {
            self.down.store(true, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Relaxed);
            return Some(true);
        }
        if down && ok && streak >= rise as i32 {
            self.down.store(false, Ordering::Relaxed);
            return Some(false);
        }
        None
    }

    /// The state shown to operators.
    pub fn state(&self) -> BackendState {
        if self.is_failed() {
            BackendState::Down
        } else if self.is_draining() {
            BackendState::Draining
        } else {
            BackendState::Up
        }
    }

    /// Whether it may take new work: not failed, not draining.
    pub(super) fn eligible(&self) -> bool {
        !self.is_failed() && !self.is_draining()
    }
}

pub(super) fn era_code(era: Option<BackendEra>) -> u8 {
    match era {
        None => 0,
        Some(BackendEra::Legacy) => 1,
        Some(BackendEra::Modern) => 2,
        Some(BackendEra::Dual) => 3,
    }
}

/// Decrements a backend's in-flight count when dropped.
#[derive(Debug)]
pub struct InflightGuard(pub(super) Arc<Backend>);

impl Drop for InflightGuard {
    fn drop(&mut self) {
        self.0.inflight.fetch_sub(1, Ordering::Relaxed);
    }
}
