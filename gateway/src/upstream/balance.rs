//! Balancing algorithms over the eligible members of a pool.

use super::Backend;
use crate::config::Balance;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Picks the index (in `members`) of one backend for which `eligible` holds, by the pool's
/// algorithm.
pub(super) fn pick(
    balance: Balance,
    cursor: &AtomicUsize,
    members: &[Arc<Backend>],
    eligible: &dyn Fn(&Backend) -> bool,
) -> Option<usize> {
    let n = members.len();
    match balance {
        Balance::RoundRobin => {
            let start = cursor.fetch_add(1, Ordering::Relaxed);
            (0..n)
                .map(|k| (start + k) % n)
                .find(|&i| eligible(&members[i]))
        }
        Balance::LeastRequests => least(cursor, members, (0..n).filter(|&i| eligible(&members[i]))),
        Balance::PowerOfTwoChoices => {
            // Two members drawn at random: when both are eligible (the usual case) that is
            // the pick, two looks whatever the pool's size. Otherwise the two are drawn
            // among the eligible ones, as before, at the cost of one pass over the pool.
            if n >= 2 {
                let a = rand::random_range(0..n);
                let b = (a + 1 + rand::random_range(0..n - 1)) % n;
                if eligible(&members[a]) && eligible(&members[b]) {
                    return least(cursor, members, [a, b].into_iter());
                }
            }
            let candidates: Vec<usize> = (0..n).filter(|&i| eligible(&members[i])).collect();
            match candidates.len() {
                0 => None,
                1 => Some(candidates[0]),
                len => {
                    let a = rand::random_range(0..len);
                    let b = (a + 1 + rand::random_range(0..len - 1)) % len;
                    least(cursor, members, [candidates[a], candidates[b]].into_iter())
                }
            }
        }
    }
}

/// The candidate with the fewest requests in flight; ties go round-robin so an idle pool
/// still spreads load.
fn least(
    cursor: &AtomicUsize,
    members: &[Arc<Backend>],
    candidates: impl Iterator<Item = usize>,
) -> Option<usize> {
    let offset = cursor.fetch_add(1, Ordering::Relaxed);
    let n = members.len().max(1);
    candidates.min_by_key(|&i| (members[i].inflight(), (i + n - offset % n) % n))
}

#[cfg(test)]
#[path = "balance_tests.rs"]
mod tests;
