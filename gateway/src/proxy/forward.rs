//! Building blocks for requests the gateway forwards itself (stateful routes, body-routed
//! requests): reading the client's body, shaping the upstream request and the client
//! response, relaying a response as it streams.

use super::ctx::RequestCtx;
use super::respond;
use crate::error::GatewayError;
use crate::mcp::headers::MCP_SESSION_ID;
use crate::upstream::client::{CallError, Exchange, UpstreamClient};
use crate::upstream::Pool;
use bytes::{Bytes, BytesMut};
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::prelude::*;

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
        match exchange.chunk().await {
            Ok(Some(chunk)) => session.write_response_body(Some(chunk), false).await?,
            Ok(None) => {
                session.write_response_body(None, true).await?;
                return Ok(Relayed::Done);
            }
            Err(_) => return Ok(Relayed::Broken { sse }),
        }
    }
}

/// Forwards a buffered request to any backend of `pool` (retrying others after connection
/// refusals, bounded by the pool's retries) and relays the answer, session ids removed.
/// Always answers the client.
pub async fn forward_any(
    client: &UpstreamClient,
    session: &mut Session,
    ctx: &mut RequestCtx,
    pool: &Pool,
    path: &str,
    body: Bytes,
    repeatable: bool,
) -> Result<bool> {
    let len = (session.req_header().method == http::Method::POST).then_some(body.len());
    while let Some(b) = pool.select(&ctx.tried) {
        if ctx.tried.len() > pool.retries {
            break;
        }
        ctx.tried.push(b);
        ctx.backend = Some(b);
        let req = upstream_request(
            session.req_header(),
            path,
            &pool.backends[b].host,
            None,
            len,
        )?;
        match client
            .send(pool.peer(b), &req, body.clone(), repeatable)
            .await
        {
            Err(CallError::Connect(_)) => pool.mark_failed(b),
            Err(CallError::Lost(_)) => {
                let e = GatewayError::backend_lost(&pool.name, &pool.backends[b].label);
                respond::answer(session, ctx, &e).await;
                return Ok(true);
            }
            Ok(mut ex) => {
                pool.mark_ok(b);
                let head = client_response(ex.header(), None);
                if let Relayed::Done = relay(&mut ex, session, head).await? {
                    client.release(ex).await;
                }
                return Ok(true);
            }
        }
    }
    let e = GatewayError::unavailable(&pool.name, ctx.tried.len());
    respond::answer(session, ctx, &e).await;
    Ok(true)
}
