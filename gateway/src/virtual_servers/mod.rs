//! Virtual routes (`mode: virtual`): many MCP servers, the members, behind one endpoint, for
//! clients of both eras (a 2026-07-28 client's requests each routed on their own; a legacy
//! client's session holding one session per member: `legacy.rs`).
//!
//! - `server/discover` and the four lists are the gateway's own answers, merged from every
//!   member (`lists.rs`), each member asked through a subrequest of the client's request
//!   (`fanout.rs`);
//! - a call (`tools/call`, `prompts/get`, `resources/read`, `completion/complete`) is
//!   authorized on the exposed name, its member found (`calls.rs`), the member's own name
//!   put back in the body (`mcp_wire::rewrite`, every other byte kept) and in `Mcp-Name`,
//!   and the request served on the member's route exactly as a plain route of its pool
//!   serves it (the reverse bridge for legacy members, `input_required` rounds included:
//!   a retry names the same tool, so it reaches the same member); the answer streams back
//!   untouched.

use crate::downstream::client::Client;
use crate::forward::intercept;
mod answers;
mod calls;
mod errors;
mod fanout;
mod fast;
mod legacy;
mod listen;
mod lists;
mod member;
mod request;
mod resources;
mod stream;

pub(crate) use fast::plan as fast_plan;

use answers::{answer, filtered, own_name};
use request::Virtual;

use crate::classify::Routed;
use crate::error::GatewayError;
use crate::federation::merge::List;
use crate::forward::check;
use crate::forward::relay::read_body;
use crate::handlers::stateless::forward_body;
use crate::request::ctx::RequestCtx;
use crate::request::{Gateway, Handled};
use crate::routing::{Members, Route};
use bytes::Bytes;
use calls::Named;
use mcp_wire::headers::MCP_NAME;
use mcp_wire::Era;
use serde_json::Value;
use std::sync::Arc;

/// Serves one request on a virtual route.
pub(crate) async fn serve(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    route: Arc<Route>,
) -> Handled {
    let members = route
        .members
        .as_ref()
        .ok_or_else(|| GatewayError::internal("a virtual route without members"))?;
    if ctx.era == Era::Legacy {
        return legacy::serve(gw, session, ctx, &route, members).await;
    }
    let http_method = session.req_header().method.clone();
    if http_method != http::Method::POST {
        return Err(GatewayError::method_not_allowed(http_method.as_str(), "POST").into());
    }
    let Some((body, method, name)) = read_request(session, ctx, &route).await? else {
        // a response (2026-07-28 has none to send: input goes in a retry) or a notification:
        // nothing a member waits for
        return crate::downstream::answer::empty(session, 202)
            .await
            .map_err(crate::error::Fail::Io);
    };
    let v = Virtual::of(gw, session, ctx, &route, members);
    let id = ctx
        .request_id
        .clone()
        .unwrap_or_else(mcp_wire::RequestId::null);
    if method == "server/discover" || List::of_method(&method).is_some() {
        let routed = crate::classify::classify(ctx, &route, Some(&method), None)?;
        let changed = intercept::request(session, ctx, &route, Some(&method), None, &body);
        let body = changed.await?.unwrap_or(body);
        let made = own_answer(&v, &method, &body, &id);
        if crate::forward::cached::takes(ctx, route.cache, &routed) {
            let backends = || v.backends();
            let backends = &backends as &(dyn Fn() -> u64 + Sync);
            let source = (&*route, backends, v.scopes());
            return crate::forward::cached::own(session, ctx, source, &body, made).await;
        }
        let made = filtered(&route, ctx, routed.filter, made.await?);
        return answer(session, ctx, made).await;
    }
    if method == "subscriptions/listen" {
        crate::classify::classify(ctx, &route, Some(&method), None)?;
        return listen(gw, session, ctx, v, &body, &id).await;
    }
    if crate::handlers::tasks::routes(ctx, Some(&method)) {
        // `name` is `params.taskId`
        crate::classify::classify(ctx, &route, Some(&method), name.as_deref())?;
        drop(v);
        return task(gw, session, ctx, (&route, members), body, &method, name).await;
    }
    if let Some(named) = Named::read(&method, name.as_deref(), &body) {
        crate::classify::classify(ctx, &route, Some(&method), Some(&named.exposed))?;
        let changed = intercept::request(session, ctx, &route, Some(&method), None, &body);
        let body = changed.await?.unwrap_or(body);
        let (member, own) = v.member_for(&named, &body).await?;
        // the member's body is not the client's (its own name): no client `Mcp-Param-*` goes
        // with it, the member's schema says which arguments go up as headers
        let params = v.param_headers(member, &own, &method, &body).await;
        crate::upstream::request::param_headers(session.req_header_mut(), &params)?;
        drop(v);
        let (route, named) = ((&route, members), &named);
        return call(gw, session, ctx, route, (member, own), named, body, &method).await;
    }
    if calls::ROUTED.contains(&method.as_str()) {
        let detail =
            "the request names no tool, prompt or resource (params.name, params.uri or params.ref)";
        return Err(GatewayError::invalid_params(detail).into());
    }
    Err(GatewayError::not_on_virtual_route(&method).into())
}

