//! The `SessionStore` trait every store implements, and what its methods take and answer:
//! quotas, create errors, the outcome of a re-binding, the time-to-live.

use super::error::StoreError;
use super::lease::Hold;
use crate::session::{Binding, GoneReason, Lookup, SessionRecord, SettingChange};
use async_trait::async_trait;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Caps checked atomically when a session is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// Most live sessions in the store.
    pub max_sessions: usize,
    /// Most live sessions of one client identity (`None`: no cap; empty identities are never
    /// counted).
    pub max_per_client: Option<usize>,
}

/// Why a session was not created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateError {
    /// The store holds `max` sessions already.
    Full {
        /// The cap.
        max: usize,
    },
    /// The client holds `max` sessions already.
    ClientFull {
        /// The cap.
        max: usize,
    },
    /// The store failed.
    Store(StoreError),
}

/// What a fenced re-binding did.
// The winner's record is returned by value once per re-initialization.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rebound {
    /// The binding was replaced: the record as it is now.
    Won(SessionRecord),
    /// Someone re-bound (or ended) the session first: what the store holds now.
    Lost(Lookup),
}

/// How long records and tombstones live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ttl {
    /// A session unused this long expires.
    pub idle: Duration,
    /// A tombstone (the reason an id stopped working) is kept this long.
    pub tombstone: Duration,
}

/// Where session records live.
#[async_trait]
pub trait SessionStore: Send + Sync + 'static {
    /// Adds a new session under `quota`, counting it for its backend and client.
    async fn create(&self, record: SessionRecord, quota: Quota) -> Result<(), CreateError>;
    /// Finds a session by gateway id.
    async fn get(&self, id: &str) -> Result<Lookup, StoreError>;
    /// [`SessionStore::get`] from the store itself, past any cache in front of it: what a
    /// session is moved on.
    async fn get_fresh(&self, id: &str) -> Result<Lookup, StoreError> {
        self.get(id).await
    }
    /// Records use at `now_ms`, sliding the session's time-to-live forward.
    async fn touch(&self, id: &str, now_ms: u64) -> Result<(), StoreError>;
    /// Replaces the binding if the session is still at `expected_generation` (a
    /// compare-and-set, moving the backend counts with it); otherwise reports what is there.
    async fn rebind(
        &self,
        id: &str,
        expected_generation: u64,
        binding: Binding,
    ) -> Result<Rebound, StoreError>;
    /// Marks the binding of `generation` stale (its backend is suspect).
    async fn mark_stale(&self, id: &str, generation: u64) -> Result<(), StoreError>;
    /// Applies a settings change to a live session.
    async fn update_settings(&self, id: &str, change: SettingChange) -> Result<(), StoreError>;
    /// Ends a live session, leaving a tombstone with the reason; returns the record it had.
    async fn end(&self, id: &str, reason: GoneReason) -> Result<Option<SessionRecord>, StoreError>;
    /// Ends (tombstone `expired`) and returns up to `max` sessions whose time-to-live ran out
    /// by `now_ms`, and forgets tombstones past theirs. Does not look at live sessions that
    /// are not due.
    async fn take_expired(&self, now_ms: u64, max: usize)
        -> Result<Vec<SessionRecord>, StoreError>;
    /// Live sessions in all.
    async fn count(&self) -> Result<usize, StoreError>;
    /// Live sessions bound to each backend of `pool` that holds any.
    async fn backend_counts(&self, pool: &str) -> Result<Vec<(SocketAddr, usize)>, StoreError>;
    /// The ids of the live sessions bound to `backend` in `pool`: the per-backend index the
    /// sessions of a dead backend are found by (`session/evacuate.rs`). A shared store may
    /// still list an id whose session ended a moment ago, or moved: callers read each record
    /// before acting on it.
    async fn sessions_on(
        &self,
        pool: &str,
        backend: SocketAddr,
    ) -> Result<Vec<Arc<str>>, StoreError>;
    /// Live sessions of one client identity.
    async fn client_count(&self, client: &str) -> Result<usize, StoreError>;
    /// Claims the move of session `id` off its binding of `generation` for `ttl`: `true` for
    /// the one caller (across every replica) that should re-initialize it, `false` while
    /// another holds the claim (that caller waits for the new binding instead). A store
    /// serving one process needs no claim: its callers are single-flighted already.
    async fn claim_move(
        &self,
        id: &str,
        generation: u64,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let _ = (id, generation, ttl);
        Ok(true)
    }
    /// Takes, renews, or (once the holder's lease expired) takes over the stream lease of
    /// live session `id` for `owner` until `ttl` from now (`lease.rs`): one replica holds a
    /// session's backend GET stream at a time.
    async fn hold_lease(&self, id: &str, owner: &str, ttl: Duration) -> Result<Hold, StoreError>;
    /// Gives up `owner`'s stream lease of session `id` (nothing when another holds it).
    async fn release_lease(&self, id: &str, owner: &str) -> Result<(), StoreError>;
    /// Whether the store answers (readiness).
    async fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// Changes the time-to-live of records (a config reload); applies to every live session.
    fn set_ttl(&self, ttl: Ttl);
}
