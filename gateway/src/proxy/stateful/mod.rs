//! Stateful routes: the gateway terminates MCP sessions of legacy servers. A client's
//! `initialize` creates a gateway session pinned to one backend; later requests are sent to
//! that backend with its own session id swapped in; when the backend is down, refuses, or
//! forgot the session, the session is re-initialized elsewhere and the request forwarded there,
//! so the client never notices. What cannot be repeated safely gets a JSON-RPC error.

use super::ctx::RequestCtx;
use super::forward::{
    client_response, forward_any, read_body, relay, upstream_request, write_whole, Outbound,
    Relayed,
};
use super::{respond, Gateway};
mod in_session;

use crate::config::Mode;
use crate::error::GatewayError;
use crate::mcp::headers::MCP_SESSION_ID;
use crate::mcp::{inspect, method_label, sse, Era, RequestId};
use crate::routing::Route;
use crate::session::{self, Binding, SessionRecord, Settings};
use crate::upstream::Pool;
use bytes::Bytes;
use in_session::{delete, in_session, live, stream};
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
pub(super) const ANSWER_LIMIT: usize = 1024 * 1024;

/// One request on a session route, as far as the gateway needs to know it.
pub(super) struct Call {
    pub(super) body: Bytes,
    pub(super) method: Option<String>,
    pub(super) id: RequestId,
    /// Safe to send twice.
    pub(super) repeatable: bool,
    /// Raw `params` for session settings (setLevel, subscribe) and initialize.
    pub(super) params: Option<Arc<str>>,
    /// `params.name` / `params.uri`, for routing rules on the stateless path of auto routes.
    pub(super) name: Option<String>,
    /// `_meta` says 2026-07-28 or later: no session (auto routes).
    stateless: bool,
}

impl Call {
    pub(super) fn is(&self, m: &str) -> bool {
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
            Some(sid) => match live(gw, &sid).await {
                Err(e) => answered(session, ctx, &e).await,
                Ok(rec) if method == http::Method::DELETE => delete(gw, session, &pool, rec).await,
                Ok(rec) => stream(gw, session, ctx, &pool, rec).await,
            },
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
            stateless: true,
        };
        return forward_any(&gw.client, session, ctx, &pool, out).await;
    }
    match sid {
        None if call.is("initialize") => initialize(gw, session, ctx, &pool, route, call).await,
        None => sessionless(gw, session, ctx, &pool, route, call.body, call.repeatable).await,
        // Looked up after the body is read, so a 404 carries the request's id.
        Some(sid) => match live(gw, &sid).await {
            Err(e) => answered(session, ctx, &e).await,
            Ok(rec) => in_session(gw, session, ctx, (&pool, route), rec, call).await,
        },
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

pub(super) async fn answered(
    session: &mut Session,
    ctx: &mut RequestCtx,
    err: &GatewayError,
) -> Result<bool> {
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
        stateless: false,
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
