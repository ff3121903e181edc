//! What bridged calls wait for, in this process: the client's responses to the gateway's
//! server→client requests (by the id the gateway gave them, answerable only from the same
//! session), the calls in flight (so `notifications/cancelled` can end one), and the sessions'
//! GET streams (which end when the session does).
//!
//! A client's response must reach the replica that asked (a load balancer in front of several
//! replicas keeps a session on one, as it must for the session's streams anyway).

use crate::error::GatewayError;
use bytes::Bytes;
use dashmap::mapref::entry::Entry;
use dashmap::DashMap;
use mcp_wire::translate::rounds::ClientAnswer;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::{broadcast, oneshot, Notify};

/// Events a session's GET streams carry (notifications the bridge has for the client).
const STREAM_BACKLOG: usize = 64;

struct Waiter {
    session: Arc<str>,
    answer: oneshot::Sender<ClientAnswer>,
}

/// The bridge's waiting rooms.
#[derive(Default)]
pub(in crate::bridge) struct Live {
    waiting: DashMap<String, Waiter>,
    calls: DashMap<(Arc<str>, String), Arc<Notify>>,
    streams: DashMap<Arc<str>, broadcast::Sender<Bytes>>,
    next_id: AtomicU64,
}

/// A server→client request the gateway sent, until its answer comes (dropping it stops
/// waiting).
pub(super) struct Asked<'a> {
    live: &'a Live,
    /// The id the request went out with.
    pub(super) id: String,
    /// Where its answer arrives.
    pub(super) answer: oneshot::Receiver<ClientAnswer>,
}

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        self.live.waiting.remove(&self.id);
    }
}

/// A call in flight; `cancelled` fires on the client's `notifications/cancelled`.
pub(super) struct InFlight<'a> {
    live: &'a Live,
    key: (Arc<str>, String),
    /// Notified when the client cancels the call.
    pub(super) cancelled: Arc<Notify>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.live.calls.remove(&self.key);
    }
}

impl Live {
    /// A fresh id for a server→client request of `session` and where its answer will come.
    pub(super) fn ask(&self, session: &Arc<str>) -> Asked<'_> {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let id = format!("mcpgw-bridge-{n}");
        let (tx, rx) = oneshot::channel();
        self.waiting.insert(
            id.clone(),
            Waiter {
                session: session.clone(),
                answer: tx,
            },
        );
        Asked {
            live: self,
            id,
            answer: rx,
        }
    }

    /// Hands a client's response to the call waiting for it; `false` when none of this
    /// session waits for that id.
    pub(super) fn deliver(&self, session: &str, id: &Value, answer: ClientAnswer) -> bool {
        let Some(id) = id.as_str() else {
            return false;
        };
        let Some((_, waiter)) = self.waiting.remove_if(id, |_, w| &*w.session == session) else {
            return false;
        };
        waiter.answer.send(answer).is_ok()
    }

    /// Records a call of `session` with request id `id` (its JSON text) as in flight. A
    /// second call with the id of one still in flight is refused (-32600 `duplicate-id`):
    /// MCP ids are unique per session while in flight, and a `notifications/cancelled` for
    /// that id could not say which call it means (nor could one call's end unregister the
    /// other's).
    pub(super) fn call(&self, session: &Arc<str>, id: &str) -> Result<InFlight<'_>, GatewayError> {
        let key = (session.clone(), id.to_owned());
        let cancelled = Arc::new(Notify::new());
        match self.calls.entry(key.clone()) {
            Entry::Occupied(_) => return Err(GatewayError::duplicate_request_id()),
            Entry::Vacant(v) => {
                v.insert(cancelled.clone());
            }
        }
        Ok(InFlight {
            live: self,
            key,
            cancelled,
        })
    }

    /// The client cancelled its call `id` (JSON text): the call ends.
    pub(super) fn cancel(&self, session: &Arc<str>, id: &str) {
        if let Some(n) = self.calls.get(&(session.clone(), id.to_owned())) {
            n.notify_one();
        }
    }

    /// A receiver of `session`'s GET stream events.
    pub(super) fn stream(&self, session: &Arc<str>) -> broadcast::Receiver<Bytes> {
        self.streams
            .entry(session.clone())
            .or_insert_with(|| broadcast::channel(STREAM_BACKLOG).0)
            .subscribe()
    }

    /// Where `session`'s GET stream events are sent.
    pub(super) fn sender(&self, session: &Arc<str>) -> broadcast::Sender<Bytes> {
        self.streams
            .entry(session.clone())
            .or_insert_with(|| broadcast::channel(STREAM_BACKLOG).0)
            .clone()
    }

    /// A GET stream of `session` ended: its channel goes when no other reads it.
    pub(super) fn stream_closed(&self, session: &Arc<str>) {
        self.streams
            .remove_if(session, |_, tx| tx.receiver_count() == 0);
    }

    /// The session ended: its GET streams end, its calls are cancelled.
    pub(super) fn end(&self, session: &Arc<str>) {
        self.streams.remove(session);
        for entry in self.calls.iter().filter(|e| e.key().0 == *session) {
            entry.value().notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Live;
    use std::future::Future;
    use std::sync::Arc;
    use std::task::Poll;

    /// Whether `n` has been notified (a stored permit), without waiting.
    async fn notified(n: &tokio::sync::Notify) -> bool {
        let mut wait = Box::pin(n.notified());
        std::future::poll_fn(|cx| Poll::Ready(wait.as_mut().poll(cx).is_ready())).await
    }

    #[tokio::test]
    async fn a_second_call_with_an_id_in_flight_is_refused_and_the_first_stays_cancellable() {
        let live = Live::default();
        let session: Arc<str> = "s".into();
        let first = live.call(&session, "7").unwrap();
        let e = live
            .call(&session, "7")
            .err()
            .expect("a duplicate id in flight");
        assert_eq!(e.kind.code(), -32600);
        assert_eq!(e.data["reason"], "duplicate-id");
        // the refusal changed nothing: the client's cancellation still reaches the first call
        live.cancel(&session, "7");
        assert!(notified(&first.cancelled).await);
        // the same id in another session, and again once the first call is done, is fine
        let other: Arc<str> = "t".into();
        drop(live.call(&other, "7").unwrap());
        drop(first);
        let again = live.call(&session, "7").unwrap();
        live.cancel(&session, "7");
        assert!(notified(&again.cancelled).await);
        drop(again);
        assert!(live.calls.is_empty());
    }
}
