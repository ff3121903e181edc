//! The cache's shared tier (`cache.store: redis`): `public` results kept in the sessions' Redis
//! too, so every replica answers from what one of them received. `private` results are never
//! shared: a caller's share of the memory store bounds them, and Redis would let one caller's
//! results evict another's.
//!
//! - Each result lives under `<prefix>cache:<key in hex>:<epochs in hex>` (the key a digest: no
//!   route, name or credential in clear; the epochs a digest of its pools' epochs) for its
//!   `ttlMs`, which Redis expires. A change moves an epoch, so a result of an older epoch is
//!   never read again and simply expires.
//! - The value is `<mac> <received at, ms since the Unix epoch>\n<the answer>`; the MAC (the
//!   sealer's, `mcp_wire::seal::Purpose::CacheEntry`: a key of its own derived from the one
//!   configured key) binds the entry's name and the rest of the value, so an entry planted or
//!   changed by anyone who can write to Redis reads as a miss (`shared-forged`).
//! - A change one replica hears moves its pool's epoch, `<prefix>cache:epoch:<pool>`, at most
//!   once per [`ANNOUNCE_EVERY`] per pool ([`Shared::announce`]), however many it hears; every
//!   replica reads a pool's epoch at most once per [`EPOCH_FRESH`]. A change is seen everywhere
//!   within about a second, and a Redis round trip is paid by a memory miss, never by a hit.
//! - Writes are spawned (at most [`PUTS_IN_FLIGHT`] at once, and only within
//!   `cache.shared-max-bytes`: the bytes this replica wrote that Redis has not expired yet) and
//!   waited for at most [`PUT_WAIT`]: a replica asked next finds the result, a Redis that hangs
//!   costs a miss at most that, and a loop of made-up requests cannot fill the Redis the
//!   sessions live in. None is made when reading the epochs just failed.
use super::store::{Fresh, Key};
use crate::session::store::RedisStore;
use crate::sync::lock;
use mcp_wire::cacheable::{self, Stored};
use mcp_wire::seal::{Purpose, Sealer};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::Semaphore;

/// How long a replica trusts the epoch it read last.
pub const EPOCH_FRESH: Duration = Duration::from_secs(1);

/// The shortest time between two writes of one pool's epoch.
pub const ANNOUNCE_EVERY: Duration = Duration::from_millis(250);

/// The most writes of results in flight at once (past it, a result is not shared).
pub const PUTS_IN_FLIGHT: usize = 32;

/// The longest a miss waits for its write to Redis before its client is answered (past it,
/// the write goes on behind the answer).
pub const PUT_WAIT: Duration = Duration::from_millis(100);

/// The longest a write is counted in the budget (a `ttlMs` past it is counted for a year).
const YEAR: Duration = Duration::from_secs(86_400 * 365);

/// Public results in Redis, beside the sessions.
pub struct Shared {
    redis: Arc<RedisStore>,
    sealer: Arc<Sealer>,
    /// Each pool's epoch: the last read (`None` if that failed; the last known kept), when.
    epochs: Mutex<HashMap<String, Epoch>>,
    /// Each pool's announcing: a change not written yet, a writer running.
    announcing: Mutex<HashMap<String, (bool, bool)>>,
    puts: Arc<Semaphore>,
    budget: Arc<Mutex<Budget>>,
}

#[derive(Debug, Clone, Copy)]
struct Epoch {
    known: u64,
    read_ok: bool,
    at: Instant,
}

/// Why the shared tier did not answer.
#[derive(Debug)]
pub struct Unshared(pub String);

/// Why a read found no result.
#[derive(Debug)]
pub enum Read {
    /// Redis did not answer.
    Failed(Unshared),
    /// An entry whose MAC does not hold: planted or changed.
    Forged,
}

/// Why a result was not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skipped {
    /// [`PUTS_IN_FLIGHT`] writes are in flight (Redis is slow).
    Busy,
    /// The bytes written and not expired yet are at `cache.shared-max-bytes`.
    Full,
}

impl Skipped {
    /// Its metric label.
    pub fn label(self) -> &'static str {
        match self {
            Skipped::Busy => "shared-busy",
            Skipped::Full => "shared-full",
        }
    }
}

