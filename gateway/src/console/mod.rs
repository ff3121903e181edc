//! The operator's console ([console.md](../../../docs/console.md)): a page on the admin
//! listener (`/`, `/console`) that shows the gateway's live state, with its files embedded in
//! the binary (`assets.rs`), fed by one server-sent event stream per open page (`events.rs`,
//! frames built by `snapshot.rs`), and charted from a bounded ring of per-second samples the
//! sampler takes (`sampler.rs`, `samples.rs`, reading the registry through `counters.rs`).
//!
//! Read-only as served: the page's drain and undrain buttons call the admin API with the
//! admin token the operator types in (sent as `Authorization`, never as a cookie), behind the
//! same checks as any admin call (`admin_auth.rs`).

mod assets;
mod counters;
mod events;
mod sampler;
mod samples;
mod snapshot;

pub use events::MAX_STREAMS;
pub use sampler::Sampler;
pub use samples::Samples;
pub use snapshot::Sources;

use pingora::protocols::http::ServerSession;
use pingora::server::ShutdownWatch;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// The path of the event stream.
pub const EVENTS_PATH: &str = "/console/events";

/// The console of one admin listener.
pub struct Console {
    sources: Sources,
    slots: Arc<Semaphore>,
}

impl Console {
    /// A console showing `sources`.
    pub fn new(sources: Sources) -> Console {
        Console {
            sources,
            slots: Arc::new(Semaphore::new(MAX_STREAMS)),
        }
    }

    /// Whether `path` is the console's: the page, its files, its stream.
    pub fn serves(path: &str) -> bool {
        matches!(path, "/" | "/console") || path.starts_with("/console/")
    }

    /// The page or one of its files (404 for any other path under `/console/`).
    pub fn file(&self, path: &str) -> http::Response<Vec<u8>> {
        assets::answer(path)
    }

    /// Serves the event stream on `session` until the page goes away.
    pub async fn events(&self, session: &mut ServerSession, shutdown: &ShutdownWatch) {
        events::serve(session, &self.sources, &self.slots, shutdown).await;
    }
}
