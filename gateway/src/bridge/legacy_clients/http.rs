//! The client side of a bridged session: its `initialize` (answered from `server/discover`),
//! its POSTs (answered by the gateway, or bridged call by call, as JSON when nothing comes
//! before the result and as SSE otherwise, with keep-alives while the client is asked for
//! input), its responses to the gateway's server→client requests, and DELETE (its GET
//! stream: `super::get`).

use super::call::{Call, Final, Progress};
use super::serves::serves_bridged;
use super::upstream::Upstream;
use crate::bridge::answer::Messages;
use crate::bridge::client::write_event;
use crate::bridge::metrics::BridgeMetrics;
use crate::bridge::{Bridge, ListFilter, Served};
use crate::config::DualBackends;
use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::error::{Fail, GatewayError};
use crate::session::store::Quota;
use crate::session::SettingChange;
use crate::session::{BridgedOpening, GoneReason, Requester, SessionManager, SessionRecord};
use crate::stream::KEEP_ALIVE;
use crate::upstream::Pool;
use bytes::Bytes;
use mcp_wire::translate::request::{self, disposition, Disposition};
use mcp_wire::translate::result::initialize_result;
use mcp_wire::translate::rounds::client_answer;
use mcp_wire::translate::ClientInit;
use mcp_wire::{messages, sse, RequestId};
use pingora::prelude::*;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Where a bridged session's requests go.
pub struct Target<'a> {
    /// The route's pool.
    pub pool: &'a Arc<Pool>,
    /// The route's `dual-backends`.
    pub dual: DualBackends,
    /// Upstream path.
    pub path: &'a str,
    /// The route's `authz` filter of a list answer (the entries the caller may not use
    /// removed), when this request's answer is one.
    pub filter: Option<&'a ListFilter<'a>>,
    /// `sessions.max-subscriptions`: the bound a kept subscription stays within.
    pub max_subscriptions: usize,
}

impl Bridge {
    fn upstream<'a>(&'a self, to: &Target<'a>, session: &'a impl Client) -> Upstream<'a> {
        Upstream {
            engine: &self.engine,
            pool: to.pool,
            dual: to.dual,
            client: session.req_header(),
            path: to.path,
        }
    }
}

/// A legacy client's `initialize` on a bridged route: a backend's `server/discover` (reused
/// when fresh) becomes the answer; the gateway session is created with the client's params.
#[allow(clippy::too_many_arguments)]
pub(super) async fn initialize(
    bridge: &Bridge,
    sessions: &SessionManager,
    session: &mut impl Client,
    to: Target<'_>,
    caller: &Requester,
    params: Option<Arc<str>>,
    id: &RequestId,
    quota: Quota,
) -> Result<Served, Fail> {
    let params = params.unwrap_or_else(|| "{}".into());
    let init = ClientInit::parse(&params)
        .map_err(|e| GatewayError::invalid_request(&format!("initialize: {e}")))?;
    let members: Vec<_> = to
        .pool
        .backends()
        .iter()
        .filter(|b| serves_bridged(b, to.dual))
        .cloned()
        .collect();
    let mut served = Served::default();
    let discovered = match bridge.discovered.get(&members) {
        Some(d) => d,
        None => {
            let up = bridge.upstream(&to, session);
            let sent = up.send(&request::discover(&init, 1), true).await?;
            served.backend = Some(sent.backend.clone());
            let mut messages = Messages::new(sent.exchange);
            let answer = messages.next().await.ok().flatten();
            messages.finish(&bridge.engine).await;
            let answer = answer.and_then(|raw| serde_json::from_slice::<Value>(&raw).ok());
            let result = answer.and_then(|mut a| a.get_mut("result").map(Value::take));
            let Some(result) = result else {
                let detail = "server/discover gave no result";
                return Err(GatewayError::untranslatable(&to.pool.name, detail).into());
            };
            bridge.discovered.put(sent.backend.addr, result.clone());
            result
        }
    };
    let result = initialize_result(&discovered, &init)
        .map_err(|e| GatewayError::untranslatable(&to.pool.name, &e.to_string()))?;
    let opening = BridgedOpening {
        caller,
        path: to.path.into(),
        init_params: params,
        protocol_version: init.negotiated().into(),
        quota,
    };
    let rec = sessions.open_bridged(to.pool, opening).await?;
    let body = messages::result(id, &result);
    answer::json(session, 200, Some(&rec.id), body).await?;
    Ok(served)
}

