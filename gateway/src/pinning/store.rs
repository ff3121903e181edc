//! Where the books are kept: with `sessions.store: redis`, one hash per pool in the sessions'
//! Redis (`<prefix>pins:<pool>`: a field per tool holding its [`Entry`] as JSON, and the field
//! `""` the book's own flag), written on every change and read back by every replica twice a
//! second (`sync.rs`); with the memory store, the pool's state file (the [`Book`] as JSON,
//! written whole to a temporary file and renamed over it, at most every 200 ms).

use super::book::Book;
use super::metrics::PinMetrics;
use super::pool::PoolPins;
use crate::session::store::RedisStore;
use crate::sync::{lock, read};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// How long a change waits before the state file is written (changes meanwhile go with it).
const FLUSH_AFTER: Duration = Duration::from_millis(200);

/// The pool's book from its state file: empty when there is none; one that cannot be read
/// or parsed is logged, counted and started empty (trust on first use again).
pub(super) fn read_state(path: &Path, pool: &str, metrics: &PinMetrics) -> Book {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Book::default(),
        Err(e) => {
            tracing::error!(pool, file = %path.display(), error = %e, "tool pins: cannot read the state file");
            metrics.store_errors.with_label_values(&[pool]).inc();
            return Book::default();
        }
    };
    serde_json::from_str(&text).unwrap_or_else(|e| {
        tracing::error!(pool, file = %path.display(), error = %e, "tool pins: the state file is not a pins book");
        metrics.store_errors.with_label_values(&[pool]).inc();
        Book::default()
    })
}

/// Writes `p`'s state file soon (once for the changes of the next 200 ms); now, when no
/// runtime runs yet (at start).
pub(super) fn flush_soon(p: &Arc<PoolPins>, metrics: &PinMetrics) {
    if p.flush_due.swap(true, Ordering::AcqRel) {
        return;
    }
    let (p, metrics) = (p.clone(), metrics.clone());
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            rt.spawn(async move {
                tokio::time::sleep(FLUSH_AFTER).await;
                p.flush_due.store(false, Ordering::Release);
                let _ = tokio::task::spawn_blocking(move || flush(&p, &metrics)).await;
            });
        }
        Err(_) => {
            p.flush_due.store(false, Ordering::Release);
            flush(&p, &metrics);
        }
    }
}

/// Writes `p`'s state file now.
fn flush(p: &PoolPins, metrics: &PinMetrics) {
    let path = read(&p.config).state_file.clone();
    let text = match serde_json::to_string(&*lock(&p.book)) {
        Ok(text) => text,
        Err(_) => return,
    };
    let tmp = path.with_extension("tmp");
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(e) = written {
        tracing::error!(pool = %p.name, file = %path.display(), error = %e, "tool pins: cannot write the state file");
        metrics.store_errors.with_label_values(&[&p.name]).inc();
    }
}

/// The hash of `pool`'s book (under the store's prefix).
pub(super) fn key(pool: &str) -> String {
    format!("pins:{pool}")
}

/// Writes `tools` of `p`'s book (`""`: the book's flag; `None`: every tool) to Redis, behind
/// the caller (it waits for nothing).
pub(super) fn put(
    redis: &Arc<RedisStore>,
    p: &Arc<PoolPins>,
    tools: Option<&[String]>,
    metrics: &PinMetrics,
) {
    let fields: Vec<(String, String)> = {
        let book = lock(&p.book);
        let names: Vec<String> = match tools {
            Some(t) => t.to_vec(),
            None => std::iter::once(String::new())
                .chain(book.tools.keys().cloned())
                .collect(),
        };
        names
            .into_iter()
            .filter_map(|name| {
                let value = if name.is_empty() {
                    serde_json::json!({"initialized": book.initialized}).to_string()
                } else {
                    serde_json::to_string(book.tools.get(&name)?).ok()?
                };
                Some((name, value))
            })
            .collect()
    };
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        // at start: `PinSync` applies the pins file again after its first read
        return;
    };
    p.writing.fetch_add(1, Ordering::AcqRel);
    let (redis, p, metrics) = (redis.clone(), p.clone(), metrics.clone());
    rt.spawn(async move {
        let key = key(&p.name);
        for (field, value) in fields {
            if let Err(e) = redis.hash_put(&key, &field, &value).await {
                tracing::warn!(pool = %p.name, error = %e, "tool pins: not written to Redis");
                metrics.store_errors.with_label_values(&[&p.name]).inc();
                break;
            }
        }
        p.writing.fetch_sub(1, Ordering::AcqRel);
    });
}
