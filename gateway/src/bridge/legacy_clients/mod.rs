//! Legacy (2025-11-25 and earlier) clients on 2026-07-28 backends.
//!
//! The gateway keeps the client's session as on any stateful route (its own session id, the
//! stored `initialize`, the settings, the principal; `session::SessionManager::open_bridged`),
//! answers `initialize` itself from a backend's `server/discover` (cached per backend),
//! answers `ping`, `logging/setLevel` and the client's notifications itself, serves the
//! client's GET stream (keep-alives; a modern backend has none), and sends every other request
//! as a 2026-07-28 request balanced on its own over the modern backends: nothing is pinned, so
//! a dead pod costs nothing. An `input_required` answer becomes real server→client requests on
//! the call's SSE answer; the client's responses (its POSTs) are taken here and the call is
//! retried with `inputResponses` and `requestState`, for at most
//! [`MAX_ROUNDS`](limits::MAX_ROUNDS) rounds.
//!
//! This file says which sessions are bridged; `serves` (which backends serve a session
//! natively, which bridged), `limits` (the rounds, the input timeout, how long a
//! `server/discover` result is reused), `upstream` (which backend, the `server/discover`
//! cache), `call` (the rounds of one call), `live` (what a call waits for: the client's
//! responses, cancellations, the GET streams), `listen` (the `subscriptions/listen` stream
//! that feeds a GET stream the session's subscriptions), `params` (the `Mcp-Param-*` headers
//! a `tools/call` mirrors from its tool's schema), `http` (the session's requests, and
//! the bridge errors it counts), `get` (the client's GET stream); `super::answer` reads a
//! modern answer's messages.

use crate::downstream::client::Client;
mod call;
mod get;
mod http;
mod limits;
mod listen;
mod live;
mod params;
mod serves;
mod upstream;

pub use http::Target;
pub use listen::listen_body_len;
pub(super) use listen::Listens;
pub(super) use live::Live;
pub use serves::{serves_bridged, serves_native};
pub(super) use upstream::Discovered;

use super::{Bridge, Served};
use crate::config::DualBackends;
use crate::error::{Fail, GatewayError};
use crate::session::store::Quota;
use crate::session::{Requester, SessionManager, SessionRecord};
use crate::upstream::{BackendState, Pool};
use bytes::Bytes;
use mcp_wire::RequestId;
use pingora::prelude::*;
use std::sync::Arc;

/// One request of a legacy client to the bridge.
pub enum Request<'a> {
    /// `initialize` without a session: answered from a backend's `server/discover`, and the
    /// bridged session opened with the client's `params`, within `quota`.
    Initialize {
        /// Who opens the session.
        caller: &'a Requester,
        /// The client's `initialize` params, verbatim.
        params: Option<Arc<str>>,
        /// The request's id.
        id: &'a RequestId,
        /// The caps the new session respects.
        quota: Quota,
    },
    /// A POST in a bridged session, its body read and checked as one JSON-RPC message.
    Post {
        /// The session.
        rec: SessionRecord,
        /// The body as the client sent it.
        body: &'a Bytes,
        /// The request's id.
        id: &'a RequestId,
        /// Safe to send twice.
        repeatable: bool,
    },
    /// GET: the session's stream, served by the gateway.
    Get(SessionRecord),
    /// DELETE: the session ends.
    Delete(SessionRecord),
}

/// Serves one request of a legacy client's session on 2026-07-28 backends: the bridge's one
/// entry point.
pub async fn serve(
    bridge: &Bridge,
    sessions: &SessionManager,
    session: &mut impl Client,
    to: Target<'_>,
    request: Request<'_>,
) -> Result<Served, Fail> {
    match request {
        Request::Initialize {
            caller,
            params,
            id,
            quota,
        } => http::initialize(bridge, sessions, session, to, caller, params, id, quota).await,
        Request::Post {
            rec,
            body,
            id,
            repeatable,
        } => http::post(bridge, sessions, session, to, rec, body, id, repeatable).await,
        Request::Get(rec) => get::get(bridge, sessions, session, (to.pool, to.dual), rec).await,
        Request::Delete(rec) => http::delete(bridge, sessions, session, to.pool, rec).await,
    }
}

/// A native session whose pool has no backend left that serves it natively, but 2026-07-28
/// ones (a rolling upgrade's last legacy pod went), continues on the bridge instead of
/// failing; any other session is returned as it is. Cheap when nothing changed: a look at the
/// pool's backends. `client` is the request's head: a move is made for its caller.
pub async fn bridge_over_if_needed(
    sessions: &SessionManager,
    pool: &Arc<Pool>,
    dual: DualBackends,
    rec: SessionRecord,
    client: &pingora::http::RequestHeader,
) -> Result<SessionRecord, GatewayError> {
    if rec.binding.is_bridged() || !bridges(pool, dual) {
        return Ok(rec);
    }
    let caller = crate::auth::Caller::of(&client.extensions);
    Box::pin(sessions.bridge_over(pool, &rec, &caller)).await
}

/// Whether a legacy client's new session on `pool` is bridged: no backend serves it natively
/// and one serves it bridged (ready ones decide; when none is ready, any).
pub fn bridges(pool: &Pool, dual: DualBackends) -> bool {
    let members = pool.backends();
    let decide = |ready_only: bool| {
        let considered = || {
            members
                .iter()
                .filter(move |b| !ready_only || b.state() == BackendState::Up)
        };
        if considered().any(|b| serves_native(b, dual)) {
            Some(false)
        } else if considered().any(|b| serves_bridged(b, dual)) {
            Some(true)
        } else {
            None
        }
    };
    decide(true).or_else(|| decide(false)).unwrap_or(false)
}
