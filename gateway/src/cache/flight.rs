//! Single flight: concurrent misses of one public key make one upstream request, whatever
//! their authorization contexts. The first leads; the others wait for its [`Outcome`], told as
//! soon as the leader knows it (its answer kept, or known not to be kept: too large, an event
//! stream, a result that says not to keep it), never when its own client has read the answer:
//!
//! - `Public`: the waiters are answered from what it kept;
//! - `Private`: the result is per caller; each waiter with a context joins (or leads) the flight
//!   of its own context's key; one without a context asks alone (nothing would be kept for it);
//! - `Pass`: the result is not to be kept (no `ttlMs`, `ttlMs: 0`, not complete, too large, an
//!   event stream): the waiters ask at once, as one flight could never serve them;
//! - `Nothing` (the leader failed, kept no room, or went away) and `Handover`: the next waiter
//!   leads and the others wait again.
//!
//! A waiter that waited its longest takes the lead ([`Flights::take`]): the others then
//! wait for it, not for a leader whose client does not read.
//!
//! Not moka's `get_with` (docs/caching.md, "Why not moka"): that runs one future per key and
//! gives its waiters the value it inserted, or its error, when the future ends; here the
//! leader is a request that tells its waiters early and goes on relaying, a waiter may take
//! its lead, each outcome sends the waiters a different way, and nothing is inserted.

use super::store::Key;
use crate::sync::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// What the leader of a flight found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Not known yet.
    Pending,
    /// A public result, kept: look again.
    Public,
    /// A private result: ask within the caller's own context.
    Private,
    /// A result not to be kept: ask.
    Pass,
    /// Nothing kept (a failure, no room, the leader gone): the next leads.
    Nothing,
    /// A waiter took the lead: wait for it.
    Handover,
}

/// A flight in the table: its id (so a leader that lost it removes no other) and its outcome.
struct Entry {
    id: u64,
    tx: Arc<watch::Sender<Outcome>>,
}

/// The flights in the air, by key.
#[derive(Default)]
pub struct Flights {
    table: Mutex<HashMap<Key, Entry>>,
    next: AtomicU64,
}

/// A miss: lead the one upstream request, or wait for the one in flight.
pub enum Flight {
    /// This request asks upstream; the others wait until it says what it found.
    Lead(Leading),
    /// Another request of the same key is upstream: wait for its outcome.
    Wait(watch::Receiver<Outcome>),
}

/// The lead of a flight: [`Leading::release`] tells the waiters its outcome; dropped without
/// one, it tells them `Nothing`.
pub struct Leading {
    flights: Arc<Flights>,
    key: Key,
    id: u64,
    tx: Arc<watch::Sender<Outcome>>,
}

impl Flights {
    /// Joins or leads the flight of `key`.
    pub fn join(self: &Arc<Self>, key: Key) -> Flight {
        let mut table = lock(&self.table);
        if let Some(entry) = table.get(&key) {
            return Flight::Wait(entry.tx.subscribe());
        }
        Flight::Lead(self.lead(&mut table, key))
    }

    /// Takes the lead of the flight of `key` (a waiter that waited its longest): the ones
    /// waiting for the leader before are told `Handover`, and wait for this one.
    pub fn take(self: &Arc<Self>, key: Key) -> Leading {
        let mut table = lock(&self.table);
        let before = table.remove(&key);
        let lead = self.lead(&mut table, key);
        drop(table);
        if let Some(before) = before {
            before.tx.send_replace(Outcome::Handover);
        }
        lead
    }

    fn lead(self: &Arc<Self>, table: &mut HashMap<Key, Entry>, key: Key) -> Leading {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let tx = Arc::new(watch::Sender::new(Outcome::Pending));
        table.insert(key, Entry { id, tx: tx.clone() });
        Leading {
            flights: self.clone(),
            key,
            id,
            tx,
        }
    }
}

impl Leading {
    /// Ends the flight with `outcome` (the first one told wins; the later are no-ops).
    pub fn release(&self, outcome: Outcome) {
        {
            let mut table = lock(&self.flights.table);
            if table.get(&self.key).is_some_and(|e| e.id == self.id) {
                table.remove(&self.key);
            }
        }
        self.tx.send_if_modified(|o| {
            let first = *o == Outcome::Pending;
            if first {
                *o = outcome;
            }
            first
        });
    }
}

impl Drop for Leading {
    fn drop(&mut self) {
        self.release(Outcome::Nothing);
    }
}

impl Outcome {
    /// The outcome of an answer whose result reads as of `scope` (or is not to be kept, as
    /// `NotStored` says) and was kept or not as `kept` says (`None`: not tried).
    pub fn of(
        scope: Result<mcp_wire::cacheable::Scope, mcp_wire::cacheable::NotStored>,
        kept: Option<bool>,
    ) -> Outcome {
        use mcp_wire::cacheable::{NotStored, Scope};
        match (scope, kept) {
            (Ok(Scope::Private), _) => Outcome::Private,
            (Ok(_), Some(true)) => Outcome::Public,
            (Ok(_), _) => Outcome::Nothing,
            (Err(NotStored::Incomplete | NotStored::NoTtl), _) => Outcome::Pass,
            (Err(NotStored::NoResult), _) => Outcome::Nothing,
        }
    }
}
