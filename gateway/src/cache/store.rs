//! The cache's memory ([`Store`]): results by key, each owned by the public part or by one
//! authorization context, bounded in bytes in all (`max-bytes`), all private results together
//! (`max-private-bytes`) and per context (`max-bytes-per-context`), least recently used
//! dropped first. A context past its share drops its own; a private result past the private
//! part drops the least recently used private results of any context (so a few contexts, or
//! many made-up ones, cannot hold more than the private part: the public part keeps the rest
//! of the whole, and a new context always finds room); a public result never drops a private
//! one while public ones are left. Results past their `ttlMs` (never longer than `max-ttl-ms`)
//! are dropped when looked up or when room is made.
//!
//! Not moka (docs/caching.md, "Why not moka", for what was tried): its one `max_capacity`
//! has no private part and no share per context, and it cannot drop public results first; it
//! evicts in batched maintenance, so until that runs the store holds more than `max-bytes`
//! and an insert cannot say what it dropped (the `evicted` count); it reads its own clock, so
//! the bounds' tests cannot give it the time; and it finds nothing for an entry past its
//! time, so `stale` could not be told from a miss. Run against this file's tests it fails
//! three of seven, and two more without a maintenance run per insert.

use mcp_wire::cacheable::Stored;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

/// A key: a digest of what the result depends on (`super::key`).
pub type Key = [u8; 32];

/// Whose a result is: shared by every caller of the route, or one authorization context's
/// (the digest of the credential it presented).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Owner {
    /// `cacheScope: public`.
    Public,
    /// `cacheScope: private`, of this context.
    Private(Key),
}

/// What one key holds.
struct Entry {
    stored: Arc<Stored>,
    /// When it was kept here, and its age then (one another replica kept earlier arrives
    /// aged): its age is the sum.
    received: (Instant, u64),
    owner: Owner,
    bytes: usize,
    used: u64,
    /// Its place in [`Store::expiries`]: when it goes stale, and its insert's tick.
    expires: (Instant, u64),
}

/// What a lookup found.
pub struct Fresh {
    /// The result.
    pub stored: Arc<Stored>,
    /// Milliseconds since the gateway received it.
    pub age_ms: u64,
}

/// Why a lookup found nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// No result is held at the key.
    Absent,
    /// One was, past its `ttlMs`: dropped.
    Stale,
}

/// The bounds (`cache` in the config).
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// All results' bytes.
    pub max_bytes: usize,
    /// All private results' bytes together.
    pub private: usize,
    /// One context's private results' bytes.
    pub per_context: usize,
    /// The longest a result is held, in milliseconds, whatever its `ttlMs`.
    pub max_ttl_ms: u64,
}

/// What holding one result costs beyond its result's bytes, so that many tiny results count
/// against the budget as they weigh: its `Stored` and the `Arc` around it, the allocator's
/// rounding of the result's bytes, the entry in the key map (and the map's empty slots: just
/// after it doubles, more than half), the owner's, the private part's and the expiries'
/// `BTreeMap` nodes, and the allocator's own bookkeeping. Measured, not guessed: the RSS that
/// N results of 100 to 300 bytes (half public, half of 64 contexts) added to a process, less
/// their bytes, per result: 536 bytes at N = 200,000, 692 at 115,000, 783 at 30,000, 947 at
/// 14,400 (just after the key map doubled, the worst), rounded up here. store_tests.rs's
/// `memory_per_result` (run with `--ignored`) measures it again and fails above this.
pub const ENTRY_OVERHEAD: usize = 960;

/// Results by key, in bounds.
pub struct Store {
    bounds: Bounds,
    entries: HashMap<Key, Entry>,
    /// Each owner's keys by last use (oldest first) and their bytes.
    owners: HashMap<Owner, (BTreeMap<u64, Key>, usize)>,
    /// Every private result's key by last use (oldest first), whoever's, and their bytes.
    private: (BTreeMap<u64, Key>, usize),
    /// Every key by when it goes stale (soonest first), so dropping stale results costs what
    /// is dropped, not a walk over all.
    expiries: BTreeMap<(Instant, u64), Key>,
    bytes: usize,
    tick: u64,
}

