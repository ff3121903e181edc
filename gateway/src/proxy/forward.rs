//! Building blocks for requests the gateway forwards itself (stateful routes, body-routed
//! requests): reading the client's body, shaping the upstream request and the client
//! response, relaying a response as it streams.

use super::ctx::RequestCtx;
use super::respond;
use crate::error::GatewayError;
use crate::mcp::headers::MCP_SESSION_ID;
use crate::session::reinit::delete_backend_session;
use crate::upstream::client::{CallError, Exchange, UpstreamClient};
use crate::upstream::Pool;
use bytes::{Bytes, BytesMut};
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::prelude::*;
use tokio::time::Instant;

/// Reads the whole request body, refusing more than `max` bytes.
pub async fn read_body(
    session: &mut Session,
    max: u64,
) -> std::result::Result<Bytes, GatewayError> {
    let mut body = BytesMut::new();
    while let Some(chunk) = session.read_request_body().await.map_err(|e| {
        GatewayError::invalid_request(&format!("reading the request body failed: {e}"))
    })? {
        if (body.len() + chunk.len()) as u64 > max {
            return Err(GatewayError::body_too_large(max));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// The upstream request for a client request: same method and headers, with the upstream
/// path (query kept), the backend's Host, the backend's session id (or none) and an exact
/// content length for the buffered body.
pub fn upstream_request(
    client: &RequestHeader,
    path: &str,
    host: &str,
    backend_session: Option<&str>,
    body_len: Option<usize>,
) -> Result<RequestHeader> {
    let mut req = client.clone();
    let uri = match client.uri.query() {
        Some(q) => format!("{path}?{q}"),
        None => path.to_owned(),
    };
    req.set_uri(uri.parse().map_err(|_| {
        Error::explain(ErrorType::InternalError, "upstream path is not a valid URI")
    })?);
    req.insert_header(http::header::HOST, host)?;
    req.remove_header(&http::header::TRANSFER_ENCODING);
    match body_len {
        Some(len) => req.insert_header(http::header::CONTENT_LENGTH, len.to_string())?,
        None => {
            req.remove_header(&http::header::CONTENT_LENGTH);
        }
    }
    req.remove_header(MCP_SESSION_ID);
    if let Some(id) = backend_session {
        req.insert_header(MCP_SESSION_ID, id)?;
    }
    Ok(req)
}

/// The client's response head: the backend's, with the backend session id replaced by the
/// gateway's (or removed: backend ids never reach clients).
pub fn client_response(upstream: &ResponseHeader, gateway_session: Option<&str>) -> ResponseHeader {
    let mut resp = upstream.clone();
    resp.remove_header(MCP_SESSION_ID);
    if let Some(id) = gateway_session {
        let _ = resp.insert_header(MCP_SESSION_ID, id);
    }
    resp
}

/// Writes a complete response.
pub async fn write_whole(session: &mut Session, head: ResponseHeader, body: Bytes) -> Result<()> {
    let empty = body.is_empty();
    session.write_response_header(Box::new(head), empty).await?;
    if !empty {
        session.write_response_body(Some(body), true).await?;
    }
    Ok(())
}

/// How relaying a response ended.
pub enum Relayed {
    /// Complete.
    Done,
    /// The deadline passed after the client got the head; the upstream request is dropped
    /// (closing its connection cancels it).
    TimedOut {
        /// The response is `text/event-stream`.
        sse: bool,
    },
    /// The upstream broke after the client got the head; `sse` tells whether the client is
    /// reading an event stream (so a final event can still be written).
    Broken {
        /// The response is `text/event-stream`.
        sse: bool,
    },
}

/// Streams the upstream response to the client as it arrives, with `head` as the client's
/// response head. Client-side write errors are returned as errors.
pub async fn relay(
    exchange: &mut Exchange,
    session: &mut Session,
    head: ResponseHeader,
    until: Option<Instant>,
) -> Result<Relayed> {
    let sse = crate::mcp::sse::is_event_stream(
        head.headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
    );
    let done = exchange.done();
    session.write_response_header(Box::new(head), done).await?;
    if done {
        return Ok(Relayed::Done);
    }
    loop {
        let Some(next) = within(until, exchange.chunk()).await else {
            return Ok(Relayed::TimedOut { sse });
        };
        match next {
            Ok(Some(chunk)) => session.write_response_body(Some(chunk), false).await?,
            Ok(None) => {
                session.write_response_body(None, true).await?;
                return Ok(Relayed::Done);
            }
            Err(_) => return Ok(Relayed::Broken { sse }),
        }
    }
}

/// Runs `fut` until the optional deadline; `None` when the deadline passed first.
pub async fn within<F: std::future::Future>(until: Option<Instant>, fut: F) -> Option<F::Output> {
    match until {
        Some(at) => tokio::time::timeout_at(at, fut).await.ok(),
        None => Some(fut.await),
    }
}

/// Ends a relayed answer that cannot complete: as a final SSE event carrying `err` when the
/// client reads a stream; otherwise by failing the request so the connection closes (a JSON
/// body cut midway cannot be mended).
pub async fn end_with_error(
    session: &mut Session,
    sse: bool,
    err: &GatewayError,
    id: &crate::mcp::RequestId,
) -> Result<()> {
    if !sse {
        // Not a client disconnect: the connection must close, so a type of its own keeps this
        // an error all the way up.
        return Err(Error::explain(
            ErrorType::Custom("answer-cut-midway"),
            err.message.clone(),
        ));
    }
    let event = crate::mcp::sse::event(&err.body(id));
    session.write_response_body(Some(event), true).await
}

/// A stateless route cannot carry sessions: when its backend answers with a session of its own
/// (a legacy server behind a stateless route), that session is closed again and the client
/// gets -32007 instead of an id that the next backend would not know.
pub async fn refuse_backend_session(
    client: &UpstreamClient,
    session: &Session,
    ctx: &RequestCtx,
    upstream: &ResponseHeader,
) -> Option<GatewayError> {
    if !upstream.status.is_success() {
        return None;
    }
    let sid = upstream.headers.get(MCP_SESSION_ID)?.to_str().ok()?;
    let state = ctx.state.as_ref()?;
    let backend = ctx.backend.as_ref()?;
    let route = state.router.get(ctx.route?);
    let pool = &state.pools[ctx.pool];
    let path = route.upstream_path(session.req_header().uri.path());
    delete_backend_session(client, pool, backend, &path, sid, None).await;
    Some(GatewayError::session_required(&route.label, &backend.label))
}

/// A buffered request on its way upstream.
pub struct Outbound {
    /// Upstream path.
    pub path: String,
    /// The whole body.
    pub body: Bytes,
    /// Safe to send twice (a pooled connection found closed is then replaced).
    pub repeatable: bool,
    /// Deadline for the whole exchange.
    pub deadline: Option<std::time::Duration>,
    /// The route is stateless: a backend session in the answer is refused (-32007).
    pub stateless: bool,
}

/// Forwards a buffered request to any backend of `pool` (retrying others after connection
/// refusals, bounded by the pool's retries) and relays the answer, session ids removed.
/// Always answers the client.
pub async fn forward_any(
    client: &UpstreamClient,
    session: &mut Session,
    ctx: &mut RequestCtx,
    pool: &Pool,
    out: Outbound,
) -> Result<bool> {
    let Outbound {
        path,
        body,
        repeatable,
        deadline,
        stateless,
    } = out;
    let until = deadline.map(|d| Instant::now() + d);
    let len = (session.req_header().method == http::Method::POST).then_some(body.len());
    while let Some(b) = pool.select(&ctx.tried) {
        if ctx.tried.len() > pool.retries {
            break;
        }
        ctx.tried.push(b.addr);
        ctx.backend = Some(b.clone());
        ctx.inflight = Some(Pool::track(&b));
        let label = &b.label;
        let req = upstream_request(session.req_header(), &path, &b.host, None, len)?;
        let started = std::time::Instant::now();
        let sending = client.send(pool.peer(&b), &req, body.clone(), repeatable);
        let Some(sent) = within(until, sending).await else {
            // Dropping the exchange closes its connection: the backend sees the cancel.
            let e = GatewayError::deadline(&pool.name, label, deadline.unwrap_or_default());
            respond::answer(session, ctx, &e).await;
            return Ok(true);
        };
        match sent {
            Err(CallError::Connect(_)) => pool.mark_failed(&b),
            Err(CallError::Lost(_)) => {
                let e = GatewayError::backend_lost(&pool.name, label);
                respond::answer(session, ctx, &e).await;
                return Ok(true);
            }
            Ok(mut ex) => {
                pool.mark_ok(&b);
                if stateless {
                    if let Some(e) = refuse_backend_session(client, session, ctx, ex.header()).await
                    {
                        drop(ex);
                        respond::answer(session, ctx, &e).await;
                        return Ok(true);
                    }
                }
                if let Some(state) = &ctx.state {
                    state
                        .metrics
                        .upstream_duration
                        .with_label_values(&[&pool.name])
                        .observe(started.elapsed().as_secs_f64());
                }
                let head = client_response(ex.header(), None);
                let id = ctx
                    .request_id
                    .clone()
                    .unwrap_or_else(crate::mcp::RequestId::null);
                match relay(&mut ex, session, head, until).await? {
                    Relayed::Done => client.release(ex).await,
                    Relayed::TimedOut { sse } => {
                        let e =
                            GatewayError::deadline(&pool.name, label, deadline.unwrap_or_default());
                        end_with_error(session, sse, &e, &id).await?;
                    }
                    Relayed::Broken { sse } => {
                        let e = GatewayError::backend_lost(&pool.name, label);
                        end_with_error(session, sse, &e, &id).await?;
                    }
                }
                return Ok(true);
            }
        }
    }
    let e = GatewayError::unavailable(&pool.name, ctx.tried.len());
    respond::answer(session, ctx, &e).await;
    Ok(true)
}
