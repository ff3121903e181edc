//! Gateway-owned MCP sessions for legacy (2025-era) servers.
//!
//! - [`SessionManager`] owns the whole lifecycle: create from an `initialize` answer, look up
//!   (with the caller check), forward within a session with transparent recovery, record
//!   settings, end, expire, count. The proxy asks it and never touches the store.
//! - [`SessionStore`] is where records live (memory now, shared later): fallible async
//!   methods, expiry by time-to-live inside the store, counts kept in the store.
//! - `reinit` keeps only the replay of a client's `initialize` on a new backend.
//! - `timeline` keeps the latest moves and losses for the console (a bounded ring).
//! - `evacuate` moves the sessions of a backend known dead in the background, before their
//!   next call.

mod binding;
mod bridged;
mod ending;
mod evacuate;
mod expiry;
mod manager;
#[cfg(test)]
mod manager_tests;
pub mod metrics;
mod not_found;
mod observer;
mod open;
mod record;
mod recover;
mod reinit;
pub mod store;
pub mod timeline;

pub use bridged::BridgedOpening;
pub use evacuate::EvacuationService;
pub use expiry::{ExpiryService, SweepSource};
pub use manager::{Forwarded, Outgoing, Requester, SessionManager};
pub use metrics::SessionMetrics;
pub use not_found::is_not_found;
pub use observer::SessionObserver;
pub use open::{Opened, Opening};
pub use record::{
    new_session_id, now_ms, short, Binding, GoneReason, Lookup, SessionRecord, SettingChange,
    Settings,
};
pub use store::{MemoryStore, SessionStore};
pub use timeline::{SessionEvent, Timeline};
