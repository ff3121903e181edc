//! The pingora `ProxyHttp` implementation, kept thin. `request_filter` runs the steps in
//! `steps` (each returns `Result<_, GatewayError>`) and answers any error in one place; the
//! plan then sends the request one of three ways:
//! - the fast path (a 2026-07-28 request with `Mcp-Method`): pingora's own pipeline, the pool
//!   chosen from headers alone, the body streamed to the backend (held back only while
//!   `check-headers` compares it with the headers), the response streamed back untouched;
//!   backend choice and retries follow the attempt engine's policy;
//! - `stateless`: bodies the gateway must read first, forwarded through the attempt engine;
//! - `stateful`: HTTP glue around the session manager.

mod audit;
mod authn;
mod capture;
mod client;
mod fast_body;
#[cfg(test)]
mod future_sizes;
mod log_filter;
mod native;
mod steps;
mod telemetry;
mod verdict;

use crate::request::ctx::{Outcome, RequestCtx};
use crate::upstream::attempt::Pick;
use crate::upstream::request::{self, Target};
use crate::upstream::Pool;
use async_trait::async_trait;
use bytes::Bytes;
use native::{attempt, native};
use pingora::http::ResponseHeader;
use pingora::prelude::*;
use pingora::proxy::FailToProxy;
use steps::Plan;

impl Gateway {
    /// The end of a request the gateway drove: an error answered in the one place.
    async fn answered(
        &self,
        session: &mut Session,
        ctx: &mut RequestCtx,
        handled: Handled,
    ) -> Result<bool> {
        match handled {
            Ok(()) => Ok(true),
            Err(Fail::Answer(e)) => {
                Box::pin(crate::forward::respond::answer(session, ctx, &e)).await;
                Ok(true)
            }
            Err(Fail::Io(e)) => crate::forward::respond::client_gone_is_done(e, ctx),
        }
    }
}

pub(crate) use crate::error::Fail;
pub(crate) use crate::request::{Gateway, Handled};

#[async_trait]
impl ProxyHttp for Gateway {
    type CTX = RequestCtx;

    fn new_ctx(&self) -> RequestCtx {
        RequestCtx::new(self.state.load_full())
    }

    /// pingora's default (its compression module, off) and the answer's verdict
    /// (`verdict.rs`), which sees every answer written to the client, on every path.
    fn init_downstream_modules(&self, modules: &mut pingora::modules::http::HttpModules) {
        modules
            .add_module(pingora::modules::http::compression::ResponseCompressionBuilder::enable(0));
        verdict::install(modules);
    }

    async fn request_filter(&self, session: &mut Session, ctx: &mut RequestCtx) -> Result<bool> {
        ctx.otel = crate::telemetry::start(session.req_header());
        let otel = ctx.otel.clone();
        // the longest silence while the client sends its body (`client-timeouts.body-s`)
        session.set_read_timeout(Some(ctx.state.config.client_timeouts.body));
        // Boxed: the gateway-driven paths hold large futures; inlined they would be copied
        // into every request's state, the fast path's too (about 30 KB a request).
        let plan = steps::prepare(self, session, ctx).await;
        if let Ok(Plan::Native) = plan {
            return Ok(false);
        }
        let handled = match plan {
            Ok(Plan::Native) => Ok(()),
            Ok(Plan::Metadata(doc)) => Box::pin(authn::serve_metadata(session, doc))
                .await
                .map_err(Fail::Io),
            Ok(Plan::Stateful(route)) => {
                let handle = Box::pin(crate::handlers::session_post(self, session, ctx, route));
                telemetry::within(otel, handle).await
            }
            Ok(Plan::SessionStream(route)) => {
                let stream = Box::pin(crate::handlers::stateful::stream_or_delete(
                    self, session, ctx, route,
                ));
                telemetry::within(otel, stream).await
            }
            Ok(Plan::Buffered { route, check }) => {
                let forward = Box::pin(crate::handlers::stateless::forward_buffered(
                    self, session, ctx, route, check,
                ));
                telemetry::within(otel, forward).await
            }
            Ok(Plan::Virtual(route)) => {
                let serve = Box::pin(crate::virtual_servers::serve(self, session, ctx, route));
                telemetry::within(otel, serve).await
            }
            Err(e) => Err(Fail::Answer(e)),
        };
        self.answered(session, ctx, handled).await
    }

