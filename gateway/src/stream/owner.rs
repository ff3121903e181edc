//! Which replica holds a session's standalone stream: the one holding the session's stream
//! lease in the store (`session/store/lease.rs`). A replica takes the lease before it opens
//! the backend's GET, renews it every [`RENEW_EVERY`] while its stream lives, and gives it up
//! when the stream ends; a replica that cannot renew it (another took it over) closes its
//! stream. So the backend never sees two GETs for one session, whichever replicas serve it.
//! A holder that dies (SIGKILL) stops renewing: after [`LEASE_TTL`] another replica takes the
//! lease over (a client GET reading the stream there asks every `shared::BLOCK`) and opens
//! the backend's GET again: server messages sent in between reach nobody unless the backend
//! keeps them (an event store).

use super::held::Held;
use super::Streams;
use crate::session::store::Hold;
use crate::session::{short, SessionRecord};
use crate::upstream::Pool;
use std::sync::Arc;
use std::time::Duration;

/// How long a lease lasts unless renewed.
pub const LEASE_TTL: Duration = Duration::from_secs(3);
/// How often the holder renews it.
pub const RENEW_EVERY: Duration = Duration::from_secs(1);

impl Streams {
    /// Asks for the session's stream lease; a store failure reads as "not mine".
    pub(super) async fn lease_of(&self, rec: &SessionRecord) -> Hold {
        match self
            .sessions
            .hold_lease(&rec.id, &self.owner, LEASE_TTL)
            .await
        {
            Ok(hold) => hold,
            Err(e) => {
                tracing::debug!(session = short(&rec.id), error = %e, "stream lease not read");
                Hold::Theirs(String::new())
            }
        }
    }

    /// Keeps `held`'s lease while it lives, in the background; closes it when the lease is
    /// lost, gives the lease up when it ends.
    pub(super) fn keep_lease(&self, held: &Arc<Held>, rec: &SessionRecord) {
        let (held, id) = (held.clone(), rec.id.clone());
        let (sessions, owner, resume) = (
            self.sessions.clone(),
            self.owner.clone(),
            self.resume.clone(),
        );
        tokio::spawn(async move {
            // Woken by the renewal timer and by the end, nothing else: an idle held stream
            // costs one wake-up per RENEW_EVERY (it was ten, a 100 ms poll of `ended`).
            loop {
                tokio::select! {
                    () = held.log.until_ended() => break,
                    () = tokio::time::sleep(RENEW_EVERY) => {}
                }
                match sessions.hold_lease(&id, &owner, LEASE_TTL).await {
                    Ok(Hold::Mine) => {}
                    Ok(other) => {
                        tracing::info!(session = short(&id), holder = ?other, "stream lease lost: the held stream is closed");
                        held.stop();
                        resume.mirror_end(&held.log);
                        return;
                    }
                    // Redis down: keep the stream (nobody else can take the lease either)
                    Err(e) => {
                        tracing::debug!(session = short(&id), error = %e, "stream lease not renewed")
                    }
                }
            }
            if let Some(mirror) = &resume.mirror {
                mirror.held_ended(&id);
            }
            if let Err(e) = sessions.release_lease(&id, &owner).await {
                tracing::debug!(session = short(&id), error = %e, "stream lease not released");
            }
        });
    }

    /// Before a request that needs the session's stream open is answered: `true` when this
    /// replica took the lease (and must open the stream); `false` once another replica that
    /// holds it has said its stream is open (or after the open timeout, or the session ended),
    /// so a client's call answered after this cannot overtake that stream on its way to the
    /// backend, whichever replica opens it.
    pub(super) async fn held_here_or_there(&self, rec: &SessionRecord) -> bool {
        let deadline = tokio::time::Instant::now() + super::standalone::OPEN_TIMEOUT;
        loop {
            match self.lease_of(rec).await {
                Hold::Mine => return true,
                Hold::Gone => return false,
                Hold::Theirs(_) => {}
            }
            let Some(mirror) = &self.resume.mirror else {
                return false;
            };
            if super::shared::held_tokens(&**mirror, &rec.id)
                .await
                .is_ok_and(|t| !t.is_empty())
                || tokio::time::Instant::now() >= deadline
            {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The backend's own id of the last event the session's newest held stream relayed, if
    /// its backend gives ids.
    async fn backend_resume_point(&self, rec: &SessionRecord) -> Option<String> {
        let mirror = self.resume.mirror.as_ref()?;
        let newest = *super::shared::held_tokens(&**mirror, &rec.id)
            .await
            .ok()?
            .last()?;
        super::shared::last_backend_id(&**mirror, &rec.id, newest).await
    }

    /// Says where the held stream's events are (the session's list in the shared store),
    /// awaited.
    pub(super) async fn announce(&self, rec: &SessionRecord, token: u64, resumed: bool) {
        if let Some(mirror) = &self.resume.mirror {
            if let Err(e) = mirror.register_held(&rec.id, token, resumed).await {
                crate::quiet::STORE.failed("a held stream was not announced in Redis", &e);
            }
        }
    }

    /// Takes the session's stream over when nobody holds it (its holder died, or it ended):
    /// the lease, then the backend's GET. Whether this replica holds the stream now.
    pub(super) async fn take_over(self: &Arc<Self>, pool: &Arc<Pool>, rec: &SessionRecord) -> bool {
        let opening = self.held.opening_lock(&rec.id);
        let _one_at_a_time = opening.lock().await;
        if self.held.current(rec).is_some() {
            return true;
        }
        if self.lease_of(rec).await != Hold::Mine {
            return false;
        }
        // a backend that gave event ids (it keeps events) is asked for what it sent since the
        // last one the previous holder relayed: with an event store, nothing is lost
        let backend_last = self.backend_resume_point(rec).await;
        let open = |from: Option<String>| async move {
            tokio::time::timeout(
                super::standalone::OPEN_TIMEOUT,
                self.open_upstream(pool, rec.clone(), "none", from.as_deref()),
            )
            .await
        };
        let mut resumed = backend_last.is_some();
        let mut opened = open(backend_last.clone()).await;
        if resumed && !matches!(&opened, Ok(Ok((ex, _))) if super::is_stream(ex.header())) {
            // the backend refused its own id (restarted, or its store forgot it): from now
            if let Ok(Ok((exchange, _))) = opened {
                self.sessions.release(exchange);
            }
            tracing::debug!(
                session = short(&rec.id),
                "the backend did not resume its stream: opened anew"
            );
            resumed = false;
            opened = open(None).await;
        }
        match opened {
            Ok(Ok((exchange, record))) if super::is_stream(exchange.header()) => {
                let (_, held) = self.install(pool, &record, exchange);
                self.announce(&record, held.log.token, resumed).await;
                self.resume.count_takeover(resumed);
                tracing::info!(
                    session = short(&rec.id),
                    "held stream taken over: the backend's GET is open here"
                );
                true
            }
            Ok(Ok((exchange, _))) => {
                self.sessions.release(exchange);
                let _ = self.sessions.release_lease(&rec.id, &self.owner).await;
                false
            }
            _ => {
                let _ = self.sessions.release_lease(&rec.id, &self.owner).await;
                false
            }
        }
    }
}
