//! One 2026-07-28 request on legacy backends: the envelope read (-32602 without the required
//! `_meta` keys), a backend picked by the pool's balancing among those that serve sessions,
//! the pooled session for (backend, principal, initialize digest) taken or opened, the
//! session's log level set when the request's `_meta.logLevel` differs, the request sent with
//! the gateway's own id and without reserved `_meta` keys, and the answer read (`read.rs`):
//! progress (and `notifications/message` at the request's level) on an SSE answer, the result
//! made modern (`resultType`, `_meta` serverInfo, cache hints). `server/discover` is answered
//! from the backend's `InitializeResult`.
//!
//! A server→client request of the backend during the call (`elicitation/create`,
//! `sampling/createMessage`, `roots/list` on the call's SSE answer, or on the session's GET
//! stream: `stray.rs`) parks the call (`rounds.rs`, `park.rs`) and answers the client `input_required` with a sealed `requestState`
//! (`translate::mrtr`); the client's retry (`inputResponses`, `requestState`) is checked
//! (-32602 with `data.reason` when forged, expired, another principal's or another request's),
//! its answer goes to the backend as the response to its request, and the call's answer is read
//! on. A client without the capability gets -32021 (HTTP 400), and the backend a refusal.
//!
//! Failures, as the attempt engine rules (`Engine::attempts`, `Pick::Serving` legacy): a
//! refused connection tries the next backend; a backend that forgot the session (404) gets a
//! new one and the request again (it never ran); a connection lost mid-answer drops the pooled
//! session, and the request is repeated only when it is safe to repeat (an in-flight
//! `tools/call` gets -32013).

use super::acquire_error::AcquireError;
use super::entry::Entry;
use super::key::Key;
use super::owner::Owner;
use super::sessions::InUse;
use crate::auth::Caller;
use crate::bridge::Bridge;
use crate::bridge::{ListFilter, Served};
use crate::config::BridgeConfig;
use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::error::{Fail, GatewayError};
use crate::upstream::attempt::{Engine, Pick, Step};
use crate::upstream::client::CallError;
use crate::upstream::request;
use crate::upstream::{Backend, Pool};
use bytes::Bytes;
use mcp_wire::messages::{self, safe_to_repeat};
use mcp_wire::translate::legacy::{self, ModernEnvelope};
use mcp_wire::translate::mrtr;
use mcp_wire::{Era, RequestId};
use pingora::http::RequestHeader;
use pingora::prelude::*;
use serde_json::Value;
use std::sync::Arc;

/// Methods of the session era that would change the pooled backend session for everyone in
/// it (its client, its log level, its subscriptions); 2026-07-28 has none of them, so they
/// never reach a pooled session (-32033 `session-method`).
const SESSION_METHODS: [&str; 4] = [
    "initialize",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// How often a request is sent again because its backend forgot the pooled session.
const MAX_FORGOTTEN: usize = 2;

/// Where a request goes and on whose behalf.
pub struct Target<'a> {
    /// The route's pool (its backends are legacy).
    pub pool: &'a Arc<Pool>,
    /// Upstream path.
    pub path: &'a str,
    /// Whom the request is made for: its principal is part of the pooled session's key, and
    /// the requests the bridge makes for it are made for this caller.
    pub caller: &'a Caller,
    /// The running config's `bridge` section: the pooled sessions' and parked calls' bounds,
    /// `input-ttl-s`, the key sealing `requestState`s, `advertise-url` (sealed into the states
    /// as the holder of their calls), the cache hints of cacheable answers whose server gave
    /// none.
    pub config: &'a BridgeConfig,
    /// The route's `authz` filter of a list answer, when this request's answer is one.
    pub filter: Option<&'a ListFilter<'a>>,
    /// The response cache of the request's snapshot: what a backend's stream says changed is
    /// not answered from it again.
    pub cache: &'a crate::cache::Cache,
}

/// How the reverse bridge took a request it did not fail.
pub enum Pooled {
    /// Served on the pool's legacy backends.
    Served(Served),
    /// The backend picked for it answered the bridge's `initialize` without a session: it is
    /// no legacy session server, and the request may go to it as it is (nothing was written).
    NoSession(Arc<Backend>),
}

