//! The request-filter steps, in order: request id, listener guard, metadata document, route,
//! declared size, caller (`authn.rs`), MCP headers, admission, then the plan (which path serves
//! the request) and, where the headers are checked against the body, the authorization of the
//! call. Each step returns `Result<_, GatewayError>`; the proxy answers an error in one place.

use crate::config::Mode;
use crate::error::GatewayError;
use crate::forward::trace;
use crate::request::ctx::{Native, RequestCtx};
use crate::request::Gateway;
use crate::routing::Route;
use mcp_wire::headers::{read_mcp_headers, HeaderProblem, McpHeaders};
use mcp_wire::{method_label, Era};
use pingora::prelude::*;
use std::sync::Arc;

/// Which path serves a request.
pub(super) enum Plan {
    /// pingora's own pipeline: pool chosen from headers, body streamed (`ctx.native` set).
    Native,
    /// A stateful (or auto, legacy-era) route: the session manager.
    Stateful(Arc<Route>),
    /// A GET (a session's stream) or DELETE on such a route: served apart, so that a stream
    /// held for hours does not hold room for a call's state.
    SessionStream(Arc<Route>),
    /// A virtual route: its members (`virtual_route`).
    Virtual(Arc<Route>),
    /// Read the body first (the pool depends on it, or the exchange runs under a deadline);
    /// `check`: compare it with the MCP headers.
    Buffered {
        /// The route.
        route: Arc<Route>,
        /// Compare body and headers.
        check: bool,
    },
    /// The protected-resource metadata document (`auth`), answered at once.
    Metadata(bytes::Bytes),
}

/// Runs every step; the plan, or the error to answer.
pub(super) async fn prepare(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
) -> Result<Plan, GatewayError> {
    ctx.trace_id = trace::request_id(session.req_header_mut());
    let state = ctx.state.clone();
    let req = session.req_header();
    state.guard.check(req)?;
    if let Some(doc) = super::authn::metadata(ctx, req.uri.path()) {
        return Ok(Plan::Metadata(doc));
    }
    let route = state
        .router
        .route(req.uri.path())
        .cloned()
        .ok_or_else(|| GatewayError::no_route(req.uri.path()))?;
    ctx.route = Some(route.clone());
    let declared = req
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|len| len > state.config.max_body_bytes) {
        return Err(GatewayError::body_too_large(state.config.max_body_bytes));
    }
    super::authn::authenticate(session, ctx, &route).await?;
    let req = session.req_header();
    let headers = read_mcp_headers(&req.headers, route.check_headers).map_err(|p| match p {
        HeaderProblem::Duplicated(h) => GatewayError::duplicate_header(h),
        HeaderProblem::Undecodable(h) => GatewayError::undecodable_header(h),
    })?;
    ctx.era = Era::of_version(headers.protocol_version);
    ctx.method_label = method_label(headers.method.as_deref());
    ctx.note_tool(headers.method.as_deref(), headers.name.as_deref());
    gw.metrics.count_era(ctx.era);
    admit(gw, session, ctx, &route)?;
    let plan = match plan(session, ctx, route, &headers)? {
        Plan::Native if crate::handlers::tasks::routes(ctx, headers.method.as_deref()) => {
            let route = ctx.native.as_ref().map(|n| n.route.clone());
            let fast = crate::handlers::tasks::pin(gw, ctx, headers.name.as_deref()).await?;
            match route.filter(|_| !fast) {
                Some(route) => Plan::Buffered { route, check: true },
                None => Plan::Native,
            }
        }
        plan => plan,
    };
    let tokened = ctx.native.as_ref().map(|n| n.pool.clone());
    if let Some(pool) = tokened.filter(|p| p.credentials.has_token()) {
        // the request's token, before pingora's upstream phase (whose errors close the
        // connection); boxed: the cold branch does not grow every request's future
        let token = Box::pin(gw.engine.token_for(&pool, session.req_header())).await?;
        if let Some(native) = ctx.native.as_mut() {
            native.token = token.map(Box::new);
        }
    }
    // A tool named only in a header is trusted for the per-tool rate just where the body is
    // checked against that header before anything is forwarded (the fast path with
    // check-headers). Everywhere else the body is read and its tool is the one limited: a
    // client must not dodge a limit by naming another tool in `Mcp-Name`.
    // (on the route the client called: a virtual route's rules are on its exposed names)
    let verified = ctx.native.as_ref().is_some_and(|n| n.check_body);
    if let Some(route) = ctx.route.clone().filter(|_| verified) {
        crate::classify::classify(
            ctx,
            &route,
            headers.method.as_deref(),
            headers.name.as_deref(),
        )?;
    }
    // `audit.required` where nothing classifies the body (the fast path of a route with
    // `check-headers: false`): the call its `Mcp-Method` names is refused the same way
    let unverified = ctx.native.as_ref().is_some_and(|n| !n.check_body);
    if let (true, Some(method)) = (unverified, headers.method.as_deref()) {
        if let Some(why) = ctx.state.audit.refuses(method) {
            return Err(GatewayError::audit_unavailable(method, why));
        }
    }
    Ok(plan)
}

