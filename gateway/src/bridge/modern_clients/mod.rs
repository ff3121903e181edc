//! 2026-07-28 clients on legacy (session) backends (the reverse era bridge). A request of a
//! modern client goes inside a backend session the gateway opened itself (`initialize` built
//! from the request's `_meta`, `notifications/initialized`) and keeps for the next requests:
//! pooled by (backend, principal, digest of the initialize), so two principals, or two clients
//! whose `initialize` would differ, never share one (toolhive #5323). An anonymous caller (a
//! route without `auth`) is no principal: its call gets a backend session of its own, opened
//! for it and closed (DELETE upstream) when the call ends, so two unrelated clients never share
//! one. Several requests may be in flight on one backend session. Bounded per backend, in all
//! and per owner (`Owner`: the principal, or an anonymous caller's peer address): an owner at
//! its share makes room only from its own idle sessions, a full backend only from an owner
//! holding more there than the newcomer would (`room.rs`); closed with a DELETE upstream after
//! `bridge.pooled-sessions.idle-s` unused.
//!
//! This file says whether a request comes here; `sessions` is the table (a session taken or
//! opened, kept `InUse`, swept when idle), of `entry`s keyed by `key`, each counted in its
//! `owner`'s share (`acquire_error`: why none could be had); `room` makes room within the
//! bounds and shares, `open` opens a backend session, `serve` serves one request (the client
//! side and the attempts; `read` its answer read on, `side` what the backend sends beside it,
//! `cancel` the legacy cancellation of a call whose exchange was dropped), `rounds` and `park`
//! the `input_required` rounds (a call parked while the client answers), `stray` the session's
//! GET stream, `forward` a retry sent on to the replica holding its call, `listen` a
//! `subscriptions/listen` stream on a backend session held for it;
//! `mcp_wire::translate::legacy` and `mcp_wire::translate::mrtr` are the pure translation.

mod acquire_error;
mod cancel;
mod entry;
mod forward;
mod key;
mod listen;
mod open;
mod owner;
mod park;
mod read;
mod room;
mod rounds;
mod serve;
mod sessions;
mod side;
mod stray;

pub use park::Parking;
pub use serve::{serve, Pooled, Target};
pub use sessions::Sessions;

use crate::config::BridgeConfig;
use crate::upstream::Pool;
use mcp_wire::Era;

/// Whether a request of `era` on `pool` comes here: a 2026-07-28 request and only legacy
/// backends (every backend's era known, none serving 2026-07-28: each positively a legacy
/// session server, by the probe or by the pool's `era`), and the bridge is on
/// (`bridge.pooled-sessions.enabled`). A backend whose answers proved nothing is of unknown
/// era and serves 2026-07-28 requests natively.
pub fn takes(era: Era, config: &BridgeConfig, pool: &Pool) -> bool {
    era == Era::Stateless && config.pooled.enabled && pool.lacks_era(Era::Stateless)
}
