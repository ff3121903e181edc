//! The era bridge, in one home: the gateway serving a client of one MCP era with backends of
//! the other ([eras.md](../../../docs/eras.md)).
//!
//! - `legacy_clients`: a legacy (2025-11-25 and earlier) client's session on 2026-07-28
//!   backends; the gateway keeps the session and sends each request on its own.
//! - `modern_clients`: 2026-07-28 clients on legacy (session) backends, their requests sent
//!   inside backend sessions the gateway opens and keeps.
//! - `config` and `advertise`: the `bridge` section of the config file (file structs, typed
//!   settings, validation). Leaves: `crate::config` imports them and they import only
//!   `config/problems.rs`.
//! - `errors`: the named constructors of the bridges' errors (their kinds, codes and statuses
//!   are rows of the error table, `crate::error`).
//! - `answer` (reading an upstream answer's messages) and `client` (writing to the client) are
//!   shared by both; `metrics`, both bridges' metric families.
//!
//! The pure translation between the eras is `mcp_wire::translate`; the proxy only dispatches
//! to the two entry points (`proxy/stateful/bridged.rs`, `proxy/bridged.rs`).

mod answer;
mod client;
mod errors;
pub mod legacy_clients;
pub mod metrics;
pub mod modern_clients;
mod state;

pub use client::{ListFilter, Served};
pub use state::Bridge;
