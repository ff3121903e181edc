//! Balancing algorithms over the eligible members of a pool.

use super::{Backend, Pool};
use crate::config::Balance;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Picks the index (in `members`) of one backend for which `eligible` holds, by the pool's
/// algorithm.
pub(super) fn pick(
    pool: &Pool,
    members: &[Arc<Backend>],
    eligible: &dyn Fn(&Backend) -> bool,
) -> Option<usize> {
    let n = members.len();
    match pool.balance {
        Balance::RoundRobin => {
            let start = pool.cursor.fetch_add(1, Ordering::Relaxed);
            (0..n)
                .map(|k| (start + k) % n)
                .find(|&i| eligible(&members[i]))
        }
        Balance::LeastRequests => least(pool, members, (0..n).filter(|&i| eligible(&members[i]))),
        Balance::PowerOfTwoChoices => {
            let candidates: Vec<usize> = (0..n).filter(|&i| eligible(&members[i])).collect();
            match candidates.len() {
                0 => None,
                1 => Some(candidates[0]),
                len => {
                    let a = rand::random_range(0..len);
                    let b = (a + 1 + rand::random_range(0..len - 1)) % len;
                    least(pool, members, [candidates[a], candidates[b]].into_iter())
                }
            }
        }
    }
}

/// The candidate with the fewest requests in flight; ties go round-robin so an idle pool
/// still spreads load.
fn least(
    pool: &Pool,
    members: &[Arc<Backend>],
    candidates: impl Iterator<Item = usize>,
) -> Option<usize> {
    let offset = pool.cursor.fetch_add(1, Ordering::Relaxed);
    let n = members.len().max(1);
    candidates.min_by_key(|&i| (members[i].inflight(), (i + n - offset % n) % n))
}
