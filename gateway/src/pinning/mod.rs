//! Tool-definition pinning ([governance.md](../../../docs/governance.md#tool-pinning)): a pool's
//! `tool-pinning` keeps a fingerprint of each tool's definition (`canon.rs`), trusted on first
//! use or given by the operator's pins file, in one [`Book`] per pool (`book.rs`), kept in the
//! sessions' Redis or in a state file (`store.rs`). Every `tools/list` answer of a pinned pool
//! passes through [`Pins::rewrite`] before its client gets it (the list filter of
//! `classify::Routed::filter`, on every path that filters a list: plain and member routes,
//! sessions, both bridges), where a new or changed definition is recorded and, in `enforce`
//! mode, left out; a `tools/call` is checked by [`Pins::check_call`] on the name the backend
//! will execute. The admin API's handlers are `admin.rs`.

pub mod admin;
pub mod book;
pub mod canon;
pub mod metrics;
pub mod pool;
pub mod store;
pub mod sync;

use crate::config::{Config, PinMode, ToolPinning};
use crate::session::store::RedisStore;
use crate::sync::{lock, read, write};
use book::{Book, Policy, Seen};
use bytes::Bytes;
use metrics::PinMetrics;
pub use pool::PoolPins;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};

/// Every pinned pool's book, across reloads.
pub struct Pins {
    pools: RwLock<HashMap<String, Arc<PoolPins>>>,
    /// The sessions' Redis (`sessions.store: redis`): the books are shared there.
    pub(crate) redis: Option<Arc<RedisStore>>,
    pub(crate) metrics: PinMetrics,
    /// The audit trail the changes and decisions are recorded in.
    pub(crate) audit: crate::audit::Audit,
}

/// One change a list showed, for the audit trail and the counter.
#[derive(Debug, Clone)]
pub struct Change {
    /// The tool.
    pub tool: String,
    /// `new`, `changed` or `reverted`.
    pub kind: &'static str,
    /// The fingerprint the list showed.
    pub fingerprint: String,
    /// Whether the tool was left out of the list (enforce).
    pub quarantined: bool,
}

impl Pins {
    /// No pools yet: [`Pins::configure`] adds them. `redis`: the sessions' Redis, if shared.
    pub fn new(
        redis: Option<Arc<RedisStore>>,
        metrics: PinMetrics,
        audit: crate::audit::Audit,
    ) -> Pins {
        Pins {
            pools: RwLock::default(),
            redis,
            metrics,
            audit,
        }
    }

    /// Takes `config`'s pools: a pool pinned for the first time reads its state file (with
    /// the memory store), and each applies its pins file.
    pub fn configure(&self, config: &Config) {
        let mut pools = write(&self.pools);
        for pool in &config.pools {
            let tp = &pool.tool_pinning;
            if tp.mode == PinMode::Off {
                pools.remove(&pool.name);
                continue;
            }
            let p = pools.entry(pool.name.clone()).or_insert_with(|| {
                let book = match self.redis {
                    Some(_) => Book::default(),
                    None => store::read_state(&tp.state_file, &pool.name, &self.metrics),
                };
                Arc::new(PoolPins::new(&pool.name, tp.clone(), book))
            });
            *write(&p.config) = tp.clone();
            if let Some((_, file)) = &tp.pins_file {
                let seeded = lock(&p.book).seed(file, now());
                if seeded {
                    self.saved(p, None);
                }
            }
        }
    }

    /// The pinned pool `name` (`None`: pinning is off there).
    pub fn pool(&self, name: &str) -> Option<Arc<PoolPins>> {
        read(&self.pools).get(name).cloned()
    }

    /// Every pinned pool.
    pub fn pools(&self) -> Vec<Arc<PoolPins>> {
        let mut all: Vec<_> = read(&self.pools).values().cloned().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// Whether `pool` is pinned (record or enforce): its lists are read whole.
    pub fn pinned(&self, pool: &str) -> bool {
        read(&self.pools).contains_key(pool)
    }

    /// Whether a call of `tool` on `pool` may go to the backend: in enforce mode, only a tool
    /// whose pin the last list showed. `Err`: why not (`unpinned`, `pending`, `rejected`).
    pub fn check_call(&self, pool: &str, tool: &str) -> Result<(), &'static str> {
        let Some(p) = self.pool(pool) else {
            return Ok(());
        };
        if read(&p.config).mode != PinMode::Enforce {
            return Ok(());
        }
        let book = lock(&p.book);
        let Some(entry) = book.tools.get(tool) else {
            return Err("unpinned");
        };
        if entry.serves() {
            return Ok(());
        }
        match &entry.pending {
            Some(w) if w.rejected => Err("rejected"),
            Some(_) => Err("pending"),
            None => Err("unpinned"),
        }
    }

