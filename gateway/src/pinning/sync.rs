//! Every replica reads the pinned pools' books from Redis twice a second ([`PinSync`]), so an
//! approval or a change another replica saw is seen here.

use super::book::{Book, Entry};
use super::pool::PoolPins;
use super::store::key;
use super::Pins;
use crate::session::store::RedisStore;
use crate::sync::{lock, read};
use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// How often a replica reads the books from Redis.
const SYNC_EVERY: Duration = Duration::from_millis(500);

/// Reads `p`'s book from Redis and takes it, unless it changed here meanwhile (then the next
/// read does); the pins file applied again over it.
async fn sync_one(pins: &Pins, redis: &RedisStore, p: &Arc<PoolPins>) {
    if p.writing.load(Ordering::Acquire) > 0 {
        return;
    }
    let before = p.changes.load(Ordering::Acquire);
    let max = read(&p.config).max_tools + 1;
    let fields = match redis.hash_all(&key(&p.name), max).await {
        Ok(Some(fields)) => fields,
        Ok(None) => {
            tracing::warn!(pool = %p.name, "tool pins: more tools in Redis than max-tools, not read");
            pins.metrics
                .store_errors
                .with_label_values(&[&p.name])
                .inc();
            return;
        }
        Err(e) => {
            tracing::debug!(pool = %p.name, error = %e, "tool pins: Redis not read");
            return;
        }
    };
    let mut book = Book::default();
    for (field, value) in fields {
        if field.is_empty() {
            book.initialized = serde_json::from_str::<serde_json::Value>(&value)
                .ok()
                .and_then(|v| v.get("initialized")?.as_bool())
                .unwrap_or(false);
        } else if let Ok(entry) = serde_json::from_str::<Entry>(&value) {
            book.tools.insert(field, entry);
        }
    }
    let seed = read(&p.config).pins_file.clone();
    let mut mine = lock(&p.book);
    if p.changes.load(Ordering::Acquire) != before || p.writing.load(Ordering::Acquire) > 0 {
        return;
    }
    *mine = book;
    let seeded = seed.is_some_and(|(_, file)| mine.seed(&file, super::now()));
    drop(mine);
    if seeded {
        pins.saved(p, None);
    }
}

/// Reads every pinned pool's book from Redis twice a second, so an approval or a change seen
/// by another replica is seen here.
pub struct PinSync {
    /// The pins.
    pub pins: Arc<Pins>,
}

#[async_trait]
impl BackgroundService for PinSync {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let Some(redis) = self.pins.redis.clone() else {
            return;
        };
        loop {
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = tokio::time::sleep(SYNC_EVERY) => {
                    for p in self.pins.pools() {
                        sync_one(&self.pins, &redis, &p).await;
                    }
                }
            }
        }
    }
}
