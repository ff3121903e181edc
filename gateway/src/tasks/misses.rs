//! The task keys this replica just asked the shared store for in vain, so a request naming one
//! again is not made to wait for the store a second time (issue 48, item 3).
//!
//! A replica that finds no record in the shared store waits [`super::SHARED_WRITE_WAIT`] and
//! reads again, for the poll that outruns the write of the replica that saw the handle. That
//! wait is only ever due once per task: once a key was read in vain after it, the write had
//! that long to land, and every later request for the key reads the store once, without the
//! wait. Before, each request naming an unknown id (a task never recorded because the bounds
//! were full, and polled every second; or ids made up to load the store) cost two reads and
//! the wait.
//!
//! Waiting only when a claim exists for the id ([`super::record::claim_key`]) would not do: the claim
//! is written after the record, so when the record is not written yet, neither is the claim,
//! and that is the case the wait is for.

use dashmap::DashMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// How long a miss is remembered (ms); a request that misses again renews it, so an unknown
/// id polled steadily waits once.
const REMEMBERED_MS: u64 = 10_000;
/// Most misses remembered (about 3 MB of the longest keys); past it, a new miss is not
/// remembered (its next request waits, as every request did before). Concurrent misses may
/// pass it by at most one each.
const MOST: usize = 10_000;

/// Recent misses in the shared store: key → until when it is remembered (ms since the epoch).
#[derive(Default)]
pub(super) struct Misses {
    until: DashMap<Arc<str>, u64>,
    /// When the map may next be swept to make room (ms since the epoch).
    next_sweep_ms: AtomicU64,
}

impl Misses {
    /// Whether `key` was missed less than [`REMEMBERED_MS`] ago.
    pub(super) fn recent(&self, key: &str, now_ms: u64) -> bool {
        self.until.get(key).is_some_and(|until| *until > now_ms)
    }

    /// Remembers (or renews) a miss of `key`, unless [`MOST`] are remembered.
    pub(super) fn remember(&self, key: &Arc<str>, now_ms: u64) {
        if let Some(mut until) = self.until.get_mut(key) {
            *until = now_ms + REMEMBERED_MS;
            return;
        }
        if self.until.len() >= MOST && !self.made_room(now_ms) {
            return;
        }
        self.until.insert(key.clone(), now_ms + REMEMBERED_MS);
    }

    /// Forgets a miss of `key` (its record was found).
    pub(super) fn forget(&self, key: &str) {
        self.until.remove(key);
    }

    /// Drops the misses no longer remembered.
    pub(super) fn sweep(&self, now_ms: u64) {
        self.until.retain(|_, until| *until > now_ms);
    }

    /// Sweeps, at most once per [`super::store::SWEEP_GAP_MS`]; whether there is room now.
    fn made_room(&self, now_ms: u64) -> bool {
        if super::store::sweep_due(&self.next_sweep_ms, now_ms) {
            self.sweep(now_ms);
        }
        self.until.len() < MOST
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_miss_is_remembered_for_a_while_and_renewed_and_bounded() {
        let m = Misses::default();
        let key: Arc<str> = "k".into();
        assert!(!m.recent(&key, 0));
        m.remember(&key, 0);
        assert!(m.recent(&key, REMEMBERED_MS - 1));
        m.remember(&key, REMEMBERED_MS - 1);
        assert!(m.recent(&key, 2 * REMEMBERED_MS - 2), "renewed");
        assert!(!m.recent(&key, 2 * REMEMBERED_MS));
        m.forget(&key);
        assert!(!m.recent(&key, 0));
        for i in 0..MOST + 10 {
            m.remember(&format!("k{i}").into(), 0);
        }
        assert_eq!(m.until.len(), MOST);
        // once they are past, the next miss makes room
        m.remember(&key, REMEMBERED_MS);
        assert_eq!(m.until.len(), 1);
    }
}
