//! The buffered path's routing of a task's request: unknown (balanced), another principal's
//! (answered as unknown), a shared pool's (balanced), or pinned to its pod. What is answered
//! here is sent by the one sender (`forward/task.rs`) under the route's deadline, its answer
//! relayed as it streams through `reshape.rs`.

use super::reshape::{Held, StandIn, Verdict};
use crate::classify::Routed;
use crate::downstream::client::Client;
use crate::error::{ErrorKind, GatewayError};
use crate::forward::task::{self, Sent, TaskRequest, To};
use crate::request::ctx::{Outcome, RequestCtx};
use crate::request::{Gateway, Handled};
use crate::routing::Route;
use crate::tasks::errors::Lost;
use crate::tasks::{Found, TaskRecord};
use crate::upstream::Backend;
use bytes::Bytes;
use mcp_wire::RequestId;
use std::sync::Arc;

/// What became of a task's request: answered here (pinned to its pod, or another principal's
/// answered as unknown), or to be balanced like any request of its route (no record of it, or
/// a `tasks: shared` pool's), which its handler does.
pub(crate) enum Routing {
    /// The client has its answer.
    Answered,
    /// Balance it: to `routed`'s pool, with its body.
    Balanced {
        /// Where it goes on its route.
        routed: Routed,
        /// Its body, as read.
        body: Bytes,
    },
}

/// Routes a read request naming a task (`task_id`, from `params.taskId`) to where the task
/// lives, on `route`; the task's record is looked up in `scope` (the client-facing route's
/// label: `route`'s own, or a virtual route's, whose member `route` is). `routed` is where the
/// classification sends the request on `route` (for a task it holds no record of).
pub(crate) async fn forward(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    (route, scope, routed): (&Arc<Route>, &str, Routed),
    body: Bytes,
    (method, task_id): (&str, Option<&str>),
) -> Result<Routing, crate::error::Fail> {
    let limit = ctx.state.config.tasks.max_id_bytes;
    let task_id = match task_id {
        None => return Err(GatewayError::task_id_missing(method).into()),
        Some(id) if id.len() > limit => return Err(GatewayError::task_id_too_long(limit).into()),
        Some(id) => id.to_owned(),
    };
    let principal = ctx.principal.as_ref().map(|p| p.id.clone());
    let found = gw
        .tasks
        .find(&ctx.state.config.tasks, scope, &task_id, principal.as_ref())
        .await
        .map_err(GatewayError::from)?;
    let balanced = ctx.state.pool(routed.pool)?;
    if crate::classify::takes(ctx, &balanced) {
        return Err(GatewayError::tasks_not_bridged(method).into());
    }
    let record = match found {
        Found::Unknown => {
            let pool = balanced;
            gw.tasks.count(&pool.name, "unknown");
            return Ok(Routing::Balanced { routed, body });
        }
        Found::Foreign => {
            gw.tasks.count(&balanced.name, "foreign");
            let req = TaskRequest {
                route,
                pool: &balanced,
                body,
                deadline: routed.deadline,
            };
            Box::pin(as_unknown(gw, session, ctx, req, &task_id)).await?;
            return Ok(Routing::Answered);
        }
        Found::Mine(record) => record,
    };
    let state = ctx.state.clone();
    let at = state
        .config
        .pools
        .iter()
        .position(|p| p.name == record.pool);
    let Some((pool, config)) = at.map(|i| (state.pools[i].clone(), &state.config.pools[i])) else {
        return Err(lost(gw, &record, &task_id, Lost::BackendGone));
    };
    if config.tasks_shared {
        gw.tasks.count(&pool.name, "balanced");
        let routed = Routed {
            pool: at.unwrap_or(routed.pool),
            ..routed
        };
        return Ok(Routing::Balanced { routed, body });
    }
    let Some(backend) = pool.find(record.backend) else {
        return Err(lost(gw, &record, &task_id, Lost::BackendGone));
    };
    let req = TaskRequest {
        route,
        pool: &pool,
        body,
        deadline: routed.deadline,
    };
    let pinned = pinned(gw, session, ctx, (req, scope), &backend, &record, &task_id);
    Box::pin(pinned).await?;
    Ok(Routing::Answered)
}

/// Sends a task request to the pod holding the task, once, through the one sender under the
/// route's deadline, and relays its answer (held while it may be the pod's "unknown task": a
/// pod that answers so for a task it created forgot it).
async fn pinned(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    (req, scope): (TaskRequest<'_>, &str),
    backend: &Arc<Backend>,
    record: &TaskRecord,
    task_id: &str,
) -> Handled {
    let pool = req.pool.clone();
    let id = ctx.request_id.clone().unwrap_or_else(RequestId::null);
    let mut held = Held::new(task_id, &pool.name, id);
    let sent = task::send(gw, session, ctx, req, To::Pod(backend), &mut held).await?;
    if let Sent::Unreachable = sent {
        return Err(lost(gw, record, task_id, Lost::BackendGone));
    }
    match held.verdict {
        Verdict::Forgotten => {
            gw.tasks.count(&record.pool, "lost");
            ctx.outcome = Outcome::Answered(ErrorKind::TaskLost);
        }
        Verdict::Answered { ended, answer } => {
            gw.tasks.count(&pool.name, "routed");
            if ended {
                gw.tasks.ended(scope, task_id, record.principal.as_ref());
            }
            ctx.capture_response(&answer);
        }
        Verdict::Passed => gw.tasks.count(&pool.name, "routed"),
    }
    Ok(())
}

/// Another principal's task: sent, balanced, with an id no server issued in its place, and
/// answered with what the server says of that id, the client's id put back as the answer
/// streams: byte for byte what the client would get for a task that does not exist.
async fn as_unknown(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    req: TaskRequest<'_>,
    task_id: &str,
) -> Handled {
    let stand_in = format!("gw-unknown-{}", uuid::Uuid::new_v4().simple());
    let rewritten = mcp_wire::rewrite::replace_string(&req.body, &["params", "taskId"], &stand_in)
        .ok_or_else(|| GatewayError::task_id_missing("tasks/get"))?;
    let req = TaskRequest {
        body: Bytes::from(rewritten),
        ..req
    };
    let mut put_back = StandIn::new(&stand_in, task_id);
    let to = To::Any { name: &stand_in };
    task::send(gw, session, ctx, req, to, &mut put_back).await?;
    Ok(())
}

/// A recorded task that cannot be reached: counted, forgotten, and the error to answer.
/// The record stays: every later request for the task is told the same.
fn lost(gw: &Gateway, record: &TaskRecord, task_id: &str, why: Lost) -> crate::error::Fail {
    gw.tasks.count(&record.pool, "lost");
    GatewayError::task_lost(&record.pool, task_id, why).into()
}
