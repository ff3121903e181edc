//! The client side of requests the gateway drives itself (stateful routes, body-routed
//! requests): reading the client's body, shaping the client response, relaying an upstream
//! answer as it streams, ending an answer that cannot complete.

use crate::downstream::client::Client;
use crate::error::GatewayError;
use crate::upstream::client::Exchange;
use crate::upstream::deadline::within;
use bytes::{Bytes, BytesMut};
use mcp_wire::headers::MCP_SESSION_ID;
use pingora::http::ResponseHeader;
use pingora::prelude::*;
use tokio::time::Instant;

/// The request's body, read whole within `max-body-bytes` ([`read_body`]; a virtual route's
/// member request reads its own from its member client).
pub async fn request_body(
    session: &mut impl Client,
    ctx: &mut crate::request::ctx::RequestCtx,
) -> std::result::Result<Bytes, GatewayError> {
    read_body(session, ctx.state.config.max_body_bytes).await
}

/// Reads the whole request body, refusing more than `max` bytes.
pub async fn read_body<C: Client>(
    session: &mut C,
    max: u64,
) -> std::result::Result<Bytes, GatewayError> {
    // A client that asked to be told before it sends (`Expect: 100-continue`) is told here,
    // where the gateway reads the body itself (pingora's proxy only passes the header on).
    let expects = session
        .req_header()
        .headers
        .get(http::header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if expects && !session.is_body_done() {
        session.write_continue_response().await.map_err(|e| {
            GatewayError::invalid_request(&format!("the client went away before its body: {e}"))
        })?;
    }
    // The longest silence between body reads (`client-timeouts.body-s`, set on the session),
    // kept here with tokio's timer.
    let silence = session.get_read_timeout();
    let mut body = BytesMut::new();
    loop {
        let read = session.read_request_body();
        let read = match silence {
            Some(t) => tokio::time::timeout(t, read)
                .await
                .map_err(|_| GatewayError::client_timeout(t))?,
            None => read.await,
        };
        let chunk = read.map_err(|e| match (e.etype(), silence) {
            // pingora's own read timeout (the same setting) may fire before the timer above
            (ErrorType::ReadTimedout, Some(t)) => GatewayError::client_timeout(t),
            _ if crate::forward::respond::is_bad_chunk(&e) => {
                GatewayError::bad_framing("invalid chunked encoding")
            }
            _ => GatewayError::invalid_request(&format!("reading the request body failed: {e}")),
        })?;
        let Some(chunk) = chunk else {
            break;
        };
        if (body.len() + chunk.len()) as u64 > max {
            return Err(GatewayError::body_too_large(max));
        }
        let declared = || crate::forward::collect::declared(&session.req_header().headers);
        crate::forward::collect::append(&mut body, chunk, declared, max);
    }
    Ok(body.freeze())
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

/// Makes `head` fit a body the gateway rewrites as it goes (gateway event ids, a replay, an
/// answer without the backend's ids): the backend's `Content-Length` no longer holds, so the
/// body is sent chunked.
pub fn rewritten_body(head: &mut ResponseHeader) {
    head.remove_header(&http::header::CONTENT_LENGTH);
    let _ = head.insert_header(http::header::TRANSFER_ENCODING, "chunked");
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
/// response head. Client-side write errors are returned as errors, and so is a client that
/// closes its connection while the upstream is quiet (a held SSE stream): noticed at once, not
/// at the next upstream write, so its stream slot and the upstream connection are given back.
/// (Every caller has read the request body whole before relaying.)
pub async fn relay<C: Client>(
    exchange: &mut Exchange,
    session: &mut C,
    head: ResponseHeader,
    until: Option<Instant>,
    heard: Option<(
        &std::sync::Arc<crate::cache::Cache>,
        &std::sync::Arc<crate::upstream::Pool>,
    )>,
) -> Result<Relayed> {
    relay_with(exchange, session, head, until, heard, None).await
}

/// What a relay does to an answer's body on its way to the client, where it must change (a
/// task's answer: held while it may be the pod's "unknown task", or its stand-in id put back):
/// the head fitted first, then each chunk in and the bytes to write out (`None`: held), and at
/// the end the bytes still to write. Whatever it holds is bounded by the reshaper itself.
pub trait Reshape: Send {
    /// Fits the client's head to what [`Reshape::chunk`] will make of the body.
    fn head(&mut self, head: &mut ResponseHeader);
    /// The bytes to write for `chunk` (`None`: held back for now).
    fn chunk(&mut self, chunk: Bytes) -> Option<Bytes>;
    /// The bytes still to write once the upstream answer ended.
    fn end(&mut self) -> Option<Bytes>;
}

/// [`relay`], the body passed through `reshape` on its way (no change-scanning of the pool's
/// cache: a reshaped answer is a task's).
pub async fn relay_reshaped<C: Client>(
    exchange: &mut Exchange,
    session: &mut C,
    mut head: ResponseHeader,
    until: Option<Instant>,
    reshape: &mut dyn Reshape,
) -> Result<Relayed> {
    reshape.head(&mut head);
    relay_with(exchange, session, head, until, None, Some(reshape)).await
}

/// The relay loop of [`relay`] and [`relay_reshaped`].
async fn relay_with<C: Client>(
    exchange: &mut Exchange,
    session: &mut C,
    head: ResponseHeader,
    until: Option<Instant>,
    heard: Option<(
        &std::sync::Arc<crate::cache::Cache>,
        &std::sync::Arc<crate::upstream::Pool>,
    )>,
    mut reshape: Option<&mut dyn Reshape>,
) -> Result<Relayed> {
    let sse = mcp_wire::sse::is_event_stream(
        head.headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
    );
    // an event stream may say that the cached results of its pool changed: heard on the seam
    if let Some(heard) =
        heard.and_then(|(cache, pool)| crate::cache::heard::Heard::new(cache, pool, &head))
    {
        session.observe(heard);
    }
    let done = exchange.done();
    crate::downstream::answer::head(session, head, done).await?;
    if done {
        return Ok(Relayed::Done);
    }
    loop {
        let next = tokio::select! {
            next = within(until, exchange.chunk()) => next,
            // returns only when the client closes (pipelined bytes are kept for the next request)
            gone = session.gone() => {
                return Err(gone);
            }
        };
        let Some(next) = next else {
            return Ok(Relayed::TimedOut { sse });
        };
        match next {
            Ok(Some(chunk)) => {
                let out = match reshape.as_mut() {
                    Some(reshape) => reshape.chunk(chunk),
                    None => Some(chunk),
                };
                if let Some(out) = out {
                    crate::downstream::answer::chunk(session, Some(out), false).await?
                }
            }
            Ok(None) => {
                match reshape.as_mut().and_then(|r| r.end()) {
                    Some(rest) => {
                        crate::downstream::answer::chunk(session, Some(rest), true).await?
                    }
                    None => crate::downstream::answer::end(session).await?,
                }
                return Ok(Relayed::Done);
            }
            Err(_) => return Ok(Relayed::Broken { sse }),
        }
    }
}

/// Ends a relayed answer that cannot complete. Before the client got the head (an answer the
/// gateway read whole and could not use: cut short, or in a coding it cannot decode), `err` is
/// the whole answer (`Fail::Answer`: written with the request's id like any gateway error,
/// no ERROR line); after it, as a final SSE event carrying `err` when the client reads a
/// stream, otherwise by failing the request so the connection closes (a JSON body cut midway
/// cannot be mended).
pub async fn end_with_error(
    session: &mut impl Client,
    sse: bool,
    err: &GatewayError,
    id: &mcp_wire::RequestId,
) -> crate::request::Handled {
    if session.response_written().is_none() {
        return Err(crate::error::Fail::Answer(err.clone()));
    }
    if !sse {
        // Not a client disconnect: the connection must close, so a type of its own keeps this
        // an error all the way up.
        return Err(
            Error::explain(ErrorType::Custom("answer-cut-midway"), err.message.clone()).into(),
        );
    }
    Ok(crate::downstream::answer::last(session, err.event(id)).await?)
}
