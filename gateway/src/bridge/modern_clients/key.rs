//! What a pooled backend session is keyed by (`Key`): the backend, the upstream path, the
//! principal and the digest of the `initialize`.

use std::net::SocketAddr;
use std::sync::Arc;

/// What a pooled backend session is keyed by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    /// The backend.
    pub(crate) backend: SocketAddr,
    /// The upstream path (one MCP endpoint of the backend).
    pub(crate) path: Arc<str>,
    /// The authenticated principal, when the route has `auth`.
    pub(crate) principal: Option<Arc<str>>,
    /// SHA-256 of the `initialize` params.
    pub(crate) digest: [u8; 32],
}
