//! The request-filter steps of `auth/` and their HTTP glue: serving the protected-resource
//! metadata, authenticating the caller (401 / 503 answers), removing its credential before
//! anything goes upstream (no token passthrough). Authorizing a call by the name the backend
//! will execute is `classify/`; filtering list answers, `forward/filtered.rs`.

use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::error::GatewayError;
use crate::request::ctx::RequestCtx;
use crate::routing::Route;
use bytes::Bytes;
use pingora::http::ResponseHeader;
use pingora::prelude::*;

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
    answer::whole(session, head, doc).await
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
