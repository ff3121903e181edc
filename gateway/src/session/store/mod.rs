//! The session store interface, fit for several gateway replicas: every method is async and
//! may fail (a networked store can be down), records are serializable, expiry is a
//! time-to-live kept by the store itself, and the counts that balancing and per-client caps
//! read (sessions per backend, per client, in all) live in the store, so every replica reads
//! the same numbers, and so does the index of the sessions on each backend (what a dead
//! backend's sessions are moved by). `generation` is the fencing token of re-binding.
//!
//! Every implementation runs the one behavioural suite in `suite.rs`.

mod cached;
mod error;
mod instrumented;
mod lease;
mod memory;
pub mod metrics;
mod outage;
mod pending;
mod redis;
mod session_store;
mod streams;
#[cfg(test)]
pub(crate) mod suite;

pub use self::redis::{RedisEvents, RedisStore};
pub use cached::Cached;
pub use error::StoreError;
pub use instrumented::Instrumented;
pub use lease::{Hold, LeaseMap};
pub use memory::MemoryStore;
pub use metrics::StoreMetrics;
pub use session_store::{CreateError, Quota, Rebound, SessionStore, Ttl};
pub use streams::{StoredEvent, StreamFollower, StreamStore, ALIVE_EVERY};
