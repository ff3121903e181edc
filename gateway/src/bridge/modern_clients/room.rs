//! Room for a new pooled session, within the bounds and the owner's share
//! (`bridge.pooled-sessions`). The checks, in order:
//!
//! | bound | full: room made from |
//! |---|---|
//! | the owner's share on this backend (`max-per-principal`, at most half of `max-per-backend`) | the owner's own least recently used idle session there |
//! | the owner's share in all (`max-per-principal`) | the owner's own least recently used idle session |
//! | the backend (`max-per-backend`) | the least recently used idle session there of an owner holding more there than the newcomer would after opening |
//! | the gateway (`max`) | likewise, among all |
//!
//! No idle session to close: -32018 `pooled-sessions` (`scope`: `principal`, `backend`,
//! `gateway`), counted `refused`. So one principal never evicts another's session to get past
//! its share, and a full backend never takes from an owner holding no more than the newcomer
//! would: no principal's state restarts because another opened many.

use super::acquire_error::AcquireError;
use super::entry::Entry;
use super::key::Key;
use super::owner::Owner;
use super::sessions::{Held, Sessions, Slot};
use crate::config::PooledSessions;
use crate::error::GatewayError;
use crate::sync::lock;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Which bound is reached.
struct Full {
    scope: &'static str,
    limit: usize,
    /// Room is made on this backend only.
    backend: Option<SocketAddr>,
    /// Room is made from the owner's own sessions only.
    own: bool,
}

impl Sessions {
    /// The slot of `key`, made when there is none (room made first within the bounds).
    pub(super) fn slot(
        &self,
        pool: &str,
        key: &Key,
        owner: &Owner,
        bounds: PooledSessions,
    ) -> Result<Slot, AcquireError> {
        let mut table = lock(&self.inner.table);
        if let Some(held) = table.get(key) {
            return Ok(held.slot.clone());
        }
        let here = |k: &Key| k.backend == key.backend;
        let mine_here = table
            .iter()
            .filter(|(k, h)| here(k) && h.owner == *owner)
            .count();
        let mine = table.values().filter(|h| h.owner == *owner).count();
        let on_backend = table.keys().filter(|k| here(k)).count();
        let share_here = bounds.share_per_backend();
        let full = if mine_here >= share_here {
            Some(Full {
                scope: "principal",
                limit: share_here,
                backend: Some(key.backend),
                own: true,
            })
        } else if mine >= bounds.max_per_principal {
            Some(Full {
                scope: "principal",
                limit: bounds.max_per_principal,
                backend: None,
                own: true,
            })
        } else if on_backend >= bounds.max_per_backend {
            Some(Full {
                scope: "backend",
                limit: bounds.max_per_backend,
                backend: Some(key.backend),
                own: false,
            })
        } else if table.len() >= bounds.max {
            Some(Full {
                scope: "gateway",
                limit: bounds.max,
                backend: None,
                own: false,
            })
        } else {
            None
        };
        if let Some(full) = full {
            let Some((victim_key, victim)) = victim(&table, owner, &full) else {
                drop(table);
                self.count(pool, "refused");
                return Err(AcquireError::Answer(GatewayError::pooled_sessions_full(
                    full.scope, full.limit,
                )));
            };
            table.remove(&victim_key);
            drop(table);
            self.close(&victim, "evicted");
            table = lock(&self.inner.table);
        }
        let held = table.entry(key.clone()).or_insert_with(|| Held {
            owner: owner.clone(),
            slot: Slot::default(),
        });
        Ok(held.slot.clone())
    }
}

/// The session to close for room, within `full`'s scope: the least recently used idle one of
/// `owner` (its share), or of an owner holding more in the scope than `owner` would after
/// opening (a full backend or gateway).
fn victim(table: &HashMap<Key, Held>, owner: &Owner, full: &Full) -> Option<(Key, Arc<Entry>)> {
    let in_scope = |k: &Key| full.backend.is_none_or(|b| k.backend == b);
    let mut held: HashMap<&Owner, usize> = HashMap::new();
    for (k, h) in table {
        if in_scope(k) {
            *held.entry(&h.owner).or_default() += 1;
        }
    }
    let newcomer = held.get(owner).copied().unwrap_or(0) + 1;
    table
        .iter()
        .filter(|(k, _)| in_scope(k))
        .filter(|(_, h)| {
            if full.own {
                h.owner == *owner
            } else {
                h.owner == *owner || held.get(&h.owner).copied().unwrap_or(0) > newcomer
            }
        })
        .filter_map(|(k, h)| h.slot.get().map(|e| (k, e)))
        .filter(|(_, e)| e.in_flight.load(Ordering::Acquire) == 0)
        .max_by_key(|(_, e)| e.idle_for())
        .map(|(k, e)| (k.clone(), e.clone()))
}