    async fn upstream_peer(
        &self,
        _session: &mut Session,
        ctx: &mut RequestCtx,
    ) -> Result<Box<HttpPeer>> {
        ctx.proxying = true;
        let pool = native(ctx)?.pool.clone();
        let pinned = native(ctx)?.task.as_ref().map(|t| t.backend.clone());
        let pick = Pick::sessionless(ctx.era);
        let next = match pinned {
            // a task's request goes to its pod, once
            Some(b) if ctx.tried.contains(&b.addr) => None,
            Some(b) => Some(b),
            None => self.engine.next_backend(&pool, &pick, &ctx.tried),
        };
        let Some(b) = next else {
            if let Some(t) = native(ctx)?.task.as_deref() {
                let err = crate::handlers::tasks::pinned_lost(self, t);
                return Err(crate::forward::respond::stashed(ctx, err));
            }
            let err = self.engine.exhausted(&pool, &pick, ctx.tried.len());
            return Err(crate::forward::respond::stashed(ctx, err));
        };
        ctx.tried.push(b.addr);
        native(ctx)?.inflight = Some(Pool::track(&b));
        let peer = pool.peer(&b);
        ctx.backend = Some(b);
        Ok(peer)
    }

    fn fail_to_connect(
        &self,
        _session: &mut Session,
        _peer: &HttpPeer,
        ctx: &mut RequestCtx,
        mut e: Box<Error>,
    ) -> Box<Error> {
        let Ok((native, b)) = attempt(&mut ctx.native, &ctx.backend) else {
            return e;
        };
        self.engine.connect_failed(&native.pool, b);
        if let Some(t) = native.task.as_deref() {
            // no other pod knows the task
            let err = crate::handlers::tasks::pinned_lost(self, t);
            ctx.pending_error = Some(Box::new(err));
            e.set_retry(false);
            return e;
        }
        // The body has not been read yet: trying another backend is always safe here.
        e.set_retry(self.engine.may_retry(&native.pool, &ctx.tried));
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
        let (native, b) = attempt(&mut ctx.native, &ctx.backend)?;
        native.pool.mark_ok(b);
        Ok(())
    }

    async fn upstream_request_filter(
        &self,
        session: &mut Session,
        upstream: &mut RequestHeader,
        ctx: &mut RequestCtx,
    ) -> Result<()> {
        if let Some(cx) = ctx.otel.as_ref() {
            crate::telemetry::inject(cx, upstream);
        }
        crate::forward::send::drop_client_session(upstream);
        // no `Upgrade` leaves the gateway: Streamable HTTP never switches protocols, and a
        // tunnel would carry bytes past every check
        request::drop_hop_by_hop(upstream, session.req_header());
        let (native, backend) = attempt(&mut ctx.native, &ctx.backend)?;
        native.sent = Some(std::time::Instant::now());
        let client = session.req_header();
        let path = native.route.upstream_path(client.uri.path());
        let target = Target {
            path: &path,
            host: &backend.host_header,
        };
        let readdressed = request::readdress(upstream, target, client.uri.query());
        request::identify(upstream, &native.pool);
        if let Some((_, header)) = native.token.as_deref() {
            // the token `prepare` made ready (the same one `identify` set, for the pool's own)
            let _ = upstream.insert_header(http::header::AUTHORIZATION, header.clone());
        }
        let renamed = match native.rename.as_deref() {
            Some(rename) => rename.head(upstream),
            None => Ok(()),
        };
        readdressed
            .and(renamed)
            .map_err(|e| crate::forward::respond::stashed(ctx, e))
    }

