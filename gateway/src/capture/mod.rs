//! Request capture (`routes[].capture`, off by default): one JSON line per request with time,
//! route, hashed session, method, name, status, latency and bytes, and the bodies the gateway
//! holds anyway, redacted by JSON paths (tool arguments by default). Never on the byte path:
//! the record is built when the request has ended (pingora's `logging` phase) from what the
//! request context kept, and written by a thread of its own; when that thread falls behind,
//! records are dropped (counted in the log), never waited for.
//!
//! What is captured when:
//! - the request body: whenever the gateway read it whole (stateful routes, bodies routed by
//!   their content or under a deadline, bodies checked against the MCP headers) or it arrived in
//!   one piece on the fast path; otherwise its size only;
//! - the response body: answers the gateway writes whole (its own errors, an `initialize`
//!   answer); a response streamed through (SSE, or the fast path) is recorded by status and
//!   size only: buffering it would change how it streams.

mod print;
mod record;
mod sink;

pub use print::{format_record, print_file};
pub use record::{body_value, hash_session, record, redact, Seen, REDACTED};
pub use sink::{rotate, Sink};

use crate::config::CaptureConfig;
use bytes::Bytes;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Bodies a request's context holds for capture (only on routes that capture).
#[derive(Debug, Default)]
pub struct Held {
    /// The whole request body, where the gateway read it.
    pub request: Option<Bytes>,
    /// The whole response body, where the gateway wrote it in one piece.
    pub response: Option<Bytes>,
}

/// The capture files of every route, by path; a sink outlives config reloads.
#[derive(Debug, Default)]
pub struct Captures {
    sinks: Mutex<HashMap<PathBuf, Arc<Sink>>>,
}

impl Captures {
    /// Writes one record to the route's capture file (opening it on first use).
    pub fn write(&self, config: &CaptureConfig, seen: &Seen<'_>) {
        let line = record(seen, config);
        let sink = {
            let mut sinks = match self.sinks.lock() {
                Ok(s) => s,
                Err(poisoned) => poisoned.into_inner(),
            };
            sinks
                .entry(config.file.clone())
                .or_insert_with(|| Arc::new(Sink::start(config.file.clone())))
                .clone()
        };
        sink.send(line, config.max_file_bytes, config.max_files);
    }
}

#[cfg(test)]
mod tests;
