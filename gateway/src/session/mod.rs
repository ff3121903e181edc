//! Gateway-owned MCP sessions for legacy (2025-era) servers.
//!
//! - [`SessionManager`] owns the whole lifecycle: create from an `initialize` answer, look up
//!   (with the caller check), forward within a session with transparent recovery, record
//!   settings, end, expire, count. The proxy asks it and never touches the store.
//! - [`SessionStore`] is where records live (memory now, shared later): fallible async
//!   methods, expiry by time-to-live inside the store, counts kept in the store.
//! - `reinit` keeps only the replay of a client's `initialize` on a new backend.
//! - `evacuate` moves the sessions of a backend known dead in the background, before their
//!   next call.

mod binding;
mod bridged;
mod evacuate;
mod expiry;
mod manager;
#[cfg(test)]
mod manager_tests;
pub mod metrics;
mod observer;
mod open;
mod recover;
mod reinit;
pub mod store;

pub use bridged::BridgedOpening;
pub use evacuate::EvacuationService;
pub use expiry::{ExpiryService, SweepSource};
pub use manager::{Caller, Forwarded, Outgoing, SessionManager};
pub use metrics::SessionMetrics;
pub use observer::SessionObserver;
pub use open::{Opened, Opening};
pub use store::{MemoryStore, SessionStore};

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::sync::Arc;

/// Where a session lives right now. `generation` fences concurrent re-bindings: a binding is
/// replaced only by someone who read the current generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// The backend holding the session.
    pub backend: SocketAddr,
    /// The backend's own `Mcp-Session-Id`.
    pub backend_session: Arc<str>,
    /// Increments with every re-binding.
    pub generation: u64,
    /// Set when the binding is known bad (connection lost mid-call): the next request
    /// re-initializes first.
    pub stale: bool,
}

/// Session-scoped settings the client set, replayed after re-initialization. Bounded: a
/// subscription is refused before it goes out when the session holds
/// `sessions.max-subscriptions` URIs already or its URI is over
/// `sessions.max-subscription-uri-bytes` (`proxy/stateful/subscriptions.rs`), and
/// [`Settings::apply`] keeps the count bound when concurrent subscribes pass that check together.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// The `params` of the last successful `logging/setLevel`, as JSON text.
    pub log_level: Option<Arc<str>>,
    /// URIs of active `resources/subscribe`s.
    pub subscriptions: Vec<Arc<str>>,
}

/// A change of session-scoped settings, applied by the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingChange {
    /// A successful `logging/setLevel` with these params (JSON text).
    LogLevel(Arc<str>),
    /// A successful `resources/subscribe` of a URI, kept unless the session holds this many
    /// other URIs already.
    Subscribe(Arc<str>, usize),
    /// A successful `resources/unsubscribe` of a URI.
    Unsubscribe(Arc<str>),
}

impl Settings {
    /// Applies one change.
    pub fn apply(&mut self, change: SettingChange) {
        match change {
            SettingChange::LogLevel(params) => self.log_level = Some(params),
            SettingChange::Subscribe(uri, max) => {
                if !self.subscriptions.contains(&uri) && self.subscriptions.len() < max {
                    self.subscriptions.push(uri);
                }
            }
            SettingChange::Unsubscribe(uri) => self.subscriptions.retain(|u| *u != uri),
        }
    }

    /// Whether a subscription to `uri` would be a new one past `max` URIs.
    pub fn subscription_full(&self, uri: &str, max: usize) -> bool {
        self.subscriptions.len() >= max && !self.subscriptions.iter().any(|u| &**u == uri)
    }
}

