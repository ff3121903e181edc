//! The GET the gateway sends a backend for a session's stream (a held stream, or the rest of an
//! answer after the backend's own event id), and whether what answers is an event stream.

use crate::error::GatewayError;
use crate::session::SessionRecord;
use mcp_wire::headers::MCP_PROTOCOL_VERSION;
use mcp_wire::sse::is_event_stream;
use pingora::http::{RequestHeader, ResponseHeader};

/// The GET the gateway sends for a held stream (its own, so it outlives client requests), or
/// to resume an answer after the backend's own event id.
pub(crate) fn stream_request(
    rec: &SessionRecord,
    last_event_id: Option<&str>,
) -> Result<RequestHeader, GatewayError> {
    let build = || -> pingora::Result<RequestHeader> {
        let mut req = RequestHeader::build("GET", rec.path.as_bytes(), Some(4))?;
        req.insert_header(http::header::ACCEPT, "text/event-stream")?;
        req.insert_header(MCP_PROTOCOL_VERSION, &*rec.protocol_version)?;
        if let Some(id) = last_event_id {
            req.insert_header("last-event-id", id)?;
        }
        Ok(req)
    };
    build().map_err(|e| GatewayError::internal(format!("stream request: {e}")))
}

/// Whether an answer is a 2xx event stream.
pub fn is_stream(head: &ResponseHeader) -> bool {
    let content_type = head
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    head.status.is_success() && is_event_stream(content_type)
}