/// What an insert did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Inserted {
    /// Whether the result is held now.
    pub kept: bool,
    /// Results dropped for room (past their time, or least recently used).
    pub evicted: usize,
}

impl Store {
    /// An empty store within `bounds`.
    pub fn new(bounds: Bounds) -> Store {
        Store {
            bounds,
            entries: HashMap::new(),
            owners: HashMap::new(),
            private: (BTreeMap::new(), 0),
            expiries: BTreeMap::new(),
            bytes: 0,
            tick: 0,
        }
    }

    /// The bytes and the number of results held.
    pub fn held(&self) -> (usize, usize) {
        (self.bytes, self.entries.len())
    }

    /// The result at `key` if it is still fresh at `now` (a stale one is dropped).
    pub fn get(&mut self, key: &Key, now: Instant) -> Result<Fresh, Missing> {
        let entry = self.entries.get(key).ok_or(Missing::Absent)?;
        let (received, aged) = entry.received;
        let age = now.saturating_duration_since(received);
        let age_ms = u64::try_from(age.as_millis()).unwrap_or(u64::MAX);
        let age_ms = age_ms.saturating_add(aged);
        if age_ms >= self.ttl_ms(&entry.stored) {
            self.remove(key);
            return Err(Missing::Stale);
        }
        self.tick += 1;
        let (tick, owner, stored) = (self.tick, entry.owner, entry.stored.clone());
        let entry = self.entries.get_mut(key).ok_or(Missing::Absent)?;
        let old = std::mem::replace(&mut entry.used, tick);
        if let Some((lru, _)) = self.owners.get_mut(&owner) {
            lru.remove(&old);
            lru.insert(tick, *key);
        }
        if owner != Owner::Public {
            self.private.0.remove(&old);
            self.private.0.insert(tick, *key);
        }
        Ok(Fresh { stored, age_ms })
    }

    /// How long `stored` is fresh here: its `ttlMs`, at most `max-ttl-ms`.
    fn ttl_ms(&self, stored: &Stored) -> u64 {
        stored.ttl_ms.min(self.bounds.max_ttl_ms)
    }

    /// Keeps a result received `age_ms` ago elsewhere (another replica, through Redis) as
    /// that old: fresh for what is left of its time (whatever the age, even one longer than
    /// this process or machine has been up).
    pub fn insert_aged(&mut self, key: Key, owner: Owner, fresh: &Fresh, now: Instant) -> Inserted {
        self.insert_at(key, owner, fresh.stored.clone(), (now, fresh.age_ms))
    }

    /// Keeps `stored` at `key` for `owner`, received at `now`, making room within the bounds:
    /// results past their time first, then (for a private result) the owner's own least
    /// recently used past its share and any context's least recently used past the private
    /// part, then for the whole the public part's, then the private part's. Not kept when it
    /// cannot fit.
    pub fn insert(
        &mut self,
        key: Key,
        owner: Owner,
        stored: Arc<Stored>,
        now: Instant,
    ) -> Inserted {
        self.insert_at(key, owner, stored, (now, 0))
    }

