//! A session id as records and spans carry it (capture files, `mcp.session.id`): a leaf, so
//! `capture/` and `telemetry/` share it without importing each other.

use sha2::{Digest, Sha256};

/// The first 16 hex digits of the id's SHA-256, so records of one session can be grouped
/// without holding an id that could be replayed.
pub fn hash_session(id: &str) -> String {
    let digest = Sha256::digest(id.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}
