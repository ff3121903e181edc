//! `subscriptions/listen` of a 2026-07-28 client on legacy backends: a backend session held
//! for the stream (opened like a pooled one, with no client capabilities: it runs no calls,
//! and kept out of the pool), `resources/subscribe` in it for each URI of the filter, its GET
//! stream read, and the client's answer an SSE stream as a 2026-07-28 server gives it (the
//! wire shapes of `translate::listen`): `notifications/subscriptions/acknowledged` with the
//! filter honoured first, then the backend's `notifications/resources/updated` (for the URIs
//! it accepted) and the list changes it declared (`listChanged`), each stamped with the
//! subscription id (the listen request's id) in `_meta`, with keep-alive comments between.
//!
//! Honoured: a URI whose `resources/subscribe` the backend answered with a result (FastMCP 1.x
//! declares `resources.subscribe: false` even with a handler, so the answer decides, not the
//! capability); a list change when the backend's capabilities declare its `listChanged`. The
//! client going away ends the backend session (DELETE); the backend's GET stream ending ends
//! the client's stream without a result (an abrupt end: the client re-listens and refetches).

use super::acquire_error::AcquireError;
use super::entry::Entry;
use super::key::Key;
use super::open;
use super::serve::{served, One, Pooled};
use crate::bridge::answer::Messages;
use crate::bridge::client::{end_stream, write_event};
use crate::bridge::Served;
use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::error::{Fail, GatewayError};
use crate::upstream::attempt::{Pick, Step};
use crate::upstream::request::{self, Target};
use bytes::Bytes;
use mcp_wire::translate::listen;
use mcp_wire::{messages, sse, Era};
use pingora::prelude::*;
use serde_json::{Map, Value};
use std::sync::Arc;

/// The list-change flags of a filter and the capability that declares each.
const LIST_CHANGES: [(&str, &str, &str); 3] = [
    (
        "toolsListChanged",
        "tools",
        "notifications/tools/list_changed",
    ),
    (
        "promptsListChanged",
        "prompts",
        "notifications/prompts/list_changed",
    ),
    (
        "resourcesListChanged",
        "resources",
        "notifications/resources/list_changed",
    ),
];

