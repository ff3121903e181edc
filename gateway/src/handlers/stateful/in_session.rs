//! Requests within a session: a call (forwarded by the session manager, which moves the
//! session when needed), the GET stream, and DELETE.

use super::call::Call;
use super::events::{write_events, Written};
use crate::auth::Caller;
use crate::bridge::legacy_clients;
use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::error::ErrorKind;
use crate::error::GatewayError;
use crate::forward::relay::{client_response, end_with_error, relay, rewritten_body, Relayed};
use crate::request::ctx::RequestCtx;
use crate::request::{Gateway, Handled};
use crate::routing::Route;
use crate::session::{Forwarded, GoneReason, Outgoing, SessionRecord};
use crate::stream::{AnswerOf, StreamOpened};
use crate::upstream::deadline::{self, within};
use crate::upstream::Pool;
use pingora::http::ResponseHeader;
use std::sync::Arc;

/// A POST within a session. The hot path of a stateful route: what runs only now and then
/// (the bridge, a stream's answer, a filtered list, an answer cut short) is boxed where it is
/// awaited, so this future stays small (it is moved whole on every call).
pub(super) async fn call<C: Client>(
    gw: &Gateway,
    session: &mut C,
    ctx: &mut RequestCtx,
    (pool, route): (&Arc<Pool>, &Route),
    rec: SessionRecord,
    call: Call,
) -> Handled {
    let until = deadline::start(call.deadline);
    let task = (call.method.as_deref(), call.name.as_deref());
    let created_under = match crate::handlers::tasks::legacy_task_method(task.0) {
        true => {
            Box::pin(crate::handlers::tasks::legacy_task(
                gw, ctx, pool, &rec, task,
            ))
            .await?
        }
        false => None,
    };
    let out = Outgoing {
        client: session.req_header(),
        body: call.body.clone(),
        repeatable: call.repeatable,
        is_post: true,
        method_label: ctx.method_label,
    };
    let Some(sent) = within(until, gw.sessions.forward(pool, rec.clone(), out)).await else {
        cancel(gw, session, pool, &rec, &call);
        return Err(past_deadline(pool, &rec, &call).into());
    };
    let Forwarded {
        exchange: ex,
        record: rec,
    } = match sent {
        Ok(sent) => sent,
        // nothing reached a backend, and the pod that refused was the last one serving the
        // session natively: the session continues on the era bridge with this very call
        Err(e) if undelivered(&e) && legacy_clients::bridges(pool, route.dual_backends) => {
            let caller = Caller::of(&session.req_header().extensions);
            let rec = Box::pin(gw.sessions.bridge_over(pool, &rec, &caller)).await?;
            return Box::pin(super::bridged::call(
                gw,
                session,
                ctx,
                (pool, route),
                rec,
                call,
            ))
            .await;
        }
        Err(e) => return Err(e.into()),
    };
    ctx.backend = pool.find(rec.binding.backend);
    if let Some(lost) = crate::handlers::tasks::moved_since(gw, pool, &rec, created_under, task.1) {
        drop(ex);
        return Err(lost.into());
    }
    crate::handlers::tasks::watch_in_session(gw, session, ctx, pool, &rec);
    keep_settings(gw, ctx, pool, &rec, &call, ex.header()).await;
    answer(gw, session, ctx, (pool, route, &rec), &call, ex, until).await
}

/// What a call the backend accepted changes in its session: after `notifications/initialized`
/// the session's stream is held (before the client hears back and sends its first call, so
/// nothing the server asks can be lost); a setting (log level, subscription) is kept for a
/// replay after a move.
async fn keep_settings(
    gw: &Gateway,
    ctx: &RequestCtx,
    pool: &Arc<Pool>,
    rec: &SessionRecord,
    call: &Call,
    answer: &ResponseHeader,
) {
    if !answer.status.is_success() {
        return;
    }
    if call.is("notifications/initialized") {
        Box::pin(gw.streams.hold_stream(pool, rec)).await;
    }
    if let Some(change) = call.setting(ctx.state.config.sessions.max_subscriptions) {
        if let Err(e) = Box::pin(gw.sessions.remember(rec, change)).await {
            crate::quiet::STORE.failed("a session setting was not kept", &e);
        }
    }
}

/// Relays a call's answer: as a resumable event stream, through the route's list filter, or
/// as it comes (then the session's use is recorded); past the deadline the backend is told to
/// cancel and the client gets -32012, a connection lost midway is the session's to recover.
async fn answer(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    (pool, route, rec): (&Arc<Pool>, &Route, &SessionRecord),
    call: &Call,
    mut ex: crate::upstream::client::Exchange,
    until: Option<tokio::time::Instant>,
) -> Result<(), crate::error::Fail> {
    let head = client_response(ex.header(), None);
    let filter = call.filter;
    // an event stream in a content coding is relayed as it came: its events cannot be read
    let readable = !crate::upstream::encoding::is_encoded(ex.header());
    if filter.is_none() && readable && gw.streams.resumes() && crate::stream::is_stream(ex.header())
    {
        let of = AnswerOf {
            id: Some(call.id.clone()),
            deadline: call.deadline,
            until,
            method_label: ctx.method_label,
            caller: Caller::of(&session.req_header().extensions),
        };
        return Box::pin(stream_answer(gw, session, (pool, rec), of, ex, head)).await;
    }
    let relayed = match filter {
        Some(list) => {
            let principal = ctx.principal.as_deref();
            let pins = (route, &*ctx.state.pins, pool.name.as_str());
            let filtered = crate::forward::filtered::relay_filtered(
                &mut ex, session, head, pins, principal, list,
            );
            Box::pin(filtered).await?
        }
        None => {
            relay(
                &mut ex,
                session,
                head,
                until,
                Some((&ctx.state.cache, pool)),
            )
            .await?
        }
    };
    match relayed {
        Relayed::Done => gw.engine.release(ex),
        Relayed::TimedOut { sse } => {
            drop(ex);
            cancel(gw, session, pool, rec, call);
            let e = past_deadline(pool, rec, call);
            Box::pin(end_with_error(session, sse, &e, &call.id)).await?;
        }
        Relayed::Broken { sse } => {
            let backend = rec.binding.backend.to_string();
            let e = GatewayError::backend_lost(&pool.name, &backend);
            let label = Some(ctx.method_label);
            Box::pin(answer_lost(
                gw,
                session,
                (pool, rec),
                label,
                sse,
                (&e, &call.id),
            ))
            .await?;
        }
    }
    if let Err(e) = gw.sessions.used(rec).await {
        crate::quiet::STORE.failed("session use not recorded", &e);
    }
    Ok(())
}

