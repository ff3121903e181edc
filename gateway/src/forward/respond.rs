//! Writing gateway errors to the client, and classifying pingora errors into gateway errors.

use crate::downstream::client::Client;
use crate::error::GatewayError;
use crate::request::ctx::{Outcome, RequestCtx};
use bytes::{Bytes, BytesMut};
use mcp_wire::{inspect, RequestId};
use pingora::http::ResponseHeader;
use pingora::prelude::*;
use pingora::{ErrorSource, ErrorType};

/// Bodies up to this size are read to find the request's id before answering an error.
const ID_SCAN_LIMIT: usize = 64 * 1024;
/// Bodies larger than this are not drained after an error; the connection is closed instead.
const DRAIN_LIMIT: u64 = 64 * 1024 * 1024;

/// Answers the client with `err`. The request id comes from the context when the body was
/// inspected already; otherwise the unread body is read (its first 64 KiB scanned for the id)
/// and drained, so the connection stays usable. Returns the HTTP status written, 0 if none.
pub async fn answer<C: Client>(session: &mut C, ctx: &mut RequestCtx, err: &GatewayError) -> u16 {
    ctx.outcome = Outcome::Answered(err.kind);
    if err.kind == crate::error::ErrorKind::BadFraming {
        // the rest of the connection cannot be read as requests: answer, then close
        session.set_keepalive(None);
    }
    let held_back = awaits_continue(session);
    let id = match (ctx.request_id.take(), ctx.body_prefix.take()) {
        (Some(id), _) => id,
        (None, Some(prefix)) => id_of(&prefix),
        (None, None)
            if matches!(
                err.kind,
                crate::error::ErrorKind::ClientTimeout | crate::error::ErrorKind::BadFraming
            ) || held_back =>
        {
            // no body to read (the client stopped, holds it back for a 100, or its framing is
            // broken): the connection ends after the answer
            session.set_keepalive(None);
            RequestId::null()
        }
        (None, None) => read_id(session).await,
    };
    let (status, headers, body) = err.to_http(&id);
    ctx.capture_response(&body);
    let mut resp = match ResponseHeader::build(status, Some(headers.len())) {
        Ok(r) => r,
        Err(_) => return 0,
    };
    for (name, value) in headers {
        let _ = resp.insert_header(name, value);
    }
    if !ctx.trace_id.is_empty() {
        let _ = resp.insert_header(crate::forward::trace::REQUEST_ID, ctx.trace_id.as_str());
    }
    if session
        .write_response_header(Box::new(resp), false)
        .await
        .is_err()
    {
        return 0;
    }
    let _ = session.write_response_body(Some(body), true).await;
    status
}

