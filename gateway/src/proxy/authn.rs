//! The request-filter steps of `auth/` and their HTTP glue: serving the protected-resource
//! metadata, authenticating the caller (401 / 503 answers), removing its credential before
//! anything goes upstream (no token passthrough), authorizing a call by the name the backend
//! will execute (403), and filtering list answers.

use super::ctx::RequestCtx;
use super::relay::{write_whole, Relayed};
use crate::auth::Principal;
use crate::downstream::client::Client;
use crate::error::GatewayError;
use crate::routing::Route;
use crate::upstream::client::Exchange;
use crate::upstream::encoding;
use bytes::Bytes;
use pingora::http::ResponseHeader;
use pingora::prelude::*;
use std::sync::Arc;

/// Largest list answer the gateway filters.
const LIST_LIMIT: usize = 16 * 1024 * 1024;

/// The metadata document, when `auth` is set and the path is one of its well-known paths.
pub(super) fn metadata(ctx: &RequestCtx, path: &str) -> Option<Bytes> {
    ctx.state.auth.as_ref()?.metadata_for(path)
}

/// Writes the metadata document.
pub(super) async fn serve_metadata(session: &mut impl Client, doc: Bytes) -> Result<()> {
    let mut head = ResponseHeader::build(200, Some(4))?;
    head.insert_header("content-type", "application/json")?;
    head.insert_header("content-length", doc.len().to_string())?;
    head.insert_header("cache-control", "max-age=300")?;
    head.insert_header("access-control-allow-origin", "*")?;
    write_whole(session, head, doc).await
}

/// Authenticates the caller of a route that requires one, then removes its credential from
/// the request: the client's `Authorization` (and API key header) never reach a backend. The
/// principal is kept in the context and in the request head's extensions (for identity
/// headers).
pub(super) async fn authenticate<C: Client>(
    session: &mut C,
    ctx: &mut RequestCtx,
    route: &Route,
) -> Result<(), GatewayError> {
    let Some(auth) = ctx.state.auth.clone() else {
        return Ok(());
    };
    let req = session.req_header_mut();
    if !route.guard.required {
        // SDKs send their token to every path of the host: a route without `auth` must not
        // hand a backend a credential that is good on the protected ones
        drop_credentials(req, &auth);
        return Ok(());
    }
    // boxed: the key set's fetch is a large future, off the path of routes without `auth`
    let principal = Box::pin(auth.authenticate(&req.headers)).await?;
    // A principal an identity header cannot carry (CR/LF in `sub`, say) is refused here, not
    // passed on with its identity headers silently missing.
    let renderable = ctx
        .state
        .pools
        .iter()
        .all(|pool| crate::auth::identity::render(&principal, &pool.identity).is_ok());
    if !renderable {
        return Err(auth.unauthorized(crate::auth::Refusal::Unrenderable));
    }
    let mut removed = Vec::with_capacity(1);
    if let Some(v) = req.remove_header(&http::header::AUTHORIZATION) {
        removed.push((http::header::AUTHORIZATION, v));
    }
    if let Some(header) = auth.api_key_header() {
        if let Some(v) = req.remove_header(header) {
            removed.push((header.clone(), v));
        }
    }
    // ... and in the other spellings a backend framework reads as the same header
    // (`X_Api_Key` is `x-api-key` to WSGI and CGI servers)
    drop_credentials(req, &auth);
    req.extensions_mut()
        .insert(crate::auth::Credentials(removed));
    req.extensions_mut().insert(principal.clone());
    ctx.principal = Some(principal);
    Ok(())
}

/// Removes every header that carries a credential the gateway accepts (`Authorization`, the
/// API key header) in any spelling a backend framework maps onto it (any case, `_` for `-`).
/// A head without one is looked over once and left alone.
fn drop_credentials(req: &mut pingora::http::RequestHeader, auth: &crate::auth::Auth) {
    let key = auth.api_key_header().map(http::HeaderName::as_str);
    let carries = |k: &http::HeaderName| {
        crate::auth::identity::same_name(k.as_str(), "authorization")
            || key.is_some_and(|h| crate::auth::identity::same_name(k.as_str(), h))
    };
    if !req.headers.keys().any(carries) {
        return;
    }
    let names: Vec<http::HeaderName> = req.headers.keys().filter(|k| carries(k)).cloned().collect();
    for name in names {
        req.remove_header(&name);
    }
}

/// Whether the caller may call `method` on `name` (the name the backend will execute); also
/// marks a list answer for filtering.
pub(super) fn authorize(
    ctx: &mut RequestCtx,
    route: &Route,
    method: Option<&str>,
    name: Option<&str>,
) -> Result<(), GatewayError> {
    if !route.guard.has_rules() {
        return Ok(());
    }
    if route.guard.filters(method) {
        ctx.filter = match method {
            Some("tools/list") => Some("tools/list"),
            Some("prompts/list") => Some("prompts/list"),
            Some("resources/list") => Some("resources/list"),
            Some("resources/templates/list") => Some("resources/templates/list"),
            _ => None,
        };
    }
    let principal = ctx.principal.as_deref();
    route
        .guard
        .decide(principal, method, name)
        .map_err(|denied| refusal(ctx, denied))
}

/// The answer to a denial: 403 -32024 (naming the metadata document), or -32031 for a URI
/// that cannot be decided.
pub(super) fn refusal(ctx: &RequestCtx, denied: crate::auth::Denied) -> GatewayError {
    if let Some(why) = denied.undecidable {
        return GatewayError::undecidable_name(why.as_str());
    }
    let metadata = ctx
        .state
        .auth
        .as_ref()
        .map(|a| a.forbidden(denied.scope.as_deref()));
    metadata.unwrap_or_else(|| GatewayError::forbidden(denied.scope.as_deref(), ""))
}

/// Relays a list answer with what the caller may not use removed (the whole answer is read
/// first). Anything but a 2xx answer is relayed untouched.
pub(super) async fn relay_filtered(
    exchange: &mut Exchange,
    session: &mut impl Client,
    mut head: ResponseHeader,
    route: &Route,
    principal: Option<&Principal>,
    method: &'static str,
) -> Result<Relayed> {
    if !head.status.is_success() {
        return super::relay::relay(exchange, session, head, None).await;
    }
    let sse = mcp_wire::sse::is_event_stream(
        head.headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
    );
    let Ok(mut body) = exchange.read_all(LIST_LIMIT).await else {
        return Ok(Relayed::Broken { sse });
    };
    // A compressed list is read decoded and sent decoded; one the gateway cannot decode (it
    // asks only for gzip and deflate) is never passed on unfiltered.
    if let Err(why) = encoding::decode_in_place(&mut head, &mut body, LIST_LIMIT) {
        tracing::debug!(why = %why.0, "a list answer that cannot be decoded is not relayed");
        return Ok(Relayed::Broken { sse });
    }
    let content_type = head
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let body = route
        .guard
        .filter_answer(principal, Some(method), content_type, &body)
        .unwrap_or(body);
    head.remove_header(&http::header::TRANSFER_ENCODING);
    head.insert_header(http::header::CONTENT_LENGTH, body.len().to_string())?;
    write_whole(session, head, body).await?;
    Ok(Relayed::Done)
}

/// The principal of a request, for the session binding.
pub(super) fn principal_id(ctx: &RequestCtx) -> Option<Arc<str>> {
    ctx.principal.as_ref().map(|p| p.id.clone())
}
