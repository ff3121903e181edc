//! The gateway crate's integration tests, one module per concern, in one test binary (`it`): the
//! gateway library, with pingora, Redis and OpenTelemetry under it, is linked into one test
//! executable instead of one per file. (The end-to-end tests, which run the gateway binary, are
//! the `mcp-gateway-tests` crate's, in `tests/tests/it/`.)
//!
//! Run them: `cargo test -p mcp-gateway --test it`; one module: `... --test it helm::`.
//! A new test file: `gateway/tests/it/NAME.rs` with its `//!` header, and `mod NAME;` below.
#![forbid(unsafe_code)]
// Test code: clippy.toml frees `#[test]` functions to unwrap, expect and panic, and this frees
// the helpers they call (the workspace's lint table denies all three in the product code).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli;
mod config_properties;
mod deploy;
mod helm;
mod shape;
