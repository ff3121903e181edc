//! The operator's console ([console.md](../../../docs/console.md)): a page on the admin
//! listener (`/`, `/console`) that shows the gateway's live state, with its files embedded in
//! the binary (`assets.rs`), fed by one server-sent event stream per open page (`events.rs`,
//! frames built by `snapshot.rs`), and charted from a bounded ring of per-second samples the
//! sampler takes (`sampler.rs`, `samples.rs`, reading the registry through `counters.rs`).
//!
//! The page and its files hold no data. With `admin-token` set, the stream needs it: the page
//! asks the operator for the token, mints a one-use ticket with it (`tickets.rs`,
//! `POST /admin/console/ticket`) and opens the stream with the ticket; its drain and undrain
//! buttons call the admin API with the token (sent as `Authorization`, never as a cookie),
//! behind the same checks as any admin call (`admin_auth.rs`).

mod assets;
mod counters;
mod events;
mod sampler;
mod samples;
mod snapshot;
mod tickets;

pub use events::MAX_STREAMS;
pub use sampler::Sampler;
pub use samples::Samples;
pub use snapshot::Sources;
pub use tickets::TICKET_TTL;

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
    tickets: tickets::Tickets,
}

impl Console {
    /// A console showing `sources`.
    pub fn new(sources: Sources) -> Console {
        Console {
            sources,
            slots: Arc::new(Semaphore::new(MAX_STREAMS)),
            tickets: tickets::Tickets::default(),
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

    /// A new ticket for one event stream, good for [`TICKET_TTL`].
    pub fn ticket(&self) -> String {
        self.tickets.mint()
    }

    /// Whether `ticket` opens an event stream (it is used up either way).
    pub fn redeem(&self, ticket: &str) -> bool {
        self.tickets.redeem(ticket)
    }

    /// The JSON-RPC error `e` as an answer, with the console's headers.
    pub fn error(e: &crate::error::GatewayError) -> http::Response<Vec<u8>> {
        assets::error(e)
    }

    /// Serves the event stream on `session` until the page goes away.
    pub async fn events(&self, session: &mut ServerSession, shutdown: &ShutdownWatch) {
        events::serve(session, &self.sources, &self.slots, shutdown).await;
    }
}
