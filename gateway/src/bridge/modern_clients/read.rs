//! A call's answer on a pooled session, read on to its end: the backend's notifications to the
//! client (its SSE answer started with the first), a server→client request for input parking
//! the call (`rounds.rs`), another one refused, and at the end the result made modern
//! (`resultType`, `_meta` serverInfo, cache hints; a list filtered) or the error relayed. An
//! answer cut off before its response drops the pooled session: its outcome is unknown.

use super::cancel::CancelOnDrop;
use super::entry::Entry;
use super::park::Parked;
use super::serve::{served, Attempt, One};
use super::sessions::InUse;
use super::stray::Strays;
use crate::bridge::answer::{Broken, Messages};
use crate::bridge::client::{end_stream, end_with_error, write_event};
use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::error::{Fail, GatewayError};
use bytes::Bytes;
use mcp_wire::messages;
use mcp_wire::translate::legacy;
use mcp_wire::translate::mrtr;
use mcp_wire::translate::result::peek;
use serde_json::Value;
use std::sync::Arc;

impl One<'_> {
    /// Reads the call's answer on: notifications to the client, the result at the end, or a
    /// server→client request that parks the call. `cancel` cancels the call upstream if this is
    /// dropped before the call ends or parks.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn read(
        &self,
        session: &mut impl Client,
        used: InUse,
        mut messages: Messages,
        (up_id, mut cancel): (String, CancelOnDrop),
        status: u16,
        streaming: &mut bool,
        strays: Option<Strays>,
    ) -> Result<Attempt, Fail> {
        let entry = &used.0.clone();
        let mut strays = strays;
        let answer = loop {
            let raw = match next(&mut messages, &mut strays).await {
                Ok(Some(raw)) => raw,
                Ok(None) if !(messages.is_event_stream() && status < 400) => break None,
                // broken, or an event stream ended before its response: the outcome is unknown
                cut => {
                    cancel.disarm();
                    return self.cut_off(session, entry, cut.is_err(), *streaming).await;
                }
            };
            let Some(p) = peek(&raw) else { continue };
            let Ok(m) = serde_json::from_slice::<Value>(&raw) else {
                continue;
            };
            if p.response {
                if m.get("id").and_then(Value::as_str) == Some(up_id.as_str()) || status >= 400 {
                    break Some(m);
                }
                continue;
            }
            if p.request {
                let method = m.get("method").and_then(Value::as_str).unwrap_or("");
                if mrtr::is_input_request(method) {
                    cancel.disarm();
                    let parked = Parked {
                        used,
                        messages,
                        up_id,
                        server_id: m.get("id").cloned().unwrap_or(Value::Null),
                        method: method.to_owned(),
                        status,
                        expires: std::time::Instant::now() + self.to.config.input_ttl,
                        strays,
                        owner: self.owner.clone(),
                    };
                    let params = m
                        .get("params")
                        .cloned()
                        .unwrap_or_else(|| Value::Object(Default::default()));
                    return self.park(session, parked, params, streaming).await;
                }
                self.refuse_server_request(entry, &m);
                continue;
            }
            if let Some(note) = self.for_client(m) {
                if !*streaming {
                    answer::open_stream(session, None).await?;
                    *streaming = true;
                }
                // the client gone, `cancel` drops armed: the call is cancelled upstream
                write_event(session, &note).await?;
            }
        };
        cancel.disarm();
        messages.finish(self.engine()).await;
        // the session is free before the client hears the answer (its next request may need
        // to be the only one in flight there, for its GET-stream requests)
        drop(strays);
        drop(used);
        self.answer_client(session, entry, answer, status, *streaming)
            .await
    }

    /// The answer cut off (`broken`, or its event stream ended) before its response, the
    /// call's outcome unknown: its pooled session dropped, and a client that heard part of the
    /// answer told so (-32013) at its end; otherwise the attempt lost.
    async fn cut_off(
        &self,
        session: &mut impl Client,
        entry: &Arc<Entry>,
        broken: bool,
        streaming: bool,
    ) -> Result<Attempt, Fail> {
        let (pool, backend) = (&entry.pool, &entry.backend);
        self.bridge.pooled.drop_entry(entry);
        if streaming {
            // the client heard part of the answer: it ends here, with -32013
            if broken {
                pool.mark_failed(backend);
            }
            let e = GatewayError::backend_lost(&pool.name, &backend.label);
            end_with_error(session, &e, self.id).await?;
            return Ok(Attempt::Done(served(backend)));
        }
        Ok(self.lost())
    }

    /// The client's answer from the backend's response, `answer`: its result made modern (a
    /// list filtered) or its error relayed; without one, untranslatable (a gateway error when
    /// nothing was streamed yet).
    async fn answer_client(
        &self,
        session: &mut impl Client,
        entry: &Entry,
        answer: Option<Value>,
        status: u16,
        streaming: bool,
    ) -> Result<Attempt, Fail> {
        let body = match answer {
            Some(mut m) => match m.get_mut("error") {
                Some(error) => messages::relayed_error(self.id, &error.take()),
                None => {
                    let result = m.get_mut("result").map(Value::take).unwrap_or_default();
                    let info = entry.init_result.get("serverInfo");
                    // answers on a route with `auth` may differ per principal: never public
                    let hints = legacy::CacheHints {
                        ttl_ms: self.to.config.cache_ttl_ms,
                        public: self.to.config.cache_public && self.to.caller.principal().is_none(),
                    };
                    let result = legacy::modern_result(result, self.method, info, hints);
                    let body = messages::result(self.id, &result);
                    match self.to.filter {
                        Some(filter) => filter(&body).unwrap_or(body),
                        None => body,
                    }
                }
            },
            None => {
                let detail = format!("HTTP {status} without a JSON-RPC response");
                let e = GatewayError::untranslatable(&entry.pool.name, &detail);
                if !streaming {
                    return Err(e.into());
                }
                e.body(self.id)
            }
        };
        if streaming {
            end_stream(session, body).await?;
        } else {
            answer::json(session, 200, None, body).await?;
        }
        Ok(Attempt::Done(served(&entry.backend)))
    }
}

/// The call's next message: of its answer, or a request of the session's GET stream handed to
/// it.
async fn next(
    messages: &mut Messages,
    strays: &mut Option<Strays>,
) -> Result<Option<Bytes>, Broken> {
    tokio::select! {
        next = messages.next() => next,
        Some(m) = recv(strays) => Ok(serde_json::to_vec(&m).ok().map(Bytes::from)),
    }
}

/// The next request of the session's GET stream for this call; never, without a registration.
async fn recv(strays: &mut Option<Strays>) -> Option<Value> {
    match strays {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}
