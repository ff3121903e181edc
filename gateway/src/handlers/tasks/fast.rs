//! A task's request on the fast path, pinned to the pod holding the task; its answer held
//! only while it may be the pod's "unknown task".

use super::reshape::HELD_LIMIT;
use crate::error::GatewayError;
use crate::request::{ctx::RequestCtx, Gateway};
use crate::tasks::errors::Lost;
use crate::tasks::pinned::Pinned;
use crate::tasks::Found;
use crate::upstream::encoding;
use bytes::Bytes;
use pingora::prelude::*;

/// A task's request on the fast path (its body will be checked against `Mcp-Name` before
/// anything is forwarded, so the header names the task the backend will read): an unknown
/// task stays on the fast path, balanced; the caller's task is pinned to its pod there (or
/// balanced, for a `tasks: shared` pool); everything rarer (another principal's task, a pod
/// gone, an id that is missing or too long) takes the buffered path, which reads the body
/// and answers with the request's id.
///
/// `Ok(true)`: the request stays on the fast path; `Ok(false)`: it takes the buffered path
/// (`ctx.native` cleared).
pub(crate) async fn pin(
    gw: &Gateway,
    ctx: &mut RequestCtx,
    name: Option<&str>,
) -> Result<bool, GatewayError> {
    let Some(native) = ctx.native.as_ref() else {
        return Ok(true);
    };
    let buffered = |ctx: &mut RequestCtx| {
        ctx.native = None;
        Ok(false)
    };
    let limit = ctx.state.config.tasks.max_id_bytes;
    let Some(task_id) = name.filter(|id| !id.is_empty() && id.len() <= limit) else {
        return buffered(ctx);
    };
    let principal = ctx.principal.as_ref().map(|p| p.id.clone());
    let found = gw
        .tasks
        .find(
            &ctx.state.config.tasks,
            &native.route.label,
            task_id,
            principal.as_ref(),
        )
        .await?;
    let Some(native) = ctx.native.as_mut() else {
        return Err(GatewayError::internal(
            "the fast path's state went away while its task was looked up",
        ));
    };
    let record = match found {
        Found::Unknown => {
            gw.tasks.count(&native.pool.name, "unknown");
            return Ok(true);
        }
        Found::Foreign => return buffered(ctx),
        Found::Mine(record) => record,
    };
    if record.pool != native.pool.name {
        return buffered(ctx);
    }
    let shared = ctx
        .state
        .config
        .pools
        .iter()
        .any(|p| p.name == record.pool && p.tasks_shared);
    if shared {
        gw.tasks.count(&native.pool.name, "balanced");
        return Ok(true);
    }
    let Some(backend) = native.pool.find(record.backend) else {
        return buffered(ctx);
    };
    native.task = Some(Box::new(Pinned {
        backend,
        record,
        task_id: task_id.to_owned(),
        held: None,
        sse: false,
    }));
    Ok(true)
}

/// The fast path's pinned task request could not reach its pod: the error to answer.
pub(crate) fn pinned_lost(gw: &Gateway, pinned: &Pinned) -> GatewayError {
    gw.tasks.count(&pinned.record.pool, "lost");
    GatewayError::task_lost(&pinned.record.pool, &pinned.task_id, Lost::BackendGone)
}

/// The pinned task answer's head: a 200 answer (JSON, or an event stream: the SDKs answer a
/// `tasks/get` with one event) is held back (sent chunked, its length may change) until it is
/// known not to be the pod's "unknown task".
pub(crate) fn hold_answer(pinned: &mut Pinned, upstream: &mut pingora::http::ResponseHeader) {
    let content_type = upstream
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let sse = mcp_wire::sse::is_event_stream(content_type);
    let json = content_type.is_some_and(|c| c.trim_start().starts_with("application/json"));
    if upstream.status.as_u16() != 200 || !(json || sse) || encoding::is_encoded(upstream) {
        return;
    }
    crate::forward::relay::rewritten_body(upstream);
    pinned.held = Some(bytes::BytesMut::new());
    pinned.sse = sse;
}

/// A chunk of a pinned task answer: held back while it may be "unknown task"; at its end,
/// the pod's answer, or -32038 `forgotten` in its place.
pub(crate) fn held_chunk(gw: &Gateway, ctx: &mut RequestCtx, body: &mut Option<Bytes>, end: bool) {
    let Some(pinned) = ctx.native.as_mut().and_then(|n| n.task.as_mut()) else {
        return;
    };
    let Some(held) = pinned.held.as_mut() else {
        return;
    };
    if let Some(chunk) = body.take() {
        held.extend_from_slice(&chunk);
    }
    if !end && held.len() <= HELD_LIMIT {
        return;
    }
    let answer = pinned.held.take().unwrap_or_default().freeze();
    if end && crate::tasks::says_unknown(pinned.sse, &answer, &pinned.task_id) {
        gw.tasks.count(&pinned.record.pool, "lost");
        let err = GatewayError::task_lost(&pinned.record.pool, &pinned.task_id, Lost::Forgotten);
        let id = ctx
            .body_prefix
            .as_deref()
            .map_or_else(mcp_wire::RequestId::null, crate::forward::respond::id_of);
        ctx.outcome = crate::request::ctx::Outcome::Answered(err.kind);
        *body = Some(match pinned.sse {
            true => err.event(&id),
            false => err.to_http(&id).2,
        });
        return;
    }
    if end {
        gw.tasks.count(&pinned.record.pool, "routed");
        if mcp_wire::tasks::ended_in_answer(pinned.sse, &answer) {
            let task_id = pinned.task_id.clone();
            let principal = pinned.record.principal.clone();
            if let Some(native) = ctx.native.as_ref() {
                gw.tasks
                    .ended(&native.route.label, &task_id, principal.as_ref());
            }
        }
    }
    *body = Some(answer);
}
