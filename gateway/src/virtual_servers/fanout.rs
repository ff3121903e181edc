//! Asking one member from inside a client's request, for what the gateway merges itself
//! (`server/discover`, the four lists, the lists a bare name is looked up in) and for what it
//! relays (a legacy client's calls and streams in its member sessions): the member's request
//! is served by calling the same handler a plain route of the member's pool and mode runs
//! (the reverse bridge for legacy members, the attempt engine's retries, identity headers),
//! with a client of its own ([`MemberClient`]: the parent's head, this body, an answer read
//! here) and a context made from the snapshot the parent request started with: never a second
//! run of pingora's pipeline or of the client-facing filters (the caller was authenticated,
//! authorized and admitted on the virtual route), and never another snapshot than the
//! parent's. The member's answer is read whole, bounded, within the member's deadline, or
//! relayed event by event.

use super::member::{MemberClient, Parent};
use crate::auth::Principal;
use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::handlers::stateless::forward_body;
use crate::request::ctx::RequestCtx;
use crate::routing::Route;
use crate::{
    error::Fail,
    request::{Gateway, Handled},
};
use bytes::{Bytes, BytesMut};
use mcp_wire::headers::{MCP_METHOD, MCP_NAME, MCP_SESSION_ID};
use mcp_wire::{inspect_body, Era};
use pingora::http::ResponseHeader;
use pingora::prelude::*;
use pingora::protocols::http::HttpTask;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Largest member answer read (a list page, a discover result).
const ANSWER_LIMIT: usize = 16 * 1024 * 1024;

/// What a member is asked.
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
    /// Where the member request says which backend served it (a legacy call's audit record).
    pub(super) served_by: Option<Arc<std::sync::Mutex<Option<String>>>>,
    /// The client's era.
    pub(super) era: Era,
    /// A legacy client's session on the member's route (its `Mcp-Session-Id` there), if it
    /// has one.
    pub(super) session: Option<String>,
    /// Who admission counts the caller as (a session's client, for the sessions' caps).
    pub(super) identity: Option<Arc<str>>,
    /// A legacy client resuming an answer of this member: the member session's own event id
    /// (`Last-Event-ID` there); `None`: a stream starts afresh.
    pub(super) resume: Option<String>,
}

