//! The types the paths hand the chain and get back (a leaf: the module's files read them
//! without importing `mod.rs`, which imports them): the phase, a route's chain, the context of
//! an invocation, the verdict.

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
