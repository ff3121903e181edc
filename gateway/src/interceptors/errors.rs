//! The errors a chain answers with (their kinds are rows of `error/kind.rs` and
//! docs/errors.md): each names the interceptor and carries what it said in `data`.

use super::chain::Stop;
use super::client::Failure;
use super::types::Phase;
use crate::error::{ErrorKind, GatewayError};
use serde_json::{json, Value};

/// The JSON-RPC error that answers a stopped `event` in `phase`.
pub fn answer(stop: Stop, event: &str, phase: Phase) -> GatewayError {
    let side = match phase {
        Phase::Request => "request",
        Phase::Response => "answer",
    };
    let error = match stop {
        Stop::Denied(denials) => denied(&denials, side),
        Stop::Failed {
            interceptor,
            failure: Failure::Timeout,
        } => GatewayError::new(
            ErrorKind::InterceptorTimeout,
            format!("Interceptor `{interceptor}` did not answer in time, and the {side} is not let through without it"),
        )
        .with("interceptor", interceptor)
        .with("reason", "timeout"),
        Stop::Failed {
            interceptor,
            failure,
        } => GatewayError::new(
            ErrorKind::InterceptorFailed,
            format!("Interceptor `{interceptor}` failed ({}), and the {side} is not let through without it", failure.public_detail()),
        )
        .with("interceptor", interceptor)
        .with("reason", failure.reason())
        .with("detail", failure.public_detail()),
        Stop::InvalidMutation {
            interceptor,
            detail,
        } => GatewayError::new(
            ErrorKind::InterceptorInvalidMutation,
            format!("Interceptor `{interceptor}` changed the {side} into one that cannot be sent: {detail}"),
        )
        .with("interceptor", interceptor)
        .with("reason", "invalid-mutation")
        .with("detail", detail),
        Stop::TooMany(n) => GatewayError::new(
            ErrorKind::InterceptorLimit,
            format!("{n} interceptors hook this {side}, more than one call may run"),
        )
        .with("reason", "too-many-interceptors")
        .with("limit", super::chain::MAX_PER_CALL),
        Stop::TooLarge { interceptor, limit } => GatewayError::new(
            ErrorKind::InterceptorLimit,
            format!("The {side} is larger than interceptor `{interceptor}` takes ({limit} bytes), and it is not let through unchecked"),
        )
        .with("interceptor", interceptor)
        .with("reason", "payload-too-large")
        .with("limit", limit),
    };
    error.with("event", event).with("phase", phase.as_str())
}

/// Validators' denials: the first one's first message in the message, every message (each
/// with its interceptor) in `data.validationErrors`, as the draft's example shapes them.
fn denied(denials: &[(String, Vec<Value>)], side: &str) -> GatewayError {
    let mut errors = Vec::new();
    for (interceptor, messages) in denials {
        if messages.is_empty() {
            errors.push(
                json!({"interceptor": interceptor, "severity": "error", "message": "denied"}),
            );
        }
        for m in messages {
            let mut entry = json!({
                "interceptor": interceptor,
                "severity": m.get("severity").cloned().unwrap_or(json!("error")),
                "message": m.get("message").cloned().unwrap_or(json!("denied")),
            });
            if let (Some(path), Some(o)) = (m.get("path"), entry.as_object_mut()) {
                o.insert("path".into(), path.clone());
            }
            errors.push(entry);
        }
    }
    let (first, said) = match denials.first() {
        Some((name, messages)) => (
            name.as_str(),
            (messages.first())
                .and_then(|m| m.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("denied"),
        ),
        None => ("?", "denied"),
    };
    let said: String = said.chars().take(200).collect();
    GatewayError::new(
        ErrorKind::InterceptorDenied,
        format!("The {side} was denied by interceptor `{first}`: {said}"),
    )
    .with("interceptor", first)
    .with("validationErrors", Value::Array(errors))
}