/// Serves `ask` as its own request, its answer (or its error, written as a plain route
/// writes it) sent to `out`; ends when the answer did.
fn run<'a>(
    gw: &'a Gateway,
    parent: &Parent,
    ask: Ask,
    out: mpsc::Sender<HttpTask>,
) -> impl Future<Output = ()> + Send + 'a {
    let mut client = MemberClient::new(parent, ask.body.clone(), out);
    async move {
        let mut ctx = RequestCtx::new(ask.state.clone());
        let served_by = ask.served_by.clone();
        let served = serve(gw, &mut client, &mut ctx, ask).await;
        if let (Some(slot), Some(backend)) = (served_by, ctx.backend.as_ref()) {
            *crate::sync::lock(&slot) = Some(backend.label.clone());
        }
        if let Err(Fail::Answer(e)) = served {
            Box::pin(crate::forward::respond::answer(&mut client, &mut ctx, &e)).await;
        }
        // counted as a request of the member's route (`<virtual route>#<member>`)
        let status = client.written.as_ref().map(|h| h.status.as_u16());
        let route = ctx.route.as_deref();
        gw.metrics.finished(
            route.map(|r| &r.metrics),
            ctx.route_label(),
            ctx.method_label,
            ctx.outcome.label(status),
            ctx.start.elapsed().as_secs_f64(),
        );
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
    gw: &Gateway,
    parent: &Parent,
    ask: Ask,
    deadline: Duration,
    held: Option<&std::sync::Mutex<crate::federation::budget::Reservation>>,
) -> Result<Answer, &'static str> {
    let (tx, mut rx) = mpsc::channel(16);
    let member = run(gw, parent, ask, tx);
    let read = async {
        let mut answer = Answer {
            status: 0,
            session_id: None,
            content_type: None,
            body: Bytes::new(),
        };
        let mut body = BytesMut::new();
        while let Some(t) = rx.recv().await {
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
    // the member's request runs beside the read of its answer; past the deadline, or as soon
    // as its answer is refused (too large, over the merged lists' budget: a member still
    // writing would wait on the full channel until the deadline), both are dropped, and with
    // them the member's upstream request
    let both = async {
        let (mut member, mut read) = (std::pin::pin!(member), std::pin::pin!(read));
        tokio::select! {
            answer = &mut read => {
                if answer.is_ok() {
                    // the whole answer was read: the member's request finishes (its metrics)
                    member.await;
                }
                answer
            }
            () = &mut member => read.await,
        }
    };
    tokio::time::timeout(deadline, both)
        .await
        .map_err(|_| "deadline")?
}

/// Serves a member request: on the member's route, as a plain route of its pool would (the
/// caller was authenticated, authorized and admitted on the virtual route).
async fn serve(gw: &Gateway, session: &mut impl Client, ctx: &mut RequestCtx, ask: Ask) -> Handled {
    // the context was made from the parent's snapshot (`run`)
    ctx.route = Some(ask.route.clone());
    ctx.principal = ask.principal;
    ctx.era = ask.era;
    ctx.admitted.identity = ask.identity;
    if ask.era == Era::Legacy {
        let resume = ask.resume;
        return serve_in_session(gw, session, ctx, ask.route, ask.session, resume).await;
    }
    let info = inspect_body(&ask.body).map_err(crate::error::GatewayError::from)?;
    ctx.request_id = Some(info.request_id());
    // decided on the member's route as a plain route decides (its rules, its deadline); the
    // per-tool rate was charged on the virtual route
    let (method, name) = (info.method.as_deref(), info.name.as_deref());
    let routed = crate::classify::decide(ctx, &ask.route, method, name)?;
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
    // the body is the gateway's (a list, a listen): no client `Mcp-Param-*` describes it
    crate::upstream::request::param_headers(head, &[])?;
    drop(info);
    forward_body(gw, session, ctx, &ask.route, ask.body, routed).await
}

/// A legacy client's member request: on the member's route as a plain route of its mode
/// serves a session-era request, in the member session `member_session` (none: an
/// `initialize`, or a member that keeps no session), resuming after the member's event id
/// `resume` when the client resumes.
async fn serve_in_session(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    route: Arc<Route>,
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
    let stream = head.method == http::Method::GET || head.method == http::Method::DELETE;
    match route.mode {
        crate::config::Mode::Stateless => {
            crate::handlers::stateless::forward_buffered(gw, session, ctx, route, false).await
        }
        // a resume (GET) and the session's end (DELETE), as `proxy::steps` plans them
        crate::config::Mode::Stateful | crate::config::Mode::Auto if stream => {
            Box::pin(crate::handlers::stateful::stream_or_delete(
                gw, session, ctx, route,
            ))
            .await
        }
        crate::config::Mode::Stateful | crate::config::Mode::Auto => {
            crate::handlers::session_post(gw, session, ctx, route).await
        }
    }
}

/// Asks a member with `ask` and writes its answer to the client as it comes: the head with
/// `Mcp-Session-Id` set to `client_session`, an SSE body event by event through `event` (a
/// JSON body untouched). The member's request ends with the client's: dropped before its
/// answer ended, it is cancelled.
pub(super) async fn pipe(
    gw: &Gateway,
    session: &mut impl Client,
    ask: Ask,
    client_session: &str,
    mut event: impl FnMut(&[u8]) -> Bytes,
) -> Handled {
    let (tx, mut rx) = mpsc::channel(16);
    let member = run(gw, &Parent::of(session), ask, tx);
    tokio::pin!(member);
    let mut member_done = false;
    let mut sse = false;
    let mut splitter = mcp_wire::sse::EventSplitter::default();
    let mut started = false;
    loop {
        let t = tokio::select! {
            () = &mut member, if !member_done => {
                member_done = true;
                continue;
            }
            t = rx.recv() => t,
        };
        let Some(t) = t else { break };
        match t {
            HttpTask::Header(mut head, end) => {
                sse = client_head(&mut head, client_session);
                answer::head(session, *head, end).await.map_err(Fail::Io)?;
                started = true;
                if end {
                    return Ok(());
                }
            }
            HttpTask::Body(chunk, end) => {
                let chunk = chunk.unwrap_or_default();
                let out = if sse {
                    rewritten(&chunk, &mut splitter, &mut event)
                } else {
                    chunk
                };
                if !out.is_empty() || end {
                    answer::chunk(session, Some(out), end)
                        .await
                        .map_err(Fail::Io)?;
                }
                if end {
                    return Ok(());
                }
            }
            HttpTask::Done => break,
            HttpTask::Failed(e) if !started => return Err(Fail::Io(e)),
            HttpTask::Failed(_) => break,
            HttpTask::UpgradedBody(..) | HttpTask::Trailer(_) => {}
        }
    }
    if started {
        answer::end(session).await.map_err(Fail::Io)
    } else {
        Err(crate::error::GatewayError::internal("a member answered nothing").into())
    }
}

/// A member's answer `head` made the client's: its session id `client_session`, and no
/// `Content-Length` when its body is an event stream (whether it is, returned: its events are
/// rewritten, their length changes).
fn client_head(head: &mut ResponseHeader, client_session: &str) -> bool {
    let sse = mcp_wire::sse::is_event_stream(
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
    sse
}

/// The events `chunk` completes (`splitter` holds the part of one it began), each rewritten
/// by `event`.
fn rewritten(
    chunk: &[u8],
    splitter: &mut mcp_wire::sse::EventSplitter,
    event: &mut impl FnMut(&[u8]) -> Bytes,
) -> Bytes {
    let mut out = BytesMut::new();
    for e in splitter.push(chunk) {
        out.extend_from_slice(&event(&e));
    }
    out.freeze()
}

/// A member's request for a stream the client holds: its answer's tasks, in order, tagged
/// with `member`, sent to `to` until it ends (then `None`). The caller drives the future
/// (beside its own work: [`Streams`]); dropped, the member's request is cancelled.
pub(super) fn stream_into<'a>(
    gw: &'a Gateway,
    parent: &Parent,
    ask: Ask,
    member: usize,
    to: mpsc::Sender<(usize, Option<HttpTask>)>,
) -> impl Future<Output = ()> + Send + 'a {
    let (tx, mut rx) = mpsc::channel(16);
    let run = run(gw, parent, ask, tx);
    async move {
        let forward = async {
            while let Some(t) = rx.recv().await {
                let end = t.is_end() || matches!(t, HttpTask::Done | HttpTask::Failed(_));
                if to.send((member, Some(t))).await.is_err() || end {
                    break;
                }
            }
            let _ = to.send((member, None)).await;
        };
        tokio::pin!(forward);
        tokio::select! {
            // the member's answer ended (or its reader left): done, its request dropped
            () = &mut forward => {}
            () = run => forward.await,
        }
    }
}

