//! Balancing algorithms over the eligible backends of a pool.

use super::Pool;
use crate::config::Balance;
use std::sync::atomic::Ordering;

/// Picks one backend for which `eligible` holds, by the pool's algorithm.
pub(super) fn pick(pool: &Pool, eligible: &dyn Fn(usize) -> bool) -> Option<usize> {
    let n = pool.backends.len();
    match pool.balance {
        Balance::RoundRobin => {
            let start = pool.cursor.fetch_add(1, Ordering::Relaxed);
            (0..n).map(|k| (start + k) % n).find(|&i| eligible(i))
        }
        Balance::LeastRequests => least(pool, (0..n).filter(|&i| eligible(i))),
        Balance::PowerOfTwoChoices => {
            let candidates: Vec<usize> = (0..n).filter(|&i| eligible(i)).collect();
            match candidates.len() {
                0 => None,
                1 => Some(candidates[0]),
                len => {
                    let a = rand::random_range(0..len);
                    let b = (a + 1 + rand::random_range(0..len - 1)) % len;
                    least(pool, [candidates[a], candidates[b]].into_iter())
                }
            }
        }
    }
}

/// The candidate with the fewest requests in flight; ties go round-robin so an idle pool
/// still spreads load.
fn least(pool: &Pool, candidates: impl Iterator<Item = usize>) -> Option<usize> {
    let offset = pool.cursor.fetch_add(1, Ordering::Relaxed);
    let n = pool.backends.len().max(1);
    candidates.min_by_key(|&i| (pool.backends[i].inflight(), (i + n - offset % n) % n))
}
