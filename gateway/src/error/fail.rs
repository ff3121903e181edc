//! How a request the gateway drives itself (a stateful route, a buffered request, either era
//! bridge) ended when not with a complete answer: the one error type of those paths, answered
//! in one place (`proxy/respond.rs` for an error nothing was written for yet).

use super::GatewayError;

/// How a request the gateway drives itself ended, when not with a complete answer.
pub(crate) enum Fail {
    /// Answer the client with this error (nothing was written yet).
    Answer(GatewayError),
    /// Writing to the client (or a part of the answer already relayed) failed.
    Io(Box<pingora::Error>),
}

impl From<GatewayError> for Fail {
    fn from(e: GatewayError) -> Self {
        Fail::Answer(e)
    }
}

impl From<mcp_wire::InspectError> for Fail {
    fn from(e: mcp_wire::InspectError) -> Self {
        Fail::Answer(e.into())
    }
}

impl From<Box<pingora::Error>> for Fail {
    fn from(e: Box<pingora::Error>) -> Self {
        Fail::Io(e)
    }
}