/// Tells the session's backend that `call` is cancelled (its deadline passed), for the
/// request's caller.
fn cancel(gw: &Gateway, session: &impl Client, pool: &Arc<Pool>, rec: &SessionRecord, call: &Call) {
    let caller = Caller::of(&session.req_header().extensions);
    gw.sessions.cancel(pool, rec, &call.id, &caller);
}

/// -32012: `call` passed its deadline on the session's backend.
fn past_deadline(pool: &Pool, rec: &SessionRecord, call: &Call) -> GatewayError {
    let backend = rec.binding.backend.to_string();
    GatewayError::deadline(&pool.name, &backend, call.deadline.unwrap_or_default())
}

/// A call's answer as an event stream the gateway relays, resumable by the client.
async fn stream_answer(
    gw: &Gateway,
    session: &mut impl Client,
    (pool, rec): (&Arc<Pool>, &SessionRecord),
    of: AnswerOf,
    ex: crate::upstream::client::Exchange,
    mut head: ResponseHeader,
) -> Handled {
    let primed = crate::stream::primes(&rec.protocol_version);
    let events = gw.streams.relay_answer(pool, rec, of, ex);
    rewritten_body(&mut head);
    answer::head(session, head, false).await?;
    let config = gw.streams.resume_config();
    let close_at = config
        .poll_after
        .filter(|_| primed)
        .map(|after| tokio::time::Instant::now() + after);
    let written = write_events(session, events, config.keep_alive, close_at).await;
    if written == Written::ClientGone {
        // the answer goes on being read for a client that comes back
        session.set_keepalive(None);
    }
    Ok(())
}

/// The backend broke off an answer midway: the binding is marked lost and the client's
/// answer ends with `err`.
async fn answer_lost(
    gw: &Gateway,
    session: &mut impl Client,
    (pool, rec): (&Arc<Pool>, &SessionRecord),
    method_label: Option<&'static str>,
    sse: bool,
    (err, id): (&GatewayError, &mcp_wire::RequestId),
) -> Handled {
    if let Err(e) = gw.sessions.connection_lost(pool, rec, method_label).await {
        crate::quiet::STORE.failed("a lost binding was not marked", &e);
    }
    end_with_error(session, sse, err, id).await
}

/// GET: the session's server→client SSE stream. Attached to the stream the gateway holds for
/// the session (opened now if needed); a stream whose backend dies is ended cleanly, and the
/// client's next GET finds the session's stream on its new backend.
pub(super) async fn stream(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    pool: &Arc<Pool>,
    rec: SessionRecord,
) -> Handled {
    let opened = gw
        .streams
        .open_stream(pool, rec, session.req_header(), ctx.method_label)
        .await?;
    match opened {
        StreamOpened::Events {
            head,
            events,
            backend,
        } => {
            ctx.backend = backend.and_then(|b| pool.find(b));
            match head {
                Some(head) => {
                    let mut head = client_response(&head, None);
                    rewritten_body(&mut head);
                    answer::head(session, head, false).await?;
                }
                // a stream the gateway replays: its own stream head
                None => answer::open_stream(session, None).await?,
            }
            let keep_alive = gw.streams.resume_config().keep_alive;
            if write_events(session, events, keep_alive, None).await == Written::ClientGone {
                session.set_keepalive(None);
            }
        }
        StreamOpened::Answer(answer) => {
            let (mut ex, record) = *answer;
            ctx.backend = pool.find(record.binding.backend);
            let head = client_response(ex.header(), None);
            match relay(&mut ex, session, head, None, Some((&ctx.state.cache, pool))).await? {
                Relayed::Done => gw.engine.release(ex),
                Relayed::TimedOut { .. } | Relayed::Broken { .. } => {
                    if let Err(e) = gw.sessions.connection_lost(pool, &record, None).await {
                        crate::quiet::STORE.failed("a lost binding was not marked", &e);
                    }
                    answer::end(session).await?;
                }
            }
        }
    }
    Ok(())
}

/// DELETE: the session ends at the gateway whatever the backend says (it may be down).
pub(super) async fn delete(
    gw: &Gateway,
    session: &mut impl Client,
    pool: &Arc<Pool>,
    rec: SessionRecord,
) -> Handled {
    let caller = Caller::of(&session.req_header().extensions);
    gw.sessions
        .end(pool, &rec.id, GoneReason::Deleted, "deleted", &caller)
        .await?;
    answer::empty(session, 200).await?;
    Ok(())
}

/// Whether `forward` gave up before any backend took the request (every backend that could
/// hold the session refused, or none is left), so sending it elsewhere cannot repeat it.
fn undelivered(e: &GatewayError) -> bool {
    matches!(
        e.kind,
        ErrorKind::BackendUnavailable | ErrorKind::NoBackendOfEra
    )
}
