//! Stateless requests the gateway forwards itself instead of through pingora's pipeline:
//! - legacy bodies without `Mcp-Method` on a route with rules (the pool depends on the body;
//!   pingora cannot replay a pre-read body beyond its 64 KiB retry buffer);
//! - requests under a deadline (`limits.timeout-ms`, `limits.tool-timeouts`): the whole
//!   exchange is bounded, and a request past it is cancelled upstream by closing its
//!   connection and answered with -32012.
//!
//! The body is read (bounded by `max-body-bytes`), checked against the MCP headers when the
//! route checks them, and forwarded as the same bytes over pooled connections; the answer
//! streams back as it arrives.

use super::check;
use super::ctx::RequestCtx;
use super::forward::{forward_any, read_body, Outbound};
use super::respond;
use crate::error::GatewayError;
use crate::mcp::{inspect_body, method_label};
use crate::routing::Route;
use crate::upstream::client::UpstreamClient;
use pingora::prelude::*;

/// Reads the body, routes it (by its method and name), applies the per-tool rate and the
/// deadline, forwards it, and answers the client.
pub async fn forward_buffered(
    client: &UpstreamClient,
    session: &mut Session,
    ctx: &mut RequestCtx,
    route: &Route,
) -> Result<bool> {
    let state = ctx.state.clone().expect("state set in new_ctx");
    let routed = match read_body(session, state.config.max_body_bytes).await {
        Ok(body) => {
            let inspected = if ctx.check_body {
                check::check_body(&session.req_header().headers, &body).map_err(|r| (r.id, r.error))
            } else {
                inspect_body(&body).map_err(|e| (None, GatewayError::from(e)))
            };
            match inspected {
                Ok(info) => {
                    ctx.request_id = Some(info.request_id());
                    ctx.method_label = method_label(info.method.as_deref());
                    let method = info.method.as_deref();
                    let name = info.name.as_deref();
                    ctx.note_tool(method, name);
                    let pool = route.pool_for(method, name);
                    let deadline = route.deadline(method, name);
                    let tool_ok = match (method, name, ctx.tool_admitted) {
                        (Some("tools/call"), Some(tool), false) => {
                            state.admission.admit_tool(ctx.identity.as_deref(), tool)
                        }
                        _ => Ok(()),
                    };
                    drop(info);
                    tool_ok
                        .map(|()| (pool, deadline, body))
                        .map_err(|e| (None, e))
                }
                Err(rejected) => Err(rejected),
            }
        }
        Err(e) => Err((None, e)),
    };
    let (pool, deadline, body) = match routed {
        Ok(ok) => ok,
        Err((id, e)) => {
            if id.is_some() {
                ctx.request_id = id;
            }
            respond::answer(session, ctx, &e).await;
            return Ok(true);
        }
    };
    ctx.pool = pool;
    let pool = state.pools[pool].clone();
    let out = Outbound {
        path: route
            .upstream_path(session.req_header().uri.path())
            .into_owned(),
        body,
        // A stateless call may have effects: never sent twice.
        repeatable: false,
        deadline,
        stateless: true,
    };
    forward_any(client, session, ctx, &pool, out).await
}
