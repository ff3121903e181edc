//! The requests the gateway makes to backends on its own, not for a client's request: the era
//! probe's, a session's DELETE, a message into a backend session (a cancellation, a bridged
//! session's opening), in the background where no client should wait. Each reads its whole
//! (bounded) answer; each goes through the [`Engine`]'s one attempt.

use super::attempt::Engine;
use super::client::CallError;
use super::request::{self, Target};
use super::{Backend, Pool};
use crate::auth::Caller;
use crate::error::GatewayError;
use bytes::Bytes;
use pingora::http::{RequestHeader, ResponseHeader};
use std::sync::Arc;
use std::time::Duration;

/// Largest answer read from a request the gateway sends on its own.
const OWN_ANSWER_LIMIT: usize = 1024 * 1024;
/// How long a best-effort notification (a cancellation) may take in the background.
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(2);

impl Engine {
    /// A request of the era probe (`upstream/era.rs`): one attempt, the whole (bounded) answer
    /// read, without counting it in flight, in latency or against the backend's health (the
    /// health checks and client traffic do that). Its connection is closed afterwards, never
    /// pooled: a probe must not leave an idle connection that a client's call (not safe to
    /// repeat) could find dead when the backend goes away.
    pub async fn probe(
        &self,
        pool: &Pool,
        backend: &Backend,
        req: &RequestHeader,
        body: Bytes,
    ) -> Result<(ResponseHeader, Bytes), CallError> {
        let mut exchange = self
            .client
            .send(pool.peer(backend), req, body, true)
            .await?;
        let head = exchange.header().clone();
        let body = exchange
            .read_all(OWN_ANSWER_LIMIT)
            .await
            .map_err(CallError::Lost)?;
        drop(exchange);
        Ok((head, body))
    }

    /// Sends a request the gateway makes on its own (safe to repeat) and reads the whole
    /// (bounded) answer.
    pub async fn call(
        &self,
        pool: &Pool,
        backend: &Arc<Backend>,
        req: &RequestHeader,
        body: Bytes,
    ) -> Result<(ResponseHeader, Bytes), CallError> {
        let mut exchange = self.send(pool, backend, req, body, true).await?;
        let mut head = exchange.header().clone();
        let mut body = exchange
            .read_all(OWN_ANSWER_LIMIT)
            .await
            .map_err(CallError::Lost)?;
        self.release(exchange);
        let _ = super::encoding::decode_in_place(&mut head, &mut body, OWN_ANSWER_LIMIT);
        Ok((head, body))
    }

    /// Ends a backend's session with a DELETE made for `caller`; best effort (failures are
    /// logged at debug).
    pub async fn delete_session(
        &self,
        pool: &Pool,
        backend: &Arc<Backend>,
        path: &str,
        backend_session: &str,
        protocol_version: Option<&str>,
        caller: &Caller,
    ) {
        let target = Target {
            path,
            host: &backend.host_header,
        };
        let req = match request::own(
            http::Method::DELETE,
            target,
            Some(backend_session),
            protocol_version,
            0,
            caller,
        ) {
            Ok(req) => req,
            Err(e) => return tracing::debug!(error = %e, "upstream DELETE not built"),
        };
        if let Err(e) = self.call(pool, backend, &req, Bytes::new()).await {
            tracing::debug!(backend = %backend.label, error = %e, "upstream DELETE failed");
        }
    }

    /// Sends a message of the gateway's own into a backend session, for `caller`, and reads
    /// the (bounded) answer.
    pub async fn post_in_session(
        &self,
        pool: &Pool,
        backend: &Arc<Backend>,
        session: &BackendSession,
        message: String,
        caller: &Caller,
    ) -> Result<(ResponseHeader, Bytes), PostError> {
        let target = Target {
            path: &session.path,
            host: &backend.host_header,
        };
        let id = Some(&*session.id);
        let version = Some(&*session.protocol_version);
        let req = request::own(
            http::Method::POST,
            target,
            id,
            version,
            message.len(),
            caller,
        )
        .map_err(PostError::Unbuilt)?;
        self.call(pool, backend, &req, Bytes::from(message))
            .await
            .map_err(PostError::Call)
    }

    /// [`Engine::delete_session`] in the background (a session nobody will use: the loser of a
    /// re-binding race, say), so no client waits for it.
    pub fn spawn_delete_session(
        self: &Arc<Self>,
        pool: Arc<Pool>,
        backend: Arc<Backend>,
        session: BackendSession,
        caller: Caller,
    ) {
        let engine = self.clone();
        tokio::spawn(async move {
            let version = Some(&*session.protocol_version);
            engine
                .delete_session(
                    &pool,
                    &backend,
                    &session.path,
                    &session.id,
                    version,
                    &caller,
                )
                .await;
        });
    }

    /// Sends a notification into a backend session in the background (bounded by a short
    /// timeout), so the client's answer never waits for it.
    pub fn spawn_notify(
        self: &Arc<Self>,
        pool: Arc<Pool>,
        backend: Arc<Backend>,
        session: BackendSession,
        message: String,
        caller: Caller,
    ) {
        let engine = self.clone();
        tokio::spawn(async move {
            let sent = engine.post_in_session(&pool, &backend, &session, message, &caller);
            if tokio::time::timeout(NOTIFY_TIMEOUT, sent).await.is_err() {
                tracing::debug!(backend = %backend.label, "notification to the backend timed out");
            }
        });
    }
}

/// Why a message of the gateway's own into a backend session got no answer.
#[derive(Debug)]
pub enum PostError {
    /// The request could not be built (a session id or version that is no header value):
    /// nothing was sent, and the backend is not at fault.
    Unbuilt(GatewayError),
    /// The exchange failed.
    Call(CallError),
}

impl std::fmt::Display for PostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PostError::Unbuilt(e) => write!(f, "request not built: {e}"),
            PostError::Call(e) => e.fmt(f),
        }
    }
}

/// A backend's session, as the gateway addresses it.
#[derive(Debug, Clone)]
pub struct BackendSession {
    /// The backend's `Mcp-Session-Id`.
    pub id: Arc<str>,
    /// Upstream path.
    pub path: Arc<str>,
    /// Negotiated protocol version.
    pub protocol_version: Arc<str>,
}