/// Everything the gateway keeps about one session: serializable, so a shared store can hold
/// it and another gateway replica can serve the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The gateway's session id (UUID v4), the only id the client sees.
    pub id: Arc<str>,
    /// Pool name.
    pub pool: Arc<str>,
    /// The client identity that opened it, for per-client session counts (empty when no
    /// limit needs one).
    pub client: Arc<str>,
    /// The authenticated principal the session is bound to; `None` without authentication.
    /// Another principal presenting the id gets exactly the answer of an unknown id.
    #[serde(default)]
    pub principal: Option<Arc<str>>,
    /// Upstream path the session was initialized on.
    pub path: Arc<str>,
    /// The client's `initialize` params, verbatim JSON.
    pub init_params: Arc<str>,
    /// The protocol version the first backend negotiated.
    pub protocol_version: Arc<str>,
    /// Current backend binding.
    pub binding: Binding,
    /// Settings to replay.
    pub settings: Settings,
    /// Wall-clock milliseconds of the last use (the store slides the time-to-live from it).
    pub last_use_ms: u64,
}

/// Why a session id no longer works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GoneReason {
    /// Idle past the timeout.
    Expired,
    /// The client sent DELETE.
    Deleted,
    /// No backend could take it over with the same protocol version.
    ReinitFailed,
}

impl GoneReason {
    /// Label for `data.reason` and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            GoneReason::Expired => "expired",
            GoneReason::Deleted => "deleted",
            GoneReason::ReinitFailed => "reinit-failed",
        }
    }
}

/// What a lookup found.
// Returned by value once per request; boxing the live record would add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// A live session.
    Live(SessionRecord),
    /// A session that existed and ended (its tombstone is still kept).
    Gone(GoneReason),
    /// Never seen (or forgotten long ago).
    Unknown,
}

impl Lookup {
    /// The live record, or the client's answer: 404 -32015 with the reason the session ended
    /// (`unknown` for one never seen). The one mapping from a lookup to an error.
    pub fn live(self) -> Result<SessionRecord, crate::error::GatewayError> {
        match self {
            Lookup::Live(record) => Ok(record),
            Lookup::Gone(reason) => Err(crate::error::GatewayError::session_not_found(
                reason.as_str(),
            )),
            Lookup::Unknown => Err(crate::error::GatewayError::session_not_found("unknown")),
        }
    }
}

/// A new gateway session id: UUID v4 (122 random bits).
pub fn new_session_id() -> Arc<str> {
    uuid::Uuid::new_v4().to_string().into()
}

/// A shortened session id for logs (never the whole id).
pub fn short(id: &str) -> &str {
    &id[..id.len().min(8)]
}

/// Wall-clock milliseconds: session times are comparable across gateway replicas.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Whether a backend's answer means "I do not know this session", by the pool's rules.
pub fn is_not_found(
    rules: &[crate::config::NotFoundRule],
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
) -> bool {
    let error = mcp_wire::sse::response(content_type, body).and_then(|v| v.get("error").cloned());
    let code = error.as_ref().and_then(|e| e.get("code")?.as_i64());
    let message = error
        .as_ref()
        .and_then(|e| e.get("message")?.as_str().map(str::to_lowercase));
    rules.iter().any(|r| {
        r.status == status
            && r.code.is_none_or(|c| code == Some(c))
            && r.message_contains
                .as_ref()
                .is_none_or(|m| message.as_ref().is_some_and(|msg| msg.contains(m.as_str())))
    })
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::default_not_found;

    #[test]
    fn the_real_servers_session_not_found_answers_are_recognized() {
        let rules = default_not_found();
        let json = Some("application/json");
        // Python SDK
        assert!(is_not_found(&rules, 404, json, br#"{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Session not found"}}"#));
        // TypeScript SDK
        assert!(is_not_found(
            &rules,
            404,
            json,
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}"#
        ));
        // server-everything
        assert!(is_not_found(&rules, 400, json, br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}"#));
        // other 400s are the client's problem, not a lost session
        assert!(!is_not_found(
            &rules,
            400,
            json,
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params"}}"#
        ));
        assert!(!is_not_found(
            &rules,
            400,
            json,
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"Tool failed"}}"#
        ));
        assert!(!is_not_found(&rules, 200, json, b"{}"));
    }
}