/// The bytes this replica wrote, by when Redis expires them.
#[derive(Debug, Default)]
struct Budget {
    bytes: usize,
    expiries: BTreeMap<(Instant, u64), usize>,
    tick: u64,
}

impl Budget {
    /// Counts `bytes` until `until` if they fit within `max` (after forgetting what expired).
    fn take(&mut self, bytes: usize, until: Instant, max: usize, now: Instant) -> bool {
        while let Some((&(at, tick), &b)) = self.expiries.first_key_value() {
            if at > now {
                break;
            }
            self.expiries.remove(&(at, tick));
            self.bytes -= b;
        }
        if self.bytes + bytes > max {
            return false;
        }
        self.tick += 1;
        self.expiries.insert((until, self.tick), bytes);
        self.bytes += bytes;
        true
    }
}

impl Shared {
    /// The shared tier in `redis` (the sessions' store), its entries' MACs made with
    /// `sealer`.
    pub fn new(redis: Arc<RedisStore>, sealer: Arc<Sealer>) -> Shared {
        Shared {
            redis,
            sealer,
            epochs: Mutex::new(HashMap::new()),
            announcing: Mutex::new(HashMap::new()),
            puts: Arc::new(Semaphore::new(PUTS_IN_FLIGHT)),
            budget: Arc::new(Mutex::new(Budget::default())),
        }
    }

    /// The epochs of `scopes` as a digest: each read within [`EPOCH_FRESH`], else Redis's now
    /// (0 before any change), and whether all were read (a failure is remembered as long:
    /// while Redis does not answer, requests wait for it once a second, not each; the digest
    /// then holds the last known).
    pub async fn epochs(&self, scopes: &[String]) -> (Key, Result<(), Unshared>) {
        let mut all = Ok(());
        for scope in scopes {
            if let Err(e) = self.epoch(scope).await {
                all = Err(e);
            }
        }
        (self.known(scopes), all)
    }

    /// The digest of the last known epochs of `scopes` (no Redis round trip).
    pub fn known(&self, scopes: &[String]) -> Key {
        let epochs = lock(&self.epochs);
        let mut h = Sha256::new();
        for scope in scopes {
            let known = epochs.get(scope).map_or(0, |e| e.known);
            h.update((scope.len() as u64).to_be_bytes());
            h.update(scope.as_bytes());
            h.update(known.to_be_bytes());
        }
        h.finalize().into()
    }

    async fn epoch(&self, scope: &str) -> Result<(), Unshared> {
        let now = Instant::now();
        if let Some(e) = lock(&self.epochs).get(scope) {
            if now.saturating_duration_since(e.at) < EPOCH_FRESH {
                return match e.read_ok {
                    true => Ok(()),
                    false => Err(Unshared("Redis failed within the last second".into())),
                };
            }
        }
        let value = self.redis.get_value(&epoch_name(scope)).await;
        let read = value.map(|v| v.and_then(|v| v.parse().ok()).unwrap_or(0));
        let mut epochs = lock(&self.epochs);
        let known = epochs.get(scope).map_or(0, |e| e.known);
        let epoch = Epoch {
            known: *read.as_ref().unwrap_or(&known),
            read_ok: read.is_ok(),
            at: now,
        };
        epochs.insert(scope.to_owned(), epoch);
        read.map(|_| ()).map_err(unshared)
    }

    /// A change was heard in `scope`: its results so far are stale on every replica. The
    /// epoch is moved behind the stream that heard it, at most once per [`ANNOUNCE_EVERY`]:
    /// a change heard while a write is due is covered by that write, one heard just after a
    /// write by one more when the interval ends. `failed` hears a write that failed.
    pub fn announce(
        self: &Arc<Self>,
        scope: &str,
        failed: impl Fn(Unshared) + Send + Sync + 'static,
    ) {
        {
            let mut announcing = lock(&self.announcing);
            let (dirty, running) = announcing.entry(scope.to_owned()).or_default();
            *dirty = true;
            if std::mem::replace(running, true) {
                return;
            }
        }
        let (shared, scope) = (self.clone(), scope.to_owned());
        tokio::spawn(async move {
            loop {
                {
                    let mut announcing = lock(&shared.announcing);
                    let Some((dirty, running)) = announcing.get_mut(&scope) else {
                        return;
                    };
                    if !std::mem::take(dirty) {
                        *running = false;
                        return;
                    }
                }
                match shared.redis.increment(&epoch_name(&scope)).await {
                    Ok(epoch) => {
                        let at = Instant::now();
                        let e = Epoch {
                            known: epoch,
                            read_ok: true,
                            at,
                        };
                        lock(&shared.epochs).insert(scope.clone(), e);
                    }
                    Err(e) => failed(unshared(e)),
                }
                tokio::time::sleep(ANNOUNCE_EVERY).await;
            }
        });
    }

