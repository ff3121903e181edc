//! The `subscriptions/listen` stream a bridged session's GET stream is fed from: while the
//! client holds its GET stream open in this process, the gateway holds one listen request on
//! a 2026-07-28 backend for the session's `resources/subscribe`d URIs (and list changes), and
//! each notification on it goes to the client's GET stream as a legacy server would send it.
//!
//! - One listen per session however many GETs it has (the holders are counted); it ends with
//!   the last GET, which closes the upstream request (how a 2026-07-28 listen is cancelled).
//! - A subscribe or unsubscribe changes the filter: a new listen is opened and acknowledged
//!   before the old one is dropped, and the POST is answered once the new filter is heard
//!   (bounded by [`APPLY_WAIT`]), so a notification sent after the answer is not missed.
//! - A listen that breaks (its pod died, a timeout) is opened again on another backend, after
//!   a backoff from [`BACKOFF_MIN`] to [`BACKOFF_MAX`]; what the server sent in between is
//!   lost (2026-07-28 listen streams cannot be resumed).
//!
//! Sessions are kept on one replica by the load balancer for their GET streams anyway; a
//! subscribe received by another replica is stored with the session and heard from the next
//! GET stream opened (or re-opened) on the replica holding the GET.

use super::upstream::Upstream;
use crate::bridge::answer::{Broken, Messages};
use crate::config::DualBackends;
use crate::upstream::attempt::Engine;
use crate::upstream::Pool;
use bytes::Bytes;
use dashmap::DashMap;
use mcp_wire::sse;
use mcp_wire::translate::listen::{heard, listen_request, Heard};
use mcp_wire::translate::request::Envelope;
use mcp_wire::translate::ClientInit;
use pingora::http::RequestHeader;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, watch};
use tokio::task::AbortHandle;

/// Longest wait for a new listen's acknowledgement before the subscribe is answered anyway.
pub const APPLY_WAIT: Duration = Duration::from_secs(2);
/// Longest wait for a listen's first message (its acknowledgement).
const ACK_WAIT: Duration = Duration::from_secs(5);
/// First wait before a broken listen is opened again.
pub const BACKOFF_MIN: Duration = Duration::from_millis(250);
/// Longest wait between attempts.
pub const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// The longest id a listen request of this process carries.
const LONGEST_ID: &str = "mcpgw-listen-18446744073709551615";

/// The size of the upstream listen request of a bridged session (its stored `initialize`
/// params) subscribed to `uris`, with the longest id it could carry: a subscribe that would
/// make it pass `max-body-bytes` is refused before it is kept, so the gateway never sends a
/// backend a body larger than it would take from a client. `None`: the stored `initialize`
/// cannot be read (then no listen is ever opened for the session).
pub fn listen_body_len(init_params: &str, uris: &[&str]) -> Option<usize> {
    let init = ClientInit::parse(init_params).ok()?;
    let env = Envelope {
        init: &init,
        log_level: None,
    };
    let req = listen_request(LONGEST_ID, uris, env).ok()?;
    Some(req.body.len())
}

/// The subscribed URIs, with a generation that grows with each change.
type Filter = (u64, Vec<String>);

struct Entry {
    holders: usize,
    filter: watch::Sender<Filter>,
    heard: watch::Receiver<u64>,
    task: AbortHandle,
}

/// The listens held in this process, by session.
#[derive(Default)]
pub(in crate::bridge) struct Listens {
    by_session: DashMap<Arc<str>, Entry>,
    ids: AtomicU64,
}

/// What a listen needs, owned (it runs in a task of its own).
pub(super) struct Source {
    pub(super) engine: Arc<Engine>,
    pub(super) pool: Arc<Pool>,
    pub(super) dual: DualBackends,
    /// The client's GET head (end-to-end headers, the caller for identity headers).
    pub(super) client: RequestHeader,
    pub(super) path: String,
    pub(super) init: ClientInit,
    /// The client's GET streams.
    pub(super) to_client: broadcast::Sender<Bytes>,
}

/// A GET stream's hold on its session's listen; the listen ends with the last one.
pub(super) struct Held<'a> {
    listens: &'a Listens,
    session: Arc<str>,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let last = self
            .listens
            .by_session
            .remove_if_mut(&self.session, |_, e| {
                e.holders -= 1;
                e.holders == 0
            });
        if let Some((_, entry)) = last {
            entry.task.abort();
        }
    }
}

