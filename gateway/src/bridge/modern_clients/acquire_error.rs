//! Why no pooled session could be had (`AcquireError`): the backend unreachable, an answer
//! for the client, or no legacy session server.

use crate::error::GatewayError;

/// Why no pooled session could be had.
pub(crate) enum AcquireError {
    /// The backend refused the connection (marked failed): try another.
    Unreachable,
    /// Answer the client with this.
    Answer(GatewayError),
    /// The backend answered `initialize` without a session: no legacy session server (the
    /// caller passes the request through, `serve::Pooled::NoSession`).
    NoSession,
}
