//! A route's interceptor chain (`interceptors/`, SEP-2624) on the one way through, for every
//! path the gateway drives (a route with a chain never takes the fast path: `proxy/steps.rs`):
//! - the request phase ([`request`]): called by each handler once its request is read and
//!   classified (authorized, charged), on the body the backend will get; a mutator's params
//!   replace the request's (its `Mcp-Param-*` headers following them), a denial answers the
//!   client and nothing is sent;
//! - the response phase: `forward/gate.rs` `AnswerGate`, armed on the client by [`request`]
//!   where the chain hooks the answer, and on a session's stream by [`arm_stream`].

use crate::downstream::client::Client;
use crate::error::GatewayError;
use crate::forward::gate::AnswerGate;
use crate::interceptors::{Context, Phase, Verdict};
use crate::request::ctx::RequestCtx;
use crate::routing::Route;
use bytes::Bytes;
use serde_json::Value;

/// Runs `route`'s request-phase chain on `body` (a request of `method`, read and classified),
/// and arms the response phase on `client` when the chain hooks the answer. `Some`: the
/// request with a mutator's params, to send in the place of `body`. `session`: the gateway
/// session the request belongs to, if any (hashed for the interceptors).
pub(crate) async fn request(
    client: &mut impl Client,
    ctx: &RequestCtx,
    route: &Route,
    method: Option<&str>,
    session: Option<&str>,
    body: &Bytes,
) -> Result<Option<Bytes>, GatewayError> {
    let (chain, Some(method)) = (&route.chain, method) else {
        return Ok(None);
    };
    // a notification has no answer to refuse or to hold: the chain runs on requests
    if chain.is_empty() || method.starts_with("notifications/") {
        return Ok(None);
    }
    let interceptors = &ctx.state.interceptors;
    let cx = Context {
        principal: ctx.principal.clone(),
        session: session.map(crate::session_hash::hash_session),
        trace_id: ctx.trace_id.clone(),
    };
    if interceptors.hooks(chain, method, Phase::Response) {
        let gate = AnswerGate::new(
            interceptors.clone(),
            chain.clone(),
            ctx,
            Some(method),
            cx.clone(),
        );
        client.gate(Box::new(gate));
    }
    if !interceptors.hooks(chain, method, Phase::Request) {
        return Ok(None);
    }
    let mut msg: Value =
        serde_json::from_slice(body).map_err(|e| GatewayError::parse_error(&e.to_string()))?;
    let Some(fields) = msg.as_object_mut() else {
        return Ok(None);
    };
    let params = fields.get("params").cloned().unwrap_or(Value::Null);
    let verdict = interceptors.run(chain, method, Phase::Request, &params, &cx);
    match verdict.await? {
        Verdict::Pass => Ok(None),
        Verdict::Changed(changed) => {
            if method == "tools/call" {
                let (before, after) = (params.get("arguments"), changed.get("arguments"));
                remirror(client.req_header_mut(), before, after);
            }
            fields.insert("params".into(), changed);
            let bytes = serde_json::to_vec(&msg).map_err(|e| GatewayError::internal(e.to_string()));
            Ok(Some(Bytes::from(bytes?)))
        }
    }
}

/// The longest walk of a call's arguments [`remirror`] makes (nodes visited).
const MIRROR_WALK: usize = 4096;

