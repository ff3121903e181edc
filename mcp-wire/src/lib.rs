//! MCP and JSON-RPC on the wire, both eras, and nothing else: header names (`headers`), the
//! two protocol eras (`era`), cheap inspection of request bodies, never re-serialized
//! (`inspect`), the incremental scan of an answer (`verdict`), SSE framing (`sse`), the era
//! probe's messages and the reading of their answers (`discover`), the pure translation between
//! the eras (`translate`), the messages a gateway writes itself with which methods are safe
//! to repeat (`messages`), the `Mcp-Param-*` headers a tool's schema asks for
//! (`param_headers`), and the one sealer of the opaque tokens a gateway hands out, a key per
//! purpose (`seal`).
//!
//! Pure by construction: no pingora, no tokio, no clock (its `Cargo.toml` lists what it may
//! use). Nothing here knows about the gateway; the gateway crate uses it.
// `missing_docs` and the clippy lints come from the workspace's lint table (root Cargo.toml),
// where `unsafe_code` is only `deny` for the binary's sake: this library forbids it outright.
#![forbid(unsafe_code)]

pub mod cacheable;
pub mod discover;
pub mod era;
pub mod headers;
pub mod inspect;
pub mod messages;
pub mod param_headers;
pub mod rewrite;
mod scan;
pub mod seal;
pub mod sse;
pub mod tasks;
pub mod translate;
pub mod verdict;

pub use era::{BackendEra, Era};
pub use inspect::{inspect_body, BodyInfo, InspectError, RequestId};

/// MCP methods known to the gateway: the only method values that become metric labels.
pub const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
    "tasks/update",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
];

/// How many method labels there are: the known methods, `none` and `other`.
pub const METHOD_LABELS: usize = KNOWN_METHODS.len() + 2;

/// The position of a label [`method_label`] gave: a known method's index, then `none`, then
/// `other` (anything else too).
pub fn method_index(label: &str) -> usize {
    // the labels are the list's own strings: their addresses find them without comparing text
    let same = |k: &&str| k.as_ptr() == label.as_ptr() && k.len() == label.len();
    KNOWN_METHODS
        .iter()
        .position(same)
        .or_else(|| KNOWN_METHODS.iter().position(|k| *k == label))
        .unwrap_or(if label == "none" {
            KNOWN_METHODS.len()
        } else {
            KNOWN_METHODS.len() + 1
        })
}

/// A bounded label for a method: the method itself when known, else `other` (`none` if absent).
pub fn method_label(method: Option<&str>) -> &'static str {
    match method {
        None => "none",
        Some(m) => KNOWN_METHODS
            .iter()
            .find(|k| **k == m)
            .copied()
            .unwrap_or("other"),
    }
}
