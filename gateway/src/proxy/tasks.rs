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

use super::relay::{client_response, write_whole};
use super::stateless::Routed;
use super::steps::Plan;
use super::{ctx::RequestCtx, Gateway, Handled};
use crate::error::GatewayError;
use crate::routing::Route;
use crate::tasks::errors::Lost;
use crate::tasks::{Found, TaskRecord};
use crate::upstream::attempt::{Pick, Step};
use crate::upstream::client::CallError;
use crate::upstream::encoding;
use crate::upstream::request::{self, Target};
use crate::upstream::{Backend, Pool};
use bytes::Bytes;
use mcp_wire::Era;
use pingora::prelude::*;
use std::sync::Arc;

/// The largest task answer the gateway reads whole (a `tasks/get` of a pod that may have
/// forgotten the task, an answer to a foreign task): the task's result is in it.
const ANSWER_LIMIT: usize = 16 * 1024 * 1024;

/// Whether this request's answer may carry a task handle the gateway should record: a
/// 2026-07-28 `tools/call` on a route that is not stateful, with `tasks` enabled.
pub(super) fn watched(ctx: &RequestCtx) -> bool {
    ctx.era == Era::Stateless && ctx.method_label == "tools/call" && ctx.state.config.tasks.enabled
}

/// Whether a request of `method` is one the gateway routes by its task.
pub(super) fn routes(ctx: &RequestCtx, method: Option<&str>) -> bool {
    ctx.era == Era::Stateless
        && ctx.state.config.tasks.enabled
        && matches!(method, Some("tasks/get" | "tasks/update" | "tasks/cancel"))
}

/// Starts watching the answer from `backend` of `pool` for a task handle.
pub(super) fn watch(
    gw: &Gateway,
    session: &mut Session,
    ctx: &RequestCtx,
    pool: &Pool,
    backend: &Backend,
) {
    if !watched(ctx) {
        return;
    }
    let scope = ctx.route_label().into();
    watch_for(gw, session, ctx, scope, pool, backend.addr, None);
}

/// The scope of a legacy session's tasks: the gateway session (a legacy task lives in its
/// session).
fn session_scope(session_id: &str) -> String {
    format!("session:{session_id}")
}

/// The legacy methods that name a task of the session.
pub(crate) fn legacy_task_method(method: Option<&str>) -> bool {
    matches!(method, Some("tasks/get" | "tasks/result" | "tasks/cancel"))
}

/// Starts watching a legacy session's `tools/call` answer for a (2025-11-25) task handle,
/// recorded with the session's binding generation.
pub(crate) fn watch_in_session(
    gw: &Gateway,
    session: &mut Session,
    ctx: &RequestCtx,
    pool: &Pool,
    rec: &crate::session::SessionRecord,
) {
    if !ctx.state.config.tasks.enabled || ctx.method_label != "tools/call" {
        return;
    }
    let scope = session_scope(&rec.id).into();
    let generation = Some(rec.binding.generation);
    watch_for(
        gw,
        session,
        ctx,
        scope,
        pool,
        rec.binding.backend,
        generation,
    );
}

/// A legacy task request of a session whose task was created under another binding (the
/// session moved since, so the pod that held the task is gone): the error to answer, and the
/// generation the task was created under (the session may move during this very request:
/// checked again once it was forwarded, [`moved_since`]).
pub(crate) async fn legacy_task(
    gw: &Gateway,
    ctx: &RequestCtx,
    pool: &Pool,
    rec: &crate::session::SessionRecord,
    (method, task_id): (Option<&str>, Option<&str>),
) -> Result<Option<u64>, GatewayError> {
    let (true, true, Some(task_id)) = (
        ctx.state.config.tasks.enabled,
        legacy_task_method(method),
        task_id,
    ) else {
        return Ok(None);
    };
    let found = gw
        .tasks
        .find(&session_scope(&rec.id), task_id, rec.principal.as_ref())
        .await
        .map_err(GatewayError::from)?;
    let Found::Mine(task) = found else {
        return Ok(None);
    };
    match task.generation {
        Some(g) if g != rec.binding.generation => {
            gw.tasks.count(&pool.name, "lost");
            Err(GatewayError::task_lost(
                &pool.name,
                task_id,
                Lost::SessionMoved,
            ))
        }
        other => Ok(other),
    }
}

/// After forwarding a legacy task request: the error to answer instead when the session moved
/// off the binding the task was created under.
pub(crate) fn moved_since(
    gw: &Gateway,
    pool: &Pool,
    rec: &crate::session::SessionRecord,
    created_under: Option<u64>,
    task_id: Option<&str>,
) -> Option<GatewayError> {
    let g = created_under?;
    if g == rec.binding.generation {
        return None;
    }
    gw.tasks.count(&pool.name, "lost");
    let task_id = task_id.unwrap_or_default();
    Some(GatewayError::task_lost(
        &pool.name,
        task_id,
        Lost::SessionMoved,
    ))
}

