//! A list answer relayed with what the caller may not use removed (a route's `authz` rules,
//! read by the name the backend executes) and, for a `tools/list` of a pool with
//! `tool-pinning`, with its definitions noted and the quarantined ones left out
//! (`crate::pinning`): the whole answer read (bounded), decoded when it is compressed,
//! filtered, and written whole. [`filter_list`] is the one filter every path calls (this
//! relay, both era bridges).

use crate::auth::Principal;
use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::forward::relay::Relayed;
use crate::routing::Route;
use crate::upstream::client::Exchange;
use crate::upstream::encoding;
use bytes::Bytes;
use pingora::http::ResponseHeader;
use pingora::prelude::*;

/// Largest list answer the gateway filters.
const LIST_LIMIT: usize = 16 * 1024 * 1024;

/// The body of the answer to `list` from `pool` as the caller gets it: the route's `authz`
/// rules' filter, then (a `tools/list`) the pool's tool pins. `None`: unchanged.
pub(crate) fn filter_list(
    pins: &crate::pinning::Pins,
    (route, pool): (&Route, &str),
    principal: Option<&Principal>,
    list: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> Option<Bytes> {
    let filtered = route
        .guard
        .filter_answer(principal, Some(list), content_type, body);
    if list != "tools/list" {
        return filtered;
    }
    let after = filtered.as_deref().unwrap_or(body);
    pins.rewrite(pool, content_type, after).or(filtered)
}

/// Relays a list answer with what the caller may not use removed (the whole answer is read
/// first). Anything but a 2xx answer is relayed untouched.
pub(crate) async fn relay_filtered(
    exchange: &mut Exchange,
    session: &mut impl Client,
    mut head: ResponseHeader,
    (route, pins, pool): (&Route, &crate::pinning::Pins, &str),
    principal: Option<&Principal>,
    method: &'static str,
) -> Result<Relayed> {
    if !head.status.is_success() {
        return crate::forward::relay::relay(exchange, session, head, None, None).await;
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
    let body =
        filter_list(pins, (route, pool), principal, method, content_type, &body).unwrap_or(body);
    head.remove_header(&http::header::TRANSFER_ENCODING);
    head.insert_header(http::header::CONTENT_LENGTH, body.len().to_string())?;
    answer::whole(session, head, body).await?;
    Ok(Relayed::Done)
}
