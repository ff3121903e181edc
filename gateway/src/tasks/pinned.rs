//! [`Pinned`]: a task's request on the fast path, as the request's context holds it (what the
//! fast path's phases read; `route/fast.rs` makes it and reads its answer).

use crate::tasks::TaskRecord;
use crate::upstream::Backend;
use std::sync::Arc;

/// A task's request on the fast path, pinned to the pod holding the task.
pub struct Pinned {
    /// The pod.
    pub backend: Arc<Backend>,
    /// The task's record.
    pub record: Arc<TaskRecord>,
    /// The task's id (`Mcp-Name`, which the body is checked against).
    pub task_id: String,
    /// The answer held back while it may still be the pod's "unknown task" (a small JSON
    /// answer, or an SSE one of one event): `None` once it streams (or never held).
    pub held: Option<bytes::BytesMut>,
    /// The held answer is an event stream.
    pub sse: bool,
}
