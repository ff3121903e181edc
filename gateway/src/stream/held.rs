//! A session's held standalone stream: its events in a resumable log, handed to one client
//! GET at a time (a newer GET, a reconnect, supersedes the older one), and the map of the held
//! streams of this process. Opening, installing and pumping them is `stream.rs`.

use crate::session::SessionRecord;
use crate::stream::{LogReader, StreamLog};
use bytes::Bytes;
use dashmap::DashMap;
use pingora::http::ResponseHeader;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

pub(crate) use crate::sync::lock;

/// One held stream: its events in a resumable log, handed to one client GET at a time.
pub(super) struct Held {
    pub(super) generation: u64,
    pub(super) head: ResponseHeader,
    pub(super) log: Arc<StreamLog>,
    pub(super) leases: Mutex<Leases>,
    /// Wakes a lease that a newer one replaced.
    pub(super) notify: Notify,
    pub(super) task: Mutex<Option<AbortHandle>>,
}

#[derive(Default)]
pub(super) struct Leases {
    /// The newest lease; older leases end.
    pub(super) current: u64,
    /// Where a client GET without `Last-Event-ID` starts: after the last event handed out.
    pub(super) delivered: u64,
}

impl Held {
    pub(super) fn is_live(&self) -> bool {
        !self.log.ended()
    }

    /// A lease reading from `cursor` (after the last event handed out when `None`).
    pub(super) fn lease(self: &Arc<Self>, cursor: Option<u64>) -> Lease {
        let (id, cursor) = {
            let mut l = lock(&self.leases);
            l.current += 1;
            (l.current, cursor.unwrap_or(l.delivered))
        };
        self.notify.notify_waiters(); // an older lease wakes up and ends
        Lease {
            held: self.clone(),
            id,
            reader: self.log.reader(cursor),
        }
    }

    /// Closes the upstream stream and ends every lease.
    pub(super) fn stop(&self) {
        if let Some(task) = lock(&self.task).take() {
            task.abort();
        }
        self.log.end();
    }
}

/// A client GET's claim on a session's held stream.
pub struct Lease {
    pub(super) held: Arc<Held>,
    pub(super) id: u64,
    pub(super) reader: LogReader,
}

impl Lease {
    /// The backend's response head for the stream.
    pub fn head(&self) -> &ResponseHeader {
        &self.held.head
    }

    /// The next whole event; `None` when the stream ended or a newer client GET took over.
    pub async fn next(&mut self) -> Option<Bytes> {
        loop {
            let superseded = self.held.notify.notified();
            tokio::pin!(superseded);
            superseded.as_mut().enable();
            if lock(&self.held.leases).current != self.id {
                return None;
            }
            tokio::select! {
                biased;
                _ = &mut superseded => continue,
                event = self.reader.next() => {
                    let mut l = lock(&self.held.leases);
                    if event.is_some() && l.current == self.id {
                        l.delivered = l.delivered.max(self.reader.cursor());
                    }
                    return event;
                }
            }
        }
    }
}

/// Held streams of this gateway process, by session id.
#[derive(Default)]
pub(crate) struct HeldStreams {
    pub(super) held: DashMap<Arc<str>, Arc<Held>>,
    /// One opening per session at a time (so the backend never sees two GETs).
    pub(super) opening: DashMap<Arc<str>, Arc<tokio::sync::Mutex<()>>>,
}

impl HeldStreams {
    /// Stops and forgets a session's stream (the session ended).
    pub(crate) fn stop(&self, id: &str) {
        if let Some((_, held)) = self.held.remove(id) {
            held.stop();
        }
        self.opening.remove(id);
    }

    /// Streams held open right now.
    pub(crate) fn live(&self) -> usize {
        self.held.iter().filter(|h| h.is_live()).count()
    }

    /// Whether the session has (or had, on an earlier binding) a held stream.
    pub(super) fn has(&self, id: &str) -> bool {
        self.held.contains_key(id)
    }

    /// The live stream of the record's binding.
    pub(super) fn current(&self, rec: &SessionRecord) -> Option<Arc<Held>> {
        self.held
            .get(&rec.id)
            .filter(|h| h.generation == rec.binding.generation && h.is_live())
            .map(|h| h.clone())
    }

    pub(super) fn opening_lock(&self, id: &Arc<str>) -> Arc<tokio::sync::Mutex<()>> {
        self.opening.entry(id.clone()).or_default().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::Resume;
    use bytes::Bytes;

    fn held(log: Arc<StreamLog>) -> Arc<Held> {
        Arc::new(Held {
            generation: 1,
            head: ResponseHeader::build(200, None).unwrap(),
            log,
            leases: Mutex::new(Leases::default()),
            notify: Notify::new(),
            task: Mutex::new(None),
        })
    }

    #[tokio::test]
    async fn a_newer_lease_takes_over_and_undelivered_events_wait_for_it() {
        let resume = Resume::new(
            crate::metrics::scratch(super::super::StreamMetrics::register),
            None,
        );
        let log = resume.start(&Arc::from("s"), None, false);
        let push = |n: u32| {
            log.push(|_| Bytes::from(format!("data: {n}\n\n")));
        };
        let held = held(log.clone());
        let mut first = held.lease(None);
        push(1);
        assert_eq!(first.next().await.as_deref(), Some(&b"data: 1\n\n"[..]));
        drop(first);
        // no client reads: events wait
        push(2);
        let mut stale = held.lease(None);
        let mut second = held.lease(None);
        assert_eq!(stale.next().await, None, "superseded");
        assert_eq!(second.next().await.as_deref(), Some(&b"data: 2\n\n"[..]));
        let waiting = tokio::spawn(async move { second.next().await });
        tokio::task::yield_now().await;
        push(3);
        assert_eq!(waiting.await.unwrap().as_deref(), Some(&b"data: 3\n\n"[..]));
        // a resume reads again from where it says
        let mut again = held.lease(Some(1));
        assert_eq!(again.next().await.as_deref(), Some(&b"data: 2\n\n"[..]));
        let mut third = held.lease(None);
        held.stop();
        assert_eq!(third.next().await, None);
    }
}
