//! What the audit trail records of each interceptor verdict: one function holds the fields
//! (the interceptor, the event and phase, the verdict, its time and details, the caller, the
//! session, the trace), so that writing them to the audit trail is one call.

use super::client::Failure;
use super::{Context, Phase};
use serde_json::Value;
use std::time::Duration;

/// One interceptor's verdict (`result` as the metric counts it).
pub fn verdict(
    interceptor: &str,
    event: &str,
    phase: Phase,
    result: &str,
    took: Duration,
    detail: &Value,
    cx: &Context,
) {
    tracing::debug!(
        target: "mcpgw::interceptors",
        interceptor,
        event,
        phase = phase.as_str(),
        result,
        latency_ms = took.as_millis() as u64,
        detail = %detail,
        principal = cx.principal.as_ref().map(|p| &*p.id).unwrap_or(""),
        session = cx.session.as_deref().unwrap_or(""),
        trace_id = %cx.trace_id,
        "interceptor verdict"
    );
}

/// A server whose list could not be had, so its chain stopped.
pub fn unlisted(server: &str, event: &str, phase: Phase, failure: &Failure, cx: &Context) {
    let detail = serde_json::json!({"reason": failure.reason(), "detail": failure.detail()});
    verdict(
        server,
        event,
        phase,
        "unlisted",
        Duration::ZERO,
        &detail,
        cx,
    );
}
