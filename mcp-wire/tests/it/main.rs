//! The protocol crate's property tests, in one test binary (`it`): the body scanner, the header
//! decoder, SSE framing, the era translation and the sealer, fed arbitrary and mutated input.
//!
//! Run them: `cargo test -p mcp-wire`; one module: `cargo test -p mcp-wire --test it sse_properties::`.
#![forbid(unsafe_code)]
// Test code: clippy.toml frees `#[test]` functions to unwrap, expect and panic, and this frees
// the helpers they call (the workspace's lint table denies all three in the product code).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cacheable_properties;
mod generate;
mod properties;
mod scan_utf8;
mod seal_properties;
mod sse_properties;
mod translate_properties;
