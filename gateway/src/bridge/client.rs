//! The client side both bridges share: what serving a bridged request came to ([`Served`];
//! a failure is the gateway's one `crate::error::Fail`), the list filter a route's `authz`
//! rules apply to a bridged list answer, and the few shapes of an SSE answer the bridges
//! write often (a message, its last event, a gateway error ending it). Every byte goes to
//! the client through `crate::downstream::answer`, which the bridges also call directly.

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
