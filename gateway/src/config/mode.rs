//! `mode`: how a route, or a virtual server's member, treats MCP sessions.

/// How a route treats MCP sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// 2026-07-28 servers: per-request balancing, bodies untouched.
    Stateless,
    /// 2025-era servers: gateway-owned sessions pinned to a backend.
    Stateful,
    /// Chosen per request by protocol era.
    Auto,
}
