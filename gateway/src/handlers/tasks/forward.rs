//! The buffered path's routing of a task's request: unknown (balanced), another principal's
//! (answered as unknown), a shared pool's (balanced), or pinned to its pod.

use crate::classify::Routed;
use crate::downstream::client::Client;
use crate::error::GatewayError;
use crate::forward::relay::{client_response, write_whole};
use crate::request::{ctx::RequestCtx, Gateway, Handled};
use crate::routing::Route;
use crate::tasks::errors::Lost;
use crate::tasks::{Found, TaskRecord};
use crate::upstream::attempt::{Pick, Step};
use crate::upstream::client::CallError;
use crate::upstream::encoding;
use crate::upstream::request::{self, Target};
use crate::upstream::{Backend, Pool};
use bytes::Bytes;
use std::sync::Arc;

/// The largest task answer the gateway reads whole (a `tasks/get` of a pod that may have
/// forgotten the task, an answer to a foreign task): the task's result is in it.
const ANSWER_LIMIT: usize = 16 * 1024 * 1024;

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
            let pool = balanced;
            gw.tasks.count(&pool.name, "foreign");
            as_unknown(gw, session, ctx, route, &pool, body, &task_id).await?;
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
    let to = (route.as_ref(), scope);
    pinned(
        gw, session, ctx, to, &pool, &backend, body, &record, &task_id,
    )
    .await?;
    Ok(Routing::Answered)
}

/// Sends a task request to the pod holding the task, once, and relays its answer (read whole:
/// a pod that answers "unknown task" for a task it created forgot it).
#[allow(clippy::too_many_arguments)]
async fn pinned(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    (route, scope): (&Route, &str),
    pool: &Arc<Pool>,
    backend: &Arc<Backend>,
    body: Bytes,
    record: &TaskRecord,
    task_id: &str,
) -> Handled {
    let client = session.req_header();
    let path = route.upstream_path(client.uri.path());
    let target = Target {
        path: &path,
        host: &backend.host_header,
    };
    let mut req = request::forwarded(client, target, None, Some(body.len()))?;
    request::identify(&mut req, pool);
    ctx.tried.push(backend.addr);
    ctx.backend = Some(backend.clone());
    let mut ex = match gw.engine.send(pool, backend, &req, body, false).await {
        Ok(ex) => ex,
        Err(CallError::Credentials(e)) => return Err((*e).into()),
        Err(CallError::Connect(_) | CallError::Lost(_)) => {
            return Err(lost(gw, record, task_id, Lost::BackendGone));
        }
    };
    let mut head = client_response(ex.header(), None);
    let mut answer = match ex.read_all(ANSWER_LIMIT).await {
        Ok(answer) => answer,
        Err(_) => return Err(lost(gw, record, task_id, Lost::BackendGone)),
    };
    gw.engine.release(ex);
    // read as the client would: an answer in a coding the gateway cannot read passes as it is
    let _ = encoding::decode_in_place(&mut head, &mut answer, ANSWER_LIMIT);
    let sse = mcp_wire::sse::is_event_stream(
        head.headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
    );
    if crate::tasks::says_unknown(sse, &answer, task_id) {
        return Err(lost(gw, record, task_id, Lost::Forgotten));
    }
    gw.tasks.count(&pool.name, "routed");
    if mcp_wire::tasks::ended_in_answer(sse, &answer) {
        gw.tasks.ended(scope, task_id, record.principal.as_ref());
    }
    ctx.capture_response(&answer);
    encoding::decoded_head(&mut head, answer.len());
    Ok(write_whole(session, head, answer).await?)
}

/// Another principal's task: sent, balanced, with an id no server issued in its place, and
/// answered with what the server says of that id, the client's id put back: byte for byte
/// what the client would get for a task that does not exist.
async fn as_unknown(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    route: &Route,
    pool: &Arc<Pool>,
    body: Bytes,
    task_id: &str,
) -> Handled {
    let stand_in = format!("gw-unknown-{}", uuid::Uuid::new_v4().simple());
    let rewritten = mcp_wire::rewrite::replace_string(&body, &["params", "taskId"], &stand_in)
        .ok_or_else(|| GatewayError::task_id_missing("tasks/get"))?;
    let body = Bytes::from(rewritten);
    let client = session.req_header();
    let path = route.upstream_path(client.uri.path());
    let (path, body_ref, engine) = (&*path, &body, gw.engine.as_ref());
    let stand_in_ref = stand_in.as_str();
    let pick = Pick::sessionless(ctx.era);
    let sent = engine
        .each_backend(pool, pick, &mut ctx.tried, |b| {
            Box::pin(async move {
                let target = Target {
                    path,
                    host: &b.host_header,
                };
                let mut req = match request::forwarded(client, target, None, Some(body_ref.len())) {
                    Ok(req) => req,
                    Err(e) => return Step::Stop(e),
                };
                request::identify(&mut req, pool);
                // `Mcp-Name` must name the stand-in too (a server checks it against the body)
                req.remove_header(mcp_wire::headers::MCP_NAME);
                let _ = req.insert_header(mcp_wire::headers::MCP_NAME, stand_in_ref);
                match engine.send(pool, &b, &req, body_ref.clone(), true).await {
                    Ok(ex) => Step::Done(ex),
                    Err(CallError::Connect(_)) => Step::Unreachable,
                    Err(CallError::Lost(_)) => Step::Lost,
                    Err(CallError::Credentials(e)) => Step::Stop(*e),
                }
            })
        })
        .await?;
    let mut ex = sent;
    let mut head = client_response(ex.header(), None);
    let mut answer = ex
        .read_all(ANSWER_LIMIT)
        .await
        .map_err(|_| GatewayError::backend_lost(&pool.name, "-"))?;
    gw.engine.release(ex);
    let _ = encoding::decode_in_place(&mut head, &mut answer, ANSWER_LIMIT);
    let escaped = serde_json::to_string(task_id).unwrap_or_default();
    let escaped = escaped.trim_matches('"');
    let answer = Bytes::from(replace_all(
        &answer,
        stand_in.as_bytes(),
        escaped.as_bytes(),
    ));
    encoding::decoded_head(&mut head, answer.len());
    Ok(write_whole(session, head, answer).await?)
}

/// `haystack` with every `from` replaced by `to`.
fn replace_all(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut rest = haystack;
    while let Some(at) = memchr::memmem::find(rest, from) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(to);
        rest = &rest[at + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// A recorded task that cannot be reached: counted, forgotten, and the error to answer.
/// The record stays: every later request for the task is told the same.
fn lost(gw: &Gateway, record: &TaskRecord, task_id: &str, why: Lost) -> crate::error::Fail {
    gw.tasks.count(&record.pool, "lost");
    GatewayError::task_lost(&record.pool, task_id, why).into()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_stand_in_is_put_back() {
        let out = super::replace_all(b"a XY b XY", b"XY", b"t\\\"1");
        assert_eq!(out, b"a t\\\"1 b t\\\"1");
    }
}
