//! Sessions in Redis (`sessions.store: redis`), shared by every gateway replica, so a replica
//! that never saw a session (or a restarted gateway) serves it.
//!
//! Layout (every key of a session in one cluster slot, by the `{session-id}` hash tag):
//! - `PREFIX{ID}:rec`: a hash (`base`, `binding`, `gen`, `stale`, `settings`, `last_use`) whose
//!   key lives twice the idle timeout plus a minute, so the expiry sweep claims it first;
//! - `PREFIX{ID}:gone`: the tombstone (the reason) for the tombstone window;
//! - `PREFIX:due`: a sorted set of due times (lazily corrected, as in the memory store);
//! - `PREFIX:total`, `PREFIX:backends:POOL`, `PREFIX:clients`: the counts every replica reads;
//! - `PREFIX:on:POOL:ADDR`: a set of the ids of the sessions on one backend, the index a dead
//!   backend's sessions are found by (kept beside its count, the same way).
//!
//! Re-binding, stale marks, settings, ending and expiry are scripts on the session's slot:
//! compare-and-set on the generation, never read-then-write. Counts live in other slots, so
//! they are updated after the session's own change (a crash in between skews a count, never a
//! session); quotas are checked against them before a session is created, so concurrent
//! initializes on several replicas can pass a cap by at most their number.

mod blocking;
mod conn;
mod entry;
mod events;
mod follower;
mod held;
mod holder;
mod layout;
mod lease;
mod sentinel;
mod store;
mod timeout;

pub use crate::config::RedisConfig;
pub use events::RedisEvents;
pub use store::RedisStore;
