//! Interceptors (SEP-2624, draft): interceptor servers, MCP servers that offer
//! `interceptors/list` and `interceptor/invoke`, run as a chain on a route's requests and
//! answers. Validators allow or deny, mutators return a changed payload; each hooks events
//! (`tools/call`, `resources/read`, lists, ...) in a `request` or `response` phase.
//!
//! What the paths see (`forward/`, the handlers, virtual servers): a route's [`Chain`], whether
//! it [`Interceptors::hooks`] an event in a phase, and [`Interceptors::run`], which runs the
//! chain on a payload and says what became of it. The payload handed in is the request's
//! `params` (request phase) or the answer's `result` (response phase); how it is put on the
//! wire to an interceptor server, the servers' lists and their freshness, the chain's order,
//! timeouts, `failOpen` and `audit` mode are this module's.

// The engine behind this interface reads what is still unused here (its next commits).
#![allow(dead_code)]

use crate::error::GatewayError;
use serde_json::Value;

/// Which side of an exchange a chain runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// The client's request, before it is sent to a backend.
    Request,
    /// The backend's answer, before it reaches the client.
    Response,
}

impl Phase {
    /// The draft's name of the phase.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Request => "request",
            Phase::Response => "response",
        }
    }
}

/// The chain a route runs (`routes[].interceptors`): indices of the interceptor servers it
/// names, in config order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chain {
    /// Indices into the configured interceptor servers.
    pub servers: Vec<usize>,
}

impl Chain {
    /// Whether the route runs no interceptor.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }
}

/// Who and what an invocation is about (the draft's `context`), owned: a response-phase chain
/// runs after the request's handler has moved on.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The caller, if the route knows one.
    pub principal: Option<std::sync::Arc<crate::auth::Principal>>,
    /// The gateway session, hashed as logs show it.
    pub session: Option<String>,
    /// The request's trace id.
    pub trace_id: String,
}

/// What a chain made of a payload it let through.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Unchanged: send the original bytes.
    Pass,
    /// A mutator changed it: send this in its place.
    Changed(Value),
}

/// The interceptor servers of one config snapshot and what they said they offer.
#[derive(Debug, Default)]
pub struct Interceptors {}

impl Interceptors {
    /// The interceptor servers of `config`.
    pub fn new(_config: &crate::config::Config) -> Interceptors {
        Interceptors {}
    }

    /// Whether `chain` may hook `event` in `phase` (before a server's list is known: yes).
    pub fn hooks(&self, chain: &Chain, _event: &str, _phase: Phase) -> bool {
        !chain.is_empty()
    }

    /// Runs `chain` on `payload` of `event` in `phase`. `Err`: a denial, or a failure of an
    /// interceptor that is not fail-open, as the JSON-RPC error to answer.
    pub async fn run(
        &self,
        _chain: &Chain,
        _event: &str,
        _phase: Phase,
        _payload: &Value,
        _cx: &Context,
    ) -> Result<Verdict, GatewayError> {
        Ok(Verdict::Pass)
    }
}
