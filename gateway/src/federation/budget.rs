//! The bytes merged lists hold at once (issue 48, item 8). A virtual server reads every
//! member's whole answer to a list request and merges them; a member answering with 16 MB made
//! each concurrent merged list cost 50–75 MB, and nothing bounded how many ran at once. Every
//! byte of a member's answer read for a merge is counted here until the merge that read it is
//! done: in all (`limits.max-merged-list-bytes`) and per caller (a quarter of it), so one
//! caller cannot take the whole budget from the others. A read past either is refused at
//! once, and the client gets 503 -32018 with `Retry-After`, never a list silently missing a
//! member.
//!
//! What is counted is the members' answers as read; their parsed form and the merged answer
//! are a small multiple of it, so the bound on memory is that multiple of the setting.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What one caller may hold of the whole: a quarter.
pub fn caller_share(max: usize) -> usize {
    (max / 4).max(1)
}

/// The bytes held by merged lists now, in all and per caller.
#[derive(Debug, Default)]
pub struct ListBudget {
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    total: usize,
    by_caller: HashMap<Arc<str>, usize>,
}

/// Which bound a read would pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    /// The gateway's: every merged list together.
    Gateway,
    /// This caller's share.
    Caller,
}

/// One merge's bytes: given back when it is dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<ListBudget>,
    caller: Arc<str>,
    max: usize,
    bytes: usize,
}

impl ListBudget {
    /// A merge for `caller` (a principal, or an anonymous client's identity), under a bound
    /// of `max` bytes in all: it holds nothing yet.
    pub fn reserve(self: &Arc<Self>, caller: Arc<str>, max: usize) -> Reservation {
        Reservation {
            budget: self.clone(),
            caller,
            max,
            bytes: 0,
        }
    }

    /// Bytes held now, in all.
    #[cfg(test)]
    pub fn total(&self) -> usize {
        self.lock().total
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Reservation {
    /// Counts `n` more bytes, or says which bound they would pass (nothing is counted then).
    pub fn grow(&mut self, n: usize) -> Result<(), Over> {
        let mut held = self.budget.lock();
        let mine = held.by_caller.get(&self.caller).copied().unwrap_or(0);
        // the caller's own share first: a read past it is this caller's, whatever the others
        if mine.saturating_add(n) > caller_share(self.max) {
            return Err(Over::Caller);
        }
        if held.total.saturating_add(n) > self.max {
            return Err(Over::Gateway);
        }
        held.total += n;
        *held.by_caller.entry(self.caller.clone()).or_insert(0) += n;
        self.bytes += n;
        Ok(())
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.bytes == 0 {
            return;
        }
        let mut held = self.budget.lock();
        held.total = held.total.saturating_sub(self.bytes);
        let empty = match held.by_caller.get_mut(&self.caller) {
            Some(n) => {
                *n = n.saturating_sub(self.bytes);
                *n == 0
            }
            None => false,
        };
        if empty {
            held.by_caller.remove(&self.caller);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_are_bounded_in_all_and_per_caller_and_give_back_what_they_held() {
        let budget = Arc::new(ListBudget::default());
        let max = 400;
        let mut a1 = budget.reserve("alice".into(), max);
        let mut a2 = budget.reserve("alice".into(), max);
        a1.grow(60).unwrap();
        a2.grow(40).unwrap();
        assert_eq!(a2.grow(1), Err(Over::Caller), "alice's share is 100");
        let mut b = budget.reserve("bob".into(), max);
        b.grow(100).unwrap();
        let mut c = budget.reserve("carol".into(), max);
        c.grow(100).unwrap();
        let mut d = budget.reserve("dave".into(), max);
        d.grow(100).unwrap();
        let mut e = budget.reserve("erin".into(), max);
        assert_eq!(e.grow(1), Err(Over::Gateway), "400 held in all");
        drop((a1, a2));
        assert_eq!(budget.total(), 300);
        e.grow(100).unwrap();
        drop((b, c, d, e));
        assert_eq!(budget.total(), 0);
        assert!(budget.lock().by_caller.is_empty());
    }
}
