//! The session caps a new session (native or bridged) is held to.

use crate::request::ctx::RequestCtx;
use crate::session::store::Quota;

/// The session caps in force for a new session (native or bridged): with `auth` the caller
/// is one principal, held to `sessions.max-per-principal` too (anonymous callers are not one
/// principal: only `limits.max-sessions-per-client` counts them, by header or address).
pub(super) fn quota(ctx: &RequestCtx) -> Quota {
    let config = &ctx.state.config;
    let per_principal = ctx
        .principal
        .as_ref()
        .map(|_| config.sessions.max_per_principal);
    let max_per_client = match (config.limits.max_sessions_per_client, per_principal) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Quota {
        max_sessions: config.sessions.max,
        max_per_client,
    }
}
