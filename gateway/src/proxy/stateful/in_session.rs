//! Requests within a session: the call itself (with transparent failover), the GET stream and
//! DELETE.

use super::{answered, Call, ANSWER_LIMIT};
use crate::error::GatewayError;
use crate::proxy::ctx::RequestCtx;
use crate::proxy::forward::{
    client_response, end_with_error, relay, upstream_request, within, write_whole, Relayed,
};
use crate::proxy::Gateway;
use crate::routing::Route;
use crate::session::reinit::{self, Reason};
use crate::session::{self, GoneReason, Lookup, SessionRecord};
use crate::upstream::client::{CallError, Exchange};
use crate::upstream::{Backend, Pool};
use bytes::Bytes;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::prelude::*;
use std::sync::Arc;

/// The live record for a client's session id, or the 404 to answer.
pub(super) async fn live(
    gw: &Gateway,
    sid: &str,
) -> std::result::Result<SessionRecord, GatewayError> {
    match gw.sessions.store.lookup(sid).await {
        Lookup::Live(r) => Ok(r),
        Lookup::Gone(reason) => Err(GatewayError::session_not_found(reason.as_str())),
        Lookup::Unknown => Err(GatewayError::session_not_found("unknown")),
    }
}

/// The session's backend, or why the binding cannot be used as it is.
fn bound_backend(
    pool: &Pool,
    rec: &SessionRecord,
    drain: std::time::Duration,
) -> std::result::Result<Arc<Backend>, Reason> {
    match pool.find(rec.binding.backend) {
        None => Err(Reason::BackendGone),
        Some(b) if b.is_failed() => Err(Reason::BackendDown),
        Some(_) if rec.binding.stale => Err(Reason::ConnectionLost),
        Some(b) if b.draining_for().is_some_and(|d| d >= drain) => Err(Reason::Drained),
        Some(b) => Ok(b),
    }
}

/// What goes upstream within a session.
struct Outgoing<'a> {
    body: &'a Bytes,
    repeatable: bool,
    is_post: bool,
}

/// Sends `call` on the session's backend, moving the session as often as needed (bounded);
/// returns the exchange with the response head read, and the record it was sent under.
async fn send_in_session(
    gw: &Gateway,
    ctx: &mut RequestCtx,
    pool: &Arc<Pool>,
    client_req: &RequestHeader,
    mut rec: SessionRecord,
    out: Outgoing<'_>,
) -> std::result::Result<(Exchange, SessionRecord), GatewayError> {
    let Outgoing {
        body,
        repeatable,
        is_post,
    } = out;
    let pool_config = ctx
        .state
        .as_ref()
        .expect("state")
        .config
        .pool_named(&pool.name)
        .cloned();
    let (not_found, drain) = pool_config
        .map(|p| (p.session_not_found, p.drain_timeout))
        .unwrap_or_default();
    for _ in 0..=pool.backends().len() + 1 {
        let backend = match bound_backend(pool, &rec, drain) {
            Ok(b) => b,
            Err(reason) => {
                rec = gw.sessions.recover(pool, &rec, reason).await?;
                continue;
            }
        };
        ctx.backend = Some(backend.clone());
        ctx.inflight = Some(Pool::track(&backend));
        let len = is_post.then_some(body.len());
        let req = upstream_request(
            client_req,
            &rec.path,
            &backend.host,
            Some(&rec.binding.backend_session),
            len,
        )
        .map_err(|e| GatewayError::internal(e.to_string()))?;
        let started = std::time::Instant::now();
        match gw
            .client
            .send(pool.peer(&backend), &req, body.clone(), repeatable)
            .await
        {
            Err(CallError::Connect(_)) => {
                pool.mark_failed(&backend);
                rec = gw
                    .sessions
                    .recover(pool, &rec, Reason::ConnectRefused)
                    .await?;
            }
            Err(CallError::Lost(_)) => {
                gw.sessions
                    .store
                    .mark_stale(&rec.id, rec.binding.generation)
                    .await;
                if !repeatable {
                    gw.metrics
                        .inflight_lost
                        .with_label_values(&[&pool.name, ctx.method_label])
                        .inc();
                    return Err(GatewayError::backend_lost(&pool.name, &backend.label));
                }
                rec = gw
                    .sessions
                    .recover(pool, &rec, Reason::ConnectionLost)
                    .await?;
            }
            Ok(mut ex) => {
                gw.metrics
                    .upstream_duration
                    .with_label_values(&[&pool.name])
                    .observe(started.elapsed().as_secs_f64());
                let status = ex.header().status.as_u16();
                if !not_found.iter().any(|r| r.status == status) {
                    return Ok((ex, rec));
                }
                let content_type = ex
                    .header()
                    .headers
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let answer = ex.read_all(ANSWER_LIMIT).await.unwrap_or_default();
                if session::is_not_found(&not_found, status, content_type.as_deref(), &answer) {
                    gw.client.release(ex).await;
                    rec = gw
                        .sessions
                        .recover(pool, &rec, Reason::SessionUnknown)
                        .await?;
                    continue;
                }
                return Ok((ex.with_buffered(answer), rec));
            }
        }
    }
    Err(GatewayError::unavailable(&pool.name, pool.backends().len()))
}