/// A POST in a bridged session (its body already read and checked as one JSON-RPC message).
#[allow(clippy::too_many_arguments)]
pub(super) async fn post(
    bridge: &Bridge,
    sessions: &SessionManager,
    session: &mut impl Client,
    to: Target<'_>,
    rec: SessionRecord,
    body: &Bytes,
    id: &RequestId,
    repeatable: bool,
) -> Result<Served, Fail> {
    let msg: Value =
        serde_json::from_slice(body).map_err(|e| GatewayError::parse_error(&e.to_string()))?;
    let served = match msg.get("method").and_then(Value::as_str) {
        None => {
            if let Some((answer_id, answer)) = client_answer(&msg) {
                if !bridge.live.deliver(&rec.id, &answer_id, answer) {
                    tracing::debug!("a client response nobody waits for; dropped");
                }
            }
            answer::empty(session, 202).await?;
            Served::default()
        }
        Some(method) => {
            dispose(
                bridge,
                sessions,
                session,
                to,
                &rec,
                (method, &msg),
                id,
                repeatable,
            )
            .await?
        }
    };
    if let Err(e) = sessions.used(&rec).await {
        crate::quiet::STORE.failed("session use not recorded", &e);
    }
    Ok(served)
}

/// A client's request or notification, as its disposition says: bridged as a call, answered
/// by the gateway (`ping`, `logging/setLevel`, subscriptions), taken, or refused.
#[allow(clippy::too_many_arguments)]
async fn dispose(
    bridge: &Bridge,
    sessions: &SessionManager,
    session: &mut impl Client,
    to: Target<'_>,
    rec: &SessionRecord,
    (method, msg): (&str, &Value),
    id: &RequestId,
    repeatable: bool,
) -> Result<Served, Fail> {
    let is_request = msg.get("id").is_some();
    let served = match disposition(method, is_request) {
        Disposition::Forward => {
            let call = Bridged {
                bridge,
                to,
                rec,
                msg,
                id,
                method,
                repeatable,
            };
            call.serve(session).await?
        }
        Disposition::Ping => empty_result(session, id).await?,
        Disposition::SetLevel => {
            let params = msg.get("params").cloned().unwrap_or_default();
            if request::set_level(&params).is_none() {
                let e = GatewayError::invalid_request("logging/setLevel needs params.level");
                return Err(e.into());
            }
            let change = SettingChange::LogLevel(params.to_string().into());
            sessions.remember(rec, change).await?;
            empty_result(session, id).await?
        }
        Disposition::Cancelled => {
            if let Some(r) = msg.get("params").and_then(|p| p.get("requestId")) {
                bridge.live.cancel(&rec.id, &r.to_string());
            }
            answer::empty(session, 202).await?;
            Served::default()
        }
        Disposition::Acknowledged => {
            answer::empty(session, 202).await?;
            Served::default()
        }
        Disposition::Subscribe(subscribed) => {
            let max = subscribed.then_some(to.max_subscriptions);
            subscribe(bridge, sessions, rec, (method, msg), max).await?;
            empty_result(session, id).await?
        }
        Disposition::Reinitialize => {
            let e = GatewayError::invalid_request("this session is initialized already");
            return Err(e.into());
        }
        Disposition::Refused => {
            let metrics = &bridge.metrics;
            let reason = "tasks are an extension in 2026-07-28, not bridged";
            let e = GatewayError::not_bridged(method, reason);
            count_error(metrics, &to.pool.name, &e);
            return Err(e.into());
        }
    };
    Ok(served)
}