/// The virtual server's own answer (request `id`) to `server/discover` or a list (`body`):
/// merged from its members'.
async fn own_answer(
    v: &Virtual<'_>,
    method: &str,
    body: &Bytes,
    id: &mcp_wire::RequestId,
) -> Result<Bytes, GatewayError> {
    let result = match List::of_method(method) {
        None => v.discover(body).await,
        Some(list) => {
            let msg: Value = serde_json::from_slice(body)
                .map_err(|e| GatewayError::parse_error(&e.to_string()))?;
            v.list(list, &msg).await?
        }
    };
    Ok(mcp_wire::messages::result(id, &result))
}

/// A 2026-07-28 client's `subscriptions/listen` (`body`, request `id`): one stream the gateway
/// holds itself, fed by a listen on each member that has something to listen for.
async fn listen(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &RequestCtx,
    v: Virtual<'_>,
    body: &Bytes,
    id: &mcp_wire::RequestId,
) -> Handled {
    // the gateway holds this stream itself: its URIs bounded as a session's are
    crate::handlers::stateless::check_listen(ctx, v.route, body, true)?;
    let msg: Value =
        serde_json::from_slice(body).map_err(|e| GatewayError::parse_error(&e.to_string()))?;
    let plan = v.listen_plan(&msg, body).await;
    let members = v.members;
    drop(v);
    let keep_alive = gw.streams.resume_config().keep_alive;
    let up = || stream::members_up(ctx, members);
    plan.serve(gw, session, id, up, keep_alive).await
}

/// A 2026-07-28 client's request on the virtual route: its body (read whole, checked against
/// its MCP headers when the route checks them), its method and name; `None` for a message that
/// is no request (a response, a notification).
async fn read_request(
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    route: &Route,
) -> Result<Option<(Bytes, String, Option<String>)>, crate::error::Fail> {
    let body = read_body(session, ctx.state.config.max_body_bytes).await?;
    ctx.capture_request(&body);
    let info = check::inspect(
        ctx,
        &session.req_header().headers,
        &body,
        route.check_headers,
    )?;
    let method = info.method.as_deref().map(str::to_owned);
    let name = info.name.as_deref().map(str::to_owned);
    let has_id = info.id.is_some();
    drop(info);
    Ok(method.filter(|_| has_id).map(|m| (body, m, name)))
}

/// A call on its member's route: the member's own name in the body and in `Mcp-Name`.
#[allow(clippy::too_many_arguments)]
async fn call(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    (_route, members): (&Arc<Route>, &Members),
    (member, own): (usize, String),
    named: &Named,
    body: Bytes,
    method: &str,
) -> Handled {
    let body = own_name(&body, method, named, &own)?;
    let header = session.req_header().headers.contains_key(MCP_NAME);
    if header {
        let value = mcp_wire::headers::encode_value(&own);
        session
            .req_header_mut()
            .insert_header(MCP_NAME, value)
            .map_err(|_| GatewayError::internal("Mcp-Name could not be set"))?;
    }
    let route = members.routes[member].clone();
    let routed = Routed::of(&route, Some(method), Some(&own));
    // the member's tool pins, by the name the member will execute
    crate::classify::check_pins(ctx, &route, routed.pool, Some(method), Some(&own))?;
    let name = &members.server.members[member].names.name;
    ctx.note_member(name, routed.pool);
    let served = forward_body(gw, session, ctx, &route, body, routed).await;
    served.map_err(|fail| naming_member(fail, name))
}

