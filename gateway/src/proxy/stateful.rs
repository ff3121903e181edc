//! Stateful routes: the gateway terminates MCP sessions of legacy servers. A client's
//! `initialize` creates a gateway session pinned to one backend; later requests are sent to
//! that backend with its own session id swapped in; when the backend is down, refuses, or
//! forgot the session, the session is re-initialized elsewhere and the request forwarded there,
//! so the client never notices. What cannot be repeated safely gets a JSON-RPC error.

use super::ctx::RequestCtx;
use super::forward::{
    client_response, end_with_error, forward_any, read_body, relay, upstream_request, within,
    write_whole, Outbound, Relayed,
};
use super::{respond, Gateway};
use crate::config::Mode;
use crate::error::GatewayError;
use crate::mcp::headers::MCP_SESSION_ID;
use crate::mcp::{inspect, method_label, sse, Era, RequestId};
use crate::routing::Route;
use crate::session::reinit::{self, Reason};
use crate::session::{self, Binding, GoneReason, Lookup, SessionRecord, Settings};
use crate::upstream::client::{CallError, Exchange};
use crate::upstream::{Backend, Pool};
use bytes::Bytes;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::prelude::*;
use std::sync::Arc;

/// Methods whose repetition cannot change server state: retried transparently when the
/// backend was lost mid-answer.
pub const REPEATABLE: &[&str] = &[
    "tools/list",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "completion/complete",
    "ping",
];

/// Largest initialize answer or error answer buffered for inspection.
const ANSWER_LIMIT: usize = 1024 * 1024;

/// One request on a session route, as far as the gateway needs to know it.
struct Call {
    body: Bytes,
    method: Option<String>,
    id: RequestId,
    /// Safe to send twice.
    repeatable: bool,
    /// Raw `params` for session settings (setLevel, subscribe) and initialize.
    params: Option<Arc<str>>,
    /// `params.name` / `params.uri`, for routing rules on the stateless path of auto routes.
    name: Option<String>,
    /// `_meta` says 2026-07-28 or later: no session (auto routes).
    stateless: bool,
}

impl Call {
    fn is(&self, m: &str) -> bool {
        self.method.as_deref() == Some(m)
    }
}

