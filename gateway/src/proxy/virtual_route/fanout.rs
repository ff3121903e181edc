//! Asking one member from inside a client's request, for what the gateway merges itself
//! (`server/discover`, the four lists, the lists a bare name is looked up in): a pingora
//! subrequest of the client's request (its head copied, no body of its own), served by the
//! gateway's own pipeline on the member's route, so every member answers exactly as a plain
//! route of its pool and mode would (the reverse bridge for legacy members, the attempt
//! engine's retries, identity headers); its answer is read whole, bounded, from the
//! subrequest's channel, within the member's deadline.

use super::super::ctx::RequestCtx;
use super::super::stateless::{forward_body, Routed};
use super::super::{Gateway, Handled};
use crate::auth::Principal;
use crate::routing::Route;
use bytes::{Bytes, BytesMut};
use mcp_wire::headers::{MCP_METHOD, MCP_NAME, MCP_SESSION_ID};
use mcp_wire::{inspect_body, method_label, Era};
use pingora::prelude::*;
use pingora::protocols::http::HttpTask;
use pingora::proxy::subrequest::Ctx as SubrequestCtx;
use std::sync::Arc;
use std::time::Duration;

/// Largest member answer read (a list page, a discover result).
const ANSWER_LIMIT: usize = 16 * 1024 * 1024;

/// What a member is asked, carried into the subrequest.
#[derive(Clone)]
pub(crate) struct Ask {
    /// The config snapshot the client request started with: the member request reads its
    /// route and pool there, never in a newer one (a reload that adds or removes a pool would
    /// send it to another pool's backends, with that pool's credentials: issue 48).
    pub(super) state: Arc<crate::state::State>,
    /// The member's route.
    pub(super) route: Arc<Route>,
    /// The request body the member gets.
    pub(super) body: Bytes,
    /// The caller (authenticated on the virtual route).
    pub(super) principal: Option<Arc<Principal>>,
    /// The client's era.
    pub(super) era: Era,
    /// A legacy client's session on the member's route (its `Mcp-Session-Id` there), if it
    /// has one.
    pub(super) session: Option<String>,
    /// Who admission counts the caller as (a session's client, for the sessions' caps).
    pub(super) identity: Option<Arc<str>>,
    /// The client head's extensions (its principal and the token it authenticated with), for
    /// members whose pools exchange the caller's token; `None` otherwise.
    pub(super) caller: Option<http::Extensions>,
    /// A legacy client resuming an answer of this member: the member session's own event id
    /// (`Last-Event-ID` there); `None`: a stream starts afresh.
    pub(super) resume: Option<String>,
}

impl Ask {
    /// The extensions to carry for `session`'s caller: only when a pool exchanges tokens.
    pub(super) fn caller_of(
        session: &Session,
        ctx_state: &crate::state::State,
    ) -> Option<http::Extensions> {
        let exchanging = ctx_state
            .pools
            .iter()
            .any(|p| p.credentials.exchanges_tokens());
        exchanging.then(|| session.req_header().extensions.clone())
    }
}

/// A member's whole answer.
pub(super) struct Answer {
    /// Its HTTP status.
    pub(super) status: u16,
    /// Its `Mcp-Session-Id` (a member session opened by an `initialize`).
    pub(super) session_id: Option<String>,
    /// Its `Content-Type`.
    pub(super) content_type: Option<String>,
    /// Its body.
    pub(super) body: Bytes,
}

/// Asks a member, within `deadline`: its answer, or why there is none (`deadline`,
/// `too-large`, `failed`: the reason a list counts it left out with; `over-budget-gateway`,
/// `over-budget-caller`: a merge's bytes, counted into `held` as they are read, would pass
/// `limits.max-merged-list-bytes`).
pub(super) async fn ask(
    session: &Session,
    ask: Ask,
    deadline: Duration,
    held: Option<&std::sync::Mutex<crate::federation::budget::Reservation>>,
) -> Result<Answer, &'static str> {
    let spawner = session.subrequest_spawner.as_ref().ok_or("failed")?;
    let user: Box<dyn std::any::Any + Send + Sync> = Box::new(Some(ask));
    let ctx = SubrequestCtx::builder().user_ctx(user).build();
    let (prepared, mut handle) = spawner.create_subrequest(&session.downstream_session, ctx);
    let task = tokio::spawn(prepared.run());
    let read = async {
        let mut answer = Answer {
            status: 0,
            session_id: None,
            content_type: None,
            body: Bytes::new(),
        };
        let mut body = BytesMut::new();
        while let Some(t) = handle.rx.recv().await {
            let end = match t {
                HttpTask::Header(head, end) => {
                    answer.status = head.status.as_u16();
                    answer.session_id = head
                        .headers
                        .get(MCP_SESSION_ID)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    answer.content_type = head
                        .headers
                        .get(http::header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    end
                }
                HttpTask::Body(chunk, end) => {
                    let chunk = chunk.unwrap_or_default();
                    if body.len() + chunk.len() > ANSWER_LIMIT {
                        return Err("too-large");
                    }
                    if let Some(held) = held {
                        let mut held = held.lock().unwrap_or_else(|e| e.into_inner());
                        held.grow(chunk.len()).map_err(|over| match over {
                            crate::federation::budget::Over::Gateway => "over-budget-gateway",
                            crate::federation::budget::Over::Caller => "over-budget-caller",
                        })?;
                    }
                    body.extend_from_slice(&chunk);
                    end
                }
                HttpTask::Done => true,
                HttpTask::Failed(_) => return Err("failed"),
                HttpTask::UpgradedBody(..) | HttpTask::Trailer(_) => false,
            };
            if end {
                break;
            }
        }
        answer.body = body.freeze();
        if answer.status == 0 {
            return Err("failed");
        }
        Ok(answer)
    };
    let answered = tokio::time::timeout(deadline, read).await;
    if !matches!(answered, Ok(Ok(_))) {
        // a member past its deadline (or broken) is given up: its request dropped
        task.abort();
    }
    answered.map_err(|_| "deadline")?
}

