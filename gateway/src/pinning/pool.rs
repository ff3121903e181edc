//! One pinned pool: its config, its book, and what its store has to know of its changes.

use super::book::Book;
use crate::config::ToolPinning;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Mutex, RwLock};

/// One pinned pool.
pub struct PoolPins {
    /// The pool's name.
    pub name: String,
    /// Its `tool-pinning`, as the last config said.
    pub(crate) config: RwLock<ToolPinning>,
    /// Its pins.
    pub(crate) book: Mutex<Book>,
    /// Moved by every change: what the state file last wrote, what a Redis read may replace.
    pub(crate) changes: AtomicU64,
    /// Writes to Redis not answered yet (a read of Redis does not replace the book meanwhile).
    pub(crate) writing: AtomicU64,
    /// A write of the state file is due.
    pub(crate) flush_due: AtomicBool,
}

impl PoolPins {
    /// Pool `name` under `config`, with `book`.
    pub fn new(name: &str, config: ToolPinning, book: Book) -> PoolPins {
        PoolPins {
            name: name.to_owned(),
            config: RwLock::new(config),
            book: Mutex::new(book),
            changes: AtomicU64::new(0),
            writing: AtomicU64::new(0),
            flush_due: AtomicBool::new(false),
        }
    }
}