    /// The `tools/list` answer `body` of `pool` as its client gets it: every definition noted
    /// (a new or changed one recorded), and in enforce mode the ones not approved left out.
    /// `None`: unchanged. JSON, or an event stream whose events are written again.
    pub fn rewrite(&self, pool: &str, content_type: Option<&str>, body: &[u8]) -> Option<Bytes> {
        let p = self.pool(pool)?;
        let enforce = read(&p.config).mode == PinMode::Enforce;
        let sse = mcp_wire::sse::is_event_stream(content_type);
        let mut changed = false;
        let mut out: Vec<u8> = Vec::with_capacity(body.len());
        for message in mcp_wire::sse::messages(content_type, body) {
            let mut json = message;
            let parsed = serde_json::from_slice::<Value>(&json).ok();
            let noted = parsed
                .filter(Value::is_object)
                .map(|mut v| (self.rewrite_result(&p, &mut v), v));
            match noted {
                Some((true, v)) => {
                    changed = true;
                    json = serde_json::to_vec(&v).ok()?;
                }
                Some((false, _)) => {}
                // a list the pins cannot read (not one JSON object: a lone surrogate, a
                // byte-order mark, an array) may hold a definition no one approved: in
                // enforce mode it is refused, never passed on unchecked
                None if enforce => {
                    changed = true;
                    let why =
                        "a tools/list answer the gateway cannot read for the pool's tool pins";
                    let err = crate::error::GatewayError::answer_unchecked(why);
                    json = err.body(&mcp_wire::RequestId::null()).to_vec();
                }
                None => {}
            }
            if sse {
                out.extend_from_slice(&mcp_wire::sse::event(&json));
            } else {
                out = json;
            }
        }
        changed.then(|| Bytes::from(out))
    }

    /// Notes one list result's tools; whether any was left out.
    fn rewrite_result(&self, p: &Arc<PoolPins>, v: &mut Value) -> bool {
        let Some(result) = v.get_mut("result").and_then(Value::as_object_mut) else {
            return false;
        };
        let last_page = result.get("nextCursor").is_none_or(Value::is_null);
        let Some(Value::Array(tools)) = result.get_mut("tools") else {
            return false;
        };
        // canonical forms made before the book is locked
        let seen: Vec<Option<Definition>> = tools.iter().map(Definition::of).collect();
        let config = read(&p.config).clone();
        let noted = note(p, &config, &seen, last_page);
        for why in &noted.refused {
            self.metrics
                .refused
                .with_label_values(&[p.name.as_str(), why])
                .inc();
        }
        for c in &noted.changes {
            self.metrics
                .changes
                .with_label_values(&[&p.name, c.kind])
                .inc();
            audit_change(&self.audit, &p.name, c);
        }
        if !noted.touched.is_empty() {
            self.saved(p, Some(&noted.touched));
        }
        let before = tools.len();
        let mut keep = noted.keep.into_iter();
        tools.retain(|_| keep.next().unwrap_or(false));
        tools.len() != before
    }

    /// Keeps what changed in `p`'s book: `tools` (the tools that changed; `""` for the book's
    /// own flag; `None`: all) written to Redis, or the state file rewritten soon.
    pub(crate) fn saved(&self, p: &Arc<PoolPins>, tools: Option<&[String]>) {
        p.changes.fetch_add(1, Ordering::Relaxed);
        match &self.redis {
            Some(redis) => store::put(redis, p, tools, &self.metrics),
            None => store::flush_soon(p, &self.metrics),
        }
    }
}

/// A tool entry of a list, as the book reads it.
struct Definition {
    name: String,
    canonical: String,
    fingerprint: String,
}

impl Definition {
    /// `tool`'s name and fingerprinted definition (`None`: no name, not an object).
    fn of(tool: &Value) -> Option<Definition> {
        let obj = tool.as_object()?;
        let name = obj.get("name")?.as_str().filter(|n| !n.is_empty())?;
        let canonical = canon::canonical(&canon::definition(obj));
        let fingerprint = canon::fingerprint_of(&canonical);
        Some(Definition {
            name: name.to_owned(),
            canonical,
            fingerprint,
        })
    }
}

