//! Every SSE stream the gateway holds or relays inside a session: the event log and the
//! gateway's event ids (`resume.rs`, `log.rs`), the answer pump (`answer.rs`), the session's
//! held standalone stream (`standalone.rs`, `held.rs`), and the Redis event mirror
//! (`redis.rs`).

mod answer;
pub(crate) mod held;
mod log;
pub mod redis;
mod resume;
mod standalone;

pub use answer::{AnswerOf, Events};
pub use held::Lease;
pub use log::{Bounds, LogReader, Read, StreamLog};
pub use resume::*;
pub use standalone::{is_stream, StreamOpened};
