//! One backend session the gateway keeps (`Entry`): its key, backend and session, the
//! backend's `InitializeResult`, its log level, the calls its GET stream's requests go to, and
//! how it is used (in flight, last use, dropped from the table).

use super::key::Key;
use crate::auth::Caller;
use crate::sync::lock;
use crate::upstream::own::BackendSession;
use crate::upstream::{Backend, Pool};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One backend session the gateway keeps.
pub(crate) struct Entry {
    pub(crate) key: Key,
    pub(crate) pool: Arc<Pool>,
    pub(crate) backend: Arc<Backend>,
    pub(crate) session: BackendSession,
    /// Whom it was opened for: its requests that no client request makes (the DELETE that
    /// closes it, the cancel of a parked call that expired) are made for this caller.
    pub(crate) caller: Caller,
    /// The backend's `InitializeResult` (`server/discover` is answered from it).
    pub(crate) init_result: Value,
    /// The level of the last `logging/setLevel` sent in it.
    pub(crate) level: Mutex<Option<String>>,
    /// Where the requests of its GET stream go: the one call in flight on it.
    pub(super) strays: Mutex<Vec<(u64, tokio::sync::mpsc::UnboundedSender<Value>)>>,
    pub(super) in_flight: AtomicUsize,
    pub(super) last_use: Mutex<Instant>,
    pub(super) gone: AtomicBool,
}

impl Entry {
    pub(super) fn idle_for(&self) -> Duration {
        lock(&self.last_use).elapsed()
    }

    /// Whether it was dropped from the table (it must not be used for a new request).
    pub(crate) fn is_gone(&self) -> bool {
        self.gone.load(Ordering::Acquire)
    }
}