impl One<'_> {
    /// Serves a `subscriptions/listen` request on a backend session held for it.
    pub(super) async fn listen(&self, session: &mut impl Client) -> Result<Pooled, Fail> {
        let wanted = self
            .msg
            .get("params")
            .and_then(|p| p.get("notifications"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let entry = match self.held_session().await? {
            Ok(entry) => entry,
            Err(not_legacy) => return Ok(not_legacy),
        };
        let result = self.serve_listen(session, &entry, &wanted).await;
        let engine = &self.bridge.engine;
        engine.spawn_delete_session(
            entry.pool.clone(),
            entry.backend.clone(),
            entry.session.clone(),
            entry.caller.clone(),
        );
        result.map(Pooled::Served)
    }

    /// A backend session of its own for the stream, on a backend picked by the pool's
    /// balancing (a refused one: the next, as the attempt engine rules), or the backend that
    /// opened none ([`Pooled::NoSession`]).
    async fn held_session(&self) -> Result<Result<Arc<Entry>, Pooled>, GatewayError> {
        let pool = self.to.pool;
        let params = &self.init.without_capabilities();
        let engine = &self.bridge.engine;
        let mut tried = Vec::new();
        let pick = Pick::Serving(Era::Legacy);
        engine
            .each_backend(pool, pick, &mut tried, |backend| {
                Box::pin(async move {
                    let key = Key {
                        backend: backend.addr,
                        path: self.to.path.into(),
                        principal: self.to.caller.principal().map(|p| p.id.clone()),
                        digest: self.init.digest,
                    };
                    match open::open(engine, pool, &backend, key, params, self.to.caller).await {
                        Ok(entry) => Step::Done(Ok(entry)),
                        Err(AcquireError::Unreachable) => Step::Unreachable,
                        Err(AcquireError::Answer(e)) => Step::Stop(e),
                        Err(AcquireError::NoSession) => Step::Done(Err(Pooled::NoSession(backend))),
                    }
                })
            })
            .await
    }

    /// The listen served on `entry`'s session: the filter honoured, acknowledged, and the
    /// backend's notifications relayed until either side ends.
    async fn serve_listen(
        &self,
        session: &mut impl Client,
        entry: &Arc<Entry>,
        wanted: &Map<String, Value>,
    ) -> Result<Served, Fail> {
        let (honoured, uris) = self.honour(entry, wanted).await;
        let sub_id = self.id.as_json().to_owned();
        let sub_id: Value = serde_json::from_str(&sub_id).unwrap_or(Value::Null);
        // the backend's GET stream, opened before the client hears the ack
        let stream = if honoured.is_empty() {
            None
        } else {
            Some(self.get_stream(entry).await?)
        };
        tracing::debug!("a bridged listen's backend GET stream open");
        answer::open_stream(session, None).await?;
        write_event(session, &listen::acknowledged(&honoured, &sub_id)).await?;
        let Some(messages) = stream else {
            // nothing to listen for: the graceful end at once
            let body = messages::result(self.id, &listen::listen_result(&sub_id));
            end_stream(session, body).await?;
            return Ok(served(&entry.backend));
        };
        self.relay(session, entry, messages, &honoured, &uris, &sub_id)
            .await
    }

    /// What of the filter `wanted` is honoured (the list changes the backend's capabilities
    /// declare, the URIs whose `resources/subscribe` it took), and those URIs.
    async fn honour(
        &self,
        entry: &Entry,
        wanted: &Map<String, Value>,
    ) -> (Map<String, Value>, Vec<String>) {
        let caps = entry.init_result.get("capabilities");
        let mut honoured = Map::new();
        for (flag, cap, _) in LIST_CHANGES {
            let declared = caps
                .and_then(|c| c.get(cap))
                .and_then(|c| c.get("listChanged"))
                .and_then(Value::as_bool)
                == Some(true);
            if declared && wanted.get(flag).and_then(Value::as_bool) == Some(true) {
                honoured.insert(flag.into(), Value::Bool(true));
            }
        }
        let mut uris = Vec::new();
        let asked = wanted
            .get("resourceSubscriptions")
            .and_then(Value::as_array);
        for uri in asked.into_iter().flatten().filter_map(Value::as_str) {
            if self.subscribe(entry, uri).await {
                uris.push(uri.to_owned());
            }
        }
        tracing::debug!(?uris, "a bridged listen's subscriptions taken");
        if !uris.is_empty() {
            honoured.insert("resourceSubscriptions".into(), uris.as_slice().into());
        }
        (honoured, uris)
    }

    /// The backend's GET stream relayed to the client: the notifications the filter honours,
    /// stamped with the subscription id, keep-alives between; the client gone, or the
    /// backend's stream ended (an abrupt end for the client), it ends.
    async fn relay(
        &self,
        session: &mut impl Client,
        entry: &Entry,
        mut messages: Messages,
        honoured: &Map<String, Value>,
        uris: &[String],
        sub_id: &Value,
    ) -> Result<Served, Fail> {
        let keep_alive = self.bridge.keep_alive();
        let mut tick =
            tokio::time::interval_at(tokio::time::Instant::now() + keep_alive, keep_alive);
        loop {
            let next = tokio::select! {
                next = messages.next() => next,
                _ = tick.tick() => {
                    answer::event(session, Bytes::from_static(crate::stream::KEEP_ALIVE)).await?;
                    continue;
                }
                gone = session.gone() => {
                    tracing::debug!(gone = ?gone, "a listen stream's client went away");
                    return Ok(served(&entry.backend));
                }
            };
            let Ok(Some(raw)) = next else {
                // the backend's stream ended or broke: an abrupt end for the client
                tracing::debug!(backend = %entry.backend.label, "a bridged listen stream's backend stream ended");
                answer::end(session).await?;
                return Ok(served(&entry.backend));
            };
            let Ok(mut msg) = serde_json::from_slice::<Value>(&raw) else {
                continue;
            };
            if msg.get("id").is_some() {
                continue;
            }
            // what the backend says changed is no longer answered from the cache
            let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
            self.to.cache.heard(&entry.pool.name, method);
            if !relayed(&msg, honoured, uris) {
                continue;
            }
            listen::stamp(&mut msg, sub_id);
            write_event(session, &msg).await?;
        }
    }

    /// Whether the backend took `resources/subscribe` for `uri` in `entry`'s session.
    async fn subscribe(&self, entry: &Entry, uri: &str) -> bool {
        let id = self.bridge.pooled.next_id();
        let msg = messages::subscribe(&id, uri);
        let sent = self
            .engine()
            .post_in_session(
                &entry.pool,
                &entry.backend,
                &entry.session,
                msg,
                self.to.caller,
            )
            .await;
        let Ok((head, body)) = sent else { return false };
        let content_type = head
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        head.status.is_success()
            && sse::response(content_type, &body).is_some_and(|r| r.get("result").is_some())
    }

    /// The GET stream of `entry`'s session, as messages.
    async fn get_stream(&self, entry: &Entry) -> Result<Messages, Fail> {
        let target = Target {
            path: &entry.session.path,
            host: &entry.backend.host_header,
        };
        let id = Some(&*entry.session.id);
        let version = Some(&*entry.session.protocol_version);
        let mut head = request::own(http::Method::GET, target, id, version, 0, self.to.caller)?;
        head.insert_header("accept", "text/event-stream")?;
        let pool = &entry.pool.name;
        let refused = |detail: &str| {
            GatewayError::untranslatable(
                pool,
                &format!("the legacy backend's GET stream: {detail}"),
            )
        };
        let exchange = self
            .engine()
            .send(&entry.pool, &entry.backend, &head, Bytes::new(), true)
            .await
            .map_err(|e| match e {
                crate::upstream::client::CallError::Credentials(e) => *e,
                e => refused(&e.to_string()),
            })?;
        let status = exchange.header().status;
        if !status.is_success() {
            return Err(refused(&format!("HTTP {status}")).into());
        }
        Ok(Messages::new(exchange))
    }
}

/// Whether the backend's notification `msg` goes to the client: an update of a URI it took,
/// or a list change the filter honours.
fn relayed(msg: &Value, honoured: &Map<String, Value>, uris: &[String]) -> bool {
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    if method == "notifications/resources/updated" {
        let uri = msg.pointer("/params/uri").and_then(Value::as_str);
        uri.is_some_and(|u| uris.iter().any(|s| s == u))
    } else {
        LIST_CHANGES
            .iter()
            .any(|(flag, _, m)| *m == method && honoured.contains_key(*flag))
    }
}
