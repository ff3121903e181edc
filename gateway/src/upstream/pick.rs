//! How the attempt engine (`attempt.rs`) chooses the next backend of a request: the pool's
//! balancing within `retries`, among the backends of an era or those a bridge accepts, or by
//! session counts for a new or moving session.

use super::Backend;
use mcp_wire::Era;
use std::net::SocketAddr;
use std::sync::Arc;

/// How the next backend is chosen.
pub enum Pick<'a> {
    /// By the pool's balancing algorithm, at most `retries` more after the first attempt.
    Request,
    /// By the pool's balancing algorithm among the backends that serve requests of this era
    /// (or whose era is not known yet), at most `retries` more after the first attempt.
    Serving(Era),
    /// For a new session: the fewest sessions (counts from the session store) among the
    /// backends that serve legacy sessions, at most `retries` more after the first attempt.
    Session {
        /// Sessions per backend.
        counts: &'a [(SocketAddr, usize)],
    },
    /// For a session moving off its backend: every other backend that serves legacy sessions
    /// once, fewest sessions first, then `last_resort` (the backend it leaves, which may be the only one).
    Move {
        /// Sessions per backend.
        counts: &'a [(SocketAddr, usize)],
        /// Tried after every other backend.
        last_resort: Option<Arc<Backend>>,
    },
    /// By the pool's balancing algorithm among the backends this accepts (the era bridge's:
    /// those that serve bridged requests), at most `retries` more after the first attempt;
    /// none left is -32011.
    Among(&'a (dyn Fn(&Backend) -> bool + Sync)),
}

impl Pick<'_> {
    /// The pick for a sessionless request of `era`: a 2026-07-28 request only to backends that
    /// serve it; a legacy-era one (no session: a stateless route) to any backend, as before
    /// eras were known.
    pub fn sessionless(era: Era) -> Pick<'static> {
        match era {
            Era::Stateless => Pick::Serving(Era::Stateless),
            Era::Legacy => Pick::Request,
        }
    }

    /// The protocol era the picked backend must serve (`None`: any).
    pub fn era(&self) -> Option<Era> {
        match self {
            Pick::Request | Pick::Among(_) => None,
            Pick::Serving(era) => Some(*era),
            Pick::Session { .. } | Pick::Move { .. } => Some(Era::Legacy),
        }
    }
}
