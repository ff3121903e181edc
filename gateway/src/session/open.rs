//! Opening a session for a client's `initialize`: quotas first, then the backend with the
//! fewest sessions (others when one is unreachable); the record is created only when the
//! backend accepted, and a backend session the store then refuses is deleted again.

use super::manager::{Requester, SessionManager, ANSWER_LIMIT};
use super::reinit;
use super::store::{CreateError, Quota};
use super::{now_ms, short, Binding, SessionRecord, Settings};
use crate::error::GatewayError;
use crate::upstream::attempt::{Pick, Step};
use crate::upstream::client::{CallError, Exchange};
use crate::upstream::encoding;
use crate::upstream::request::{self, Target};
use crate::upstream::{Backend, Pool};
use bytes::Bytes;
use pingora::http::{RequestHeader, ResponseHeader};
use std::net::SocketAddr;
use std::sync::Arc;

/// A client's `initialize`, to open a session with.
pub struct Opening<'a> {
    /// The client's request head.
    pub client: &'a RequestHeader,
    /// Upstream path.
    pub path: Arc<str>,
    /// The whole body.
    pub body: Bytes,
    /// Its `params`, verbatim, replayed on re-initialization.
    pub params: Option<Arc<str>>,
    /// Who opens it.
    pub caller: &'a Requester,
    /// Caps to respect.
    pub quota: Quota,
}

/// What opening a session came to.
// Returned once per initialize; the session variant is the common one.
#[allow(clippy::large_enum_variant)]
pub enum Opened {
    /// A new session: answer the client with `head` (its id in place of the backend's) and
    /// `answer`.
    Session {
        /// The new record.
        record: SessionRecord,
        /// The backend's response head.
        head: ResponseHeader,
        /// The initialize answer.
        answer: Bytes,
    },
    /// The backend answered with an error in a 2xx: passed on, no session.
    NotASession {
        /// The backend's response head.
        head: ResponseHeader,
        /// Its answer.
        answer: Bytes,
    },
    /// The backend refused (a non-2xx, or no session id): relayed as it streams.
    Refused(Exchange),
}

impl SessionManager {
    /// Opens a session for a client's `initialize` on the backend with the fewest sessions
    /// (retrying others when one is unreachable): the record is created only when the backend
    /// accepted, and a backend session the store then refuses is deleted again.
    pub async fn open(
        &self,
        pool: &Arc<Pool>,
        opening: Opening<'_>,
        tried: &mut Vec<SocketAddr>,
    ) -> Result<Opened, GatewayError> {
        let quota = opening.quota;
        if self.store.count().await? >= quota.max_sessions {
            return Err(GatewayError::session_limit(quota.max_sessions));
        }
        let identity = &opening.caller.identity;
        if let (Some(max), false) = (quota.max_per_client, identity.is_empty()) {
            if self.store.client_count(identity).await? >= max {
                return Err(GatewayError::client_session_limit(max));
            }
        }
        let counts = self.store.backend_counts(&pool.name).await?;
        let pick = Pick::Session { counts: &counts };
        let engine = &self.engine;
        let opening = &opening;
        engine
            .each_backend(pool, pick, tried, |backend: Arc<Backend>| {
                Box::pin(async move {
                    let target = Target {
                        path: &opening.path,
                        host: &backend.host_header,
                    };
                    let len = Some(opening.body.len());
                    let req = match request::forwarded(opening.client, target, None, len) {
                        Ok(mut req) => {
                            request::identify(&mut req, pool);
                            req
                        }
                        Err(e) => return Step::Stop(e),
                    };
                    let body = opening.body.clone();
                    let mut ex = match engine.send(pool, &backend, &req, body, true).await {
                        Ok(ex) => ex,
                        Err(CallError::Connect(_)) => return Step::Unreachable,
                        Err(CallError::Lost(_)) => return Step::Lost,
                        Err(CallError::Credentials(e)) => return Step::Stop(*e),
                    };
                    let head = ex.header();
                    if !head.status.is_success() || !head.headers.contains_key("mcp-session-id") {
                        let status = head.status.as_u16();
                        if crate::upstream::era::answer_suggests_other_era(
                            mcp_wire::Era::Legacy,
                            status,
                            false,
                        ) {
                            backend.suspect_era();
                        }
                        return Step::Done(Opened::Refused(ex));
                    }
                    let Ok(mut answer) = ex.read_all(ANSWER_LIMIT).await else {
                        return Step::Lost;
                    };
                    let mut head = ex.header().clone();
                    engine.release(ex);
                    // gzip (Starlette's GZipMiddleware): the session id is read from the answer
                    let _ = encoding::decode_in_place(&mut head, &mut answer, ANSWER_LIMIT);
                    match reinit::accepted(&head, &answer) {
                        None => Step::Done(Opened::NotASession { head, answer }),
                        Some(accepted) => {
                            match self.create(pool, &backend, opening, accepted).await {
                                Ok(record) => Step::Done(Opened::Session {
                                    record,
                                    head,
                                    answer,
                                }),
                                Err(e) => Step::Stop(e),
                            }
                        }
                    }
                })
            })
            .await
    }

    async fn create(
        &self,
        pool: &Arc<Pool>,
        backend: &Arc<Backend>,
        opening: &Opening<'_>,
        accepted: reinit::Accepted,
    ) -> Result<SessionRecord, GatewayError> {
        let record = SessionRecord {
            id: super::new_session_id(),
            pool: pool.name.as_str().into(),
            client: opening.caller.identity.clone(),
            principal: opening.caller.principal.clone(),
            path: opening.path.clone(),
            init_params: opening.params.clone().unwrap_or_else(|| "{}".into()),
            protocol_version: accepted.protocol_version,
            binding: Binding {
                backend: backend.addr,
                backend_session: accepted.backend_session,
                generation: 1,
                stale: false,
            },
            settings: Settings::default(),
            last_use_ms: now_ms(),
        };
        let refused = match self.store.create(record.clone(), opening.quota).await {
            Ok(()) => {
                self.metrics
                    .sessions_created
                    .with_label_values(&[&pool.name])
                    .inc();
                tracing::debug!(session = short(&record.id), backend = %backend.addr, "session created");
                self.audit_session("session.opened", pool, &record, |r| {
                    let caller = crate::auth::Caller::of(&opening.client.extensions);
                    let r = match caller.principal() {
                        Some(p) => r.principal(Some(p)),
                        None => r,
                    };
                    r.detail(serde_json::json!({ "protocolVersion": &*record.protocol_version }))
                });
                return Ok(record);
            }
            Err(CreateError::Full { max }) => GatewayError::session_limit(max),
            Err(CreateError::ClientFull { max }) => GatewayError::client_session_limit(max),
            Err(CreateError::Store(e)) => e.into(),
        };
        let caller = crate::auth::Caller::of(&opening.client.extensions);
        self.delete_upstream(pool, &record, &caller).await;
        Err(refused)
    }
}