/// What one list page did to a book.
#[derive(Default)]
struct Noted {
    /// Per tool entry, whether it stays in the list.
    keep: Vec<bool>,
    /// The changes to record.
    changes: Vec<Change>,
    /// The bounds that refused a definition.
    refused: Vec<&'static str>,
    /// The tools whose entries changed (`""`: the book's flag).
    touched: Vec<String>,
}

/// Notes a list page's definitions in `p`'s book (`last_page`: it has no `nextCursor`).
fn note(p: &PoolPins, config: &ToolPinning, seen: &[Option<Definition>], last_page: bool) -> Noted {
    let policy = Policy {
        allow_new: config.allow_new_tools,
        max_tools: config.max_tools,
        max_definition_bytes: config.max_definition_bytes,
    };
    let enforce = config.mode == PinMode::Enforce;
    let now = now();
    let mut noted = Noted::default();
    let mut book = lock(&p.book);
    for d in seen {
        let Some(d) = d else {
            noted.refused.push("unnamed");
            noted.keep.push(!enforce);
            continue;
        };
        let before = book.tools.get(&d.name).cloned();
        let verdict = book.see(policy, &d.name, &d.canonical, &d.fingerprint, now);
        let served = match verdict {
            Seen::Pinned | Seen::PinnedNow { .. } | Seen::Reverted => true,
            Seen::Quarantined { .. } => false,
            Seen::Refused(why) => {
                noted.refused.push(why);
                false
            }
        };
        let kind = match verdict {
            Seen::PinnedNow { new: true } => Some("new"),
            Seen::Reverted => Some("reverted"),
            Seen::Quarantined { fresh: true, kind } => Some(kind),
            _ => None,
        };
        if let Some(kind) = kind {
            noted.changes.push(Change {
                tool: d.name.clone(),
                kind,
                fingerprint: d.fingerprint.clone(),
                quarantined: !served && enforce,
            });
        }
        if book.tools.get(&d.name) != before.as_ref() {
            noted.touched.push(d.name.clone());
        }
        noted.keep.push(served || !enforce);
    }
    if last_page && book.list_ended() {
        noted.touched.push(String::new());
    }
    noted
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The audit record of a definition change (`mcpgw_tool_definition_changes_total` counts it):
/// `tool.definition-changed`, its pool and tool, `decision` (`quarantined` in enforce mode,
/// else `recorded`), `reason` (new, changed, reverted) and the fingerprint seen.
fn audit_change(audit: &crate::audit::Audit, pool: &str, c: &Change) {
    tracing::info!(pool, tool = %c.tool, kind = c.kind, quarantined = c.quarantined, "a tool definition changed");
    if !audit.on() {
        return;
    }
    let decision = if c.quarantined {
        "quarantined"
    } else {
        "recorded"
    };
    let record = crate::audit::Record::new("tool.definition-changed")
        .pool(pool)
        .method("tools/list")
        .name(&c.tool)
        .decision(decision)
        .reason(c.kind)
        .detail(serde_json::json!({ "fingerprint": c.fingerprint }));
    audit.record(record);
}

/// The audit record of an operator's decision on a pending definition
/// (`admin.tool-pin`: `approved` or `rejected`, with the fingerprint decided on).
pub(crate) fn audit_decision(
    audit: &crate::audit::Audit,
    pool: &str,
    tool: &str,
    decision: &'static str,
    fingerprint: &str,
) {
    tracing::info!(
        pool,
        tool,
        decision,
        "an operator decided on a tool definition"
    );
    if !audit.on() {
        return;
    }
    let record = crate::audit::Record::new("admin.tool-pin")
        .pool(pool)
        .name(tool)
        .decision(decision)
        .detail(serde_json::json!({ "fingerprint": fingerprint }));
    audit.record(record);
}

/// The answer to a call of `tool` that `pool`'s pins hold back (`why`: `pending`, `rejected`
/// or `unpinned`).
pub fn quarantined(pool: &str, tool: &str, why: &str) -> crate::error::GatewayError {
    let message = match why {
        "rejected" => format!(
            "Tool `{tool}` is quarantined: its definition changed and an operator rejected the change"
        ),
        "unpinned" => format!(
            "Tool `{tool}` is quarantined: the gateway has no approved definition of it (list the tools first, or an operator approves it)"
        ),
        _ => format!(
            "Tool `{tool}` is quarantined: its definition changed (or it is new) and waits for an operator's approval"
        ),
    };
    crate::error::GatewayError::new(crate::error::ErrorKind::ToolQuarantined, message)
        .with("pool", pool)
        .with("tool", tool)
        .with("reason", why)
}

#[cfg(test)]
mod tests;
