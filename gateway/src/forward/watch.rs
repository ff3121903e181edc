//! Task handles learnt from answers: which answers are watched ([`watched`]), and the watch
//! itself ([`watch`], [`watch_for`]): an observer on the answer's seam (`downstream/seam.rs`,
//! attached with `Client::observe`, the same on the fast path, the gateway-driven paths and a
//! virtual member's answer) that hands the whole answer, once it passed, to the [`Learner`],
//! which records the handle it carries with the pod that answered. The sender (`forward/send.rs`) and the session
//! paths call it; the routing of a task's later requests is `handlers/tasks/`.

use crate::downstream::client::Client;
use crate::downstream::seam::{Body, Observer};
use crate::request::{ctx::RequestCtx, Gateway};
use crate::tasks::TaskRecord;
use crate::upstream::{Backend, Pool};
use mcp_wire::Era;
use pingora::http::ResponseHeader;
use std::sync::Arc;

/// Whether this request's answer may carry a task handle the gateway should record: a
/// 2026-07-28 `tools/call` on a route that is not stateful, with `tasks` enabled, from a
/// client that declared the Tasks extension (SEP-2663: only then may a server answer with a
/// task) or whose body was not read. A client that declares it not while its server answers
/// with a task anyway only loses the routing of its own task.
pub(crate) fn watched(ctx: &RequestCtx) -> bool {
    ctx.era == Era::Stateless
        && ctx.method_label == "tools/call"
        && ctx.state.config.tasks.enabled
        && ctx.declares_tasks != Some(false)
}

/// Starts watching the answer from `backend` of `pool` for a task handle; `sent_on` is the
/// route the request went out on (on a virtual route, the member's: `<path>#<member>`).
pub(crate) fn watch(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &RequestCtx,
    (pool, sent_on): (&Pool, &crate::routing::Route),
    backend: &Backend,
) {
    if !watched(ctx) {
        return;
    }
    let scope = ctx.route_label().into();
    // on a virtual route, the member answering: its fast path's, or the member route's the
    // request went out on (the client's route stays the virtual one)
    let member = ctx
        .native
        .as_ref()
        .and_then(|n| n.rename.as_ref())
        .map(|r| Arc::from(r.member()))
        .or_else(|| sent_on.label.split_once('#').map(|(_, m)| Arc::from(m)));
    watch_for(gw, session, ctx, scope, (pool, member), backend.addr, None);
}

/// Watches the answer for a task handle of `scope`, recorded as living on `backend`.
pub(crate) fn watch_for(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &RequestCtx,
    scope: Arc<str>,
    (pool, member): (&Pool, Option<Arc<str>>),
    backend: std::net::SocketAddr,
    generation: Option<u64>,
) {
    let principal = ctx.principal.as_ref().map(|p| p.id.clone());
    let peer = session.peer_ip();
    let learner = Learner {
        tasks: gw.tasks.clone(),
        config: ctx.state.config.tasks,
        scope,
        pool: pool.name.clone(),
        member,
        backend,
        principal,
        peer,
        generation,
    };
    session.observe(Box::new(HandleWatch {
        learner: Some(learner),
        sse: false,
        seen: None,
    }));
}

/// The largest answer read for a task handle: a handle is a few hundred bytes; an answer past
/// this is a result, not a handle.
pub const HANDLE_LIMIT: usize = 16 * 1024;

/// One answer watched for a task handle: a 200 JSON or SSE answer's bytes, within
/// [`HANDLE_LIMIT`], handed to the learner once it passed whole (it ended, or on an event
/// stream, once its response message passed: the seam says so, from the scan its verdict reads
/// anyway).
struct HandleWatch {
    learner: Option<Learner>,
    sse: bool,
    /// The answer so far (`None`: not one that can carry a handle, or past the limit).
    seen: Option<Vec<u8>>,
}

impl Observer for HandleWatch {
    fn head(&mut self, _head: &ResponseHeader, body: Body) {
        self.sse = body == Body::Events;
        self.seen = (body != Body::Other).then(Vec::new);
    }

    fn chunk(&mut self, chunk: &[u8], whole: bool) {
        let Some(seen) = self.seen.as_mut() else {
            return;
        };
        if seen.len() + chunk.len() > HANDLE_LIMIT {
            self.seen = None;
            return;
        }
        seen.extend_from_slice(chunk);
        if !whole {
            return;
        }
        if let (Some(learner), Some(seen)) = (self.learner.take(), self.seen.take()) {
            learner.learn(self.sse, &seen);
        }
    }
}

/// What records a handle once the answer carrying it has passed. Most answers carry none:
/// the record (its owner's share key above all) is made only for one that does.
pub struct Learner {
    tasks: Arc<crate::tasks::Tasks>,
    config: crate::config::tasks::TasksConfig,
    scope: Arc<str>,
    pool: String,
    member: Option<Arc<str>>,
    backend: std::net::SocketAddr,
    principal: Option<Arc<str>>,
    peer: Option<std::net::IpAddr>,
    generation: Option<u64>,
}

impl Learner {
    /// Records the handle in a whole answer (JSON, or SSE when `sse`), if it carries one.
    pub fn learn(self, sse: bool, answer: &[u8]) {
        let Some(handle) = mcp_wire::tasks::handle_in_answer(sse, answer) else {
            return;
        };
        // a legacy handle counts in a legacy session, a modern one elsewhere
        let legacy = handle.era == mcp_wire::tasks::TaskEra::Legacy;
        if legacy != self.generation.is_some() {
            return;
        }
        let Learner {
            tasks,
            config,
            scope,
            pool,
            member,
            backend,
            principal,
            peer,
            generation,
        } = self;
        let record = TaskRecord {
            pool,
            backend,
            owner: crate::tasks::owner(principal.as_ref(), peer),
            principal,
            expires_ms: 0,
            generation,
            ended: false,
            member,
        };
        tasks.learn(&config, &scope, &handle.task_id, handle.ttl_ms, record);
    }
}
