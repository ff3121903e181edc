//! The gateway-driven handlers of a plain route's request, each calling down into `forward/`
//! (the sender), `session/` and the bridges: `stateless.rs` (a body the gateway reads first:
//! routed by its method and name, under a deadline, or on a route without sessions),
//! `stateful/` (HTTP glue around the session manager). A 2026-07-28 request to legacy backends
//! goes through the reverse bridge from `forward/bridged.rs`, part of the one sender. No handler
//! calls another: `proxy/` dispatches a client's request here by its plan, and a virtual
//! server's member request comes here the same way (`virtual_servers/fanout.rs`). A POST on a
//! stateful or auto route goes through [`session_post`], the one dispatch on a handler's
//! returned value: a 2026-07-28 body without the version header that the session handler read
//! and handed back is sent the stateless path's way (`stateless::forward_read`), exactly as the
//! same body with the header: classified, cached, checked for the reverse bridge, task-routed.

pub mod stateful;
pub mod stateless;
pub mod tasks;

use crate::downstream::client::Client;
use crate::request::ctx::RequestCtx;
use crate::request::{Gateway, Handled};
use crate::routing::Route;
use std::sync::Arc;

/// A POST on a stateful (or auto, legacy-era) route: the session handler's, or, for a
/// 2026-07-28 body it hands back ([`stateful::Served::Sessionless`]), the stateless path's
/// from the read body on, its headers checked against it as the plan would have (the route's
/// `check-headers`, when the request names its method in `Mcp-Method`).
pub(crate) async fn session_post<C: Client>(
    gw: &Gateway,
    session: &mut C,
    ctx: &mut RequestCtx,
    route: Arc<Route>,
) -> Handled {
    match stateful::handle(gw, session, ctx, route.clone()).await? {
        stateful::Served::Answered => Ok(()),
        stateful::Served::Sessionless(body) => {
            let headers = &session.req_header().headers;
            let check = route.check_headers && headers.contains_key(mcp_wire::headers::MCP_METHOD);
            // boxed: the rare branch does not grow every session call's future
            Box::pin(stateless::forward_read(
                gw, session, ctx, route, body, check,
            ))
            .await
        }
    }
}
