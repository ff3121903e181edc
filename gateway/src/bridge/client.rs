//! The client side both bridges write: what serving a bridged request came to ([`Served`];
//! a failure is the gateway's one `crate::error::Fail`), an answer's JSON body or SSE stream
//! (ended by a gateway error: `GatewayError::event`), `202 Accepted`, and the list filter a
//! route's `authz` rules apply to a bridged list answer.

use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::error::GatewayError;
use crate::upstream::Backend;
use bytes::Bytes;
use mcp_wire::{sse, RequestId};
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
    answer::json(session, status, session_id, body).await
}

/// `202 Accepted`, empty: a notification or a client's response taken.
pub(super) async fn accepted(session: &mut impl Client) -> Result<()> {
    answer::empty(session, 202).await
}

/// The head of an SSE answer.
pub(super) async fn start_stream(session: &mut impl Client) -> Result<()> {
    answer::open_stream(session, None).await
}

/// Ends an SSE answer the client reads with the gateway error `err` as its last event
/// (`GatewayError::event`).
pub(super) async fn end_with_error(
    session: &mut impl Client,
    err: &GatewayError,
    id: &RequestId,
) -> Result<()> {
    answer::last(session, err.event(id)).await
}

/// Ends an SSE answer with its last message, `body` (the call's response).
pub(super) async fn end_stream(session: &mut impl Client, body: Bytes) -> Result<()> {
    answer::last(session, sse::event(&body)).await
}

/// One message as an SSE event.
pub(super) async fn write_event(session: &mut impl Client, msg: &Value) -> Result<()> {
    let json = serde_json::to_vec(msg).unwrap_or_default();
    answer::message(session, &json).await
}
