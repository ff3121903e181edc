//! The pingora `ProxyHttp` implementation. Each phase is short and delegates: routing to
//! `routing`, balancing to `upstream`, MCP knowledge to `mcp`, error answers to `respond`.
//!
//! Hot path (a 2026-07-28 request with `Mcp-Method`): route and pool are chosen from headers
//! alone; the body streams to the backend, held back only while `check-headers` compares it
//! with the headers; the response streams back untouched.

mod check;
pub mod ctx;
mod exchange;
mod forward;
pub mod guard;
pub mod respond;
mod stateful;
mod trace;

use crate::config::Mode;
use crate::error::GatewayError;
use crate::mcp::headers::{read_mcp_headers, HeaderProblem, McpHeaders};
use crate::mcp::{method_label, Era};
use crate::metrics::Metrics;
use crate::routing::Route;
use crate::session::reinit::Sessions;
use crate::state::State;
use crate::upstream::client::UpstreamClient;
use crate::upstream::Pool;
use arc_swap::ArcSwap;
use async_trait::async_trait;
use bytes::Bytes;
use check::Rejected;
use ctx::RequestCtx;
use pingora::http::ResponseHeader;
use pingora::prelude::*;
use pingora::proxy::FailToProxy;
use std::sync::Arc;

/// The gateway's proxy logic.
pub struct Gateway {
    state: Arc<ArcSwap<State>>,
    metrics: Metrics,
    client: Arc<UpstreamClient>,
    sessions: Arc<Sessions>,
}

impl Gateway {
    /// A gateway serving the given (swappable) state and session table.
    pub fn new(state: Arc<ArcSwap<State>>, sessions: Arc<Sessions>) -> Gateway {
        Gateway {
            state,
            metrics: sessions.metrics().clone(),
            client: sessions.client.clone(),
            sessions,
        }
    }

    fn max_body(ctx: &RequestCtx) -> u64 {
        ctx.state
            .as_ref()
            .map_or(u64::MAX, |s| s.config.max_body_bytes)
    }
}

/// A client that went away while the gateway answered it (it closed its GET stream, say) is
/// the end of that request, not an error worth logging.
fn client_gone_is_done(handled: Result<bool>, ctx: &mut RequestCtx) -> Result<bool> {
    match handled {
        Err(e)
            if e.esource() == &pingora::ErrorSource::Downstream
                || (e.esource() != &pingora::ErrorSource::Upstream
                    && matches!(
                        e.etype(),
                        ErrorType::WriteError
                            | ErrorType::WriteTimedout
                            | ErrorType::ConnectionClosed
                    )) =>
        {
            ctx.outcome.get_or_insert("client-gone");
            Ok(true)
        }
        other => other,
    }
}

impl Gateway {
    /// Admission for one request: concurrency caps (a GET is a stream), the client's rate and,
    /// for a `tools/call` named in the headers, the tool's rate. Holds the slots in `ctx`.
    fn admit(
        &self,
        session: &Session,
        ctx: &mut RequestCtx,
        state: &State,
        route: &Route,
        headers: &McpHeaders<'_>,
    ) -> std::result::Result<(), GatewayError> {
        let client_ip = session
            .client_addr()
            .and_then(|a| a.as_inet())
            .map(|a| a.ip());
        let req = session.req_header();
        ctx.identity = state.admission.identity(&req.headers, client_ip);
        let stream = req.method == http::Method::GET;
        ctx.permit = Some(
            state
                .admission
                .admit(route.index, ctx.identity.as_deref(), stream)?,
        );
        if let (Some("tools/call"), Some(tool)) =
            (headers.method.as_deref(), headers.name.as_deref())
        {
            ctx.tool_admitted = true;
            state.admission.admit_tool(ctx.identity.as_deref(), tool)?;
        }
        if stream {
            self.metrics
                .open_streams
                .with_label_values(&[&route.label])
                .inc();
            ctx.stream_counted = true;
        }
        Ok(())
    }
}

#[async_trait]
impl ProxyHttp for Gateway {
    type CTX = RequestCtx;

    fn new_ctx(&self) -> RequestCtx {
        RequestCtx {
            state: Some(self.state.load_full()),
            ..RequestCtx::default()
        }
    }

