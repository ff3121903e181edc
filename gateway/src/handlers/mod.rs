//! The gateway-driven handlers of a plain route's request, each calling down into `forward/`
//! (the sender), `session/` and the bridges: `stateless.rs` (a body the gateway reads first:
//! routed by its method and name, under a deadline, or on a route without sessions),
//! `stateful/` (HTTP glue around the session manager). A 2026-07-28 request to legacy backends
//! goes through the reverse bridge from `forward/bridged.rs`, part of the one sender. No handler
//! calls another: `proxy/` dispatches a client's request here by its plan, and a virtual
//! server's member request comes here the same way (`virtual_servers/fanout.rs`).

pub mod stateful;
pub mod stateless;
pub mod tasks;
