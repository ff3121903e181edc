//! A held stream read live: a [`Follower`] waits on a stream's next entries with `XREAD BLOCK`
//! on a connection of its own (`blocking.rs`).

use super::blocking::Blocking;
use super::entry::Entry;
use super::store::RedisStore;
use crate::session::store::streams::{StreamEntry, StreamFollower};
use crate::session::store::StoreError;
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

/// What `XREAD` answers: per stream key, its entries.
type XreadReply = Vec<(String, Vec<Entry>)>;

/// Waits on streams' next entries on a connection of its own.
pub(super) struct Follower {
    pub(super) store: Arc<RedisStore>,
    pub(super) conn: Blocking,
}

#[async_trait]
impl StreamFollower for Follower {
    async fn wait(
        &mut self,
        session: &str,
        token: u64,
        after: Option<u64>,
        count: usize,
        block: Duration,
    ) -> Result<Vec<StreamEntry>, StoreError> {
        let after = match after {
            Some(seq) => format!("{seq}-1"),
            None => "0-0".to_owned(),
        };
        let mut pipe = redis::pipe();
        pipe.cmd("XREAD")
            .arg("COUNT")
            .arg(count)
            .arg("BLOCK")
            .arg(block.as_millis() as u64)
            .arg("STREAMS")
            .arg(self.store.event_key(session, token))
            .arg(after);
        let (reply,): (Option<XreadReply>,) = self.conn.run(&pipe, block).await?;
        Ok(reply
            .into_iter()
            .flatten()
            .flat_map(|(_, entries)| entries)
            .map(|e| e.0)
            .collect())
    }
}
