//! The authorization decision, for the audit trail: which rule decided (its index on the
//! route and its text) and whether it allowed. A call's decision (`tools/call`,
//! `prompts/get`, `resources/read` on the route the client called) goes into the call's own
//! record, written when the request ends; any other decision (a list, a listen, a virtual
//! member's route) is an `authz` record of its own, now. Runs only when audit is on and the
//! route has rules; it reads the decision [`RouteGuard::decide`](crate::auth::RouteGuard)
//! made, never makes one.

use crate::audit::{Record, AUDITED_METHODS};
use crate::error::GatewayError;
use crate::request::ctx::RequestCtx;
use crate::routing::Route;

/// Notes or records the decision `decided` for `method` on `name` on `route`.
pub(super) fn decision(
    ctx: &mut RequestCtx,
    route: &Route,
    (method, name): (Option<&str>, Option<&str>),
    decided: Result<(), &GatewayError>,
) {
    if !ctx.state.audit.on() || !route.guard.has_rules() {
        return;
    }
    let verdict = if decided.is_ok() { "allow" } else { "deny" };
    let principal = ctx.principal.as_deref();
    let rule = match route.guard.deciding_rule(principal, method, name) {
        Some(i) => format!(
            "{} authz[{i}]: {}",
            route.label,
            route.guard.rule_text(i).unwrap_or_default()
        ),
        None if decided.is_err() => "no rule decides: the name cannot be checked".to_owned(),
        None => "no rule matches: allowed".to_owned(),
    };
    let call = method.is_some_and(|m| AUDITED_METHODS.contains(&m));
    if call && !route.member {
        if let Some(note) = ctx.audit_note() {
            note.decision = Some(verdict);
            note.rule = Some(rule);
        }
        return;
    }
    let mut record = Record::new("authz")
        .caller_from(ctx)
        .decision(verdict)
        .rule(&rule);
    if let Some(method) = method {
        record = record.method(method);
    }
    if let Some(name) = name {
        record = record.name(name);
    }
    if let Err(e) = decided {
        record = record.outcome_code(i64::from(e.kind.code()));
    }
    ctx.state.audit.record(record);
}