    async fn upstream_response_filter(
        &self,
        session: &mut Session,
        upstream: &mut ResponseHeader,
        ctx: &mut RequestCtx,
    ) -> Result<()> {
        let (native, backend) = attempt(&mut ctx.native, &ctx.backend)?;
        if let Some(sent) = native.sent.take() {
            self.engine.observe_latency(&native.pool, sent);
        }
        if upstream.status == http::StatusCode::SWITCHING_PROTOCOLS {
            // no request went up asking for it: a backend that switches anyway is answered
            // for, never relayed (no 101 reaches a client)
            let err =
                crate::error::GatewayError::switched_protocols(&native.pool.name, &backend.label);
            return Err(crate::forward::respond::stashed(ctx, err));
        }
        if let Some((source, header)) = native
            .token
            .take()
            .filter(|_| upstream.status == 401)
            .map(|t| *t)
        {
            // the backend refused the token: the next request gets a new one (this answer
            // streams on to the client: its body was not kept to send it again)
            source.invalidate(&header, self.engine.token_events());
        }
        // an event stream may say that cached results changed: heard on the seam
        if let Some(heard) =
            crate::cache::heard::Heard::new(&ctx.state.cache, &native.pool, upstream)
        {
            verdict::observe(session, heard);
        }
        let opened = upstream
            .headers
            .contains_key(&crate::forward::send::SESSION_ID);
        if let Some(b) = ctx.backend.as_ref().filter(|_| {
            crate::upstream::era::answer_suggests_other_era(
                ctx.era,
                upstream.status.as_u16(),
                opened,
            )
        }) {
            b.suspect_era();
        }
        // Only a backend that opened a session of its own has anything to refuse; a refusal
        // (non-2xx) just loses the id: backend session ids never reach clients.
        if !opened {
            return Ok(());
        }
        if !upstream.status.is_success() {
            upstream.remove_header(&crate::forward::send::SESSION_ID);
            return Ok(());
        }
        // Boxed: a backend session on a stateless route is the rare case; inlined, its future
        // would be copied with this phase's on every fast-path request.
        let path = native.route.upstream_path(session.req_header().uri.path());
        let refused = Box::pin(crate::forward::send::refuse_backend_session(
            self,
            session.req_header(),
            &native.route,
            &path,
            &native.pool,
            backend,
            upstream,
        ))
        .await;
        match refused {
            Some(err) => Err(crate::forward::respond::stashed(ctx, err)),
            None => Ok(()),
        }
    }

