//! The stream lease: per session, at most one gateway replica (its `owner` string) holds the
//! backend's standalone GET stream at a time. A lease has an expiry; its holder renews it while
//! it holds the stream, and once it has expired (the holder died) any replica takes it over,
//! atomically. The memory store keeps leases in [`LeaseMap`]; the Redis store in one key per
//! session with a script (`redis/lease.rs`). Both run the cases in `suite.rs`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// What asking for a session's stream lease found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hold {
    /// The caller holds it now (taken, taken over after an expiry, or renewed) until the ttl
    /// it asked for passes.
    Mine,
    /// Another owner holds it and its lease has not expired.
    Theirs(String),
    /// The session is not live: no lease is given.
    Gone,
}

/// Leases of the sessions of one process's store: owner and expiry by session id.
#[derive(Default)]
pub struct LeaseMap {
    leases: Mutex<HashMap<String, (String, Instant)>>,
}

impl LeaseMap {
    /// Takes, renews or takes over the lease of session `id` for `owner` (the session is live).
    pub fn hold(&self, id: &str, owner: &str, ttl: Duration) -> Hold {
        let now = Instant::now();
        let mut leases = crate::sync::lock(&self.leases);
        if let Some((holder, until)) = leases.get(id) {
            if holder != owner && *until > now {
                return Hold::Theirs(holder.clone());
            }
        }
        leases.insert(id.to_owned(), (owner.to_owned(), now + ttl));
        Hold::Mine
    }

    /// Gives the lease up if `owner` holds it.
    pub fn release(&self, id: &str, owner: &str) {
        let mut leases = crate::sync::lock(&self.leases);
        if leases.get(id).is_some_and(|(holder, _)| holder == owner) {
            leases.remove(id);
        }
    }

    /// Forgets the lease of an ended session.
    pub fn forget(&self, id: &str) {
        crate::sync::lock(&self.leases).remove(id);
    }
}
