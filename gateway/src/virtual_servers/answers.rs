//! What a virtual route answers itself: a merged list as the route's `authz` rules let the
//! caller see it, a member's own name put in a body, the gateway's own answer (SSE to a
//! session-era client that accepts a stream, else JSON), written by `downstream::answer`.

use super::calls::Named;
use crate::downstream::client::Client;
use crate::error::GatewayError;
use crate::request::ctx::RequestCtx;
use crate::request::Handled;
use crate::routing::Route;
use bytes::Bytes;
use mcp_wire::Era;

/// A merged list answer as the route's `authz` rules let the caller see it (the exposed
/// names); any other answer as it is.
pub(super) fn filtered(
    route: &Route,
    ctx: &RequestCtx,
    filter: Option<&'static str>,
    body: Bytes,
) -> Bytes {
    let Some(list) = filter else {
        return body;
    };
    let principal = ctx.principal.as_deref();
    let json = Some("application/json");
    route
        .guard
        .filter_answer(principal, Some(list), json, &body)
        .unwrap_or(body)
}

/// `body` with the member's own name `own` where the exposed one was (every other byte kept).
pub(super) fn own_name(
    body: &Bytes,
    method: &str,
    named: &Named,
    own: &str,
) -> Result<Bytes, GatewayError> {
    if own == named.exposed {
        return Ok(body.clone());
    }
    let method = match method {
        // the URI of a subscription is where a read's is
        "resources/subscribe" | "resources/unsubscribe" => "resources/read",
        m => m,
    };
    let path = mcp_wire::rewrite::name_path(method, named.ref_type.as_deref())
        .ok_or_else(|| GatewayError::internal("no name path for a routed method"))?;
    let rewritten = mcp_wire::rewrite::replace_string(body, path, own)
        .ok_or_else(|| GatewayError::internal("the routed name could not be rewritten"))?;
    Ok(Bytes::from(rewritten))
}

/// The gateway's own answer `body` (captured): one SSE event to a session-era client that
/// accepts a stream (as the session servers it stands for answer), else JSON.
pub(super) async fn answer(
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    body: Bytes,
) -> Handled {
    ctx.capture_response(&body);
    crate::downstream::answer::own(session, ctx.era == Era::Legacy, body)
        .await
        .map_err(crate::error::Fail::Io)?;
    Ok(())
}