    /// The fresh result at `key` kept under the epochs `epochs`, if a replica kept one (`None`
    /// when Redis holds none, or one that no longer reads as a result).
    pub async fn get(&self, key: &Key, epochs: &Key) -> Result<Option<Fresh>, Read> {
        let name = name(key, epochs);
        let value = self.redis.get_value(&name).await;
        let Some(value) = value.map_err(|e| Read::Failed(unshared(e)))? else {
            return Ok(None);
        };
        read(&self.sealer, &name, &value, now_ms())
    }

    /// Keeps `stored`, received now under `epochs`, for its `ttlMs`: spawned, when fewer than
    /// [`PUTS_IN_FLIGHT`] are and it fits within `max_bytes` (the bytes this replica wrote that
    /// have not expired); the caller may wait for the write's end (a bounded time: past it the
    /// write goes on behind the answer). `failed` hears a write that failed.
    pub fn put_behind(
        &self,
        (key, epochs): (Key, Key),
        stored: Arc<Stored>,
        max_bytes: usize,
        failed: impl FnOnce(Unshared) + Send + 'static,
    ) -> Result<tokio::task::JoinHandle<()>, Skipped> {
        let permit = self.puts.clone().try_acquire_owned();
        let permit = permit.map_err(|_| Skipped::Busy)?;
        let name = name(&key, &epochs);
        let value = write(&self.sealer, &name, &stored, now_ms());
        let ttl = Duration::from_millis(stored.ttl_ms);
        let now = Instant::now();
        let until = now.checked_add(ttl.min(YEAR)).unwrap_or(now);
        let bytes = name.len() + value.len();
        if !lock(&self.budget).take(bytes, until, max_bytes, now) {
            return Err(Skipped::Full);
        }
        let redis = self.redis.clone();
        Ok(tokio::spawn(async move {
            let _permit = permit;
            if let Err(e) = redis.put_value(&name, &value, ttl).await {
                failed(unshared(e));
            }
        }))
    }
}

fn unshared(e: impl std::fmt::Display) -> Unshared {
    Unshared(e.to_string())
}

/// The Redis key of a pool's epoch.
fn epoch_name(scope: &str) -> String {
    format!("cache:epoch:{scope}")
}