/// A task's request (`tasks/get`, `tasks/update`, `tasks/cancel`) on the member whose pool
/// holds the task, as a plain route of that pool serves it (its pod, or -32038 when lost). A
/// task this caller has no record of, or another caller's, is the virtual server's own
/// "unknown task" (no one member would answer for all of them).
async fn task(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    (route, members): (&Arc<Route>, &Members),
    body: Bytes,
    method: &str,
    task_id: Option<String>,
) -> Handled {
    let Some(member) = task_member(gw, ctx, (route, members), task_id.as_deref()).await? else {
        // its member left the virtual server (a reload): no route of it here any more
        let id = task_id.unwrap_or_default();
        return Err(GatewayError::unknown_task(&members.server.name, &id).into());
    };
    let to = members.routes[member].clone();
    let name = &members.server.members[member].names.name;
    // where the member's route sends the request, by the member's own task id
    let on_member = Routed::of(&to, Some(method), task_id.as_deref());
    let routed = crate::handlers::tasks::forward(
        gw,
        session,
        ctx,
        (&to, &route.label, on_member),
        body,
        (method, task_id.as_deref()),
    )
    .await;
    let served = match routed {
        Ok(crate::handlers::tasks::Routing::Answered) => Ok(()),
        Ok(crate::handlers::tasks::Routing::Balanced { routed, body }) => {
            forward_body(gw, session, ctx, &to, body, routed).await
        }
        Err(e) => Err(e),
    };
    served.map_err(|fail| naming_member(fail, name))
}

/// The member a task's request goes to: the one its record names (`None`: that member left
/// the virtual server); for a missing or oversized id, the first (whose path answers it as a
/// plain route does). A task this caller has no record of, or another caller's, is the
/// virtual server's "unknown task".
async fn task_member(
    gw: &Gateway,
    ctx: &RequestCtx,
    (route, members): (&Arc<Route>, &Members),
    task_id: Option<&str>,
) -> Result<Option<usize>, GatewayError> {
    let server = &members.server.name;
    let principal = ctx.principal.as_ref().map(|p| p.id.clone());
    let found = match task_id {
        Some(id) if id.len() <= ctx.state.config.tasks.max_id_bytes => gw
            .tasks
            .find(
                &ctx.state.config.tasks,
                &route.label,
                id,
                principal.as_ref(),
            )
            .await
            .map_err(GatewayError::from)?,
        _ => crate::tasks::Found::Unknown,
    };
    let valid = task_id.filter(|id| id.len() <= ctx.state.config.tasks.max_id_bytes);
    match (&found, valid) {
        (crate::tasks::Found::Mine(record), _) => Ok(recorded_member(ctx, members, record)),
        (unknown_or_foreign, Some(id)) => {
            let event = match unknown_or_foreign {
                crate::tasks::Found::Foreign => "foreign",
                _ => "unknown",
            };
            gw.tasks.count("-", event);
            Err(GatewayError::unknown_task(server, id))
        }
        // a missing or oversized id: the member's path answers it as a plain route does
        (_, None) => Ok(Some(0)),
    }
}

/// The member a task's `record` names: the member that answered; a record without one
/// (written before issue 48), the first member on its pool. `None`: no member here is it.
fn recorded_member(
    ctx: &RequestCtx,
    members: &Members,
    record: &crate::tasks::TaskRecord,
) -> Option<usize> {
    match record.member.as_deref() {
        Some(m) => members
            .server
            .members
            .iter()
            .position(|c| c.names.name == m),
        None => members.routes.iter().position(|r| {
            ctx.state
                .config
                .pools
                .get(r.default_pool)
                .map(|p| p.name.as_str())
                == Some(record.pool.as_str())
        }),
    }
}

/// A member's failure as the client gets it: what the gateway answers for the member (none
/// of its backends left, say) names it.
fn naming_member(fail: crate::error::Fail, name: &str) -> crate::error::Fail {
    match fail {
        crate::error::Fail::Answer(e) => crate::error::Fail::Answer(e.with("member", name)),
        io => io,
    }
}
