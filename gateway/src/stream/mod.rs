//! Every SSE stream the gateway holds or relays inside a session:
//! - `resume.rs` + `log.rs`: the gateway's event ids, frames, and each stream's bounded,
//!   replayable log; `budget.rs`: the bound on their sum (`max-buffered-bytes`);
//! - `ingest.rs`: the one loop that reads a backend stream into its log;
//! - `answer.rs`: the answer pump (a POST's SSE answer read whether or not its client is
//!   there, resumed upstream after the backend's own id) and `Last-Event-ID` replay;
//! - `standalone.rs` + `held.rs`: the session's standalone stream, held by the gateway and
//!   handed to client GETs;
//! - `remote.rs`: a stream another replica writes, replayed from the shared store (every
//!   stream's events are written through to it when sessions are shared: `Resume`);
//! - `owner.rs`: the stream lease (one replica holds a session's stream), `shared.rs`: the
//!   held stream read live from another replica through the shared store.
//!
//! [`Streams`] reaches a session only through [`SessionLink`] (forward, send on the binding,
//! cancel, mark a lost connection, record use, the stream lease) and what the store keeps of
//! streams only through the [`StreamStore`] it is handed; the session manager tells it what streams must
//! know (a session ended, moved, a new config) through [`SessionObserver`].

mod answer;
mod budget;
mod held;
mod ingest;
mod link;
mod log;
pub mod metrics;
mod owner;
mod remote;
mod resume;
mod shared;
mod standalone;
mod streams;
mod upstream_get;

pub use answer::{AnswerOf, Events};
pub use held::Lease;
pub use link::SessionLink;
pub use log::{Bounds, LogReader, Read, StreamLog};
pub use metrics::StreamMetrics;
pub use resume::{
    event_id, message_event, parse_event_id, primes, priming, without_backend_ids, Frame, Refusal,
    Resume, KEEP_ALIVE,
};
pub use shared::SharedReader;
pub use standalone::StreamOpened;
pub use streams::Streams;
pub use upstream_get::is_stream;