fn watch_for(
    gw: &Gateway,
    session: &mut Session,
    ctx: &RequestCtx,
    scope: Arc<str>,
    pool: &Pool,
    backend: std::net::SocketAddr,
    generation: Option<u64>,
) {
    let principal = ctx.principal.as_ref().map(|p| p.id.clone());
    let peer = session
        .client_addr()
        .and_then(|a| a.as_inet())
        .map(|a| a.ip());
    let learner = Learner {
        tasks: gw.tasks.clone(),
        config: ctx.state.config.tasks,
        scope,
        record: TaskRecord {
            pool: pool.name.clone(),
            backend,
            owner: crate::tasks::owner(principal.as_ref(), peer),
            principal,
            expires_ms: 0,
            generation,
        },
    };
    super::verdict::watch_tasks(session, learner);
}

/// A task's request on the fast path, pinned to the pod holding the task.
pub struct Pinned {
    /// The pod.
    pub backend: Arc<Backend>,
    /// The task's record.
    pub record: TaskRecord,
    /// The task's id (`Mcp-Name`, which the body is checked against).
    pub task_id: String,
    /// The answer held back while it may still be the pod's "unknown task" (a small JSON
    /// answer, or an SSE one of one event): `None` once it streams (or never held).
    pub held: Option<bytes::BytesMut>,
    /// The held answer is an event stream.
    pub sse: bool,
}

/// The most of a pinned task answer held back to see whether it is the pod's "unknown task"
/// (an error of a few hundred bytes): past it the answer streams on.
const HELD_LIMIT: usize = 64 * 1024;