/// Admission: concurrency caps (a GET is a stream) and the client's rate. The slots are held
/// in `ctx`. (The per-tool rate needs the tool the backend will run: see [`prepare`].)
fn admit(
    gw: &Gateway,
    session: &Session,
    ctx: &mut RequestCtx,
    route: &Route,
) -> Result<(), GatewayError> {
    let admission = &ctx.state.admission;
    let client_ip = session
        .client_addr()
        .and_then(|a| a.as_inet())
        .map(|a| a.ip());
    let req = session.req_header();
    let identity = admission.identity(&req.headers, client_ip);
    // With `auth`, limits count by the authenticated principal.
    let identity = identity.map(|id| ctx.principal.as_ref().map_or(id, |p| p.id.clone()));
    let stream = req.method == http::Method::GET;
    let admitted = &mut ctx.admitted;
    admitted.permit = admission.admit(route.index, identity.as_deref(), stream)?;
    admitted.identity = identity;
    if stream {
        gw.metrics
            .open_streams
            .with_label_values(&[&route.label])
            .inc();
        admitted.stream_counted = true;
    }
    Ok(())
}

fn plan(
    session: &Session,
    ctx: &mut RequestCtx,
    route: Arc<Route>,
    headers: &McpHeaders<'_>,
) -> Result<Plan, GatewayError> {
    if let Some(members) = &route.members {
        let req = session.req_header();
        let post = req.method == http::Method::POST;
        let declared = crate::forward::collect::declared(&req.headers);
        let mirrors = req
            .headers
            .keys()
            .any(|k| mcp_wire::param_headers::is_param_header(k.as_str()));
        let head = (post, declared, mirrors);
        // a chain reads every request and answer: never the fast path
        let fast = route.chain.is_empty();
        return Ok(
            match fast.then(|| {
                crate::virtual_servers::fast_plan(ctx, &route, members, headers, &req.headers, head)
            }) {
                Some(Some(native)) => {
                    ctx.native = Some(native);
                    Plan::Native
                }
                _ => Plan::Virtual(route),
            },
        );
    }
    if route.mode == Mode::Stateful || (route.mode == Mode::Auto && ctx.era == Era::Legacy) {
        let method = &session.req_header().method;
        if method == http::Method::GET || method == http::Method::DELETE {
            return Ok(Plan::SessionStream(route));
        }
        return Ok(Plan::Stateful(route));
    }
    let has_body = session.req_header().method == http::Method::POST;
    let check =
        route.check_headers && has_body && (headers.method.is_some() || ctx.era == Era::Stateless);
    // Only a 2026-07-28 request's MCP headers decide where it goes and what limits it (the
    // spec's SHOULD): its server refuses a body they disagree with, so what they name is what
    // runs. A legacy server checks nothing: a legacy request is routed and limited by its body.
    let trusted = ctx.era == Era::Stateless;
    let method = headers.method.as_deref().filter(|_| trusted);
    let name = headers.name.as_deref().filter(|_| trusted);
    // Rules and the per-tool rate must read the name the backend will run: from the body,
    // unless check-headers makes the headers say what the body says.
    // (and tool pins: a call is checked by the name it runs, a list is read whole; and the
    // audit trail: a call is recorded by the name it runs, a legacy body's too)
    let pinned = crate::classify::pinned(ctx, &route);
    let names_matter = route.has_rules()
        || ctx.state.admission.has_tool_rate()
        || route.guard.has_rules()
        || pinned
        || ctx.state.audit.on();
    let pinned_list = pinned && method == Some("tools/list");
    let by_body = names_matter && (method.is_none() || !route.check_headers);
    let bounded =
        route.has_deadlines() && (method.is_none() || route.deadline(method, name).is_some());
    // a task's requests go to the pod that holds it (`tasks.rs`): decided on `Mcp-Name` on the
    // fast path, where the body is checked against it before anything is forwarded; from the
    // body otherwise
    let task = crate::handlers::tasks::routes(ctx, method) && !route.check_headers;
    // a cacheable result may be answered from the cache, or kept: the gateway reads it
    let cached = ctx.state.cache.config().enabled
        && route.cache
        && ctx.era == Era::Stateless
        && method.is_some_and(mcp_wire::cacheable::is_cacheable);
    // an interceptor chain reads the body the backend gets (and the answer), whatever the
    // headers say
    let intercepted = !route.chain.is_empty();
    let reads = by_body || bounded || task || cached || pinned_list || intercepted;
    if has_body && (reads || route.guard.reads_body(method)) {
        return Ok(Plan::Buffered { route, check });
    }
    let pool = ctx.state.pool(route.pool_for(method, name))?;
    if has_body && crate::classify::takes(ctx, &pool) {
        // only legacy backends: inside a pooled backend session (the reverse era bridge)
        return Ok(Plan::Buffered { route, check });
    }
    // answered here, not from pingora's upstream phase: the connection stays usable
    crate::upstream::era::require(&pool, ctx.era)?;
    ctx.native = Some(Native::new(route, pool, check));
    Ok(Plan::Native)
}
