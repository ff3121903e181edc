//! Moving a session to a surviving backend: replay the client's `initialize` (with a
//! gateway-owned id), then `notifications/initialized`, then the session-scoped settings;
//! check the protocol version; swap the binding under generation fencing. Concurrent requests
//! of one session share a single re-initialization.

use super::{Binding, GoneReason, Lookup, SessionRecord, SessionStore};
use crate::error::GatewayError;
use crate::mcp::headers::{MCP_PROTOCOL_VERSION, MCP_SESSION_ID};
use crate::mcp::sse;
use crate::metrics::Metrics;
use crate::upstream::client::{CallError, UpstreamClient};
use crate::upstream::{Backend, Pool};
use bytes::Bytes;
use dashmap::DashMap;
use pingora::http::RequestHeader;
use std::net::SocketAddr;
use std::sync::Arc;

/// Largest answer read from a replayed request.
const REPLAY_ANSWER_LIMIT: usize = 1024 * 1024;

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
        }
    }
}

/// Session table plus what re-initialization needs.
pub struct Sessions {
    /// Where records live.
    pub store: Arc<dyn SessionStore>,
    /// Upstream client for gateway-driven requests.
    pub client: Arc<UpstreamClient>,
    metrics: Metrics,
    locks: DashMap<Arc<str>, Arc<tokio::sync::Mutex<()>>>,
    max_per_client: Option<usize>,
    per_client: DashMap<Arc<str>, usize>,
}

enum Attempt {
    Unreachable,
    Refused,
    VersionMismatch(String),
}

impl Sessions {
    /// Sessions kept in `store`.
    pub fn new(
        store: Arc<dyn SessionStore>,
        client: Arc<UpstreamClient>,
        metrics: Metrics,
        max_per_client: Option<usize>,
    ) -> Sessions {
        Sessions {
            store,
            client,
            metrics,
            locks: DashMap::new(),
            max_per_client,
            per_client: DashMap::new(),
        }
    }

    /// Counts a new session of client `identity`, or refuses it when the client holds
    /// `limits.max-sessions-per-client` already.
    pub fn open_for(&self, identity: &Arc<str>) -> Result<(), GatewayError> {
        let Some(max) = self.max_per_client.filter(|_| !identity.is_empty()) else {
            return Ok(());
        };
        let mut held = self.per_client.entry(identity.clone()).or_insert(0);
        if *held >= max {
            return Err(GatewayError::client_session_limit(max));
        }
        *held += 1;
        Ok(())
    }

    /// Gives back a session counted by [`Sessions::open_for`].
    pub fn close_for(&self, identity: &str) {
        if self.max_per_client.is_some() && !identity.is_empty() {
            self.per_client.remove_if_mut(identity, |_, held| {
                *held = held.saturating_sub(1);
                *held == 0
            });
        }
    }

    /// Metric families (shared with the proxy).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Moves `seen` (the record as the caller saw it) to a surviving backend, or returns the
    /// binding someone else already moved it to. Errors are answers for the client: 503 when
    /// no backend is reachable (the session is kept), 404 `reinit-failed` when the session
    /// cannot continue anywhere.
    pub async fn recover(
        &self,
        pool: &Pool,
        seen: &SessionRecord,
        reason: Reason,
    ) -> Result<SessionRecord, GatewayError> {
        let lock = self.locks.entry(seen.id.clone()).or_default().clone();
        let result = {
            let _single_flight = lock.lock().await;
            self.recover_locked(pool, seen, reason).await
        };
        drop(lock);
        self.locks
            .remove_if(&seen.id, |_, l| Arc::strong_count(l) == 1);
        result
    }