/// Serves one 2026-07-28 request (its body read and checked) on the pool's legacy backends.
pub async fn serve(
    bridge: &Bridge,
    session: &mut impl Client,
    to: Target<'_>,
    body: &Bytes,
    id: &RequestId,
) -> Result<Pooled, Fail> {
    let msg: Value =
        serde_json::from_slice(body).map_err(|e| GatewayError::parse_error(&e.to_string()))?;
    let Some(method) = msg.get("method").and_then(Value::as_str) else {
        // a response from a 2026-07-28 client has no request of the gateway's to answer
        answer::empty(session, 202).await?;
        return Ok(Pooled::Served(Served::default()));
    };
    if msg.get("id").is_none() {
        // 2026-07-28 notifications have nothing to say to a backend session
        answer::empty(session, 202).await?;
        return Ok(Pooled::Served(Served::default()));
    }
    if SESSION_METHODS.contains(&method) {
        // it would re-initialize (or re-set) the backend session others use
        return Err(GatewayError::session_method(method).into());
    }
    let env =
        ModernEnvelope::read(&msg).map_err(|e| GatewayError::invalid_params(&e.to_string()))?;
    let init = legacy::initialize(&env);
    // the socket's address, never a header: an anonymous caller's share is its peer's
    let peer = session.peer_ip();
    let one = One {
        bridge,
        to: &to,
        msg: &msg,
        body,
        method,
        env: &env,
        init: &init,
        id,
        repeatable: safe_to_repeat(Some(method), true),
        owner: Owner::of(to.caller.principal(), peer),
    };
    one.run(session).await
}

/// One request being served.
pub(super) struct One<'a> {
    pub(super) bridge: &'a Bridge,
    pub(super) to: &'a Target<'a>,
    pub(super) msg: &'a Value,
    /// The request's body as the client sent it.
    pub(super) body: &'a Bytes,
    pub(super) method: &'a str,
    pub(super) env: &'a ModernEnvelope,
    pub(super) init: &'a legacy::BackendInit,
    pub(super) id: &'a RequestId,
    repeatable: bool,
    /// Whose shares it counts in (pooled sessions, parked calls).
    pub(super) owner: Owner,
}

/// How one attempt in one pooled session ended.
pub(super) enum Attempt {
    /// Answered (or the client went away): done.
    Done(Served),
    /// The backend forgot the pooled session (the request never ran): again in a fresh one.
    Forgotten,
    /// The backend refused the connection (marked failed by `Engine::send`).
    Unreachable,
    /// The connection broke after the request went out: `Step::lost` (the attempt engine
    /// marks the backend, and repeats the request only when it is safe to).
    Lost,
}