/// The Redis key of `key` under `epochs` (the store's prefix goes before it).
fn name(key: &Key, epochs: &Key) -> String {
    let mut name = String::with_capacity(6 + 64 + 1 + 16);
    name.push_str("cache:");
    for b in key {
        let _ = write!(name, "{b:02x}");
    }
    name.push(':');
    for b in &epochs[..8] {
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

/// The value of `stored` received at `at_ms`, kept under `name`: `<mac> <at_ms>\n` and a
/// JSON-RPC answer holding its result bytes as they are; the MAC binds the name and the rest.
fn write(sealer: &Sealer, name: &str, stored: &Stored, at_ms: u64) -> String {
    let result = String::from_utf8_lossy(&stored.result);
    let rest = format!("{at_ms}\n{{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{result}}}");
    let mac = sealer.seal(Purpose::CacheEntry, &bound(name, &rest), b"");
    format!("{mac} {rest}")
}

/// What an entry's MAC binds: its name and its value after the MAC.
fn bound(name: &str, rest: &str) -> Vec<u8> {
    let mut bound = Vec::with_capacity(8 + name.len() + rest.len());
    bound.extend_from_slice(&(name.len() as u64).to_be_bytes());
    bound.extend_from_slice(name.as_bytes());
    bound.extend_from_slice(rest.as_bytes());
    bound
}

/// A value [`write`] wrote under `name`, read at `now_ms`: the result and its age (a clock
/// behind the writer's reads as age 0); `None` when it is past its `ttlMs` or does not read as
/// a result; `Forged` when its MAC does not hold.
fn read(sealer: &Sealer, name: &str, value: &str, now_ms: u64) -> Result<Option<Fresh>, Read> {
    let (mac, rest) = value.split_once(' ').ok_or(Read::Forged)?;
    if sealer
        .open(Purpose::CacheEntry, &bound(name, rest), mac)
        .is_err()
    {
        return Err(Read::Forged);
    }
    let Some((at, answer)) = rest.split_once('\n') else {
        return Ok(None);
    };
    let (Ok(at), Ok(stored)) = (at.parse::<u64>(), cacheable::stored(answer.as_bytes())) else {
        return Ok(None);
    };
    let age_ms = now_ms.saturating_sub(at);
    Ok((age_ms < stored.ttl_ms).then(|| Fresh {
        stored: Arc::new(stored),
        age_ms,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_reads_back_as_written_with_its_age() {
        let sealer = Sealer::new([7; 32]);
        let answer = br#"{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"\u00e9"}],"ttlMs":5000,"cacheScope":"public"}}"#;
        let stored = cacheable::stored(answer).unwrap();
        let value = write(&sealer, "cache:k", &stored, 1_000);
        let fresh = read(&sealer, "cache:k", &value, 3_500).unwrap().unwrap();
        assert_eq!(*fresh.stored, stored, "the result's own bytes, as received");
        assert_eq!(fresh.age_ms, 2_500);
        assert!(
            read(&sealer, "cache:k", &value, 6_000).unwrap().is_none(),
            "past its ttl"
        );
        let behind = read(&sealer, "cache:k", &value, 500).unwrap().unwrap();
        assert_eq!(behind.age_ms, 0, "a clock behind");
    }

    #[test]
    fn an_entry_planted_changed_or_moved_to_another_key_is_forged() {
        let sealer = Sealer::new([7; 32]);
        let answer =
            br#"{"jsonrpc":"2.0","id":7,"result":{"tools":[],"ttlMs":5000,"cacheScope":"public"}}"#;
        let stored = cacheable::stored(answer).unwrap();
        let value = write(&sealer, "cache:k", &stored, 1_000);
        let changed = value.replace("\"tools\":[]", "\"tools\":[{\"name\":\"evil\"}]");
        let forged =
            |v: &str, name: &str| matches!(read(&sealer, name, v, 2_000), Err(Read::Forged));
        assert!(forged(&changed, "cache:k"), "changed");
        assert!(forged(&value, "cache:other"), "moved to another key");
        let unsigned = "x 1000\n{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{\"tools\":[],\"ttlMs\":5000,\"cacheScope\":\"public\"}}";
        assert!(forged(unsigned, "cache:k"), "planted");
        assert!(forged("no mac", "cache:k"));
        let other_key = write(&Sealer::new([8; 32]), "cache:k", &stored, 1_000);
        assert!(forged(&other_key, "cache:k"), "another replica's key");
    }

    #[test]
    fn names_hold_the_key_and_the_epochs() {
        let name = name(&[0xab; 32], &[0x01; 32]);
        assert_eq!(name.len(), 6 + 64 + 1 + 16);
        assert!(name.starts_with("cache:abab"));
        assert!(name.ends_with(":0101010101010101"));
        assert_ne!(
            super::name(&[0xab; 32], &[0x02; 32]),
            name,
            "a new epoch, a new name"
        );
    }

    #[test]
    fn the_budget_takes_what_fits_and_gives_back_what_expired() {
        let mut b = Budget::default();
        let now = Instant::now();
        let soon = now + Duration::from_secs(1);
        assert!(b.take(60, soon, 100, now));
        assert!(!b.take(60, soon, 100, now), "past the budget");
        assert!(b.take(40, soon, 100, now));
        assert!(b.take(60, soon, 100, soon), "the first ones expired");
    }
}