/// A POST within a session.
pub(super) async fn in_session(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    (pool, route): (&Arc<Pool>, &Route),
    rec: SessionRecord,
    call: Call,
) -> Result<bool> {
    let deadline = route.deadline(call.method.as_deref(), call.name.as_deref());
    let until = deadline.map(|d| tokio::time::Instant::now() + d);
    let client_req = session.req_header().clone();
    let out = Outgoing {
        body: &call.body,
        repeatable: call.repeatable,
        is_post: true,
    };
    let sending = send_in_session(gw, ctx, pool, &client_req, rec.clone(), out);
    let Some(sent) = within(until, sending).await else {
        cancel_upstream(gw, pool, &rec, &call).await;
        let backend = rec.binding.backend.to_string();
        let e = GatewayError::deadline(&pool.name, &backend, deadline.unwrap_or_default());
        return answered(session, ctx, &e).await;
    };
    let (mut ex, rec) = match sent {
        Ok(ok) => ok,
        Err(e) => return answered(session, ctx, &e).await,
    };
    if ex.header().status.is_success() {
        remember_setting(gw, &rec, &call).await;
    }
    let head = client_response(ex.header(), None);
    let backend = rec.binding.backend.to_string();
    match relay(&mut ex, session, head, until).await? {
        Relayed::Done => gw.client.release(ex).await,
        Relayed::TimedOut { sse } => {
            drop(ex);
            cancel_upstream(gw, pool, &rec, &call).await;
            let e = GatewayError::deadline(&pool.name, &backend, deadline.unwrap_or_default());
            end_with_error(session, sse, &e, &call.id).await?;
        }
        Relayed::Broken { sse } => {
            gw.sessions
                .store
                .mark_stale(&rec.id, rec.binding.generation)
                .await;
            gw.metrics
                .inflight_lost
                .with_label_values(&[&pool.name, ctx.method_label])
                .inc();
            let e = GatewayError::backend_lost(&pool.name, &backend);
            end_with_error(session, sse, &e, &call.id).await?;
        }
    }
    gw.sessions.store.touch(&rec.id, session::now_ms()).await;
    Ok(true)
}

/// Tells the backend session that a request past its deadline is cancelled
/// (`notifications/cancelled`), so the server can stop working on it. Best effort.
async fn cancel_upstream(gw: &Gateway, pool: &Pool, rec: &SessionRecord, call: &Call) {
    let Some(b) = pool.find(rec.binding.backend) else {
        return;
    };
    let params = format!(
        r#"{{"requestId":{},"reason":"deadline exceeded at the gateway"}}"#,
        call.id.as_json()
    );
    let body =
        format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{params}}}"#);
    let session_id = Some(&*rec.binding.backend_session);
    let Ok(req) = reinit::request(
        &rec.path,
        &b.host,
        session_id,
        Some(&rec.protocol_version),
        body.len(),
    ) else {
        return;
    };
    let sent = gw
        .client
        .call(pool.peer(&b), &req, Bytes::from(body), 64 * 1024);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), sent).await;
}

async fn remember_setting(gw: &Gateway, rec: &SessionRecord, call: &Call) {
    let Some(params) = &call.params else { return };
    let store = &gw.sessions.store;
    if call.is("logging/setLevel") {
        store.set_log_level(&rec.id, params.clone()).await;
    } else if call.is("resources/subscribe") || call.is("resources/unsubscribe") {
        let uri = serde_json::from_str::<serde_json::Value>(params)
            .ok()
            .and_then(|v| v.get("uri")?.as_str().map(Arc::<str>::from));
        if let Some(uri) = uri {
            store
                .set_subscription(&rec.id, uri, call.is("resources/subscribe"))
                .await;
        }
    }
}

/// GET: the session's server→client SSE stream, on its current backend. A stream whose
/// backend dies is ended cleanly; the client's next GET lands on the new backend.
pub(super) async fn stream(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    pool: &Arc<Pool>,
    rec: SessionRecord,
) -> Result<bool> {
    let client_req = session.req_header().clone();
    let (mut ex, rec) = match send_in_session(
        gw,
        ctx,
        pool,
        &client_req,
        rec,
        Outgoing {
            body: &Bytes::new(),
            repeatable: true,
            is_post: false,
        },
    )
    .await
    {
        Ok(ok) => ok,
        Err(e) => return answered(session, ctx, &e).await,
    };
    let head = client_response(ex.header(), None);
    match relay(&mut ex, session, head, None).await? {
        Relayed::Done => gw.client.release(ex).await,
        Relayed::TimedOut { .. } | Relayed::Broken { .. } => {
            gw.sessions
                .store
                .mark_stale(&rec.id, rec.binding.generation)
                .await;
            session.write_response_body(None, true).await?;
        }
    }
    Ok(true)
}

/// DELETE: the session ends at the gateway whatever the backend says (it may be down).
pub(super) async fn delete(
    gw: &Gateway,
    session: &mut Session,
    pool: &Arc<Pool>,
    rec: SessionRecord,
) -> Result<bool> {
    if let Some(rec) = gw
        .sessions
        .end(pool, &rec.id, GoneReason::Deleted, "deleted")
        .await
    {
        gw.sessions.delete_upstream(pool, &rec).await;
    }
    let mut head = ResponseHeader::build(200, Some(1))?;
    head.insert_header(http::header::CONTENT_LENGTH, "0")?;
    write_whole(session, head, Bytes::new()).await?;
    Ok(true)
}
