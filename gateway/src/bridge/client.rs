//! The client side both bridges write: what serving a bridged request came to ([`Served`];
//! a failure is the gateway's one `crate::error::Fail`), an answer's JSON body or SSE stream
//! (ended by a gateway error: `GatewayError::event`), `202 Accepted`, and the list filter a
//! route's `authz` rules apply to a bridged list answer.

use crate::downstream::client::Client;
use crate::error::GatewayError;
use crate::upstream::Backend;
use bytes::Bytes;
use mcp_wire::headers::MCP_SESSION_ID;
use mcp_wire::{sse, RequestId};
use pingora::http::ResponseHeader;
use pingora::prelude::*;
use serde_json::Value;
use std::sync::Arc;

/// A bridged request served: the backend that answered last, if any did.
#[derive(Default)]
pub struct Served {
    /// For the access log.
    pub backend: Option<Arc<Backend>>,
}

/// Rewrites a list answer body, or `None` when nothing changes.
pub type ListFilter<'a> = dyn Fn(&[u8]) -> Option<Bytes> + Sync + 'a;

/// A whole JSON answer (`status`, the gateway session id when there is one).
pub(super) async fn write_json(
    session: &mut impl Client,
    status: u16,
    session_id: Option<&str>,
    body: Bytes,
) -> Result<()> {
    let mut head = ResponseHeader::build(status, Some(3))?;
    head.insert_header(http::header::CONTENT_TYPE, "application/json")?;
    head.insert_header(http::header::CONTENT_LENGTH, body.len())?;
    if let Some(id) = session_id {
        head.insert_header(MCP_SESSION_ID, id)?;
    }
    session.write_response_header(Box::new(head), false).await?;
    session.write_response_body(Some(body), true).await
}

/// `202 Accepted`, empty: a notification or a client's response taken.
pub(super) async fn accepted(session: &mut impl Client) -> Result<()> {
    let mut head = ResponseHeader::build(202, Some(1))?;
    head.insert_header(http::header::CONTENT_LENGTH, "0")?;
    session.write_response_header(Box::new(head), true).await
}

/// The head of an SSE answer.
pub(super) async fn start_stream(session: &mut impl Client) -> Result<()> {
    let mut head = ResponseHeader::build(200, Some(3))?;
    head.insert_header(http::header::CONTENT_TYPE, "text/event-stream")?;
    head.insert_header(http::header::CACHE_CONTROL, "no-cache")?;
    head.insert_header(http::header::TRANSFER_ENCODING, "chunked")?;
    session.write_response_header(Box::new(head), false).await
}

/// Ends an SSE answer the client reads with the gateway error `err` as its last event
/// (`GatewayError::event`).
pub(super) async fn end_with_error(
    session: &mut impl Client,
    err: &GatewayError,
    id: &RequestId,
) -> Result<()> {
    session.write_response_body(Some(err.event(id)), true).await
}

/// Ends an SSE answer with its last message, `body` (the call's response).
pub(super) async fn end_stream(session: &mut impl Client, body: Bytes) -> Result<()> {
    session
        .write_response_body(Some(sse::event(&body)), true)
        .await
}

/// One message as an SSE event.
pub(super) async fn write_event(session: &mut impl Client, msg: &Value) -> Result<()> {
    let json = serde_json::to_vec(msg).unwrap_or_default();
    session
        .write_response_body(Some(sse::event(&json)), false)
        .await
}
