//! The one gateway-driven sender and the client side of what it sends: the request body read
//! whole within its bound (`relay.rs`, `collect.rs`), checked against the MCP headers
//! (`check.rs`), sent to a pool through the attempt engine (`send.rs`), its answer relayed as
//! it streams or filtered whole (`relay.rs`, `filtered.rs`), a 2026-07-28 request to a pool of
//! legacy backends handed to the reverse bridge (`bridged.rs`), a task's request to its pod or
//! under a stand-in id (`task.rs`, for `handlers/tasks/`), and every gateway error written
//! to the client in one place (`respond.rs`). Every handler calls down into it; it calls no
//! handler.

pub mod bridged;
pub mod cached;
pub mod check;
pub mod collect;
pub mod filtered;
pub mod gate;
pub mod holding;
pub mod intercept;
pub mod kept;
pub mod relay;
pub mod respond;
pub mod send;
pub mod task;
pub mod trace;
pub mod watch;