    /// [`Store::insert`] of a result `received.1` milliseconds old at `received.0`.
    fn insert_at(
        &mut self,
        key: Key,
        owner: Owner,
        stored: Arc<Stored>,
        received: (Instant, u64),
    ) -> Inserted {
        self.remove(&key);
        let (now, aged) = received;
        let bytes = stored.result.len() + ENTRY_OVERHEAD;
        let left = self.ttl_ms(&stored).saturating_sub(aged);
        let mut done = Inserted::default();
        let share = match owner {
            Owner::Public => self.bounds.max_bytes,
            Owner::Private(_) => self.bounds.per_context,
        };
        if bytes > share || left == 0 {
            return done;
        }
        if owner != Owner::Public {
            while self.owned(owner) + bytes > share && self.drop_oldest(owner) {
                done.evicted += 1;
            }
            while self.private.1 + bytes > self.bounds.private && self.drop_oldest_private() {
                done.evicted += 1;
            }
        }
        if self.bytes + bytes > self.bounds.max_bytes {
            done.evicted += self.drop_stale(now);
        }
        while self.bytes + bytes > self.bounds.max_bytes {
            if !(self.drop_oldest(Owner::Public) || self.drop_oldest_private()) {
                return done;
            }
            done.evicted += 1;
        }
        self.tick += 1;
        let used = self.tick;
        let (lru, owned) = self.owners.entry(owner).or_default();
        lru.insert(used, key);
        *owned += bytes;
        if owner != Owner::Public {
            self.private.0.insert(used, key);
            self.private.1 += bytes;
        }
        self.bytes += bytes;
        // (within max-ttl-ms: no overflow; were it to, the farthest time there is)
        let ttl = std::time::Duration::from_millis(left);
        let at = now.checked_add(ttl).unwrap_or_else(|| far(now));
        let expires = (at, used);
        self.expiries.insert(expires, key);
        let entry = Entry {
            stored,
            received,
            owner,
            bytes,
            used,
            expires,
        };
        self.entries.insert(key, entry);
        done.kept = true;
        done
    }

    /// Drops every result; how many.
    #[cfg(test)]
    pub fn clear(&mut self) -> usize {
        let n = self.entries.len();
        self.entries.clear();
        self.owners.clear();
        self.private = (BTreeMap::new(), 0);
        self.expiries.clear();
        self.bytes = 0;
        n
    }

    fn owned(&self, owner: Owner) -> usize {
        self.owners.get(&owner).map_or(0, |(_, b)| *b)
    }

    /// Drops `owner`'s least recently used result; whether there was one.
    fn drop_oldest(&mut self, owner: Owner) -> bool {
        let oldest = self
            .owners
            .get(&owner)
            .and_then(|(lru, _)| lru.first_key_value().map(|(_, k)| *k));
        match oldest {
            Some(key) => self.remove(&key),
            None => false,
        }
    }

    /// Drops the least recently used private result, whoever's; whether there was one.
    fn drop_oldest_private(&mut self) -> bool {
        let oldest = self.private.0.first_key_value().map(|(_, k)| *k);
        oldest.is_some_and(|key| self.remove(&key))
    }

    /// Drops every result past its time; how many.
    fn drop_stale(&mut self, now: Instant) -> usize {
        let mut dropped = 0;
        while let Some((&(at, tick), &key)) = self.expiries.first_key_value() {
            if at > now {
                break;
            }
            // (an entry gone already leaves no place behind; taken out here either way)
            self.expiries.remove(&(at, tick));
            self.remove(&key);
            dropped += 1;
        }
        dropped
    }

    fn remove(&mut self, key: &Key) -> bool {
        let Some(entry) = self.entries.remove(key) else {
            return false;
        };
        self.bytes -= entry.bytes;
        self.expiries.remove(&entry.expires);
        if let Some((lru, owned)) = self.owners.get_mut(&entry.owner) {
            lru.remove(&entry.used);
            *owned -= entry.bytes;
            if lru.is_empty() {
                self.owners.remove(&entry.owner);
            }
        }
        if entry.owner != Owner::Public {
            self.private.0.remove(&entry.used);
            self.private.1 -= entry.bytes;
        }
        true
    }
}

/// The farthest instant after `now` there is (a year and more: past any `max-ttl-ms`).
fn far(now: Instant) -> Instant {
    let mut step = std::time::Duration::from_secs(1 << 40);
    loop {
        if let Some(at) = now.checked_add(step) {
            return at;
        }
        step /= 2;
        if step.is_zero() {
            return now;
        }
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
