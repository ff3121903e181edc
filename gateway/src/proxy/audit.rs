//! The proxy's side of the audit trail: when a `tools/call`, `prompts/get` or
//! `resources/read` ends (the `logging` phase, which the fast path and every gateway-driven
//! path reach once per client request), one record from what the context kept: route,
//! member, pool, backend, caller, hashed session, method and name, decision and rule, outcome
//! (the JSON-RPC code, `tool-error` for an `isError` result the gateway read, else the
//! outcome label and HTTP status), latency and trace id. Nothing here runs when audit is off
//! but one load and a branch.

use crate::audit::{Record, AUDITED_METHODS};
use crate::request::ctx::{Outcome, RequestCtx};
use mcp_wire::headers::{MCP_METHOD, MCP_NAME, MCP_SESSION_ID};
use pingora::prelude::*;
use std::time::SystemTime;

/// Records the ended request, when audit is on and it is a call.
pub(super) fn record(session: &Session, ctx: &RequestCtx, outcome: &str) {
    let audit = &ctx.state.audit;
    if !audit.on() {
        return;
    }
    let req = session.req_header();
    let header = |h: &http::HeaderMap, name: &str| -> Option<String> {
        h.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
    };
    // the classified method and name (the body's, or headers the body was checked against);
    // a request never classified (refused before) falls back to its headers
    let (method, name) = match ctx.mcp_call.as_deref() {
        Some((m, n)) => (Some(m.clone()), n.clone()),
        None => (
            header(&req.headers, MCP_METHOD),
            header(&req.headers, MCP_NAME),
        ),
    };
    let Some(method) = method.filter(|m| AUDITED_METHODS.contains(&m.as_str())) else {
        return;
    };
    let response = session.response_written();
    let status = response.map(|r| r.status.as_u16());
    // a caller the gateway did not let in made no call: what its headers claim is not recorded
    // (anyone could fill the trail, and its queue, with names of their choosing); the access
    // log and `mcpgw_requests_total` count it
    if ctx.mcp_call.is_none() && status == Some(401) {
        return;
    }
    let session_id = header(&req.headers, MCP_SESSION_ID)
        .or_else(|| response.and_then(|r| header(&r.headers, MCP_SESSION_ID)));
    let elapsed = ctx.start.elapsed();
    let mut rec = Record::new("call")
        .at(SystemTime::now()
            .checked_sub(elapsed)
            .unwrap_or_else(SystemTime::now))
        .caller_from(ctx)
        .session(session_id.as_deref())
        .method(&method)
        .outcome(outcome)
        .latency(elapsed);
    if let Some(name) = name.as_deref() {
        rec = rec.name(&without_secrets(name));
    }
    if let Some(status) = status {
        rec = rec.status(status);
    }
    let code = match ctx.outcome {
        Outcome::Answered(kind) => Some(i64::from(kind.code())),
        _ => super::verdict::rpc_code(session),
    };
    if let Some(code) = code {
        rec = rec.outcome_code(code);
    }
    let noted = ctx.audit.as_deref();
    let member = noted.and_then(|n| n.member.clone()).or_else(|| {
        ctx.native
            .as_ref()?
            .rename
            .as_ref()
            .map(|r| r.member().to_owned())
    });
    if let Some(member) = member.as_deref() {
        rec = rec.member(member);
    }
    let pool = noted
        .and_then(|n| n.pool.clone())
        .or_else(|| super::telemetry::pool_of(ctx, Some(&method), name.as_deref()));
    if let Some(pool) = pool.as_deref() {
        rec = rec.pool(pool);
    }
    let backend = noted
        .and_then(|n| n.backend.clone())
        .or_else(|| ctx.backend.as_ref().map(|b| b.label.clone()));
    if let Some(backend) = backend.as_deref() {
        rec = rec.backend(backend);
    }
    if let Some(decision) = noted.and_then(|n| n.decision) {
        rec = rec.decision(decision);
    }
    if let Some(rule) = noted.and_then(|n| n.rule.as_deref()) {
        rec = rec.rule(rule);
    }
    if audit.bodies() {
        rec = bodies(rec, session, ctx);
    }
    audit.record(rec);
}

/// Largest body whose arguments or result a record carries (larger: its size only).
const MAX_BODY: usize = 64 * 1024;

/// `rec` with the call's arguments and result (`include-bodies`), redacted by the audit
/// paths: the request body where the gateway held it (read whole, or the fast path's whole
/// first chunk), the result where it wrote the answer whole.
fn bodies(rec: Record, session: &Session, ctx: &RequestCtx) -> Record {
    let read = session.body_bytes_read();
    let held = ctx.captured.as_deref();
    let prefix = ctx
        .body_prefix
        .as_deref()
        .filter(|b| read > 0 && b.len() == read);
    let request = held.and_then(|h| h.request.as_deref()).or(prefix);
    let response = held.and_then(|h| h.response.as_deref());
    let part = |body: Option<&[u8]>, outer: &str, inner: Option<&str>| {
        let body = body?;
        if body.len() > MAX_BODY {
            return Some(
                serde_json::json!({ "omitted": "larger than 65536 bytes", "bytes": body.len() }),
            );
        }
        let message = serde_json::from_slice::<serde_json::Value>(body).ok()?;
        let redacted = ctx.state.audit.redacted(message);
        let value = redacted.get(outer)?;
        Some(match inner {
            Some(key) => value.get(key)?.clone(),
            None => value.clone(),
        })
    };
    let rec = match part(request, "params", Some("arguments")) {
        Some(arguments) => rec.arguments(arguments),
        None => rec,
    };
    match part(response, "result", None) {
        Some(result) => rec.result(result),
        None => rec,
    }
}

/// A name as the trail keeps it: a resource URI without what may be a credential (the
/// userinfo of `scheme://user:password@host`, and the query's values, kept by key: `?token=`
/// stays `?token=…`); any other name as it is.
fn without_secrets(name: &str) -> std::borrow::Cow<'_, str> {
    let (head, query) = match name.split_once('?') {
        Some((head, query)) => (head, Some(query)),
        None => (name, None),
    };
    let userinfo = head.split_once("://").and_then(|(scheme, rest)| {
        let authority = rest.split('/').next().unwrap_or_default();
        let (_, host) = authority.rsplit_once('@')?;
        Some(format!("{scheme}://{host}{}", &rest[authority.len()..]))
    });
    if userinfo.is_none() && query.is_none() {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut out = userinfo.unwrap_or_else(|| head.to_owned());
    if let Some(query) = query {
        out.push('?');
        let keys: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) => format!("{key}=…"),
                None => pair.to_owned(),
            })
            .collect();
        out.push_str(&keys.join("&"));
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::without_secrets;

    #[test]
    fn a_uris_userinfo_and_query_values_are_never_recorded() {
        let cases = [
            (
                "postgres://u:pass@db/x?token=abc&mode=ro",
                "postgres://db/x?token=…&mode=…",
            ),
            ("file:///etc/hosts", "file:///etc/hosts"),
            (
                "https://api.example.com/v1?key=s3cr3t",
                "https://api.example.com/v1?key=…",
            ),
            ("search_issues", "search_issues"),
        ];
        for (name, kept) in cases {
            assert_eq!(without_secrets(name), kept, "{name}");
        }
    }
}
