//! The client half of the one sender: every answer a gateway-driven request writes to its
//! client goes through these functions, whoever made it (a relayed backend answer by
//! `forward/relay.rs`, a session's answer, either bridge, a virtual server's merged list or
//! stream, a task's request, a gateway error by `forward/respond.rs`). Nothing outside
//! `forward/`, `proxy/` (pingora's own phases), `downstream/` and the admin listener writes a
//! response head or body (`gateway/tests/it/shape.rs` reads the code for it), so what every
//! answer must pass (the seam) is added here once. It lives beside [`Client`], under every
//! folder that answers a client (the bridges and the stream owners included, which `forward/`
//! itself calls), so each of them calls down into it.
//!
//! The shapes the gateway writes itself:
//! - a whole answer: [`json`] (a JSON-RPC message, `application/json`), [`empty`] (`202` to a
//!   notification or a client's response, `200` to a DELETE), [`whole`] (a head it built or
//!   relayed, with the whole body), [`own`] (the gateway's own result: one SSE event to a
//!   session-era client that accepts a stream, else JSON);
//! - a stream it writes event by event: [`open_stream`], then [`event`] / [`message`], ended
//!   by [`last`] or [`end`];
//! - a relayed answer: [`head`] then [`chunk`]s, as `relay.rs` does.

use crate::downstream::client::Client;
use bytes::Bytes;
use mcp_wire::headers::MCP_SESSION_ID;
use pingora::http::ResponseHeader;
use pingora::prelude::*;
use std::future::Future;

/// Writes a response head (`end`: the answer has no body).
// The plain delegates return the client's own future (no `async` wrapper): every relayed chunk
// passes here, and a wrapper is one more state machine polled per chunk.
pub fn head<C: Client>(
    client: &mut C,
    head: ResponseHeader,
    end: bool,
) -> impl Future<Output = Result<()>> + Send + '_ {
    client.write_response_header(Box::new(head), end)
}

/// Writes a piece of the answer's body (`end`: the last; `None` with `end`: ends it).
pub fn chunk<C: Client>(
    client: &mut C,
    body: Option<Bytes>,
    end: bool,
) -> impl Future<Output = Result<()>> + Send + '_ {
    client.write_response_body(body, end)
}

/// Writes a complete answer: `head`, then `body` (none when it is empty).
pub async fn whole(client: &mut impl Client, head: ResponseHeader, body: Bytes) -> Result<()> {
    let empty = body.is_empty();
    self::head(client, head, empty).await?;
    if !empty {
        chunk(client, Some(body), true).await?;
    }
    Ok(())
}

/// A whole JSON answer of `status`, with the gateway's session id when there is one.
pub async fn json(
    client: &mut impl Client,
    status: u16,
    session_id: Option<&str>,
    body: Bytes,
) -> Result<()> {
    let mut h = ResponseHeader::build(status, Some(3))?;
    h.insert_header(http::header::CONTENT_TYPE, "application/json")?;
    h.insert_header(http::header::CONTENT_LENGTH, body.len())?;
    if let Some(id) = session_id {
        h.insert_header(MCP_SESSION_ID, id)?;
    }
    whole(client, h, body).await
}

/// An answer of `status` with no body: `202 Accepted` to a notification or a client's
/// response, `200` to a DELETE.
pub async fn empty(client: &mut impl Client, status: u16) -> Result<()> {
    let mut h = ResponseHeader::build(status, Some(1))?;
    h.insert_header(http::header::CONTENT_LENGTH, "0")?;
    self::head(client, h, true).await
}

/// The gateway's own result `body` (a JSON-RPC message): one SSE event to a client of the
/// session era that accepts a stream (as the session servers it stands for answer), else JSON.
pub async fn own(client: &mut impl Client, legacy: bool, body: Bytes) -> Result<()> {
    let stream = legacy
        && client
            .req_header()
            .headers
            .get(http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.contains("text/event-stream"));
    let (content_type, body) = if stream {
        ("text/event-stream", mcp_wire::sse::event(&body))
    } else {
        ("application/json", body)
    };
    let mut h = ResponseHeader::build(200, Some(2))?;
    h.insert_header(http::header::CONTENT_TYPE, content_type)?;
    h.insert_header(http::header::CONTENT_LENGTH, body.len())?;
    whole(client, h, body).await
}

/// The head of an event stream the gateway writes itself (`200`, `text/event-stream`,
/// chunked), with the gateway's session id when there is one.
pub async fn open_stream(client: &mut impl Client, session_id: Option<&str>) -> Result<()> {
    let mut h = ResponseHeader::build(200, Some(4))?;
    h.insert_header(http::header::CONTENT_TYPE, "text/event-stream")?;
    h.insert_header(http::header::CACHE_CONTROL, "no-cache")?;
    h.insert_header(http::header::TRANSFER_ENCODING, "chunked")?;
    if let Some(id) = session_id {
        h.insert_header(MCP_SESSION_ID, id)?;
    }
    self::head(client, h, false).await
}

/// One event of a stream, already framed (`id:`, `data:`, a keep-alive comment).
pub fn event<C: Client>(
    client: &mut C,
    framed: Bytes,
) -> impl Future<Output = Result<()>> + Send + '_ {
    client.write_response_body(Some(framed), false)
}

/// One JSON-RPC message as an event of a stream.
pub async fn message(client: &mut impl Client, json: &[u8]) -> Result<()> {
    event(client, mcp_wire::sse::event(json)).await
}

/// The last event of a stream, already framed (the call's response, a gateway error's
/// event): the answer ends with it.
pub fn last<C: Client>(
    client: &mut C,
    framed: Bytes,
) -> impl Future<Output = Result<()>> + Send + '_ {
    client.write_response_body(Some(framed), true)
}

/// Ends a stream or a relayed body with no more bytes.
pub fn end<C: Client>(client: &mut C) -> impl Future<Output = Result<()>> + Send + '_ {
    client.write_response_body(None, true)
}
