//! Tasks on stateless and auto routes (issue 34): the answers that carry a task handle are
//! watched as they stream to the client ([`watch`], read by the answer module in
//! `verdict.rs`), and the requests that name a task (`tasks/get`, `tasks/update`,
//! `tasks/cancel`) go to the pod that holds it ([`forward`]):
//! - no record: balanced like any request (the server answers as for an id it never issued);
//! - another principal's task: answered exactly as an unknown one (the request goes, balanced,
//!   with an id no server issued, and the answer comes back with the client's id in it);
//! - a task of a `tasks: shared` pool: balanced;
//! - else to its pod, once: gone from the pool, refusing connections, or answering that it
//!   does not know the task is -32038 `task-lost` at once.
//!
//! Here: which requests are watched and routed, and the watch itself; `legacy.rs`: legacy
//! tasks in sessions; `fast.rs`: a task's request pinned on the fast path; `forward.rs`: the
//! buffered path's routing.

use crate::downstream::client::Client;
mod fast;
mod forward;
mod legacy;

pub(in crate::proxy) use fast::pin;
pub(crate) use fast::{held_chunk, hold_answer, pinned_lost, Pinned};
pub(crate) use forward::forward;
pub(crate) use legacy::{legacy_task, legacy_task_method, moved_since, watch_in_session};

use crate::proxy::{ctx::RequestCtx, Gateway};
use crate::tasks::TaskRecord;
use crate::upstream::{Backend, Pool};
use mcp_wire::Era;
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

/// Whether a request of `method` is one the gateway routes by its task.
pub(crate) fn routes(ctx: &RequestCtx, method: Option<&str>) -> bool {
    ctx.era == Era::Stateless
        && ctx.state.config.tasks.enabled
        && matches!(method, Some("tasks/get" | "tasks/update" | "tasks/cancel"))
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
pub(super) fn watch_for(
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
    session.learn_from_answer(Box::new(move |sse, answer| learner.learn(sse, answer)));
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