/// A task's request on the fast path (its body will be checked against `Mcp-Name` before
/// anything is forwarded, so the header names the task the backend will read): an unknown
/// task stays on the fast path, balanced; the caller's task is pinned to its pod there (or
/// balanced, for a `tasks: shared` pool); everything rarer (another principal's task, a pod
/// gone, an id that is missing or too long) takes the buffered path, which reads the body
/// and answers with the request's id.
pub(super) async fn pin(
    gw: &Gateway,
    ctx: &mut RequestCtx,
    name: Option<&str>,
) -> Result<Plan, GatewayError> {
    let Some(native) = ctx.native.as_ref() else {
        return Ok(Plan::Native);
    };
    let route = native.route.clone();
    let buffered = |ctx: &mut RequestCtx| {
        ctx.native = None;
        Ok(Plan::Buffered {
            route: route.clone(),
            check: true,
        })
    };
    let limit = ctx.state.config.tasks.max_id_bytes;
    let Some(task_id) = name.filter(|id| !id.is_empty() && id.len() <= limit) else {
        return buffered(ctx);
    };
    let principal = ctx.principal.as_ref().map(|p| p.id.clone());
    let found = gw
        .tasks
        .find(&route.label, task_id, principal.as_ref())
        .await?;
    let native = ctx.native.as_mut().expect("checked above");
    let record = match found {
        Found::Unknown => {
            gw.tasks.count(&native.pool.name, "unknown");
            return Ok(Plan::Native);
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
        return Ok(Plan::Native);
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
    Ok(Plan::Native)
}

/// The fast path's pinned task request could not reach its pod: the error to answer.
pub(super) fn pinned_lost(gw: &Gateway, pinned: &Pinned) -> GatewayError {
    gw.tasks.count(&pinned.record.pool, "lost");
    GatewayError::task_lost(&pinned.record.pool, &pinned.task_id, Lost::BackendGone)
}

/// The pinned task answer's head: a 200 answer (JSON, or an event stream: the SDKs answer a
/// `tasks/get` with one event) is held back (sent chunked, its length may change) until it is
/// known not to be the pod's "unknown task".
pub(super) fn hold_answer(pinned: &mut Pinned, upstream: &mut pingora::http::ResponseHeader) {
    let content_type = upstream
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let sse = mcp_wire::sse::is_event_stream(content_type);
    let json = content_type.is_some_and(|c| c.trim_start().starts_with("application/json"));
    if upstream.status.as_u16() != 200 || !(json || sse) || encoding::is_encoded(upstream) {
        return;
    }
    super::relay::rewritten_body(upstream);
    pinned.held = Some(bytes::BytesMut::new());
    pinned.sse = sse;
}

/// A chunk of a pinned task answer: held back while it may be "unknown task"; at its end,
/// the pod's answer, or -32038 `forgotten` in its place.
pub(super) fn held_chunk(gw: &Gateway, ctx: &mut RequestCtx, body: &mut Option<Bytes>, end: bool) {
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
            .map_or_else(mcp_wire::RequestId::null, super::respond::id_of);
        ctx.outcome = super::ctx::Outcome::Answered(err.kind);
        *body = Some(match pinned.sse {
            true => err.event(&id),
            false => err.to_http(&id).2,
        });
        return;
    }
    if end {
        gw.tasks.count(&pinned.record.pool, "routed");
    }
    *body = Some(answer);
}

/// What records a handle once the answer carrying it has passed.
pub struct Learner {
    tasks: Arc<crate::tasks::Tasks>,
    config: crate::tasks::config::TasksConfig,
    scope: Arc<str>,
    record: TaskRecord,
}

impl Learner {
    /// Records the handle in a whole answer (JSON, or SSE when `sse`), if it carries one.
    pub fn learn(self, sse: bool, answer: &[u8]) {
        let Some(handle) = mcp_wire::tasks::handle_in_answer(sse, answer) else {
            return;
        };
        // a legacy handle counts in a legacy session, a modern one elsewhere
        let legacy = handle.era == mcp_wire::tasks::TaskEra::Legacy;
        if legacy != self.record.generation.is_some() {
            return;
        }
        let Learner {
            tasks,
            config,
            scope,
            record,
        } = self;
        tasks.learn(&config, &scope, &handle.task_id, handle.ttl_ms, record);
    }
}

/// Forwards a read request naming a task (`task_id`, from `params.taskId`) to where the task
/// lives.
pub(super) async fn forward(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    route: &Arc<Route>,
    body: Bytes,
    method: &str,
    task_id: Option<&str>,
) -> Handled {
    let limit = ctx.state.config.tasks.max_id_bytes;
    let task_id = match task_id {
        None => return Err(GatewayError::task_id_missing(method).into()),
        Some(id) if id.len() > limit => return Err(GatewayError::task_id_too_long(limit).into()),
        Some(id) => id.to_owned(),
    };
    let routed = Routed::of(route, Some(method), Some(&task_id));
    let principal = ctx.principal.as_ref().map(|p| p.id.clone());
    let found = gw
        .tasks
        .find(&route.label, &task_id, principal.as_ref())
        .await
        .map_err(GatewayError::from)?;
    let balanced = ctx.state.pool(routed.pool)?;
    if super::bridged::takes(ctx, &balanced) {
        return Err(GatewayError::tasks_not_bridged(method).into());
    }
    let record = match found {
        Found::Unknown => {
            let pool = balanced;
            gw.tasks.count(&pool.name, "unknown");
            return super::stateless::forward_body(gw, session, ctx, route, body, routed).await;
        }
        Found::Foreign => {
            let pool = balanced;
            gw.tasks.count(&pool.name, "foreign");
            return as_unknown(gw, session, ctx, route, &pool, body, &task_id).await;
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
        return super::stateless::forward_body(gw, session, ctx, route, body, routed).await;
    }
    let Some(backend) = pool.find(record.backend) else {
        return Err(lost(gw, &record, &task_id, Lost::BackendGone));
    };
    pinned(
        gw, session, ctx, route, &pool, &backend, body, &record, &task_id,
    )
    .await
}

/// Sends a task request to the pod holding the task, once, and relays its answer (read whole:
/// a pod that answers "unknown task" for a task it created forgot it).
#[allow(clippy::too_many_arguments)]
async fn pinned(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    route: &Route,
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
        host: &backend.host,
    };
    let mut req = request::forwarded(client, target, None, Some(body.len()))?;
    request::identify(&mut req, &pool.identity);
    ctx.tried.push(backend.addr);
    ctx.backend = Some(backend.clone());
    let mut ex = match gw.engine.send(pool, backend, &req, body, false).await {
        Ok(ex) => ex,
        Err(CallError::Connect(_) | CallError::Lost(_)) => {
            return Err(lost(gw, record, task_id, Lost::BackendGone));
        }
    };
    let mut head = client_response(ex.header(), None);
    let mut answer = match ex.read_all(ANSWER_LIMIT).await {
        Ok(answer) => answer,
        Err(_) => return Err(lost(gw, record, task_id, Lost::BackendGone)),
    };
    gw.engine.release(ex).await;
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
    ctx.capture_response(&answer);
    encoding::decoded_head(&mut head, answer.len());
    Ok(write_whole(session, head, answer).await?)
}

/// Another principal's task: sent, balanced, with an id no server issued in its place, and
/// answered with what the server says of that id, the client's id put back: byte for byte
/// what the client would get for a task that does not exist.
async fn as_unknown(
    gw: &Gateway,
    session: &mut Session,
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
                    host: &b.host,
                };
                let mut req = match request::forwarded(client, target, None, Some(body_ref.len())) {
                    Ok(req) => req,
                    Err(e) => return Step::Stop(e),
                };
                request::identify(&mut req, &pool.identity);
                // `Mcp-Name` must name the stand-in too (a server checks it against the body)
                req.remove_header(mcp_wire::headers::MCP_NAME);
                let _ = req.insert_header(mcp_wire::headers::MCP_NAME, stand_in_ref);
                match engine.send(pool, &b, &req, body_ref.clone(), true).await {
                    Ok(ex) => Step::Done(ex),
                    Err(CallError::Connect(_)) => Step::Unreachable,
                    Err(CallError::Lost(_)) => Step::Lost,
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
    gw.engine.release(ex).await;
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
fn lost(gw: &Gateway, record: &TaskRecord, task_id: &str, why: Lost) -> super::Fail {
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
