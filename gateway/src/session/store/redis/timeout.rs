//! How long one Redis round trip may take: every store operation, connection and Sentinel
//! query.

use std::time::Duration;

/// How long one store operation may take before the request gets -32006.
pub(super) const TIMEOUT: Duration = Duration::from_secs(1);
