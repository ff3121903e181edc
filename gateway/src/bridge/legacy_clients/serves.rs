//! Which backends serve a legacy client's session: natively (a legacy backend, or a dual one
//! the route keeps native), or bridged (a modern one, or a dual one the route bridges).

use crate::config::DualBackends;
use crate::upstream::Backend;
use mcp_wire::BackendEra;

/// Whether `b` takes a legacy client's session natively: a legacy backend, one of unknown era
/// (as before eras were known), or a dual one on a route that keeps dual backends native.
pub fn serves_native(b: &Backend, dual: DualBackends) -> bool {
    match b.era() {
        None | Some(BackendEra::Legacy) => true,
        Some(BackendEra::Dual) => dual == DualBackends::Native,
        Some(BackendEra::Modern) => false,
    }
}

/// Whether `b` takes a bridged session's requests: a modern backend, or a dual one on a route
/// that bridges dual backends.
pub fn serves_bridged(b: &Backend, dual: DualBackends) -> bool {
    match b.era() {
        Some(BackendEra::Modern) => true,
        Some(BackendEra::Dual) => dual == DualBackends::Bridge,
        None | Some(BackendEra::Legacy) => false,
    }
}