/// Handles a request on a stateful (or auto, legacy-era) route. Always answers the client.
pub async fn handle(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    route: &Route,
) -> Result<bool> {
    let state = ctx.state.clone().expect("state set in new_ctx");
    let pool = state.pools[route.default_pool].clone();
    ctx.pool = route.default_pool;
    let sid = session
        .req_header()
        .headers
        .get(MCP_SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let method = session.req_header().method.clone();
    if method == http::Method::GET || method == http::Method::DELETE {
        return match sid {
            None => sessionless(gw, session, ctx, &pool, route, Bytes::new(), true).await,
            Some(sid) if method == http::Method::DELETE => {
                delete(gw, session, ctx, &pool, &sid).await
            }
            Some(sid) => stream(gw, session, ctx, &pool, &sid).await,
        };
    }
    let body = match read_body(session, state.config.max_body_bytes).await {
        Ok(b) => b,
        Err(e) => return answered(session, ctx, &e).await,
    };
    let call = match classify(body) {
        Ok(call) => call,
        Err(e) => return answered(session, ctx, &e).await,
    };
    ctx.method_label = method_label(call.method.as_deref());
    ctx.request_id = Some(call.id.clone());
    ctx.note_tool(call.method.as_deref(), call.name.as_deref());
    if let (true, false, Some(tool)) = (
        call.is("tools/call"),
        ctx.tool_admitted,
        call.name.as_deref(),
    ) {
        if let Err(e) = state.admission.admit_tool(ctx.identity.as_deref(), tool) {
            return answered(session, ctx, &e).await;
        }
    }
    if route.mode == Mode::Auto && call.stateless {
        // A 2026-07-28 body without the version header: no session, rules apply.
        ctx.pool = route.pool_for(call.method.as_deref(), call.name.as_deref());
        let pool = state.pools[ctx.pool].clone();
        let path = route
            .upstream_path(session.req_header().uri.path())
            .into_owned();
        let out = Outbound {
            path,
            body: call.body,
            repeatable: call.repeatable,
            deadline: route.deadline(call.method.as_deref(), call.name.as_deref()),
        };
        return forward_any(&gw.client, session, ctx, &pool, out).await;
    }
    match sid {
        None if call.is("initialize") => initialize(gw, session, ctx, &pool, route, call).await,
        None => sessionless(gw, session, ctx, &pool, route, call.body, call.repeatable).await,
        Some(sid) => in_session(gw, session, ctx, (&pool, route), &sid, call).await,
    }
}

fn classify(body: Bytes) -> std::result::Result<Call, GatewayError> {
    let info = inspect::inspect_body(&body)?;
    let method = info.method.as_deref().map(str::to_owned);
    let id = info.request_id();
    let repeatable = match (&method, info.id.is_some()) {
        (None, _) => false, // a response to a server request: only its session can take it
        (Some(_), false) => true, // notifications
        (Some(m), true) => REPEATABLE.contains(&m.as_str()) || m == "initialize",
    };
    let wants_params = matches!(
        method.as_deref(),
        Some("initialize" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe")
    );
    let params = wants_params
        .then(|| inspect::params_raw(&body).map(|p| Arc::<str>::from(p.get())))
        .flatten();
    let name = info.name.as_deref().map(str::to_owned);
    let stateless = Era::of_version(info.meta_protocol_version.as_deref()) == Era::Stateless;
    drop(info);
    Ok(Call {
        body,
        method,
        id,
        repeatable,
        params,
        name,
        stateless,
    })
}

async fn answered(session: &mut Session, ctx: &mut RequestCtx, err: &GatewayError) -> Result<bool> {
    respond::answer(session, ctx, err).await;
    Ok(true)
}

/// A request without a session (and not an initialize): forwarded to any backend, which
/// answers it (legacy servers refuse it with 400; throwaway session ids are dropped).
async fn sessionless(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    pool: &Arc<Pool>,
    route: &Route,
    body: Bytes,
    repeatable: bool,
) -> Result<bool> {
    let path = route
        .upstream_path(session.req_header().uri.path())
        .into_owned();
    let out = Outbound {
        path,
        body,
        repeatable,
        deadline: None,
    };
    forward_any(&gw.client, session, ctx, pool, out).await
}

/// A client's initialize: creates the gateway session on the least-loaded backend.
async fn initialize(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    pool: &Arc<Pool>,
    route: &Route,
    call: Call,
) -> Result<bool> {
    let state = ctx.state.clone().expect("state");
    let max = state.config.sessions.max;
    if gw.sessions.store.len() >= max {
        return answered(session, ctx, &GatewayError::session_limit(max)).await;
    }
    let client: Arc<str> = ctx.identity.clone().unwrap_or_else(|| "".into());
    if let Err(e) = gw.sessions.open_for(&client) {
        return answered(session, ctx, &e).await;
    }
    let mut slot = ClientSlot {
        sessions: &gw.sessions,
        client,
        kept: false,
    };
    let path: Arc<str> = route.upstream_path(session.req_header().uri.path()).into();
    while let Some(backend) = pool.select_for_session(&ctx.tried) {
        if ctx.tried.len() > pool.retries {
            break;
        }
        ctx.tried.push(backend.addr);
        ctx.backend = Some(backend.clone());
        ctx.inflight = Some(Pool::track(&backend));
        let req = upstream_request(
            session.req_header(),
            &path,
            &backend.host,
            None,
            Some(call.body.len()),
        )?;
        let mut ex = match gw
            .client
            .send(pool.peer(&backend), &req, call.body.clone(), true)
            .await
        {
            Ok(ex) => ex,
            Err(_) => {
                pool.mark_failed(&backend);
                continue;
            }
        };
        pool.mark_ok(&backend);
        let backend_session = ex
            .header()
            .headers
            .get(MCP_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(Arc::<str>::from);
        let Some(backend_session) = backend_session.filter(|_| ex.header().status.is_success())
        else {
            // A refusal (maybe with a throwaway session id): the client sees it, minus the id.
            let head = client_response(ex.header(), None);
            if let Relayed::Done = relay(&mut ex, session, head, None).await? {
                gw.client.release(ex).await;
            }
            return Ok(true);
        };
        let Ok(answer) = ex.read_all(ANSWER_LIMIT).await else {
            pool.mark_failed(&backend);
            continue;
        };
        let upstream_head = ex.header().clone();
        gw.client.release(ex).await;
        let content_type = upstream_head
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok());
        let version = sse::response(content_type, &answer).and_then(|v| {
            v.pointer("/result/protocolVersion")?
                .as_str()
                .map(Arc::<str>::from)
        });
        let Some(version) = version else {
            // An error answer in a 2xx: nothing to pin.
            write_whole(session, client_response(&upstream_head, None), answer).await?;
            return Ok(true);
        };
        let record = SessionRecord {
            id: session::new_session_id(),
            pool: pool.name.as_str().into(),
            client: slot.client.clone(),
            path: path.clone(),
            init_params: call.params.clone().unwrap_or_else(|| "{}".into()),
            protocol_version: version,
            binding: Binding {
                backend: backend.addr,
                backend_session,
                generation: 1,
                stale: false,
            },
            settings: Settings::default(),
            last_use_ms: session::now_ms(),
        };
        let id = record.id.clone();
        if let Err(full) = gw.sessions.store.insert(record.clone()).await {
            gw.sessions.delete_upstream(pool, &record).await;
            return answered(session, ctx, &GatewayError::session_limit(full.max)).await;
        }
        slot.kept = true;
        pool.count_session(backend.addr, true);
        gw.metrics
            .sessions_created
            .with_label_values(&[&pool.name])
            .inc();
        tracing::debug!(session = session::short(&id), backend = %backend.addr, "session created");
        write_whole(session, client_response(&upstream_head, Some(&id)), answer).await?;
        return Ok(true);
    }
    let e = GatewayError::unavailable(&pool.name, ctx.tried.len());
    answered(session, ctx, &e).await
}

/// A client's share of sessions taken for an initialize, given back unless a session was made.
struct ClientSlot<'a> {
    sessions: &'a crate::session::reinit::Sessions,
    client: Arc<str>,
    kept: bool,
}

impl Drop for ClientSlot<'_> {
    fn drop(&mut self) {
        if !self.kept {
            self.sessions.close_for(&self.client);
        }
    }
}

