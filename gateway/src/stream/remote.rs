//! A stream another replica writes, read from the shared store ([`StreamStore`]): what a
//! client that reconnects to this replica with a `Last-Event-ID` of another's stream gets.
//!
//! Every stream's events are written through to the store (`Resume::mirror_last`), so another
//! replica can replay them. A reader here polls the store for what follows (50–250 ms apart:
//! a blocking read would hold the store's shared connection) and gives up on a stream whose
//! writer stopped saying it is alive (the writing replica died): it ends with -32013, outcome
//! unknown.

use super::{event_id, message_event, Refusal};
use crate::error::GatewayError;
use crate::session::store::{StoreError, StreamStore, ALIVE_EVERY};
use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

/// A reader of `session`'s stream after `last_event_id` in `store`, or why there is none.
pub async fn reader(
    store: &Arc<dyn StreamStore>,
    session: &str,
    last_event_id: &str,
) -> Result<Result<RemoteReader, Refusal>, GatewayError> {
    let Some((token, seq)) = super::parse_event_id(last_event_id) else {
        return Ok(Err(Refusal::Unknown));
    };
    let Some((first, last)) = store.first_and_last(session, token).await? else {
        return Ok(Err(Refusal::Unknown));
    };
    let issued = if last.end { last.seq } else { last.seq + 1 };
    if seq >= issued {
        return Ok(Err(Refusal::Unknown));
    }
    if first.seq > seq + 1 {
        return Ok(Err(Refusal::Evicted));
    }
    Ok(Ok(RemoteReader {
        store: store.clone(),
        session: session.into(),
        token,
        cursor: seq,
        writer: first.writer,
        request: first.request,
        queue: VecDeque::new(),
        done: false,
        backlog: issued - seq - 1,
        quiet: Duration::ZERO,
    }))
}

/// Reads a stream another replica writes, from the shared store.
pub struct RemoteReader {
    store: Arc<dyn StreamStore>,
    session: Arc<str>,
    token: u64,
    /// The last sequence number handed out.
    cursor: u64,
    /// The replica writing the stream.
    writer: String,
    request: Option<String>,
    queue: VecDeque<Bytes>,
    done: bool,
    backlog: u64,
    quiet: Duration,
}

impl RemoteReader {
    /// Events already written when the reader was made (replayed rather than live).
    pub fn backlog(&self) -> u64 {
        self.backlog
    }

    /// The next event; `None` at the end. A stream whose writer died ends with -32013.
    pub async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            if self.done {
                return None;
            }
            match self.fetch().await {
                Ok(true) => self.quiet = Duration::ZERO,
                Ok(false) => {
                    if self.quiet >= 3 * ALIVE_EVERY && !self.store.writer_alive(&self.writer).await
                    {
                        self.writer_died();
                        continue;
                    }
                    let pause = Duration::from_millis(50 + 50 * self.quiet.as_secs().min(4));
                    tokio::time::sleep(pause).await;
                    self.quiet += pause;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "reading stream events from the store failed");
                    self.writer_died();
                }
            }
        }
    }

    /// Reads what follows the cursor; whether anything came.
    async fn fetch(&mut self) -> Result<bool, StoreError> {
        let entries = self
            .store
            .after(&self.session, self.token, self.cursor, 100)
            .await?;
        let got = !entries.is_empty();
        for entry in entries {
            if entry.end {
                self.done = true;
                break;
            }
            self.cursor = entry.seq;
            if let Some(event) = entry.event {
                self.queue.push_back(event);
            }
        }
        Ok(got)
    }

    /// The replica writing the stream is gone: the answer's outcome is unknown.
    fn writer_died(&mut self) {
        let err = GatewayError::backend_lost("gateway", "the replica relaying this answer")
            .with("session", crate::session::short(&self.session));
        let id = event_id(self.token, self.cursor + 1);
        let request = self
            .request
            .as_deref()
            .and_then(mcp_wire::RequestId::from_json);
        let body = err.body(&request.unwrap_or_else(mcp_wire::RequestId::null));
        self.queue.push_back(message_event(&id, &body));
        self.done = true;
    }
}