    async fn recover_locked(
        &self,
        pool: &Pool,
        seen: &SessionRecord,
        reason: Reason,
    ) -> Result<SessionRecord, GatewayError> {
        let current = match self.store.lookup(&seen.id).await {
            Lookup::Live(r) => r,
            Lookup::Gone(g) => return Err(GatewayError::session_not_found(g.as_str())),
            Lookup::Unknown => return Err(GatewayError::session_not_found("unknown")),
        };
        if current.binding.generation != seen.binding.generation {
            return Ok(current); // another request of this session already moved it
        }
        // A backend that forgot the session may still be alive; one that is down is tried
        // last (it may be the only one, and back by now).
        let last_resort = match reason {
            Reason::SessionUnknown => None,
            _ => pool.find(current.binding.backend),
        };
        let mut tried: Vec<SocketAddr> = last_resort.iter().map(|b| b.addr).collect();
        let mut last_resort_tried = false;
        loop {
            let b = match pool.select_for_session(&tried) {
                Some(b) => b,
                None => match &last_resort {
                    // a drained backend is never the last resort: that is what it drains from
                    Some(b) if !last_resort_tried && reason != Reason::Drained => {
                        last_resort_tried = true;
                        b.clone()
                    }
                    _ => break,
                },
            };
            if !tried.contains(&b.addr) {
                tried.push(b.addr);
            }
            match self.initialize_on(pool, &b, &current).await {
                Ok(binding) => {
                    pool.mark_ok(&b);
                    return self.rebind(pool, &current, binding, reason).await;
                }
                Err(Attempt::Unreachable) => pool.mark_failed(&b),
                Err(Attempt::Refused) => {}
                Err(Attempt::VersionMismatch(got)) => {
                    tracing::warn!(session = super::short(&current.id), expected = %current.protocol_version, got, "re-initialization negotiated another protocol version");
                    self.end(
                        pool,
                        &current.id,
                        GoneReason::ReinitFailed,
                        "version-mismatch",
                    )
                    .await;
                    return Err(GatewayError::session_not_found("reinit-failed")
                        .with("expectedProtocolVersion", current.protocol_version.as_ref())
                        .with("negotiatedProtocolVersion", got));
                }
            }
        }
        Err(GatewayError::unavailable(&pool.name, tried.len()))
    }

    async fn rebind(
        &self,
        pool: &Pool,
        current: &SessionRecord,
        binding: Binding,
        reason: Reason,
    ) -> Result<SessionRecord, GatewayError> {
        let new_backend = binding.backend;
        match self
            .store
            .rebind(&current.id, current.binding.generation, binding)
            .await
        {
            Ok(record) => {
                pool.count_session(current.binding.backend, false);
                pool.count_session(new_backend, true);
                self.metrics
                    .session_reinits
                    .with_label_values(&[&pool.name, reason.as_str()])
                    .inc();
                tracing::info!(session = super::short(&record.id), from = %current.binding.backend, to = %new_backend, generation = record.binding.generation, reason = reason.as_str(), "session re-initialized");
                Ok(record)
            }
            Err(Lookup::Live(winner)) => Ok(winner),
            Err(Lookup::Gone(g)) => Err(GatewayError::session_not_found(g.as_str())),
            Err(Lookup::Unknown) => Err(GatewayError::session_not_found("unknown")),
        }
    }

    /// Ends a session: removes it with a tombstone and counts it.
    pub async fn end(
        &self,
        pool: &Pool,
        id: &str,
        reason: GoneReason,
        label: &str,
    ) -> Option<SessionRecord> {
        let record = self.store.remove(id, reason).await?;
        pool.count_session(record.binding.backend, false);
        self.close_for(&record.client);
        self.metrics
            .sessions_ended
            .with_label_values(&[&pool.name, label])
            .inc();
        Some(record)
    }

    /// Best-effort DELETE of the backend's session (expiry, client DELETE, a lost race).
    pub async fn delete_upstream(&self, pool: &Pool, rec: &SessionRecord) {
        let Some(b) = pool.find(rec.binding.backend) else {
            return;
        };
        let sid = &rec.binding.backend_session;
        delete_backend_session(
            &self.client,
            pool,
            &b,
            &rec.path,
            sid,
            Some(&rec.protocol_version),
        )
        .await;
    }