/// The live record for a client's session id, or the 404 to answer.
async fn live(gw: &Gateway, sid: &str) -> std::result::Result<SessionRecord, GatewayError> {
    match gw.sessions.store.lookup(sid).await {
        Lookup::Live(r) => Ok(r),
        Lookup::Gone(reason) => Err(GatewayError::session_not_found(reason.as_str())),
        Lookup::Unknown => Err(GatewayError::session_not_found("unknown")),
    }
}

/// The session's backend, or why the binding cannot be used as it is.
fn bound_backend(
    pool: &Pool,
    rec: &SessionRecord,
    drain: std::time::Duration,
) -> std::result::Result<Arc<Backend>, Reason> {
    match pool.find(rec.binding.backend) {
        None => Err(Reason::BackendGone),
        Some(b) if b.is_failed() => Err(Reason::BackendDown),
        Some(_) if rec.binding.stale => Err(Reason::ConnectionLost),
        Some(b) if b.draining_for().is_some_and(|d| d >= drain) => Err(Reason::Drained),
        Some(b) => Ok(b),
    }
}

/// What goes upstream within a session.
struct Outgoing<'a> {
    body: &'a Bytes,
    repeatable: bool,
    is_post: bool,
}

/// Sends `call` on the session's backend, moving the session as often as needed (bounded);
/// returns the exchange with the response head read, and the record it was sent under.
async fn send_in_session(
    gw: &Gateway,
    ctx: &mut RequestCtx,
    pool: &Arc<Pool>,
    client_req: &RequestHeader,
    mut rec: SessionRecord,
    out: Outgoing<'_>,
) -> std::result::Result<(Exchange, SessionRecord), GatewayError> {
    let Outgoing {
        body,
        repeatable,
        is_post,
    } = out;
    let pool_config = ctx
        .state
        .as_ref()
        .expect("state")
        .config
        .pool_named(&pool.name)
        .cloned();
    let (not_found, drain) = pool_config
        .map(|p| (p.session_not_found, p.drain_timeout))
        .unwrap_or_default();
    for _ in 0..=pool.backends().len() + 1 {
        let backend = match bound_backend(pool, &rec, drain) {
            Ok(b) => b,
            Err(reason) => {
                rec = gw.sessions.recover(pool, &rec, reason).await?;
                continue;
            }
        };
        ctx.backend = Some(backend.clone());
        ctx.inflight = Some(Pool::track(&backend));
        let len = is_post.then_some(body.len());
        let req = upstream_request(
            client_req,
            &rec.path,
            &backend.host,
            Some(&rec.binding.backend_session),
            len,
        )
        .map_err(|e| GatewayError::internal(e.to_string()))?;
        let started = std::time::Instant::now();
        match gw
            .client
            .send(pool.peer(&backend), &req, body.clone(), repeatable)
            .await
        {
            Err(CallError::Connect(_)) => {
                pool.mark_failed(&backend);
                rec = gw
                    .sessions
                    .recover(pool, &rec, Reason::ConnectRefused)
                    .await?;
            }
            Err(CallError::Lost(_)) => {
                gw.sessions
                    .store
                    .mark_stale(&rec.id, rec.binding.generation)
                    .await;
                if !repeatable {
                    gw.metrics
                        .inflight_lost
                        .with_label_values(&[&pool.name, ctx.method_label])
                        .inc();
                    return Err(GatewayError::backend_lost(&pool.name, &backend.label));
                }
                rec = gw
                    .sessions
                    .recover(pool, &rec, Reason::ConnectionLost)
                    .await?;
            }
            Ok(mut ex) => {
                gw.metrics
                    .upstream_duration
                    .with_label_values(&[&pool.name])
                    .observe(started.elapsed().as_secs_f64());
                let status = ex.header().status.as_u16();
                if !not_found.iter().any(|r| r.status == status) {
                    return Ok((ex, rec));
                }
                let content_type = ex
                    .header()
                    .headers
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let answer = ex.read_all(ANSWER_LIMIT).await.unwrap_or_default();
                if session::is_not_found(&not_found, status, content_type.as_deref(), &answer) {
                    gw.client.release(ex).await;
                    rec = gw
                        .sessions
                        .recover(pool, &rec, Reason::SessionUnknown)
                        .await?;
                    continue;
                }
                return Ok((ex.with_buffered(answer), rec));
            }
        }
    }
    Err(GatewayError::unavailable(&pool.name, pool.backends().len()))
}