impl Listens {
    /// Holds `session`'s listen for a GET stream, starting it (subscribed to `uris`) when no
    /// other GET of the session holds it.
    pub(super) fn hold(
        &self,
        session: &Arc<str>,
        uris: Vec<String>,
        source: impl FnOnce() -> Source,
    ) -> Held<'_> {
        let mut entry = self.by_session.entry(session.clone()).or_insert_with(|| {
            let (filter, filters) = watch::channel((0, uris));
            let (applied, heard) = watch::channel(u64::MAX);
            let id = format!("mcpgw-listen-{}", self.ids.fetch_add(1, Ordering::Relaxed));
            let task = tokio::spawn(listen(source(), id, filters, applied));
            Entry {
                holders: 0,
                filter,
                heard,
                task: task.abort_handle(),
            }
        });
        entry.holders += 1;
        Held {
            listens: self,
            session: session.clone(),
        }
    }

    /// The session's subscriptions are now `uris`: a listen held here follows them, and this
    /// returns once the new filter is heard (at most [`APPLY_WAIT`]).
    pub(super) async fn subscribed(&self, session: &Arc<str>, uris: Vec<String>) {
        let (generation, mut heard) = {
            let Some(entry) = self.by_session.get(session) else {
                return;
            };
            let generation = entry.filter.borrow().0 + 1;
            entry.filter.send_replace((generation, uris));
            (generation, entry.heard.clone())
        };
        let applied = heard.wait_for(|g| *g != u64::MAX && *g >= generation);
        let _ = tokio::time::timeout(APPLY_WAIT, applied).await;
    }
}

/// Holds the listen until its task is aborted (the last GET went) or the session's filter
/// sender is dropped.
async fn listen(
    src: Source,
    id: String,
    mut filters: watch::Receiver<Filter>,
    applied: watch::Sender<u64>,
) {
    let mut backoff = BACKOFF_MIN;
    let mut current: Option<Box<Messages>> = None;
    // the listen in force (or its absence) is not for the filter wanted now
    let mut stale = true;
    loop {
        if stale || filters.has_changed().unwrap_or(false) {
            let (generation, uris) = filters.borrow_and_update().clone();
            match open(&src, &id, &uris).await {
                Ok(opened) => {
                    // the new listen is acknowledged before the old one closes
                    current = opened;
                    stale = false;
                    backoff = BACKOFF_MIN;
                    let _ = applied.send(generation);
                }
                Err(why) => {
                    tracing::debug!(%why, retry_in = ?backoff, "subscriptions/listen not opened");
                    let _ = applied.send(generation);
                    stale = true;
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        changed = filters.changed() => if changed.is_err() { return },
                    }
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                    continue;
                }
            }
        }
        let Some(messages) = current.as_mut() else {
            // nothing honoured: nothing to hold until the filter changes
            if filters.changed().await.is_err() {
                return;
            }
            stale = true;
            continue;
        };
        tokio::select! {
            changed = filters.changed() => {
                if changed.is_err() {
                    return;
                }
                stale = true;
            }
            next = messages.next() => match next.map(|m| m.map(|raw| heard(&raw))) {
                Ok(Some(Heard::Notify(note))) => {
                    let json = serde_json::to_vec(&note).unwrap_or_default();
                    let _ = src.to_client.send(sse::event(&json));
                }
                Ok(Some(Heard::Acknowledged { .. } | Heard::Nothing)) => {}
                Ok(Some(Heard::Ended { .. }) | None) | Err(Broken) => {
                    tracing::debug!(retry_in = ?backoff, "subscriptions/listen ended; opened again");
                    current = None;
                    stale = true;
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                }
            },
        }
    }
}

/// Sends the listen request for `uris` and reads up to its acknowledgement: the listen, or
/// `None` when the server honours nothing of the filter (nothing to hold until it changes).
async fn open(src: &Source, id: &str, uris: &[String]) -> Result<Option<Box<Messages>>, String> {
    let env = Envelope {
        init: &src.init,
        log_level: None,
    };
    let req = listen_request(id, uris, env).map_err(|e| e.to_string())?;
    let up = Upstream {
        engine: &src.engine,
        pool: &src.pool,
        dual: src.dual,
        client: &src.client,
        path: &src.path,
    };
    let sent = up.send(&req, true).await.map_err(|e| e.to_string())?;
    let mut messages = Messages::new(sent.exchange);
    let status = messages.status();
    let first = tokio::time::timeout(ACK_WAIT, async {
        loop {
            match messages.next().await {
                Ok(Some(raw)) => match heard(&raw) {
                    Heard::Nothing | Heard::Notify(_) => continue,
                    other => return Ok(Some(other)),
                },
                Ok(None) => return Ok(None),
                Err(Broken) => return Err(()),
            }
        }
    })
    .await;
    match first {
        Ok(Ok(Some(Heard::Acknowledged { empty: false }))) => Ok(Some(Box::new(messages))),
        Ok(Ok(Some(Heard::Acknowledged { empty: true }))) => Ok(None),
        Ok(Ok(Some(Heard::Ended { error: Some(e) }))) => Err(format!("refused: {e}")),
        Ok(Ok(_)) => Err(format!("HTTP {status} without an acknowledgement")),
        Ok(Err(())) => Err("the stream broke".into()),
        Err(_) => Err(format!("no acknowledgement within {ACK_WAIT:?}")),
    }
}
