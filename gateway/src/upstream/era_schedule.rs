//! When a backend's era probe is due: claimed by one prober at a time, backed off after an
//! inconclusive probe, asked for again at once (the backend is back) or soon (a suspect
//! answer, at most once per `MIN_GAP_MS`).

use super::clock::now_ms;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The first wait after an inconclusive probe; doubled each time, up to [`MAX_BACKOFF_MS`].
const FIRST_BACKOFF_MS: u64 = 500;
/// The longest wait between inconclusive probes.
const MAX_BACKOFF_MS: u64 = 30_000;
/// The shortest time between two probes a backend's answers asked for (a flood of suspicious
/// answers makes one probe, not one per answer).
const MIN_GAP_MS: u64 = 2_000;
/// No probe due (and none running).
const IDLE: u64 = u64::MAX;
/// A probe is running.
const RUNNING: u64 = u64::MAX - 1;

/// When a backend's era probe is due, in milliseconds of the upstream clock.
#[derive(Debug)]
pub(super) struct Schedule {
    due_ms: AtomicU64,
    backoff_ms: AtomicU64,
    last_ms: AtomicU64,
    /// The backend went down since its era was learned: it may come back as another image,
    /// so it takes new work only when no other backend can, until a probe says again.
    pub(super) stale: AtomicBool,
    /// Asked for at once while a probe was running (it may have started before the backend
    /// came back): another probe follows it.
    again_after: AtomicBool,
}

impl Schedule {
    /// A new member: probed at once (in pools that detect).
    pub(super) fn due_now() -> Schedule {
        Schedule {
            due_ms: AtomicU64::new(0),
            backoff_ms: AtomicU64::new(FIRST_BACKOFF_MS),
            last_ms: AtomicU64::new(0),
            stale: AtomicBool::new(false),
            again_after: AtomicBool::new(false),
        }
    }

    /// Claims the probe when it is due: one prober per backend at a time.
    pub(super) fn claim(&self, now: u64) -> bool {
        let due = self.due_ms.load(Ordering::Relaxed);
        due <= now
            && self
                .due_ms
                .compare_exchange(due, RUNNING, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    }

    pub(super) fn finish(&self, conclusive: bool, now: u64) {
        self.last_ms.store(now, Ordering::Relaxed);
        // asked for while this probe ran: what answered may have been what was there before
        let again = self.again_after.swap(false, Ordering::AcqRel);
        if conclusive {
            self.backoff_ms.store(FIRST_BACKOFF_MS, Ordering::Relaxed);
            if !again {
                self.stale.store(false, Ordering::Relaxed);
            }
        }
        let next = if again {
            now
        } else if conclusive {
            IDLE
        } else {
            let wait = self.backoff_ms.load(Ordering::Relaxed);
            self.backoff_ms
                .store((wait * 2).min(MAX_BACKOFF_MS), Ordering::Relaxed);
            now + wait
        };
        self.due_ms.store(next, Ordering::Release);
        // [`Schedule::now`] may have seen this probe running just before it ended, and set its
        // flag after the swap above: the probe it asked for is not lost
        if self.again_after.swap(false, Ordering::AcqRel) {
            let _ = self
                .due_ms
                .compare_exchange(next, now, Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    /// Asks for a probe at once (the backend is back: what answers may be another image); one
    /// running now is followed by another.
    pub(super) fn now(&self) {
        let now = now_ms();
        loop {
            let due = self.due_ms.load(Ordering::Acquire);
            if due == RUNNING {
                self.again_after.store(true, Ordering::Release);
                // still running: its `finish` sees the flag; ended meanwhile: ask again below
                if self.due_ms.load(Ordering::Acquire) == RUNNING {
                    return;
                }
                continue;
            }
            if due <= now
                || self
                    .due_ms
                    .compare_exchange(due, now, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                return;
            }
        }
    }

    /// Asks for a probe soon: at once, but not sooner than [`MIN_GAP_MS`] after the last one.
    pub(super) fn again(&self) {
        let at = (self.last_ms.load(Ordering::Relaxed) + MIN_GAP_MS).max(now_ms());
        let _ = self
            .due_ms
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |due| {
                (due != RUNNING && due > at).then_some(at)
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_is_claimed_once_and_an_inconclusive_one_backs_off() {
        let s = Schedule::due_now();
        let now = now_ms();
        assert!(s.claim(now));
        assert!(!s.claim(now), "one prober at a time");
        s.finish(false, now);
        assert!(!s.claim(now));
        assert!(s.claim(now + FIRST_BACKOFF_MS));
        s.finish(false, now + FIRST_BACKOFF_MS);
        assert!(!s.claim(now + 2 * FIRST_BACKOFF_MS), "the wait doubles");
        assert!(s.claim(now + 3 * FIRST_BACKOFF_MS));
        s.finish(true, now);
        assert!(!s.claim(u64::MAX - 2), "a conclusive probe is kept");
    }

    #[test]
    fn a_suspect_answer_asks_for_one_probe_not_one_per_answer() {
        let s = Schedule::due_now();
        let now = now_ms();
        assert!(s.claim(now));
        s.again();
        assert_eq!(
            s.due_ms.load(Ordering::Relaxed),
            RUNNING,
            "not while running"
        );
        s.finish(true, now);
        s.again();
        s.again();
        let due = s.due_ms.load(Ordering::Relaxed);
        assert_eq!(due, now + MIN_GAP_MS);
    }

    #[test]
    fn a_backend_back_up_is_probed_at_once_even_right_after_a_probe() {
        let s = Schedule::due_now();
        let now = now_ms();
        assert!(s.claim(now));
        s.finish(false, now);
        s.now();
        assert!(s.claim(now_ms()), "no backoff, no gap");
        s.now();
        s.finish(false, now_ms());
        assert!(
            s.claim(now_ms()),
            "the running probe is followed by another"
        );
    }

    #[test]
    fn a_backend_back_while_its_probe_ends_is_probed_again() {
        // `now` saw the probe running and set its flag after `finish` had looked: the probe
        // it asked for must not be lost behind a conclusive (idle) finish
        let s = Schedule::due_now();
        let now = now_ms();
        assert!(s.claim(now));
        s.again_after.store(true, Ordering::Release);
        s.finish(true, now);
        assert!(s.claim(now_ms()), "probed again");
        // and a `now` after the probe ended moves an idle schedule to now
        s.finish(true, now);
        s.now();
        assert!(s.claim(now_ms()));
    }
}