    async fn initialize_on(
        &self,
        pool: &Pool,
        backend: &Backend,
        rec: &SessionRecord,
    ) -> Result<Binding, Attempt> {
        let b = backend;
        let generation = rec.binding.generation + 1;
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":"mcpgw-reinit-{generation}","method":"initialize","params":{}}}"#,
            rec.init_params
        );
        let req = request(&rec.path, &backend.host, None, None, body.len())
            .map_err(|_| Attempt::Refused)?;
        let (head, answer) = match self
            .client
            .call(pool.peer(b), &req, Bytes::from(body), REPLAY_ANSWER_LIMIT)
            .await
        {
            Ok(ok) => ok,
            Err(CallError::Connect(_)) | Err(CallError::Lost(_)) => {
                return Err(Attempt::Unreachable)
            }
        };
        let session_id = head
            .headers
            .get(MCP_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(Arc::<str>::from);
        let (true, Some(backend_session)) = (head.status.is_success(), session_id) else {
            return Err(Attempt::Refused);
        };
        let content_type = head
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok());
        let version = sse::response(content_type, &answer)
            .and_then(|v| {
                v.pointer("/result/protocolVersion")?
                    .as_str()
                    .map(str::to_owned)
            })
            .ok_or(Attempt::Refused)?;
        if version != rec.protocol_version.as_ref() {
            return Err(Attempt::VersionMismatch(version));
        }
        let binding = Binding {
            backend: backend.addr,
            backend_session,
            generation,
            stale: false,
        };
        let notify = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        self.replay(pool, b, rec, &binding, notify).await;
        if let Some(level) = &rec.settings.log_level {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":"mcpgw-replay-level","method":"logging/setLevel","params":{level}}}"#
            );
            self.replay(pool, b, rec, &binding, &body).await;
        }
        for (i, uri) in rec.settings.subscriptions.iter().enumerate() {
            let params = serde_json::json!({ "uri": uri.as_ref() });
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":"mcpgw-replay-sub-{i}","method":"resources/subscribe","params":{params}}}"#
            );
            self.replay(pool, b, rec, &binding, &body).await;
        }
        Ok(binding)
    }

    /// Sends one replayed message in the new backend session; failures are logged, not fatal.
    async fn replay(
        &self,
        pool: &Pool,
        b: &Backend,
        rec: &SessionRecord,
        binding: &Binding,
        body: &str,
    ) {
        let Ok(req) = request(
            &rec.path,
            &b.host,
            Some(&binding.backend_session),
            Some(&rec.protocol_version),
            body.len(),
        ) else {
            return;
        };
        let peer = pool.peer(b);
        let body = Bytes::copy_from_slice(body.as_bytes());
        match self
            .client
            .call(peer, &req, body, REPLAY_ANSWER_LIMIT)
            .await
        {
            Ok((head, _)) if head.status.is_success() => {}
            Ok((head, _)) => tracing::warn!(
                session = super::short(&rec.id),
                status = head.status.as_u16(),
                "replayed message refused"
            ),
            Err(e) => {
                tracing::warn!(session = super::short(&rec.id), error = %e.error(), "replayed message failed")
            }
        }
    }
}

/// A POST the gateway sends on its own.
/// Ends a backend's session with a best-effort DELETE (failures are logged at debug).
pub async fn delete_backend_session(
    client: &UpstreamClient,
    pool: &Pool,
    backend: &Backend,
    path: &str,
    backend_session: &str,
    protocol_version: Option<&str>,
) {
    let Ok(mut req) = request(
        path,
        &backend.host,
        Some(backend_session),
        protocol_version,
        0,
    ) else {
        return;
    };
    req.set_method(http::Method::DELETE);
    let _ = req.remove_header("content-length");
    if let Err(e) = client
        .call(pool.peer(backend), &req, Bytes::new(), REPLAY_ANSWER_LIMIT)
        .await
    {
        tracing::debug!(backend = %backend.label, error = %e.error(), "upstream DELETE failed");
    }
}

pub fn request(
    path: &str,
    host: &str,
    session: Option<&str>,
    version: Option<&str>,
    len: usize,
) -> pingora::Result<RequestHeader> {
    let mut req = RequestHeader::build("POST", path.as_bytes(), Some(6))?;
    req.insert_header("host", host)?;
    req.insert_header("content-type", "application/json")?;
    req.insert_header("accept", "application/json, text/event-stream")?;
    req.insert_header("content-length", len.to_string())?;
    if let Some(s) = session {
        req.insert_header(MCP_SESSION_ID, s)?;
    }
    if let Some(v) = version {
        req.insert_header(MCP_PROTOCOL_VERSION, v)?;
    }
    Ok(req)
}
