//! Tasks on stateless and auto routes (issue 34): the answers that carry a task handle are
//! watched as they stream to the client ([`watch`], read by the answer module in
//! `verdict.rs`), and the requests that name a task (`tasks/get`, `tasks/update`,
//! `tasks/cancel`) go to the pod that holds it ([`forward`]):
//! - no record: balanced like any request (the server answers as for an id it never issued);
//! - another principal's task: answered exactly as an unknown one (the request goes, balanced,
//!   with an id no server issued, and the answer comes back with the client's id in it);
//! - a task of a `tasks: shared` pool: balanced;
//! - else to its pod, once: gone from the pool, refusing connections, or answering that it
//!   does not know the task is -32038 `task-lost` at once.
//!
//! Here: which requests are watched and routed, and the watch itself; `legacy.rs`: legacy
//! tasks in sessions; `fast.rs`: a task's request pinned on the fast path; `forward.rs`: the
//! buffered path's routing, each request sent by the one sender (`forward/task.rs`) under the
//! route's deadline, its answer relayed as it streams through `reshape.rs` (held while it may
//! be the pod's "unknown task", or the stand-in id put back).

mod fast;
mod forward;
mod legacy;
mod reshape;

pub(crate) use fast::{held_chunk, hold_answer, pin, pinned_lost};
pub(crate) use forward::{forward, Routing};
pub(crate) use legacy::{legacy_task, legacy_task_method, moved_since, watch_in_session};

use crate::request::ctx::RequestCtx;
use mcp_wire::Era;

/// Whether a request of `method` is one the gateway routes by its task.
pub(crate) fn routes(ctx: &RequestCtx, method: Option<&str>) -> bool {
    ctx.era == Era::Stateless
        && ctx.state.config.tasks.enabled
        && matches!(method, Some("tasks/get" | "tasks/update" | "tasks/cancel"))
}
