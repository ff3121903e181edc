//! The scopes of cached results and their generations: a scope is a pool (the backends that
//! gave a result, or, for a virtual server's merged answer, each member's); a change a backend
//! announces moves its pool's generation, and only results of that pool are dropped. The
//! generations are the process's, shared by every config snapshot's cache (`super::Common`), so
//! a stream opened before a reload drops the live cache's results, not an old snapshot's.
//!
//! A request takes its scopes' generations when it is looked up ([`Generations::at`]); its
//! result is kept under a key that holds them, so a result asked before a change is never found
//! after it, and a miss in flight when a change arrives is not kept at all (its generations
//! moved: [`Generations::moved`]). Results of a generation past are never looked up again and
//! go as the least recently used or at their `ttlMs`.

use crate::sync::lock;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The scopes of a result: the names of the pools whose changes drop it.
pub type Scopes = Arc<[String]>;

/// The generation of each scope that has heard a change (absent: 0).
#[derive(Debug, Default)]
pub struct Generations {
    of: Mutex<HashMap<String, u64>>,
}

impl Generations {
    /// A change in `scope`: its results so far are no longer found.
    pub fn bump(&self, scope: &str) {
        let mut of = lock(&self.of);
        match of.get_mut(scope) {
            Some(g) => *g += 1,
            None => {
                of.insert(scope.to_owned(), 1);
            }
        }
    }

    /// A digest of the generations of `scopes` now.
    pub fn at(&self, scopes: &[String]) -> [u8; 32] {
        let of = lock(&self.of);
        let mut h = Sha256::new();
        for scope in scopes {
            h.update((scope.len() as u64).to_be_bytes());
            h.update(scope.as_bytes());
            h.update(of.get(scope).copied().unwrap_or(0).to_be_bytes());
        }
        h.finalize().into()
    }

    /// Whether a change was heard in `scopes` since [`Generations::at`] gave `taken`.
    pub fn moved(&self, scopes: &[String], taken: &[u8; 32]) -> bool {
        self.at(scopes) != *taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_moves_only_its_own_scope() {
        let g = Generations::default();
        let (a, b): (Scopes, Scopes) = (Arc::from(["a".to_owned()]), Arc::from(["b".to_owned()]));
        let both: Scopes = Arc::from(["a".to_owned(), "b".to_owned()]);
        let (ta, tb, tboth) = (g.at(&a), g.at(&b), g.at(&both));
        g.bump("a");
        assert!(g.moved(&a, &ta));
        assert!(!g.moved(&b, &tb), "pool b heard nothing");
        assert!(g.moved(&both, &tboth), "a merged answer of both pools");
        assert_ne!(ta, tb);
    }
}