/// A subscribe (within `max` URIs) or unsubscribe (`None`): kept with the session, followed by
/// its listen stream. Its bounds were checked before (`proxy/stateful/subscriptions.rs`).
async fn subscribe(
    bridge: &Bridge,
    sessions: &SessionManager,
    rec: &SessionRecord,
    (method, msg): (&str, &Value),
    max: Option<usize>,
) -> Result<(), GatewayError> {
    let uri = msg
        .get("params")
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
        .ok_or_else(|| GatewayError::invalid_request(&format!("{method} needs params.uri")))?;
    let change = match max {
        Some(max) => SettingChange::Subscribe(uri.into(), max),
        None => SettingChange::Unsubscribe(uri.into()),
    };
    let mut settings = rec.settings.clone();
    settings.apply(change.clone());
    sessions.remember(rec, change).await?;
    let uris = settings.subscriptions.iter().map(|u| u.to_string());
    bridge.listens.subscribed(&rec.id, uris.collect()).await;
    Ok(())
}

/// One call to bridge and the client it answers.
struct Bridged<'a> {
    bridge: &'a Bridge,
    to: Target<'a>,
    rec: &'a SessionRecord,
    msg: &'a Value,
    id: &'a RequestId,
    method: &'a str,
    repeatable: bool,
}

/// What happened next while a call ran.
enum Next {
    ToClient(Value),
    Done(Result<Final, GatewayError>),
    Idle,
    ClientGone,
}

/// The client's side of one bridged call: a JSON answer until the call sends the client
/// something before its result, an SSE answer from then on.
struct Answer<'s, C> {
    session: &'s mut C,
    streaming: bool,
}

impl Bridged<'_> {
    /// Bridges the call, round by round, and answers the client with how it went.
    async fn serve(self, session: &mut impl Client) -> Result<Served, Fail> {
        let init = ClientInit::parse(&self.rec.init_params)
            .map_err(|e| GatewayError::internal(format!("stored initialize: {e}")))?;
        let level = self
            .rec
            .settings
            .log_level
            .as_deref()
            .and_then(|p| serde_json::from_str::<Value>(p).ok())
            .and_then(|p| request::set_level(&p).map(str::to_owned));
        let keep_alive = self.bridge.keep_alive();
        let (tx, mut rx) = mpsc::channel(32);
        let mut progress = Progress {
            to_client: tx,
            backend: None,
            rounds: 0,
        };
        // the call sends with the client's head while the answer is written to the client
        let client = session.req_header().clone();
        let up = Upstream {
            engine: &self.bridge.engine,
            pool: self.to.pool,
            dual: self.to.dual,
            client: &client,
            path: self.to.path,
        };
        let call = Call {
            up,
            live: &self.bridge.live,
            metrics: &self.bridge.metrics,
            session: &self.rec.id,
            init: &init,
            log_level: level.as_deref(),
            msg: self.msg,
            id_json: self.id.as_json(),
            method: self.method,
            repeatable: self.repeatable,
        };
        let run = Box::pin(call.run(&mut progress));
        let mut answer = Answer {
            session,
            streaming: false,
        };
        let Some(done) = answer.relay(run, &mut rx, keep_alive).await? else {
            return Ok(Served {
                backend: progress.backend,
            });
        };
        while let Ok(m) = rx.try_recv() {
            answer.event(&m).await?;
        }
        self.finish(&mut answer, done).await?;
        Ok(Served {
            backend: progress.backend,
        })
    }

    /// Ends the call's answer with how the call ended: its result (a list filtered) or error
    /// as the last event, or as the whole JSON answer when nothing came before; a cancelled
    /// call with no answer; a gateway error is returned when nothing was streamed yet.
    async fn finish(
        &self,
        answer: &mut Answer<'_, impl Client>,
        done: Result<Final, GatewayError>,
    ) -> Result<(), Fail> {
        let session = &mut *answer.session;
        let body = match done {
            Ok(Final::Result(result)) => {
                let body = messages::result(self.id, &result);
                match self.to.filter {
                    Some(filter) => filter(&body).unwrap_or(body),
                    None => body,
                }
            }
            Ok(Final::Verbatim(raw)) => match self.to.filter {
                Some(filter) => filter(&raw).unwrap_or(raw),
                None => raw,
            },
            Ok(Final::Error(error)) => messages::relayed_error(self.id, &error),
            Ok(Final::Cancelled) if answer.streaming => {
                answer::end(session).await?;
                return Ok(());
            }
            Ok(Final::Cancelled) => {
                answer::empty(session, 202).await?;
                return Ok(());
            }
            Err(e) => {
                count_error(&self.bridge.metrics, &self.to.pool.name, &e);
                if !answer.streaming {
                    return Err(e.into());
                }
                e.body(self.id)
            }
        };
        if answer.streaming {
            answer::last(session, sse::event(&body)).await?;
        } else {
            answer::json(session, 200, None, body).await?;
        }
        Ok(())
    }
}

