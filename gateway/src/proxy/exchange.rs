//! Forwarding driven by the gateway itself, for requests whose pool depends on the body
//! (legacy bodies without `Mcp-Method` on a route with rules). pingora's own pipeline cannot
//! carry a body read before the upstream is chosen once it exceeds its 64 KiB retry buffer, so
//! the gateway reads the body (bounded by `max-body-bytes`), picks the pool, and runs the
//! upstream exchange here with pingora's connector (pooled connections), streaming the
//! response back chunk by chunk as it arrives.

use super::ctx::RequestCtx;
use super::respond;
use crate::error::GatewayError;
use crate::mcp::{inspect_body, method_label};
use crate::routing::Route;
use bytes::{Bytes, BytesMut};
use pingora::connectors::http::Connector;
use pingora::prelude::*;
use pingora::protocols::http::client::HttpSession;

/// Reads the body, routes by its method and name, forwards it, and answers the client.
/// Always returns `Ok(true)`: the response is written here.
pub async fn forward_by_body(
    connector: &Connector,
    session: &mut Session,
    ctx: &mut RequestCtx,
    route: &Route,
) -> Result<bool> {
    let state = ctx.state.clone().expect("state set in new_ctx");
    let max = state.config.max_body_bytes;
    let body = match read_body(session, max).await {
        Ok(body) => body,
        Err(err) => {
            respond::answer(session, ctx, &err).await;
            return Ok(true);
        }
    };
    let (method, name) = match inspect_body(&body) {
        Ok(info) => {
            ctx.request_id = Some(info.request_id());
            (
                info.method.map(|m| m.into_owned()),
                info.name.map(|n| n.into_owned()),
            )
        }
        Err(e) => {
            let err = GatewayError::from(e);
            respond::answer(session, ctx, &err).await;
            return Ok(true);
        }
    };
    ctx.method_label = method_label(method.as_deref());
    ctx.pool = route.pool_for(method.as_deref(), name.as_deref());
    let pool = state.pools[ctx.pool].clone();

    let mut request = session.req_header().clone();
    let path = route.upstream_path(request.uri.path()).into_owned();
    let uri = match request.uri.query() {
        Some(q) => format!("{path}?{q}"),
        None => path,
    };
    if let Ok(uri) = uri.parse() {
        request.set_uri(uri);
    }
    request.insert_header(http::header::CONTENT_LENGTH, body.len().to_string())?;
    request.remove_header(&http::header::TRANSFER_ENCODING);

    while let Some(b) = pool.select(&ctx.tried) {
        if ctx.tried.len() > pool.retries {
            break;
        }
        ctx.tried.push(b);
        ctx.backend = Some(b);
        ctx.inflight = Some(pool.track(b));
        let peer = pool.peer(b);
        let mut upstream = match connector.get_http_session(&peer).await {
            Ok((upstream, _reused)) => upstream,
            Err(_) => {
                pool.mark_failed(b);
                continue;
            }
        };
        pool.mark_ok(b);
        request.insert_header(http::header::HOST, pool.backends[b].host.as_str())?;
        let sent = send(&mut upstream, &request, body.clone()).await;
        let result = match sent {
            Ok(()) => relay(&mut upstream, session).await,
            Err(e) => Err((false, e)),
        };
        return match result {
            Ok(()) => {
                connector
                    .release_http_session(upstream, &peer, peer.options.idle_timeout)
                    .await;
                Ok(true)
            }
            Err((header_written, e)) => {
                if !header_written {
                    let err = respond::classify(&e, ctx).unwrap_or_else(|| {
                        GatewayError::backend_lost(&pool.name, &pool.backends[b].label)
                    });
                    respond::answer(session, ctx, &err).await;
                }
                Ok(true)
            }
        };
    }
    let err = GatewayError::unavailable(&pool.name, ctx.tried.len());
    respond::answer(session, ctx, &err).await;
    Ok(true)
}

async fn read_body(session: &mut Session, max: u64) -> std::result::Result<Bytes, GatewayError> {
    let mut body = BytesMut::new();
    while let Some(chunk) = session
        .read_request_body()
        .await
        .map_err(|e| GatewayError::invalid_request(&format!("reading the request body: {e}")))?
    {
        if (body.len() + chunk.len()) as u64 > max {
            return Err(GatewayError::body_too_large(max));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

async fn send(upstream: &mut HttpSession, request: &RequestHeader, body: Bytes) -> Result<()> {
    upstream
        .write_request_header(Box::new(request.clone()))
        .await?;
    upstream.write_request_body(body, true).await?;
    upstream.finish_request_body().await
}

/// Streams the upstream response to the client. On error, says whether the client already got
/// the response header.
async fn relay(
    upstream: &mut HttpSession,
    session: &mut Session,
) -> std::result::Result<(), (bool, Box<Error>)> {
    upstream
        .read_response_header()
        .await
        .map_err(|e| (false, e))?;
    let header = upstream.response_header().cloned().ok_or_else(|| {
        (
            false,
            Error::explain(ErrorType::InvalidHTTPHeader, "no response header"),
        )
    })?;
    let done = upstream.response_done();
    session
        .write_response_header(Box::new(header), done)
        .await
        .map_err(|e| (true, e))?;
    if done {
        return Ok(());
    }
    loop {
        let chunk = upstream.read_response_body().await.map_err(|e| (true, e))?;
        let end = chunk.is_none() || upstream.response_done();
        session
            .write_response_body(chunk, end)
            .await
            .map_err(|e| (true, e))?;
        if end {
            return Ok(());
        }
    }
}
