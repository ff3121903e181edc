//! Moving a session to another backend, the replay only: the client's `initialize` (with a
//! gateway-owned id), then `notifications/initialized`, then the session-scoped settings, with
//! the negotiated protocol version checked. Choosing the backend, fencing and counting belong
//! to the session manager; sending belongs to the attempt engine.

use super::{Binding, SessionRecord};
use crate::auth::Caller;
use crate::upstream::attempt::Engine;
use crate::upstream::client::CallError;
use crate::upstream::own::BackendSession;
use crate::upstream::request::{self, Target};
use crate::upstream::{Backend, Pool};
use bytes::Bytes;
use mcp_wire::headers::MCP_SESSION_ID;
use mcp_wire::{messages, sse};
use pingora::http::ResponseHeader;
use std::sync::Arc;

/// Why a session needed a new backend (a metric label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Health or a recent failure marks the pinned backend down.
    BackendDown,
    /// The pinned backend left the pool (discovery removed it).
    BackendGone,
    /// The pinned backend has drained past the pool's `drain-timeout-s`.
    Drained,
    /// The pinned backend refused the connection.
    ConnectRefused,
    /// The pinned backend answered that it does not know the session.
    SessionUnknown,
    /// The connection broke mid-request (the request was safe to repeat).
    ConnectionLost,
    /// The pinned backend's era was probed again and it no longer serves sessions (a pod
    /// replaced by a 2026-07-28-only one at the same address).
    EraChanged,
    /// No backend of the session's era is left in its pool, but 2026-07-28 ones are: the
    /// session continues on the era bridge (`SessionManager::bridge_over`).
    Bridged,
}

impl Reason {
    /// Metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::BackendDown => "backend-down",
            Reason::BackendGone => "backend-gone",
            Reason::Drained => "drained",
            Reason::ConnectRefused => "connect-refused",
            Reason::SessionUnknown => "session-unknown",
            Reason::ConnectionLost => "connection-lost",
            Reason::EraChanged => "era-changed",
            Reason::Bridged => "bridged",
        }
    }
}

/// A backend's acceptance of an `initialize`: its session id and the negotiated version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The backend's `Mcp-Session-Id`.
    pub backend_session: Arc<str>,
    /// `result.protocolVersion` of the answer.
    pub protocol_version: Arc<str>,
}

/// The one reader of `initialize` answers: the backend's session id (from a 2xx head) and
/// the negotiated version (from a JSON or SSE body). `None` for refusals and error answers.
pub fn accepted(head: &ResponseHeader, answer: &[u8]) -> Option<Accepted> {
    if !head.status.is_success() {
        return None;
    }
    let backend_session = head.headers.get(MCP_SESSION_ID)?.to_str().ok()?;
    let content_type = head
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let version = sse::response(content_type, answer)?
        .pointer("/result/protocolVersion")?
        .as_str()
        .map(Arc::<str>::from)?;
    Some(Accepted {
        backend_session: backend_session.into(),
        protocol_version: version,
    })
}

/// Why a replay did not produce a binding.
#[derive(Debug)]
pub enum Failed {
    /// The backend could not be reached (the engine marked it failed).
    Unreachable,
    /// The backend broke the connection after the replay went out.
    Lost,
    /// The backend answered without accepting the session.
    Refused,
    /// The backend negotiated another protocol version than the session's.
    VersionMismatch(String),
    /// Nothing was sent: the pool's credentials could not be had (the answer for the client).
    Credentials(Box<crate::error::GatewayError>),
}

/// Replays `rec`'s initialize (and settings) on `backend` for `caller`; the binding it would
/// have next.
pub async fn replay(
    engine: &Engine,
    pool: &Pool,
    backend: &Arc<Backend>,
    rec: &SessionRecord,
    caller: &Caller,
) -> Result<Binding, Failed> {
    let generation = rec.binding.generation + 1;
    let body = messages::reinitialize(generation, &rec.init_params);
    let target = Target {
        path: &rec.path,
        host: &backend.host_header,
    };
    let req = request::own(http::Method::POST, target, None, None, body.len(), caller)
        .map_err(|_| Failed::Refused)?;
    let (head, answer) = match engine.call(pool, backend, &req, Bytes::from(body)).await {
        Ok(ok) => ok,
        Err(CallError::Connect(_)) => return Err(Failed::Unreachable),
        Err(CallError::Lost(_)) => return Err(Failed::Lost),
        Err(CallError::Credentials(e)) => return Err(Failed::Credentials(e)),
    };
    let accepted = accepted(&head, &answer).ok_or(Failed::Refused)?;
    if accepted.protocol_version != rec.protocol_version {
        return Err(Failed::VersionMismatch(
            accepted.protocol_version.to_string(),
        ));
    }
    let binding = Binding {
        backend: backend.addr,
        backend_session: accepted.backend_session,
        generation,
        stale: false,
    };
    let send = |body: String| send_one(engine, pool, backend, rec, &binding, body, caller);
    send(messages::initialized()).await;
    if let Some(level) = &rec.settings.log_level {
        send(messages::replay_log_level(level)).await;
    }
    for (i, uri) in rec.settings.subscriptions.iter().enumerate() {
        send(messages::replay_subscription(i, uri)).await;
    }
    Ok(binding)
}

/// Sends one replayed message in the new backend session; failures are logged, not fatal.
async fn send_one(
    engine: &Engine,
    pool: &Pool,
    backend: &Arc<Backend>,
    rec: &SessionRecord,
    binding: &Binding,
    body: String,
    caller: &Caller,
) {
    let session = BackendSession {
        id: binding.backend_session.clone(),
        path: rec.path.clone(),
        protocol_version: rec.protocol_version.clone(),
    };
    match engine
        .post_in_session(pool, backend, &session, body, caller)
        .await
    {
        Ok((head, _)) if head.status.is_success() => {}
        Ok((head, _)) => tracing::warn!(
            session = super::short(&rec.id),
            status = head.status.as_u16(),
            "replayed message refused"
        ),
        Err(e) => {
            tracing::warn!(session = super::short(&rec.id), error = %e, "replayed message failed")
        }
    }
}
