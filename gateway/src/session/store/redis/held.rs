//! The sessions' lists of held streams in Redis, and held streams read live.
//!
//! The replica holding a session's stream lease appends each held stream's token to the
//! session's list `<prefix>{<session>}:held` (16 hex digits, `+` after one that began with the
//! backend's replay after its own id; newest last, the last 16 kept), which expires `window`
//! after its holder stopped refreshing it (`events.rs`'s liveness task refreshes it while this
//! replica holds the stream). A [`Follower`] waits on a stream's next entries with
//! `XREAD BLOCK` on a connection of its own (`blocking.rs`), so an event reaches a client GET
//! on another replica about one Redis round trip after its holder wrote it.

use super::events::RedisEvents;
use crate::session::store::StoreError;

/// Held streams kept per session in its list.
const KEPT: i64 = 16;

impl RedisEvents {
    pub(super) fn held_key(&self, session: &str) -> String {
        self.store.session_key(session, "held")
    }

    /// Appends `token` to the session's held streams (awaited: a client GET on another
    /// replica finds it as soon as the caller goes on).
    pub(super) async fn register_held_in_redis(
        &self,
        session: &str,
        token: u64,
        resumed: bool,
    ) -> Result<(), StoreError> {
        let key = self.held_key(session);
        let mut pipe = redis::pipe();
        let mark = if resumed { "+" } else { "" };
        pipe.cmd("RPUSH")
            .arg(&key)
            .arg(format!("{token:016x}{mark}"))
            .ignore();
        pipe.cmd("LTRIM").arg(&key).arg(-KEPT).arg(-1).ignore();
        pipe.cmd("PEXPIRE").arg(&key).arg(self.window_ms()).ignore();
        self.store.run::<()>(&pipe).await?;
        self.held_live.insert(key, ());
        Ok(())
    }

    /// The session's held streams, oldest first, each with whether it was resumed.
    pub(super) async fn held_streams_in_redis(
        &self,
        session: &str,
    ) -> Result<Vec<(u64, bool)>, StoreError> {
        let mut pipe = redis::pipe();
        pipe.cmd("LRANGE")
            .arg(self.held_key(session))
            .arg(0)
            .arg(-1);
        let (tokens,): (Vec<String>,) = self.store.run(&pipe).await?;
        Ok(tokens
            .iter()
            .filter_map(|t| {
                let (hex, resumed) = match t.strip_suffix('+') {
                    Some(hex) => (hex, true),
                    None => (t.as_str(), false),
                };
                Some((u64::from_str_radix(hex, 16).ok()?, resumed))
            })
            .collect())
    }
}
