//! What the audit trail records of each interceptor verdict (the `interceptor` event,
//! docs/governance.md): the interceptor (`rule`: `SERVER/NAME`), the event (`method`) and the
//! phase, the verdict (`outcome`, and `decision` for a validator's pass or deny), its time, its
//! messages or failure (`detail`), the caller, the hashed session and the trace id. No payload:
//! it may hold what the interceptors are there to keep out of records.

use super::client::Failure;
use super::types::{Context, Phase};
use crate::audit::{Audit, Record};
use serde_json::{json, Value};
use std::time::Duration;

/// What one interceptor said.
pub struct Said<'a> {
    /// `SERVER/NAME` (or the server's name when its list could not be had).
    pub interceptor: &'a str,
    /// The verdict, as the metric counts it.
    pub result: &'a str,
    /// The invocation's time.
    pub took: Duration,
    /// Its messages, or its failure.
    pub detail: &'a Value,
}

/// One interceptor's verdict on `event` in `phase`.
pub fn verdict(audit: &Audit, said: Said<'_>, event: &str, phase: Phase, cx: &Context) {
    let Said {
        interceptor,
        result,
        took,
        detail,
    } = said;
    if !audit.on() {
        return;
    }
    let mut rec = Record::new("interceptor")
        .method(event)
        .rule(interceptor)
        .outcome(result)
        .latency(took)
        .principal(cx.principal.as_deref())
        .session_hashed(cx.session.as_deref())
        .trace_id(&cx.trace_id)
        .detail(json!({"phase": phase.as_str(), "verdict": detail}));
    match result {
        "pass" => rec = rec.decision("allow"),
        "deny" => rec = rec.decision("deny"),
        _ => {}
    }
    audit.record(rec);
}

/// A server whose list could not be had, so its chain stopped.
pub fn unlisted(
    audit: &Audit,
    server: &str,
    event: &str,
    phase: Phase,
    failure: &Failure,
    cx: &Context,
) {
    let detail = json!({"reason": failure.reason(), "detail": failure.detail()});
    let said = Said {
        interceptor: server,
        result: "unlisted",
        took: Duration::ZERO,
        detail: &detail,
    };
    verdict(audit, said, event, phase, cx);
}