    async fn request_filter(&self, session: &mut Session, ctx: &mut RequestCtx) -> Result<bool> {
        ctx.trace_id = Some(trace::request_id(session.req_header_mut()));
        let state = ctx.state.clone().expect("state set in new_ctx");
        let req = session.req_header();
        if let Err(err) = state.guard.check(req) {
            respond::answer(session, ctx, &err).await;
            return Ok(true);
        }
        let Some(route) = state.router.route(req.uri.path()) else {
            let err = GatewayError::no_route(req.uri.path());
            respond::answer(session, ctx, &err).await;
            return Ok(true);
        };
        ctx.route = Some(route.index);
        let declared = req
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|len| len > state.config.max_body_bytes) {
            let err = GatewayError::body_too_large(state.config.max_body_bytes);
            respond::answer(session, ctx, &err).await;
            return Ok(true);
        }
        let headers = match read_mcp_headers(&req.headers, route.check_headers) {
            Ok(h) => h,
            Err(problem) => {
                let err = match problem {
                    HeaderProblem::Duplicated(h) => GatewayError::duplicate_header(h),
                    HeaderProblem::Undecodable(h) => GatewayError::undecodable_header(h),
                };
                respond::answer(session, ctx, &err).await;
                return Ok(true);
            }
        };
        ctx.era = Era::of_version(headers.protocol_version);
        ctx.method_label = method_label(headers.method.as_deref());
        ctx.note_tool(headers.method.as_deref(), headers.name.as_deref());
        self.metrics
            .requests_by_era
            .with_label_values(&[ctx.era.as_str()])
            .inc();
        let has_body = req.method == http::Method::POST;
        if let Err(err) = self.admit(session, ctx, &state, route, &headers) {
            respond::answer(session, ctx, &err).await;
            return Ok(true);
        }
        match route.mode {
            // Boxed: the gateway-driven paths hold large futures; inlined they would be copied
            // into every request's state, the fast path's too (about 30 KB a request).
            Mode::Stateful => {
                let handled = Box::pin(stateful::handle(self, session, ctx, route)).await;
                return client_gone_is_done(handled, ctx);
            }
            Mode::Auto if ctx.era == Era::Legacy => {
                let handled = Box::pin(stateful::handle(self, session, ctx, route)).await;
                return client_gone_is_done(handled, ctx);
            }
            _ => {}
        }
        ctx.check_body = route.check_headers
            && has_body
            && (headers.method.is_some() || ctx.era == Era::Stateless);
        let by_body =
            headers.method.is_none() && (route.has_rules() || state.admission.has_tool_rate());
        let bounded = route.has_deadlines()
            && (headers.method.is_none()
                || route
                    .deadline(headers.method.as_deref(), headers.name.as_deref())
                    .is_some());
        if has_body && (by_body || bounded) {
            // The pool depends on the body, or the exchange runs under a deadline.
            let handled = Box::pin(exchange::forward_buffered(
                &self.client,
                session,
                ctx,
                route,
            ))
            .await;
            return client_gone_is_done(handled, ctx);
        }
        ctx.pool = route.pool_for(headers.method.as_deref(), headers.name.as_deref());
        Ok(false)
    }

    async fn upstream_peer(
        &self,
        _session: &mut Session,
        ctx: &mut RequestCtx,
    ) -> Result<Box<HttpPeer>> {
        let state = ctx.state.as_ref().expect("state set in new_ctx");
        let pool = &state.pools[ctx.pool];
        match pool.select(&ctx.tried) {
            Some(b) => {
                ctx.tried.push(b.addr);
                ctx.inflight = Some(Pool::track(&b));
                let peer = pool.peer(&b);
                ctx.backend = Some(b);
                Ok(Box::new(peer))
            }
            None => {
                let err = GatewayError::unavailable(&pool.name, ctx.tried.len());
                Err(respond::stashed(ctx, err))
            }
        }
    }

    fn fail_to_connect(
        &self,
        _session: &mut Session,
        _peer: &HttpPeer,
        ctx: &mut RequestCtx,
        mut e: Box<Error>,
    ) -> Box<Error> {
        let state = ctx.state.as_ref().expect("state set in new_ctx");
        let pool = &state.pools[ctx.pool];
        if let Some(b) = &ctx.backend {
            pool.mark_failed(b);
            self.metrics
                .upstream_connect_failures
                .with_label_values(&[&pool.name, &b.label])
                .inc();
        }
        // The body has not been read yet: trying another backend is always safe here.
        let more = ctx.tried.len() <= pool.retries && ctx.tried.len() < pool.backends().len();
        e.set_retry(more);
        e
    }

    async fn connected_to_upstream(
        &self,
        _session: &mut Session,
        _reused: bool,
        _peer: &HttpPeer,
        #[cfg(unix)] _fd: std::os::unix::io::RawFd,
        #[cfg(windows)] _sock: std::os::windows::io::RawSocket,
        _digest: Option<&pingora::protocols::Digest>,
        ctx: &mut RequestCtx,
    ) -> Result<()> {
        if let (Some(state), Some(b)) = (ctx.state.as_ref(), ctx.backend.as_ref()) {
            state.pools[ctx.pool].mark_ok(b);
        }
        Ok(())
    }

    async fn upstream_request_filter(
        &self,
        session: &mut Session,
        upstream: &mut RequestHeader,
        ctx: &mut RequestCtx,
    ) -> Result<()> {
        let state = ctx.state.as_ref().expect("state set in new_ctx");
        let backend = ctx.backend.as_ref().expect("peer chosen");
        upstream.insert_header(http::header::HOST, backend.host.as_str())?;
        ctx.upstream_sent = Some(std::time::Instant::now());
        let route = state.router.get(ctx.route.expect("routed"));
        let path = session.req_header().uri.path();
        let target = route.upstream_path(path);
        if target != path {
            let uri = match session.req_header().uri.query() {
                Some(q) => format!("{target}?{q}"),
                None => target.into_owned(),
            };
            upstream.set_uri(uri.parse().map_err(|_| {
                Error::explain(ErrorType::InternalError, "upstream path is not a valid URI")
            })?);
        }
        Ok(())
    }

    async fn upstream_response_filter(
        &self,
        session: &mut Session,
        upstream: &mut ResponseHeader,
        ctx: &mut RequestCtx,
    ) -> Result<()> {
        if let (Some(sent), Some(state)) = (ctx.upstream_sent.take(), ctx.state.as_ref()) {
            self.metrics
                .upstream_duration
                .with_label_values(&[&state.pools[ctx.pool].name])
                .observe(sent.elapsed().as_secs_f64());
        }
        if let Some(err) =
            forward::refuse_backend_session(&self.client, session, ctx, upstream).await
        {
            return Err(respond::stashed(ctx, err));
        }
        Ok(())
    }

    async fn request_body_filter(
        &self,
        session: &mut Session,
        body: &mut Option<Bytes>,
        end_of_stream: bool,
        ctx: &mut RequestCtx,
    ) -> Result<()> {
        if let Some(chunk) = body.as_ref() {
            if ctx.body_prefix.is_none() && !ctx.check_body {
                ctx.body_prefix = Some(chunk.clone());
            }
            ctx.body_seen += chunk.len() as u64;
            if ctx.body_seen > Self::max_body(ctx) {
                let err = GatewayError::body_too_large(Self::max_body(ctx));
                return Err(respond::stashed(ctx, err));
            }
        }
        if !ctx.check_body {
            return Ok(());
        }
        if let Some(chunk) = body.take() {
            ctx.body.extend_from_slice(&chunk);
        }
        if !end_of_stream {
            *body = respond::hold();
            return Ok(());
        }
        let full = std::mem::take(&mut ctx.body).freeze();
        match check::check_body(&session.req_header().headers, &full) {
            Ok(_) => {
                ctx.body_prefix = Some(full.clone());
                *body = Some(full);
                Ok(())
            }
            Err(rejected) => {
                let Rejected { id, error } = *rejected;
                ctx.request_id = id;
                Err(respond::stashed(ctx, error))
            }
        }
    }

    /// Errors the gateway answers itself (stashed in the context) and clients that leave are
    /// outcomes, counted and in the access log; pingora's error log is for failures.
    fn suppress_error_log(&self, _session: &Session, _ctx: &RequestCtx, error: &Error) -> bool {
        error.etype() == &respond::ANSWERED || error.esource() == &pingora::ErrorSource::Downstream
    }

    async fn fail_to_proxy(
        &self,
        session: &mut Session,
        e: &Error,
        ctx: &mut RequestCtx,
    ) -> FailToProxy {
        let err = ctx
            .pending_error
            .take()
            .or_else(|| respond::classify(e, ctx));
        let code = match err {
            Some(err) if session.response_written().is_none() => {
                respond::answer(session, ctx, &err).await
            }
            // The client went away, or part of the answer already went out: nothing to write.
            _ => 0,
        };
        FailToProxy {
            error_code: code,
            can_reuse_downstream: code != 0,
        }
    }

    async fn logging(&self, session: &mut Session, _e: Option<&Error>, ctx: &mut RequestCtx) {
        ctx.inflight = None;
        ctx.permit = None;
        if let Some(kind @ ("rate-limited" | "overloaded" | "session-limit" | "body-too-large")) =
            ctx.outcome
        {
            self.metrics.rejections.with_label_values(&[kind]).inc();
        }
        let Some(state) = ctx.state.as_ref() else {
            return;
        };
        let route = ctx
            .route
            .map_or("none", |r| state.router.get(r).label.as_str());
        let outcome = ctx.outcome.unwrap_or_else(|| {
            match session.response_written().map(|r| r.status.as_u16()) {
                Some(100..=399) => "ok",
                Some(400..=499) => "4xx",
                Some(_) => "5xx",
                None => "dropped",
            }
        });
        self.metrics
            .requests
            .with_label_values(&[route, ctx.method_label, outcome])
            .inc();
        if ctx.stream_counted {
            self.metrics.open_streams.with_label_values(&[route]).dec();
        }
        tracing::debug!(
            target: "mcp_gateway::access",
            request_id = ctx.trace_id.as_deref().unwrap_or("-"),
            route,
            method = ctx.method_label,
            outcome,
            status = session.response_written().map_or(0, |r| r.status.as_u16()),
            backend = ctx.backend.as_ref().map_or("-", |b| b.label.as_str()),
            duration_ms = ctx.start.elapsed().as_secs_f64() * 1000.0,
            "request"
        );
        self.metrics
            .request_duration
            .with_label_values(&[route, ctx.method_label])
            .observe(ctx.start.elapsed().as_secs_f64());
        if let Some(i) = ctx.tool {
            let tool = state
                .config
                .metric_tools
                .get(i)
                .map_or("other", String::as_str);
            self.metrics
                .tool_calls
                .with_label_values(&[route, tool, outcome])
                .inc();
        }
    }
}