/// The member streams of one client stream, driven beside it: each member's at most once
/// (starting one again drops the one before), all dropped (their requests cancelled) with it.
pub(super) struct Streams<'a> {
    running: futures_util::stream::FuturesUnordered<
        futures_util::future::Abortable<futures_util::future::BoxFuture<'a, ()>>,
    >,
    handles: Vec<Option<futures_util::future::AbortHandle>>,
}

impl<'a> Streams<'a> {
    /// Room for `n` members' streams.
    pub(super) fn new(n: usize) -> Streams<'a> {
        Streams {
            running: Default::default(),
            handles: (0..n).map(|_| None).collect(),
        }
    }

    /// Starts member `i`'s stream (`stream_into`), dropping the one it had.
    pub(super) fn start(&mut self, i: usize, stream: impl Future<Output = ()> + Send + 'a) {
        use futures_util::FutureExt;
        if let Some(old) = self.handles[i].take() {
            old.abort();
        }
        let (stream, handle) = futures_util::future::abortable(stream.boxed());
        self.running.push(stream);
        self.handles[i] = Some(handle);
    }

    /// The next of `rx`, driving the streams (which send to it) meanwhile.
    pub(super) async fn next<T>(&mut self, rx: &mut mpsc::Receiver<T>) -> Option<T> {
        loop {
            tokio::select! {
                t = rx.recv() => return t,
                () = self.drive() => {}
            }
        }
    }

    /// Drives the streams; returns when one ended (never while none runs).
    pub(super) async fn drive(&mut self) {
        use futures_util::StreamExt;
        if self.running.is_empty() {
            std::future::pending::<()>().await;
        }
        self.running.next().await;
    }
}