    /// An HTTP/1.0 client cannot read a chunked answer: it gets the body delimited by the
    /// connection's close instead.
    async fn response_filter(
        &self,
        session: &mut Session,
        upstream: &mut ResponseHeader,
        ctx: &mut RequestCtx,
    ) -> Result<()> {
        if let (Some(native), Some(backend)) = (ctx.native.as_ref(), ctx.backend.as_ref()) {
            if crate::forward::watch::watched(ctx) {
                crate::forward::watch::watch(
                    self,
                    session,
                    ctx,
                    (&native.pool, &native.route),
                    backend,
                );
            }
        }
        if let Some(pinned) = ctx.native.as_mut().and_then(|n| n.task.as_deref_mut()) {
            crate::handlers::tasks::hold_answer(pinned, upstream);
        }
        if session.req_header().version == http::Version::HTTP_10
            && upstream
                .headers
                .contains_key(http::header::TRANSFER_ENCODING)
        {
            upstream.remove_header(&http::header::TRANSFER_ENCODING);
            upstream.insert_header(http::header::CONNECTION, "close")?;
            session.set_keepalive(None);
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
        let events = &self.metrics.virtual_members;
        fast_body::filter(events, session, body, end_of_stream, ctx)
    }

    fn response_body_filter(
        &self,
        _session: &mut Session,
        body: &mut Option<Bytes>,
        end_of_stream: bool,
        ctx: &mut RequestCtx,
    ) -> Result<Option<std::time::Duration>> {
        crate::handlers::tasks::held_chunk(self, ctx, body, end_of_stream);
        Ok(None)
    }

    /// Errors the gateway answers itself (stashed in the context) and clients that leave are
    /// outcomes, counted and in the access log; pingora's error log is for failures.
    fn suppress_error_log(&self, _session: &Session, ctx: &RequestCtx, error: &Error) -> bool {
        log_filter::error_is_handled(ctx, error)
    }

    fn suppress_proxy_warn_log(
        &self,
        _session: &Session,
        ctx: &RequestCtx,
        error: &Error,
        _context: pingora::proxy::ProxyWarnLogContext,
    ) -> bool {
        log_filter::retry_is_handled(ctx, error)
    }

    async fn fail_to_proxy(
        &self,
        session: &mut Session,
        e: &Error,
        ctx: &mut RequestCtx,
    ) -> FailToProxy {
        let err = match ctx.pending_error.take() {
            Some(err) => Some(*err),
            None => crate::forward::respond::classify(e, ctx),
        };
        // what the gateway answers for a virtual route's member names it
        let member = ctx.native.as_ref().and_then(|n| n.rename.as_ref());
        let err = match member {
            Some(rename) => err.map(|e| e.with("member", rename.member())),
            None => err,
        };
        if ctx.proxying {
            // pingora closes the connection after an error of its proxy phase (it reuses the
            // client's connection only after the request phases): the answer says so, so the
            // client does not send its next request into a connection about to close
            session.set_keepalive(None);
        }
        let code = match err {
            Some(err) if session.response_written().is_none() => {
                crate::forward::respond::answer(session, ctx, &err).await
            }
            // The client went away, or part of the answer already went out: nothing to write.
            _ => 0,
        };
        FailToProxy {
            error_code: code,
            // after a framing error the connection's bytes cannot be read as requests
            can_reuse_downstream: code != 0 && !crate::forward::respond::is_bad_chunk(e),
        }
    }

    async fn logging(&self, session: &mut Session, _e: Option<&Error>, ctx: &mut RequestCtx) {
        if self.audit.on() {
            // before the fast path's state goes: it names the pool and a virtual call's member
            let status = session.response_written().map(|r| r.status.as_u16());
            audit::record(session, ctx, verdict::outcome(session, ctx, status).0);
        }
        telemetry::finish(session, ctx);
        ctx.native = None;
        // the request's slots free first: whoever reads `mcpgw_open_streams` at 0 finds it free
        ctx.admitted.permit = Default::default();
        if let Outcome::Answered(kind) = ctx.outcome {
            if kind.is_rejection() {
                self.rejections.rejected(kind.as_str());
            }
        }
        let status = session.response_written().map(|r| r.status.as_u16());
        let (outcome, rpc_code) = verdict::outcome(session, ctx, status);
        self.metrics.count_eras(ctx.era, ctx.backend.as_deref());
        let route = ctx.route_label();
        if let Some(code) = rpc_code {
            self.metrics
                .rpc_errors
                .with_label_values(&[route, ctx.method_label, code.as_str()])
                .inc();
        }
        if ctx.admitted.stream_counted {
            self.metrics.open_streams.with_label_values(&[route]).dec();
        }
        let took = ctx.start.elapsed().as_secs_f64();
        tracing::debug!(
            target: "mcp_gateway::access",
            request_id = ctx.trace_id.as_str(),
            route,
            method = ctx.method_label,
            outcome,
            status = status.unwrap_or(0),
            backend = ctx.backend.as_ref().map_or("-", |b| b.label.as_str()),
            duration_ms = took * 1000.0,
            "request"
        );
        let route_metrics = ctx.route.as_deref().map(|r| &r.metrics);
        self.metrics
            .finished(route_metrics, route, ctx.method_label, outcome, took);
        capture::record(&self.captures, session, ctx, outcome);
        if let Some(i) = ctx.tool {
            let tool = ctx
                .state
                .config
                .metric_tools
                .get(i)
                .map_or("other", String::as_str);
            self.metrics
                .tool_call(route_metrics, route, (i, tool), outcome);
        }
    }
}