/// Whether the client holds its body back until told `100 Continue` (and nothing of it came
/// yet): an error is answered at once, without waiting for a body that will not come, and the
/// connection closes (RFC 9110 §10.1.1: the client may send the body anyway).
fn awaits_continue(session: &impl Client) -> bool {
    let expects = session
        .req_header()
        .headers
        .get(http::header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    expects && session.body_bytes_read() == 0
}

/// Reads the rest of the body away, each read within `silence`; whether it all came.
async fn drain(session: &mut impl Client, silence: std::time::Duration) -> bool {
    loop {
        match tokio::time::timeout(silence, session.read_request_body()).await {
            Ok(Ok(Some(_))) => {}
            Ok(Ok(None)) => return true,
            _ => return false,
        }
    }
}

/// Finds the JSON-RPC id in the unread request body, then drains the rest.
async fn read_id(session: &mut impl Client) -> RequestId {
    if session.is_body_done() {
        return RequestId::null();
    }
    let declared = session
        .req_header()
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    // a client that falls silent is not waited for longer than `client-timeouts.body-s`
    let silence = session
        .get_read_timeout()
        .unwrap_or(std::time::Duration::from_secs(60));
    let mut prefix = BytesMut::new();
    while prefix.len() < ID_SCAN_LIMIT {
        match tokio::time::timeout(silence, session.read_request_body()).await {
            Ok(Ok(Some(chunk))) => prefix.extend_from_slice(&chunk),
            _ => break,
        }
    }
    let id = id_of(&prefix);
    if !session.is_body_done() {
        let drained =
            declared.is_some_and(|len| len <= DRAIN_LIMIT) && drain(session, silence).await;
        if !drained {
            session.set_keepalive(None);
        }
    }
    id
}

/// The id of a whole body or of a prefix of one; `null` when it has none.
pub(crate) fn id_of(body: &[u8]) -> RequestId {
    inspect::inspect_body(body)
        .map(|info| info.request_id())
        .ok()
        .or_else(|| inspect::scan_id(body))
        .unwrap_or_else(RequestId::null)
}

/// Whether pingora refused a chunked body the client sent (a bad chunk size or delimiter).
pub fn is_bad_chunk(e: &pingora::Error) -> bool {
    // pingora's `INVALID_CHUNK` (`ErrorType::new("InvalidChunk")`), not exported
    matches!(e.etype(), ErrorType::Custom("InvalidChunk")) && e.esource() != &ErrorSource::Upstream
}

/// The gateway error for a pingora error of the fast path, or `None` when the client itself
/// went away.
pub fn classify(e: &pingora::Error, ctx: &RequestCtx) -> Option<GatewayError> {
    if is_bad_chunk(e) {
        return Some(GatewayError::bad_framing("invalid chunked encoding"));
    }
    let Some(native) = ctx.native.as_ref() else {
        return match e.esource() {
            ErrorSource::Downstream => None,
            _ => Some(GatewayError::internal(e.to_string())),
        };
    };
    let pool = &native.pool;
    let backend = ctx.backend.as_ref().map_or("-", |b| b.label.as_str());
    match e.etype() {
        ErrorType::ConnectTimedout
        | ErrorType::ConnectRefused
        | ErrorType::ConnectNoRoute
        | ErrorType::ConnectError
        | ErrorType::ConnectProxyFailure
        | ErrorType::SocketError
        | ErrorType::BindError
        // A TLS handshake that fails (a certificate the pool's CA does not sign, a wrong
        // name) happens before the request is sent: the backend is unreachable.
        | ErrorType::TLSHandshakeFailure
        | ErrorType::TLSHandshakeTimedout
        | ErrorType::InvalidCert
        | ErrorType::HandshakeError => Some(GatewayError::unavailable(&pool.name, ctx.tried.len())),
        ErrorType::ReadTimedout | ErrorType::WriteTimedout
            if e.esource() == &ErrorSource::Upstream =>
        {
            Some(GatewayError::upstream_timeout(&pool.name, backend))
        }
        _ => match e.esource() {
            ErrorSource::Upstream => Some(GatewayError::backend_lost(&pool.name, backend)),
            ErrorSource::Downstream => None,
            _ => Some(GatewayError::internal(e.to_string())),
        },
    }
}

/// The pingora error type of [`stashed`] errors: answered by the gateway, not failures.
pub const ANSWERED: ErrorType = ErrorType::Custom("mcp-gateway");

/// A pingora error that carries a gateway error stashed in the context.
pub fn stashed(ctx: &mut RequestCtx, err: GatewayError) -> Box<pingora::Error> {
    let message = err.to_string();
    ctx.pending_error = Some(Box::new(err));
    pingora::Error::explain(ANSWERED, message)
}

/// An empty body chunk: "nothing to send yet" to pingora's body pipe.
pub fn hold() -> Option<Bytes> {
    Some(Bytes::new())
}

/// A client that went away while the gateway answered it (it closed its GET stream, say) is
/// the end of that request, not an error worth logging.
pub(crate) fn client_gone_is_done(e: Box<pingora::Error>, ctx: &mut RequestCtx) -> Result<bool> {
    let gone = e.esource() == &ErrorSource::Downstream
        || (e.esource() != &ErrorSource::Upstream
            && matches!(
                e.etype(),
                ErrorType::WriteError | ErrorType::WriteTimedout | ErrorType::ConnectionClosed
            ));
    if !gone {
        return Err(e);
    }
    if ctx.outcome == Outcome::Forwarded {
        ctx.outcome = Outcome::ClientGone;
    }
    Ok(true)
}
