//! Opening one pooled backend session: `initialize` (params built from a 2026-07-28 request's
//! `_meta`, `translate::legacy::initialize`) without a session id, the backend's session id
//! and `InitializeResult` read from its answer (JSON or SSE), then
//! `notifications/initialized` in the new session.

use super::acquire_error::AcquireError;
use super::entry::Entry;
use super::key::Key;
use crate::auth::Caller;
use crate::error::GatewayError;
use crate::upstream::attempt::Engine;
use crate::upstream::client::CallError;
use crate::upstream::own::{BackendSession, PostError};
use crate::upstream::request::{self, Target};
use crate::upstream::{Backend, Pool};
use bytes::Bytes;
use mcp_wire::headers::MCP_SESSION_ID;
use mcp_wire::translate::legacy::{self, BACKEND_VERSION};
use mcp_wire::{messages, sse};
use pingora::http::ResponseHeader;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Opens a backend session on `backend` with `init_params`, for `caller`.
pub(super) async fn open(
    engine: &Arc<Engine>,
    pool: &Arc<Pool>,
    backend: &Arc<Backend>,
    key: Key,
    init_params: &str,
    caller: &Caller,
) -> Result<Arc<Entry>, AcquireError> {
    let body = legacy::initialize_request(init_params);
    let target = Target {
        path: &key.path,
        host: &backend.host_header,
    };
    let mut head = request::own(http::Method::POST, target, None, None, body.len(), caller)
        .map_err(AcquireError::Answer)?;
    request::identify(&mut head, pool);
    let (head, answer) = match engine.call(pool, backend, &head, Bytes::from(body)).await {
        Ok(a) => a,
        Err(CallError::Connect(_)) => return Err(AcquireError::Unreachable),
        Err(CallError::Credentials(e)) => return Err(AcquireError::Answer(*e)),
        // the connection broke during the bridge's own `initialize`: the client's request
        // was not sent, and another backend may open the session
        Err(CallError::Lost(_)) => return Err(cut_off(pool, backend)),
    };
    let (result, sid) = initialize_result(pool, backend, &head, &answer)?;
    let version = legacy::negotiated(&result).unwrap_or(BACKEND_VERSION);
    let session = BackendSession {
        id: sid.into(),
        path: key.path.clone(),
        protocol_version: version.into(),
    };
    match engine
        .post_in_session(pool, backend, &session, messages::initialized(), caller)
        .await
    {
        Ok(_) => {}
        Err(PostError::Call(CallError::Connect(_))) => return Err(AcquireError::Unreachable),
        Err(PostError::Call(CallError::Lost(_))) => return Err(cut_off(pool, backend)),
        Err(e) => {
            return Err(refused(
                pool,
                backend,
                format!("notifications/initialized: {e}"),
            ));
        }
    }
    tracing::debug!(backend = %backend.label, version, "pooled backend session opened");
    let entry = Arc::new(Entry {
        key,
        pool: pool.clone(),
        backend: backend.clone(),
        session,
        caller: caller.clone(),
        init_result: result,
        level: Mutex::new(None),
        strays: Mutex::new(Vec::new()),
        in_flight: AtomicUsize::new(0),
        last_use: Mutex::new(Instant::now()),
        gone: AtomicBool::new(false),
    });
    let capabilities = serde_json::from_str::<Value>(init_params)
        .ok()
        .and_then(|p| p.get("capabilities").cloned())
        .unwrap_or_default();
    if super::stray::wants_stream(&capabilities) {
        super::stray::hold(engine.clone(), &entry).await;
    }
    Ok(entry)
}

/// The backend's `InitializeResult` and session id, from its answer to the bridge's
/// `initialize` (JSON or SSE): a refusal is untranslatable, an answer without a session id
/// no legacy session server ([`AcquireError::NoSession`]).
fn initialize_result<'h>(
    pool: &Pool,
    backend: &Backend,
    head: &'h ResponseHeader,
    answer: &[u8],
) -> Result<(Value, &'h str), AcquireError> {
    let content_type = head
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let response = sse::response(content_type, answer);
    let status = head.status.as_u16();
    if response.is_none() && status < 300 && sse::is_event_stream(content_type) {
        // an event stream that ended before its response: the backend was cut off (killed
        // while it answered); as when its connection breaks, the client's request was not sent
        return Err(cut_off(pool, backend));
    }
    let Some(mut response) = response.filter(|_| status < 300) else {
        let detail = format!(
            "HTTP {status} {}",
            String::from_utf8_lossy(&answer[..answer.len().min(200)])
        );
        return Err(refused(pool, backend, detail));
    };
    if let Some(error) = response.get("error") {
        return Err(refused(pool, backend, error.to_string()));
    }
    let result = response
        .get_mut("result")
        .map(Value::take)
        .unwrap_or_default();
    let Some(sid) = head
        .headers
        .get(MCP_SESSION_ID)
        .and_then(|v| v.to_str().ok())
    else {
        // a server that keeps no session is no legacy session server: the caller sends the
        // request to it as it is (this bridge only speaks sessions)
        tracing::debug!(backend = %backend.label, "no Mcp-Session-Id at the bridge's initialize");
        return Err(AcquireError::NoSession);
    };
    Ok((result, sid))
}

/// The backend refused the bridge's `initialize` (or its `notifications/initialized`), as
/// `detail` says: untranslatable.
fn refused(pool: &Pool, backend: &Backend, detail: String) -> AcquireError {
    AcquireError::Answer(GatewayError::untranslatable(
        &pool.name,
        &format!(
            "the legacy backend {} refused the bridge's initialize: {detail}",
            backend.label
        ),
    ))
}

/// A backend cut off while it answered the bridge's `initialize` (its connection broken, or
/// its event stream ended before the response): marked failed, and the request tries another.
fn cut_off(pool: &Pool, backend: &Backend) -> AcquireError {
    pool.mark_failed(backend);
    AcquireError::Unreachable
}
