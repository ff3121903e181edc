//! Reading a 2026-07-28 answer as JSON-RPC messages, one at a time as they arrive: a JSON
//! body is one message; an SSE body is cut into events (the one splitter in `mcp::sse`), each
//! event's data one message. Messages come as bytes, parsed only as far as the caller needs.

use crate::upstream::attempt::Engine;
use crate::upstream::client::Exchange;
use bytes::Bytes;
use mcp_wire::sse::{self, EventSplitter};
use std::collections::VecDeque;

/// Largest JSON answer (not SSE) read whole.
const JSON_LIMIT: usize = 16 * 1024 * 1024;

/// The connection broke (or the answer was too large) before the answer ended.
#[derive(Debug)]
pub(super) struct Broken;

/// The messages of one upstream answer.
pub(super) struct Messages {
    exchange: Exchange,
    ended: bool,
    sse: bool,
    splitter: EventSplitter,
    queue: VecDeque<Bytes>,
}

impl Messages {
    /// The messages of `exchange` (its head read).
    pub(super) fn new(exchange: Exchange) -> Messages {
        let sse = sse::is_event_stream(
            exchange
                .header()
                .headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
        );
        Messages {
            exchange,
            ended: false,
            sse,
            splitter: EventSplitter::default(),
            queue: VecDeque::new(),
        }
    }

    /// The HTTP status of the answer.
    pub(super) fn status(&self) -> u16 {
        self.exchange.header().status.as_u16()
    }

    /// Whether the answer is an event stream, which ends with the response it carries: one
    /// that ends before it was cut short (the backend killed between two events, or closing
    /// the stream), and the call's outcome is unknown.
    pub(super) fn is_event_stream(&self) -> bool {
        self.sse
    }

    /// The next message, `None` at the end of the answer.
    pub(super) async fn next(&mut self) -> Result<Option<Bytes>, Broken> {
        loop {
            if let Some(m) = self.queue.pop_front() {
                return Ok(Some(m));
            }
            if self.ended {
                return Ok(None);
            }
            if !self.sse {
                let body = self
                    .exchange
                    .read_all(JSON_LIMIT)
                    .await
                    .map_err(|_| Broken)?;
                self.ended = true;
                return Ok(Some(body).filter(|b| !b.is_empty()));
            }
            match self.exchange.chunk().await.map_err(|_| Broken)? {
                Some(chunk) => {
                    for event in self.splitter.push(&chunk) {
                        self.queue.extend(parse(&event));
                    }
                }
                None => {
                    let rest = self.splitter.push(b"\n\n");
                    for event in rest {
                        self.queue.extend(parse(&event));
                    }
                    self.ended = true;
                }
            }
        }
    }

    /// Reads on until the response to `id`: `true` when it came, `false` when the answer ended
    /// without it or the backend asked another question first (the call will not end by
    /// itself); notifications are passed over.
    pub(super) async fn response_to(&mut self, id: &str) -> Result<bool, Broken> {
        while let Some(raw) = self.next().await? {
            let Some(p) = mcp_wire::translate::result::peek(&raw) else {
                continue;
            };
            if p.request {
                return Ok(false);
            }
            if p.response {
                let m: serde_json::Value = serde_json::from_slice(&raw).map_err(|_| Broken)?;
                if m.get("id").and_then(serde_json::Value::as_str) == Some(id) {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Gives the connection back when the answer was read to its end; otherwise drops it
    /// (closing it, which is how a 2026-07-28 request is cancelled).
    pub(super) async fn finish(mut self, engine: &Engine) {
        if !self.exchange.done() && self.ended_soon().await.is_err() {
            return;
        }
        if self.exchange.done() {
            engine.release(self.exchange);
        }
    }
}

impl Messages {
    /// After the response, a stream's end usually follows at once: read it (briefly) so the
    /// connection can be reused.
    async fn ended_soon(&mut self) -> Result<(), Broken> {
        let rest = async {
            for _ in 0..4 {
                if self.exchange.chunk().await.map_err(|_| Broken)?.is_none() {
                    break;
                }
            }
            Ok(())
        };
        tokio::time::timeout(std::time::Duration::from_millis(50), rest)
            .await
            .map_err(|_| Broken)?
    }
}

/// The messages (data) of one event; priming events and comments have none.
fn parse(event: &[u8]) -> Vec<Bytes> {
    sse::messages(Some("text/event-stream"), event)
        .into_iter()
        .map(Bytes::from)
        .collect()
}