impl One<'_> {
    pub(super) fn engine(&self) -> &Engine {
        &self.bridge.engine
    }

    pub(super) fn metrics(&self) -> &crate::bridge::metrics::BridgeMetrics {
        &self.bridge.metrics
    }

    async fn run(&self, session: &mut impl Client) -> Result<Pooled, Fail> {
        if let Some((state, responses)) = mrtr::retry_parts(self.msg) {
            let served = self.resume(session, state, responses).await?;
            return Ok(Pooled::Served(served));
        }
        if self.method == "subscriptions/listen" {
            return self.listen(session).await;
        }
        let mut tried = Vec::new();
        let pick = Pick::Serving(Era::Legacy);
        let mut attempts = self.engine().attempts(self.to.pool, pick, &mut tried);
        // (driven here, not by `each_backend`: every attempt writes to the client's session)
        let mut streaming = false;
        while let Some(backend) = attempts.next() {
            let before = attempts.tried().len() - 1;
            let step = self.on(session, &backend, before, &mut streaming).await;
            if let Some(end) = attempts.settle(&backend, step) {
                return end?;
            }
        }
        Err(attempts.exhausted().into())
    }

    /// The request on `backend` (tried after `before` others), in a pooled session taken or
    /// opened there, and again in a fresh one when the backend forgot it (the request never
    /// ran), at most [`MAX_FORGOTTEN`] times more.
    async fn on(
        &self,
        session: &mut impl Client,
        backend: &Arc<Backend>,
        before: usize,
        streaming: &mut bool,
    ) -> Step<Result<Pooled, Fail>> {
        let pool = self.to.pool;
        for _ in 0..=MAX_FORGOTTEN {
            let key = Key {
                backend: backend.addr,
                path: self.to.path.into(),
                principal: self.to.caller.principal().map(|p| p.id.clone()),
                digest: self.init.digest,
            };
            let sessions = &self.bridge.pooled;
            let acquired = sessions
                .acquire(
                    pool,
                    backend,
                    key,
                    &self.init.params,
                    self.to.caller,
                    &self.owner,
                    self.to.config.pooled,
                )
                .await;
            let used = match acquired {
                Ok(a) => a.into_inner(),
                Err(AcquireError::Unreachable) => return Step::Unreachable,
                Err(AcquireError::Answer(e)) => return Step::Stop(e),
                Err(AcquireError::NoSession) => {
                    return Step::Done(Ok(Pooled::NoSession(backend.clone())))
                }
            };
            if self.method == "server/discover" {
                let result = legacy::discover_result(&used.0.init_result);
                let body = messages::result(self.id, &result);
                let written = answer::json(session, 200, None, body).await;
                let done = written.map(|()| Pooled::Served(served(backend)));
                return Step::Done(done.map_err(Fail::from));
            }
            match self.attempt(session, used, streaming).await {
                Ok(Attempt::Done(served)) => return Step::Done(Ok(Pooled::Served(served))),
                Ok(Attempt::Forgotten) => continue,
                Ok(Attempt::Unreachable) => return Step::Unreachable,
                Ok(Attempt::Lost) => return Step::lost(self.repeatable),
                Err(e) => return Step::Done(Err(e)),
            }
        }
        Step::Stop(GatewayError::unavailable(&pool.name, before))
    }

    /// The request's head in `entry`'s backend session.
    fn head(&self, entry: &Entry, len: usize) -> Result<RequestHeader, GatewayError> {
        let target = request::Target {
            path: &entry.session.path,
            host: &entry.backend.host_header,
        };
        let id = Some(&*entry.session.id);
        let version = Some(&*entry.session.protocol_version);
        let mut head = request::own(http::Method::POST, target, id, version, len, self.to.caller)?;
        request::identify(&mut head, &entry.pool);
        Ok(head)
    }

    /// Sets the session's log level to the request's, when it asks for another one.
    async fn level(&self, entry: &Entry) -> Result<(), GatewayError> {
        let Some(wanted) = self.env.log_level.as_deref() else {
            return Ok(());
        };
        if crate::sync::lock(&entry.level).as_deref() == Some(wanted) {
            return Ok(());
        }
        let msg = legacy::set_level(wanted, &self.bridge.pooled.next_id());
        let sent = self
            .engine()
            .post_in_session(
                &entry.pool,
                &entry.backend,
                &entry.session,
                msg,
                self.to.caller,
            )
            .await;
        if sent.is_ok_and(|(head, _)| head.status.is_success()) {
            *crate::sync::lock(&entry.level) = Some(wanted.to_owned());
        }
        Ok(())
    }

    async fn attempt(
        &self,
        session: &mut impl Client,
        used: InUse,
        streaming: &mut bool,
    ) -> Result<Attempt, Fail> {
        let entry = &used.0.clone();
        let pool = &entry.pool;
        let backend = &entry.backend;
        let sessions = &self.bridge.pooled;
        self.level(entry).await?;
        let up_id = sessions.next_id();
        let body = legacy::legacy_request(self.msg, &up_id)
            .map_err(|e| GatewayError::untranslatable(&pool.name, &e.to_string()))?;
        let head = self.head(entry, body.len())?;
        // registered before the request goes: the tool may ask on the GET stream at once
        let strays = super::stray::may_ask(self.method).then(|| super::stray::register(entry));
        // from here the call may run upstream: dropped (the client gone, the route's deadline
        // past) before its answer is read, it is cancelled there
        let mut cancel = self.cancel_on_drop(entry, &up_id);
        let sent = self
            .engine()
            .send(pool, backend, &head, Bytes::from(body), self.repeatable)
            .await;
        let exchange = match sent {
            Ok(ex) => ex,
            Err(CallError::Credentials(e)) => {
                cancel.disarm();
                sessions.drop_entry(entry);
                return Err((*e).into());
            }
            Err(CallError::Connect(_)) => {
                cancel.disarm();
                sessions.drop_entry(entry);
                return Ok(Attempt::Unreachable);
            }
            Err(CallError::Lost(_)) => {
                cancel.disarm();
                sessions.drop_entry(entry);
                return Ok(self.lost());
            }
        };
        let status = exchange.header().status.as_u16();
        if status == 404 {
            // the backend forgot the session (restarted, expired it): the request never ran
            cancel.disarm();
            sessions.drop_entry(entry);
            return Ok(Attempt::Forgotten);
        }
        let messages = crate::bridge::answer::Messages::new(exchange);
        let call = (up_id, cancel);
        self.read(session, used, messages, call, status, streaming, strays)
            .await
    }

    /// A lost connection, counted when the request is not safe to repeat (its outcome is
    /// unknown: -32013); the attempt engine marks the backend and repeats what is safe to.
    pub(super) fn lost(&self) -> Attempt {
        if !self.repeatable {
            let method = mcp_wire::method_label(Some(self.method));
            self.engine().count_lost(&self.to.pool.name, method);
        }
        Attempt::Lost
    }
}

pub(super) fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub(super) fn served(backend: &Arc<Backend>) -> Served {
    Served {
        backend: Some(backend.clone()),
    }
}
