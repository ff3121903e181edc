//! The fast path's state as its phases find it: [`native`] (set by the plan before pingora's
//! upstream phases run) and [`attempt`] (with the backend of the current attempt, set by
//! `upstream_peer`): an internal error, never a panic, when a phase runs without them.

use crate::request::ctx::RequestCtx;
use crate::upstream::Backend;
use pingora::prelude::*;
use std::sync::Arc;

/// A phase of pingora's pipeline ran without `request_filter`'s plan (or, after
/// `upstream_peer`, without a backend): an internal error, never a panic.
pub(super) fn unplanned() -> Box<Error> {
    Error::explain(
        ErrorType::InternalError,
        "no upstream was planned for this request",
    )
}

/// The fast path's state (set by the plan before pingora's upstream phases run).
pub(super) fn native(ctx: &mut RequestCtx) -> Result<&mut crate::request::ctx::Native> {
    ctx.native.as_mut().ok_or_else(unplanned)
}

/// The fast path's state and the backend of its current attempt (set by `upstream_peer`
/// before every later phase): the one place the fast path's phases look them up.
pub(super) fn attempt<'a>(
    native: &'a mut Option<crate::request::ctx::Native>,
    backend: &'a Option<Arc<Backend>>,
) -> Result<(&'a mut crate::request::ctx::Native, &'a Arc<Backend>)> {
    match (native.as_mut(), backend.as_ref()) {
        (Some(native), Some(backend)) => Ok((native, backend)),
        _ => Err(unplanned()),
    }
}