/// The member request of a subrequest this gateway made ([`ask`]), taken once.
pub(in crate::proxy) fn take(session: &mut Session) -> Option<Ask> {
    let ctx = session.subrequest_ctx.as_mut()?.user_ctx_mut()?;
    ctx.downcast_mut::<Option<Ask>>()?.take()
}

/// Serves a member request in its subrequest: on the member's route, as a plain route of its
/// pool would (the caller was authenticated, authorized and admitted on the virtual route).
pub(in crate::proxy) async fn serve(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    mut ask: Ask,
) -> Handled {
    match ask.caller.take() {
        // the member's pool exchanges the caller's token: its requests know the caller
        Some(caller) => {
            *session.req_header_mut().extensions_mut() = caller.clone();
            let serve = Box::pin(serve_as(gw, session, ctx, ask));
            crate::upstream::exchange::CALLER.scope(caller, serve).await
        }
        None => serve_as(gw, session, ctx, ask).await,
    }
}

async fn serve_as(gw: &Gateway, session: &mut Session, ctx: &mut RequestCtx, ask: Ask) -> Handled {
    // the subrequest's context loaded the state in force now: the parent's snapshot instead
    ctx.state = ask.state.clone();
    ctx.route = Some(ask.route.clone());
    ctx.principal = ask.principal;
    ctx.era = ask.era;
    ctx.admitted.identity = ask.identity;
    if ask.era == Era::Legacy {
        let resume = ask.resume;
        return serve_in_session(gw, session, ctx, ask.route, ask.body, ask.session, resume).await;
    }
    let info = inspect_body(&ask.body).map_err(crate::error::GatewayError::from)?;
    ctx.request_id = Some(info.request_id());
    ctx.method_label = method_label(info.method.as_deref());
    let routed = Routed::of(&ask.route, info.method.as_deref(), info.name.as_deref());
    // the head is the client's (its body headers cleared): it must describe this body
    let head = session.req_header_mut();
    let described = head
        .insert_header(http::header::CONTENT_TYPE, "application/json")
        .and_then(|()| match info.method.as_deref() {
            Some(m) => head.insert_header(MCP_METHOD, m),
            None => Ok(()),
        });
    described.map_err(|_| crate::error::GatewayError::internal("a member request's head"))?;
    match info.name.as_deref() {
        Some(name) => {
            let value = mcp_wire::headers::encode_value(name);
            head.insert_header(MCP_NAME, value)
                .map_err(|_| crate::error::GatewayError::internal("a member request's head"))?;
        }
        None => {
            head.remove_header(MCP_NAME);
        }
    }
    drop(info);
    forward_body(gw, session, ctx, &ask.route, ask.body, routed).await
}

/// A legacy client's member request: on the member's route as a plain route of its mode
/// serves a session-era request, in the member session `member_session` (none: an
/// `initialize`, or a member that keeps no session), resuming after the member's event id
/// `resume` when the client resumes.
async fn serve_in_session(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    route: Arc<Route>,
    body: Bytes,
    member_session: Option<String>,
    resume: Option<String>,
) -> Handled {
    let internal = |_| crate::error::GatewayError::internal("a member request's head");
    let head = session.req_header_mut();
    // the client's event ids name a member's (`<member>:<id>`): only a resume carries one
    match resume {
        Some(id) => head
            .insert_header(mcp_wire::headers::LAST_EVENT_ID, id)
            .map_err(internal)?,
        None => {
            head.remove_header(mcp_wire::headers::LAST_EVENT_ID);
        }
    }
    if head.method == http::Method::POST {
        head.insert_header(http::header::CONTENT_TYPE, "application/json")
            .map_err(internal)?;
    }
    match member_session.filter(|s| !s.is_empty()) {
        Some(sid) => head.insert_header(MCP_SESSION_ID, sid).map_err(internal)?,
        None => {
            head.remove_header(MCP_SESSION_ID);
        }
    }
    ctx.preset_body = Some(Box::new(body));
    match route.mode {
        crate::config::Mode::Stateless => {
            super::super::stateless::forward_buffered(gw, session, ctx, route, false).await
        }
        crate::config::Mode::Stateful | crate::config::Mode::Auto => {
            super::super::stateful::handle(gw, session, ctx, route).await
        }
    }
}

