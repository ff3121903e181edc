//! Everything the gateway keeps about one session (its record, binding and settings), why a
//! session id no longer works, what a lookup finds, and the session ids and times records
//! carry.

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
