//! The cache's shared tier (`cache.store: redis`): `public` results kept in the sessions'
//! Redis too, so every replica answers from what one of them received. Each result lives under
//! `<prefix>cache:<key in hex>` (the key a digest: no route, name or credential in clear) for its
//! `ttlMs`, which Redis expires; the value is the time it was received (milliseconds since the
//! Unix epoch) and the answer as the gateway read it, so a replica that finds it lowers `ttlMs`
//! by its age as the one that kept it would. `private` results are never shared: a caller's
//! share of the memory store bounds them, and Redis would let one caller's results evict
//! another's.
//!
//! A change one replica hears (a `list_changed` on a stream it relays) reaches the others
//! through an epoch, `<prefix>cache:epoch`: the replica that hears it adds one; a result is
//! written with the epoch it was asked under and read only under the same; every replica
//! reads the epoch at most once per [`EPOCH_FRESH`] and drops its memory when it moved. So a
//! change is seen everywhere within that second, and a Redis round trip is paid by a memory
//! miss, or once a second, never by every hit.
use super::store::{Fresh, Key};
use crate::session::store::RedisStore;
use mcp_wire::cacheable::{self, Stored};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a replica trusts the epoch it read last.
pub const EPOCH_FRESH: Duration = Duration::from_secs(1);

/// The epoch's key.
const EPOCH: &str = "cache:epoch";

/// Public results in Redis, beside the sessions.
pub struct Shared {
    redis: Arc<RedisStore>,
    /// The epoch read last (`None`: reading it failed), and when.
    epoch: Mutex<Option<(Option<u64>, Instant)>>,
}

/// Why the shared tier did not answer.
#[derive(Debug)]
pub struct Unshared(pub String);

impl Shared {
    /// The shared tier in `redis` (the sessions' store).
    pub fn new(redis: Arc<RedisStore>) -> Shared {
        Shared {
            redis,
            epoch: Mutex::new(None),
        }
    }

    /// The epoch: the one read within [`EPOCH_FRESH`], else Redis's now (0 before any change).
    /// A failure to read it is remembered as long: while Redis does not answer, requests
    /// wait for it once a second, not each.
    pub async fn epoch(&self) -> Result<u64, Unshared> {
        let now = Instant::now();
        if let Some((epoch, read)) = *crate::sync::lock(&self.epoch) {
            if now.saturating_duration_since(read) < EPOCH_FRESH {
                return epoch.ok_or_else(|| Unshared("Redis failed within the last second".into()));
            }
        }
        let value = self.redis.get_value(EPOCH).await;
        let epoch = value.map(|v| v.and_then(|v| v.parse().ok()).unwrap_or(0));
        *crate::sync::lock(&self.epoch) = Some((epoch.as_ref().ok().copied(), now));
        epoch.map_err(unshared)
    }

    /// A change was heard: every replica's results so far are stale.
    pub async fn changed(&self) -> Result<(), Unshared> {
        let epoch = self.redis.increment(EPOCH).await.map_err(unshared)?;
        *crate::sync::lock(&self.epoch) = Some((Some(epoch), Instant::now()));
        Ok(())
    }

    /// The fresh result at `key` kept under `epoch`, if a replica kept one (`None` when Redis
    /// holds none, one of another epoch, or one that no longer reads as a result).
    pub async fn get(&self, key: &Key, epoch: u64) -> Result<Option<Fresh>, Unshared> {
        let value = self.redis.get_value(&name(key)).await.map_err(unshared)?;
        Ok(value.and_then(|v| read(&v, epoch, now_ms())))
    }

    /// Keeps `stored`, received now under `epoch`, for its `ttlMs`.
    pub async fn put(&self, key: &Key, stored: &Stored, epoch: u64) -> Result<(), Unshared> {
        let value = write(stored, epoch, now_ms());
        let ttl = Duration::from_millis(stored.ttl_ms);
        let put = self.redis.put_value(&name(key), &value, ttl).await;
        put.map_err(unshared)
    }
}

fn unshared(e: impl std::fmt::Display) -> Unshared {
    Unshared(e.to_string())
}

/// The Redis key of `key` (the store's prefix goes before it).
fn name(key: &Key) -> String {
    let mut name = String::with_capacity(6 + 64);
    name.push_str("cache:");
    for b in key {
        let _ = write!(name, "{b:02x}");
    }
    name
}

fn now_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// The value of `stored` received at `at_ms` under `epoch`: `<epoch> <at_ms>\n` and a
/// JSON-RPC answer holding its result bytes as they are.
fn write(stored: &Stored, epoch: u64, at_ms: u64) -> String {
    let result = String::from_utf8_lossy(&stored.result);
    format!("{epoch} {at_ms}\n{{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{result}}}")
}

/// A value [`write`] wrote, read at `now_ms` under `epoch`: the result and its age (a clock
/// behind the writer's reads as age 0); `None` when it is of another epoch, past its
/// `ttlMs`, or does not read.
fn read(value: &str, epoch: u64, now_ms: u64) -> Option<Fresh> {
    let (head, answer) = value.split_once('\n')?;
    let (written, at) = head.split_once(' ')?;
    if written.parse::<u64>().ok()? != epoch {
        return None;
    }
    let at: u64 = at.parse().ok()?;
    let stored = cacheable::stored(answer.as_bytes()).ok()?;
    let age_ms = now_ms.saturating_sub(at);
    (age_ms < stored.ttl_ms).then(|| Fresh {
        stored: Arc::new(stored),
        age_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_reads_back_as_written_with_its_age() {
        let answer = br#"{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"\u00e9"}],"ttlMs":5000,"cacheScope":"public"}}"#;
        let stored = cacheable::stored(answer).unwrap();
        let value = write(&stored, 4, 1_000);
        let fresh = read(&value, 4, 3_500).unwrap();
        assert_eq!(*fresh.stored, stored, "the result's own bytes, as received");
        assert_eq!(fresh.age_ms, 2_500);
        assert!(read(&value, 5, 3_500).is_none(), "a change was heard since");
        assert!(read(&value, 4, 6_000).is_none(), "past its ttl");
        assert_eq!(read(&value, 4, 500).unwrap().age_ms, 0, "a clock behind");
        assert!(read("4 x\n{}", 4, 0).is_none());
        assert!(read("no line", 4, 0).is_none());
    }

    #[test]
    fn keys_are_hex_digests() {
        let name = name(&[0xab; 32]);
        assert_eq!(name.len(), 6 + 64);
        assert!(name.starts_with("cache:abab"));
    }
}