/// A POST within a session.
async fn in_session(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    (pool, route): (&Arc<Pool>, &Route),
    sid: &str,
    call: Call,
) -> Result<bool> {
    let rec = match live(gw, sid).await {
        Ok(r) => r,
        Err(e) => return answered(session, ctx, &e).await,
    };
    let deadline = route.deadline(call.method.as_deref(), call.name.as_deref());
    let until = deadline.map(|d| tokio::time::Instant::now() + d);
    let client_req = session.req_header().clone();
    let out = Outgoing {
        body: &call.body,
        repeatable: call.repeatable,
        is_post: true,
    };
    let sending = send_in_session(gw, ctx, pool, &client_req, rec.clone(), out);
    let Some(sent) = within(until, sending).await else {
        cancel_upstream(gw, pool, &rec, &call).await;
        let backend = rec.binding.backend.to_string();
        let e = GatewayError::deadline(&pool.name, &backend, deadline.unwrap_or_default());
        return answered(session, ctx, &e).await;
    };
    let (mut ex, rec) = match sent {
        Ok(ok) => ok,
        Err(e) => return answered(session, ctx, &e).await,
    };
    if ex.header().status.is_success() {
        remember_setting(gw, &rec, &call).await;
    }
    let head = client_response(ex.header(), None);
    let backend = rec.binding.backend.to_string();
    match relay(&mut ex, session, head, until).await? {
        Relayed::Done => gw.client.release(ex).await,
        Relayed::TimedOut { sse } => {
            drop(ex);
            cancel_upstream(gw, pool, &rec, &call).await;
            let e = GatewayError::deadline(&pool.name, &backend, deadline.unwrap_or_default());
            end_with_error(session, sse, &e, &call.id).await?;
        }
        Relayed::Broken { sse } => {
            gw.sessions
                .store
                .mark_stale(&rec.id, rec.binding.generation)
                .await;
            gw.metrics
                .inflight_lost
                .with_label_values(&[&pool.name, ctx.method_label])
                .inc();
            let e = GatewayError::backend_lost(&pool.name, &backend);
            end_with_error(session, sse, &e, &call.id).await?;
        }
    }
    gw.sessions.store.touch(&rec.id, session::now_ms()).await;
    Ok(true)
}

