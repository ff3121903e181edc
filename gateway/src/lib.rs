//! mcp-gateway: a session-terminating gateway for the Model Context Protocol (Streamable HTTP),
//! built on pingora.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod admin;
pub mod admin_auth;
pub mod admission;
pub mod auth;
pub mod capture;
pub mod config;
pub mod demo;
pub mod error;
pub mod fetch;
pub mod listener;
pub mod logging;
pub mod mcp;
pub mod metrics;
pub mod proxy;
pub mod reload;
pub mod routing;
pub mod server;
pub mod session;
pub mod session_hash;
pub mod state;
pub mod stream;
pub mod sync;
pub mod telemetry;
pub mod upstream;
