//! The legacy clients' bridge's bounds: how many `input_required` rounds a call may take, how
//! long the client's answer is waited for, how long a `server/discover` result is reused.

use std::time::Duration;

/// Most `input_required` rounds one call may take (the TypeScript SDK's legacy shim allows 8
/// too); the next one is answered -32032 `bridge-rounds-exceeded`.
pub const MAX_ROUNDS: usize = 8;
/// How long the gateway waits for the client's answer to one server→client request
/// (human-paced: an elicitation waits for a person; the TypeScript shim waits 600 s too); then
/// -32034 `input-not-given`.
pub const INPUT_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a backend's `server/discover` result is reused when it says `ttlMs: 0` or
/// nothing (the TypeScript SDK's default): the capabilities of a running pod do not change.
pub const DISCOVER_REUSE: Duration = Duration::from_secs(30);
/// The longest a backend's `server/discover` result is reused, whatever its `ttlMs` says (a
/// pod's capabilities may change with its next rollout; the cache must not hold it for days).
pub const DISCOVER_TTL_MAX: Duration = Duration::from_secs(300);
