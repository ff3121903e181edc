//! Stateless requests whose pool depends on the body (legacy bodies without `Mcp-Method` on a
//! route with rules). pingora's own pipeline cannot carry a body read before the upstream is
//! chosen once it exceeds its 64 KiB retry buffer, so the gateway reads the body (bounded by
//! `max-body-bytes`), picks the pool, and forwards it itself over pooled connections,
//! streaming the answer back as it arrives.

use super::ctx::RequestCtx;
use super::forward::{forward_any, read_body};
use super::respond;
use crate::error::GatewayError;
use crate::mcp::{inspect_body, method_label};
use crate::routing::Route;
use crate::upstream::client::UpstreamClient;
use pingora::prelude::*;

/// Reads the body, routes by its method and name, forwards it, and answers the client.
pub async fn forward_by_body(
    client: &UpstreamClient,
    session: &mut Session,
    ctx: &mut RequestCtx,
    route: &Route,
) -> Result<bool> {
    let state = ctx.state.clone().expect("state set in new_ctx");
    let routed = match read_body(session, state.config.max_body_bytes).await {
        Ok(body) => match inspect_body(&body) {
            Ok(info) => {
                ctx.request_id = Some(info.request_id());
                ctx.method_label = method_label(info.method.as_deref());
                let pool = route.pool_for(info.method.as_deref(), info.name.as_deref());
                drop(info);
                Ok((pool, body))
            }
            Err(e) => Err(GatewayError::from(e)),
        },
        Err(e) => Err(e),
    };
    let (pool, body) = match routed {
        Ok(ok) => ok,
        Err(e) => {
            respond::answer(session, ctx, &e).await;
            return Ok(true);
        }
    };
    ctx.pool = pool;
    let pool = state.pools[pool].clone();
    let path = route
        .upstream_path(session.req_header().uri.path())
        .into_owned();
    // Not repeatable: a stateless call may have effects.
    forward_any(client, session, ctx, &pool, &path, body, false).await
}