impl<C: Client> Answer<'_, C> {
    /// Runs the call to its end while what it sends the client is written (the SSE answer
    /// started with the first), with keep-alives while it streams; `None` when the client went
    /// away.
    async fn relay<F>(
        &mut self,
        mut run: Pin<Box<F>>,
        rx: &mut mpsc::Receiver<Value>,
        keep_alive: Duration,
    ) -> Result<Option<Result<Final, GatewayError>>>
    where
        F: Future<Output = Result<Final, GatewayError>>,
    {
        loop {
            let next = tokio::select! {
                biased;
                m = rx.recv() => m.map_or(Next::Idle, Next::ToClient),
                d = &mut run => Next::Done(d),
                _ = tokio::time::sleep(keep_alive), if self.streaming => Next::Idle,
                _ = self.session.gone(), if self.streaming => Next::ClientGone,
            };
            match next {
                Next::ToClient(m) => self.event(&m).await?,
                Next::Idle if self.streaming => {
                    answer::event(self.session, Bytes::from_static(KEEP_ALIVE)).await?;
                }
                Next::Idle => {}
                Next::ClientGone => {
                    // `run` dropped: closing the upstream answer cancels the call there
                    return Ok(None);
                }
                Next::Done(d) => return Ok(Some(d)),
            }
        }
    }

    /// Writes a message of the call to the client, the SSE answer started with the first.
    async fn event(&mut self, m: &Value) -> Result<()> {
        if !self.streaming {
            answer::open_stream(self.session, None).await?;
            self.streaming = true;
        }
        write_event(self.session, m).await
    }
}

/// DELETE: the gateway session ends (nothing to delete upstream); its streams and calls end.
pub(super) async fn delete(
    bridge: &Bridge,
    sessions: &SessionManager,
    session: &mut impl Client,
    pool: &Pool,
    rec: SessionRecord,
) -> Result<Served, Fail> {
    let caller = crate::auth::Caller::of(&session.req_header().extensions);
    sessions
        .end(pool, &rec.id, GoneReason::Deleted, "deleted", &caller)
        .await?;
    bridge.live.end(&rec.id);
    answer::empty(session, 200).await?;
    Ok(Served::default())
}

/// The `{}` result the gateway answers itself (`ping`, `logging/setLevel`, subscriptions).
async fn empty_result(session: &mut impl Client, id: &RequestId) -> Result<Served> {
    let body = messages::empty_result(id);
    answer::json(session, 200, None, body).await?;
    Ok(Served::default())
}

/// Counts a bridge error answered to a legacy client (`mcpgw_bridge_errors_total`).
pub(crate) fn count_error(metrics: &BridgeMetrics, pool: &str, e: &GatewayError) {
    use crate::error::ErrorKind::*;
    if matches!(
        e.kind,
        MissingClientCapability
            | BridgeRoundsExceeded
            | NotBridged
            | InputNotGiven
            | Untranslatable
    ) {
        metrics
            .bridge_errors
            .with_label_values(&[pool, e.kind.as_str()])
            .inc();
    }
}
