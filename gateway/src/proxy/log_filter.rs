//! Which of pingora's own "Fail to proxy" records (written through the `ProxyHttp` hooks
//! `suppress_error_log` and `suppress_proxy_warn_log`) stay out of the ERROR and WARN lines:
//! the ones for a condition the gateway handled, each logged at DEBUG instead and counted in
//! `mcpgw_log_records_demoted_total` (`quiet.rs`). A call lost with its backend (answered
//! -32013 or not answerable at all) and an internal error stay at ERROR.

use crate::error::ErrorKind;
use crate::request::ctx::{Outcome, RequestCtx};
use pingora::prelude::*;

/// Whether pingora's final "Fail to proxy" record for this request stays out of the ERROR
/// lines: an error the gateway stashed and answered itself, a client that went away, or an
/// upstream failure `fail_to_proxy` answered with a documented error before the call could
/// have run or within its policy (every backend refused: -32011, no backend of the era:
/// -32005, the route's deadline: -32012; counted by kind in `mcpgw_requests_total`). A call
/// lost with its backend (-32013: its outcome is unknown) and an internal error stay at ERROR.
pub fn error_is_handled(ctx: &RequestCtx, error: &Error) -> bool {
    if error.etype() == &crate::forward::respond::ANSWERED
        || error.esource() == &pingora::ErrorSource::Downstream
    {
        return true;
    }
    let answered = matches!(
        ctx.outcome,
        Outcome::Answered(kind) if !matches!(kind, ErrorKind::Internal | ErrorKind::BackendLost)
    );
    if answered {
        crate::quiet::demoted("answered");
        tracing::debug!(request_id = ctx.trace_id.as_str(), error = %error, "answered a failed proxy attempt");
    }
    answered
}

/// Whether pingora's retry warning stays out of the WARN lines: a connection to a backend
/// that failed before the request was sent, which the gateway marks, counts
/// (`mcpgw_upstream_connect_failures_total`) and retries on another backend.
pub fn retry_is_handled(ctx: &RequestCtx, error: &Error) -> bool {
    let connect = matches!(
        error.etype(),
        ErrorType::ConnectTimedout
            | ErrorType::ConnectRefused
            | ErrorType::ConnectNoRoute
            | ErrorType::ConnectError
    );
    if connect {
        crate::quiet::demoted("retried");
        tracing::debug!(request_id = ctx.trace_id.as_str(), error = %error, "connect failed; retrying on another backend");
    }
    connect
}