/// Tells the backend session that a request past its deadline is cancelled
/// (`notifications/cancelled`), so the server can stop working on it. Best effort.
async fn cancel_upstream(gw: &Gateway, pool: &Pool, rec: &SessionRecord, call: &Call) {
    let Some(b) = pool.find(rec.binding.backend) else {
        return;
    };
    let params = format!(
        r#"{{"requestId":{},"reason":"deadline exceeded at the gateway"}}"#,
        call.id.as_json()
    );
    let body =
        format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{params}}}"#);
    let session_id = Some(&*rec.binding.backend_session);
    let Ok(req) = reinit::request(
        &rec.path,
        &b.host,
        session_id,
        Some(&rec.protocol_version),
        body.len(),
    ) else {
        return;
    };
    let sent = gw
        .client
        .call(pool.peer(&b), &req, Bytes::from(body), 64 * 1024);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), sent).await;
}

async fn remember_setting(gw: &Gateway, rec: &SessionRecord, call: &Call) {
    let Some(params) = &call.params else { return };
    let store = &gw.sessions.store;
    if call.is("logging/setLevel") {
        store.set_log_level(&rec.id, params.clone()).await;
    } else if call.is("resources/subscribe") || call.is("resources/unsubscribe") {
        let uri = serde_json::from_str::<serde_json::Value>(params)
            .ok()
            .and_then(|v| v.get("uri")?.as_str().map(Arc::<str>::from));
        if let Some(uri) = uri {
            store
                .set_subscription(&rec.id, uri, call.is("resources/subscribe"))
                .await;
        }
    }
}

/// GET: the session's server→client SSE stream, on its current backend. A stream whose
/// backend dies is ended cleanly; the client's next GET lands on the new backend.
async fn stream(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    pool: &Arc<Pool>,
    sid: &str,
) -> Result<bool> {
    let rec = match live(gw, sid).await {
        Ok(r) => r,
        Err(e) => return answered(session, ctx, &e).await,
    };
    let client_req = session.req_header().clone();
    let (mut ex, rec) = match send_in_session(
        gw,
        ctx,
        pool,
        &client_req,
        rec,
        Outgoing {
            body: &Bytes::new(),
            repeatable: true,
            is_post: false,
        },
    )
    .await
    {
        Ok(ok) => ok,
        Err(e) => return answered(session, ctx, &e).await,
    };
    let head = client_response(ex.header(), None);
    match relay(&mut ex, session, head, None).await? {
        Relayed::Done => gw.client.release(ex).await,
        Relayed::TimedOut { .. } | Relayed::Broken { .. } => {
            gw.sessions
                .store
                .mark_stale(&rec.id, rec.binding.generation)
                .await;
            session.write_response_body(None, true).await?;
        }
    }
    Ok(true)
}

/// DELETE: the session ends at the gateway whatever the backend says (it may be down).
async fn delete(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    pool: &Arc<Pool>,
    sid: &str,
) -> Result<bool> {
    let rec = match live(gw, sid).await {
        Ok(r) => r,
        Err(e) => return answered(session, ctx, &e).await,
    };
    if let Some(rec) = gw
        .sessions
        .end(pool, &rec.id, GoneReason::Deleted, "deleted")
        .await
    {
        gw.sessions.delete_upstream(pool, &rec).await;
    }
    let mut head = ResponseHeader::build(200, Some(1))?;
    head.insert_header(http::header::CONTENT_LENGTH, "0")?;
    write_whole(session, head, Bytes::new()).await?;
    Ok(true)
}
