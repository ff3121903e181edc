//! mcp-gateway: a session-terminating gateway for the Model Context Protocol (Streamable HTTP),
//! built on pingora.
// `missing_docs` and the clippy lints come from the workspace's lint table (root Cargo.toml),
// where `unsafe_code` is only `deny` for the binary's sake: this library forbids it outright.
#![forbid(unsafe_code)]

pub(crate) mod admin;
pub(crate) mod admin_auth;
pub(crate) mod admission;
pub mod audit;
pub(crate) mod auth;
pub(crate) mod bridge;
pub(crate) mod cache;
pub mod capture;
pub(crate) mod classify;
pub mod config;
pub(crate) mod console;
pub mod demo;
pub(crate) mod downstream;
pub(crate) mod error;
pub(crate) mod federation;
pub(crate) mod fetch;
pub(crate) mod forward;
pub(crate) mod handlers;
pub(crate) mod interceptors;
pub mod logging;
pub mod metrics;
pub(crate) mod pinning;
pub(crate) mod proxy;
pub mod quiet;
pub(crate) mod reload;
pub(crate) mod request;
pub(crate) mod routing;
pub(crate) mod sealer;
pub mod server;
pub(crate) mod session;
pub(crate) mod session_hash;
pub(crate) mod state;
pub(crate) mod stream;
pub(crate) mod sync;
pub(crate) mod tasks;
pub(crate) mod telemetry;
pub(crate) mod upstream;
pub(crate) mod virtual_servers;