/// Sends `ask` as a subrequest of `session` and writes its answer to the client as it comes:
/// the head with `Mcp-Session-Id` set to `client_session`, an SSE body event by event through
/// `event` (a JSON body untouched).
pub(super) async fn pipe(
    session: &mut Session,
    ask: Ask,
    client_session: &str,
    mut event: impl FnMut(&[u8]) -> Bytes,
) -> Handled {
    let spawner = session
        .subrequest_spawner
        .as_ref()
        .ok_or_else(|| crate::error::GatewayError::internal("no subrequests"))?;
    let user: Box<dyn std::any::Any + Send + Sync> = Box::new(Some(ask));
    let ctx = SubrequestCtx::builder().user_ctx(user).build();
    let (prepared, mut handle) = spawner.create_subrequest(&session.downstream_session, ctx);
    let task = tokio::spawn(prepared.run());
    // the subrequest ends with the client: dropped before its answer ended, it is cancelled
    let mut task = AbortOnDrop(Some(task));
    let mut sse = false;
    let mut splitter = mcp_wire::sse::EventSplitter::default();
    let mut started = false;
    while let Some(t) = handle.rx.recv().await {
        match t {
            HttpTask::Header(mut head, end) => {
                sse = mcp_wire::sse::is_event_stream(
                    head.headers
                        .get(http::header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok()),
                );
                if head.headers.contains_key(MCP_SESSION_ID) {
                    let _ = head.insert_header(MCP_SESSION_ID, client_session);
                }
                if sse {
                    // events are rewritten: their length changes
                    head.remove_header(&http::header::CONTENT_LENGTH);
                }
                session
                    .write_response_header(head, end)
                    .await
                    .map_err(super::super::Fail::Io)?;
                started = true;
                if end {
                    task.disarm();
                    return Ok(());
                }
            }
            HttpTask::Body(chunk, end) => {
                let chunk = chunk.unwrap_or_default();
                let out = if sse {
                    let mut out = bytes::BytesMut::new();
                    for e in splitter.push(&chunk) {
                        out.extend_from_slice(&event(&e));
                    }
                    out.freeze()
                } else {
                    chunk
                };
                if !out.is_empty() || end {
                    session
                        .write_response_body(Some(out), end)
                        .await
                        .map_err(super::super::Fail::Io)?;
                }
                if end {
                    task.disarm();
                    return Ok(());
                }
            }
            HttpTask::Done => break,
            HttpTask::Failed(e) if !started => return Err(super::super::Fail::Io(e)),
            HttpTask::Failed(_) => break,
            HttpTask::UpgradedBody(..) | HttpTask::Trailer(_) => {}
        }
    }
    if started {
        session
            .write_response_body(None, true)
            .await
            .map_err(super::super::Fail::Io)?;
        Ok(())
    } else {
        Err(crate::error::GatewayError::internal("a member answered nothing").into())
    }
}

/// Aborts a task when dropped, unless disarmed.
struct AbortOnDrop(Option<tokio::task::JoinHandle<()>>);

impl AbortOnDrop {
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

/// A member subrequest started for a stream the client holds: its tasks, in order, tagged with
/// `member`, sent to `to` until it ends (then `Ended`).
pub(super) fn stream_into(
    session: &Session,
    ask: Ask,
    member: usize,
    to: tokio::sync::mpsc::Sender<(usize, Option<HttpTask>)>,
) -> Option<tokio::task::JoinHandle<()>> {
    let spawner = session.subrequest_spawner.as_ref()?;
    let user: Box<dyn std::any::Any + Send + Sync> = Box::new(Some(ask));
    let ctx = SubrequestCtx::builder().user_ctx(user).build();
    let (prepared, mut handle) = spawner.create_subrequest(&session.downstream_session, ctx);
    Some(tokio::spawn(async move {
        // the input side stays open: closed, the subrequest reads it as the client leaving
        let _input = handle.tx.clone();
        let run = tokio::spawn(prepared.run());
        let _run = AbortOnDrop(Some(run));
        while let Some(t) = handle.rx.recv().await {
            let end = t.is_end() || matches!(t, HttpTask::Done | HttpTask::Failed(_));
            if to.send((member, Some(t))).await.is_err() || end {
                break;
            }
        }
        let _ = to.send((member, None)).await;
    }))
}
