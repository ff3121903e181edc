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
            // Two members drawn at random: when both are eligible (the usual case) that is
            // the pick, two looks whatever the pool's size. Otherwise the two are drawn
            // among the eligible ones, as before, at the cost of one pass over the pool.
            if n >= 2 {
                let a = rand::random_range(0..n);
                let b = (a + 1 + rand::random_range(0..n - 1)) % n;
                if eligible(&members[a]) && eligible(&members[b]) {
                    return least(pool, members, [a, b].into_iter());
                }
            }
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

#[cfg(test)]
mod tests {
    use crate::config::parse;
    use crate::upstream::Pool;
    use std::cell::Cell;

    #[test]
    fn power_of_two_looks_at_two_members_of_a_large_healthy_pool() {
        let n = 10_000;
        let list: Vec<String> = (0..n)
            .map(|i| format!("127.0.0.{}:{}", 1 + i / 50_000, 10_000 + i % 50_000))
            .collect();
        let yaml = format!(
            "pools: {{ p: {{ backends: [{}], balance: power-of-two-choices }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n",
            list.join(", ")
        );
        let pool = Pool::new(&parse(&yaml).unwrap().pools[0]);
        let members = pool.backends();
        let looks = Cell::new(0);
        for _ in 0..100 {
            looks.set(0);
            let all = |_: &super::Backend| {
                looks.set(looks.get() + 1);
                true
            };
            assert!(super::pick(&pool, &members, &all).is_some());
            assert_eq!(looks.get(), 2, "two looks, not a pass over the pool");
        }
        // one eligible member: found by the pass
        let only = |b: &super::Backend| b.addr == members[4321].addr;
        assert_eq!(super::pick(&pool, &members, &only), Some(4321));
    }
}
