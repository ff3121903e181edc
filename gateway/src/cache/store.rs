//! The cache's memory ([`Store`]): results by key, each owned by the public part or by one
//! authorization context, bounded in bytes in all (`max-bytes`) and per context
//! (`max-bytes-per-context`), least recently used dropped first, and only ever by its own
//! owner's insert or the whole's: a caller's private results are never dropped to make room
//! for another caller's, so no caller can empty another's cache. Results past their `ttlMs`
//! are dropped when looked up or when room is made.

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
    received: Instant,
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
    /// One context's private results' bytes.
    pub per_context: usize,
}

/// Bookkeeping per result beyond its bytes (key, owner, times), so that many tiny results
/// count against the budget too.
const ENTRY_OVERHEAD: usize = 128;

/// Results by key, in bounds.
pub struct Store {
    bounds: Bounds,
    entries: HashMap<Key, Entry>,
    /// Each owner's keys by last use (oldest first) and their bytes.
    owners: HashMap<Owner, (BTreeMap<u64, Key>, usize)>,
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
        let age = now.saturating_duration_since(entry.received);
        let age_ms = u64::try_from(age.as_millis()).unwrap_or(u64::MAX);
        if age_ms >= entry.stored.ttl_ms {
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
        Ok(Fresh { stored, age_ms })
    }

    /// Keeps a result received `age_ms` ago elsewhere (another replica, through Redis) as if
    /// it had been received then.
    pub fn insert_aged(&mut self, key: Key, owner: Owner, fresh: &Fresh, now: Instant) -> Inserted {
        let age = std::time::Duration::from_millis(fresh.age_ms);
        let received = now.checked_sub(age).unwrap_or(now);
        self.insert(key, owner, fresh.stored.clone(), received)
    }

    /// Keeps `stored` at `key` for `owner`, received at `now`, making room within the bounds:
    /// results past their time first, then the owner's own least recently used, then (for the
    /// whole) the public part's. Not kept when it cannot fit without dropping another
    /// context's results.
    pub fn insert(
        &mut self,
        key: Key,
        owner: Owner,
        stored: Arc<Stored>,
        now: Instant,
    ) -> Inserted {
        self.remove(&key);
        let bytes = stored.result.len() + ENTRY_OVERHEAD;
        let mut evicted = 0;
        let share = match owner {
            Owner::Public => self.bounds.max_bytes,
            Owner::Private(_) => self.bounds.per_context,
        };
        if bytes > share {
            return Inserted {
                kept: false,
                evicted,
            };
        }
        while self.owned(owner) + bytes > share {
            if !self.drop_oldest(owner) {
                break;
            }
            evicted += 1;
        }
        if self.bytes + bytes > self.bounds.max_bytes {
            evicted += self.drop_stale(now);
        }
        while self.bytes + bytes > self.bounds.max_bytes {
            // the public part gives room to anyone; a context's only to itself
            let dropped = self.drop_oldest(Owner::Public)
                || (owner != Owner::Public && self.drop_oldest(owner));
            if !dropped {
                return Inserted {
                    kept: false,
                    evicted,
                };
            }
            evicted += 1;
        }
        self.tick += 1;
        let used = self.tick;
        let (lru, owned) = self.owners.entry(owner).or_default();
        lru.insert(used, key);
        *owned += bytes;
        self.bytes += bytes;
        let ttl = std::time::Duration::from_millis(stored.ttl_ms);
        let expires = (now.checked_add(ttl).unwrap_or(now), used);
        self.expiries.insert(expires, key);
        let entry = Entry {
            stored,
            received: now,
            owner,
            bytes,
            used,
            expires,
        };
        self.entries.insert(key, entry);
        Inserted {
            kept: true,
            evicted,
        }
    }

    /// Drops every result; how many.
    #[cfg(test)]
    pub fn clear(&mut self) -> usize {
        let n = self.entries.len();
        self.entries.clear();
        self.owners.clear();
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
        true
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