/// The `Mcp-Param-*` headers (SEP-2243) of a `tools/call` whose arguments a mutator changed:
/// each header the client sent mirrors an argument whose value it spells; where the arguments
/// `before` hold exactly one such value (or several that all changed alike), the header takes
/// the changed value `after` (removed when the argument is gone). Otherwise it stays as sent,
/// and a 2026-07-28 server, which checks its headers against the body, refuses the call
/// (-32020) instead of running one whose headers disagree with its body. (The gateway's own
/// decisions read the name, which a mutator may not change, and were made before.)
fn remirror(
    head: &mut pingora::http::RequestHeader,
    before: Option<&Value>,
    after: Option<&Value>,
) {
    use mcp_wire::param_headers::{encode, is_param_header, render};
    let sent: Vec<(http::HeaderName, String)> = head
        .headers
        .iter()
        .filter(|(k, _)| is_param_header(k.as_str()))
        .filter_map(|(k, v)| Some((k.clone(), v.to_str().ok()?.to_owned())))
        .collect();
    let (Some(before), false) = (before, sent.is_empty()) else {
        return;
    };
    let mut leaves = Vec::new();
    scalars(
        before,
        &mut Vec::new(),
        &mut leaves,
        &mut MIRROR_WALK.clone(),
    );
    for (name, value) in sent {
        let spelt = |v: &Value| render(v).map(|r| encode(&r));
        let paths: Vec<&Vec<String>> = leaves
            .iter()
            .filter(|(_, v)| spelt(v).as_deref() == Some(value.as_str()))
            .map(|(path, _)| path)
            .collect();
        let now: Vec<Option<String>> = paths
            .iter()
            .map(|path| after.and_then(|a| at(a, path)).and_then(spelt))
            .collect();
        let Some(first) = now.first() else {
            continue;
        };
        if now.iter().any(|n| n != first) {
            continue;
        }
        match first
            .as_deref()
            .and_then(|v| http::HeaderValue::from_str(v).ok())
        {
            Some(v) => {
                let _ = head.insert_header(name, v);
            }
            None => {
                head.remove_header(&name);
            }
        }
    }
}

/// The scalar leaves of `value` reached through object keys, with their paths (at most
/// `budget` nodes visited).
fn scalars<'a>(
    value: &'a Value,
    path: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, &'a Value)>,
    budget: &mut usize,
) {
    if *budget == 0 {
        return;
    }
    *budget -= 1;
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                path.push(k.clone());
                scalars(v, path, out, budget);
                path.pop();
            }
        }
        Value::Array(_) | Value::Null => {}
        scalar => out.push((path.clone(), scalar)),
    }
}

/// The value at `path` (object keys) in `value`.
fn at<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, k| v.get(k))
}

/// Arms `route`'s gate on a session's stream (a GET, a resumption among them) when its chain
/// hooks answers: a response there cannot be checked (a resumed answer's request is not
/// known), so each is refused; notifications and a server's requests pass.
pub(crate) fn arm_stream(client: &mut impl Client, ctx: &RequestCtx, route: &Route) {
    if route.chain.is_empty() {
        return;
    }
    let cx = Context {
        principal: ctx.principal.clone(),
        session: None,
        trace_id: ctx.trace_id.clone(),
    };
    let interceptors = ctx.state.interceptors.clone();
    let gate = AnswerGate::new(interceptors, route.chain.clone(), ctx, None, cx);
    client.gate(Box::new(gate));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mirrored_header_follows_the_argument_a_mutator_changed() {
        let mut head = pingora::http::RequestHeader::build("POST", b"/mcp", None).unwrap();
        head.insert_header("Mcp-Param-Region", "eu").unwrap();
        head.insert_header("Mcp-Param-Days", "3").unwrap();
        head.insert_header("Mcp-Param-Gone", "x").unwrap();
        head.insert_header("Mcp-Param-Twice", "same").unwrap();
        let before = serde_json::json!({"region": "eu", "days": 3, "gone": "x",
            "a": "same", "nested": {"b": "same"}});
        let after = serde_json::json!({"region": "us", "days": 3,
            "a": "one", "nested": {"b": "other"}});
        remirror(&mut head, Some(&before), Some(&after));
        assert_eq!(head.headers["mcp-param-region"], "us");
        assert_eq!(head.headers["mcp-param-days"], "3");
        assert!(
            head.headers.get("mcp-param-gone").is_none(),
            "its argument is gone"
        );
        // two arguments spelt it and changed apart: which one it mirrors is not known
        assert_eq!(head.headers["mcp-param-twice"], "same");
    }
}
