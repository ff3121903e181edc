//! A capture file and the thread that writes it: bounded queue, size-bounded file, rotation
//! to FILE.1 … FILE.N (the oldest removed).

use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};

/// Records queued before new ones are dropped.
const QUEUE: usize = 4096;

struct Line {
    text: String,
    max_file_bytes: u64,
    max_files: usize,
}

/// One capture file with its writer thread.
#[derive(Debug)]
pub struct Sink {
    tx: SyncSender<Line>,
    dropped: AtomicU64,
    path: PathBuf,
}

impl Sink {
    /// Starts the writer thread of `path`.
    pub fn start(path: PathBuf) -> Sink {
        let (tx, rx) = sync_channel::<Line>(QUEUE);
        let at = path.clone();
        let spawned = std::thread::Builder::new()
            .name("mcpgw-capture".into())
            .spawn(move || {
                let mut writer = Writer {
                    path: at,
                    file: None,
                    size: 0,
                };
                while let Ok(line) = rx.recv() {
                    writer.write(&line);
                }
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "capture: cannot start the writer thread");
        }
        Sink {
            tx,
            dropped: AtomicU64::new(0),
            path,
        }
    }

    /// Queues one record; drops it (and counts) when the writer is behind.
    pub fn send(&self, record: Value, max_file_bytes: u64, max_files: usize) {
        let mut text = record.to_string();
        text.push('\n');
        let line = Line {
            text,
            max_file_bytes,
            max_files,
        };
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = self.tx.try_send(line) {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n == 1 || n.is_multiple_of(1000) {
                tracing::warn!(file = %self.path.display(), dropped = n, "capture: records dropped (the writer is behind)");
            }
        }
    }
}

struct Writer {
    path: PathBuf,
    file: Option<File>,
    size: u64,
}

impl Writer {
    fn write(&mut self, line: &Line) {
        let len = line.text.len() as u64;
        if self.file.is_some() && self.size > 0 && self.size + len > line.max_file_bytes {
            self.file = None;
            rotate(&self.path, line.max_files);
            self.size = 0;
        }
        if self.file.is_none() {
            match OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
            {
                Ok(f) => {
                    self.size = f.metadata().map(|m| m.len()).unwrap_or(0);
                    self.file = Some(f);
                }
                Err(e) => {
                    tracing::warn!(file = %self.path.display(), error = %e, "capture: cannot open the file");
                    return;
                }
            }
            if self.size > 0 && self.size + len > line.max_file_bytes {
                self.file = None;
                rotate(&self.path, line.max_files);
                return self.write(line);
            }
        }
        if let Some(f) = self.file.as_mut() {
            match f.write_all(line.text.as_bytes()) {
                Ok(()) => self.size += len,
                Err(e) => {
                    tracing::warn!(file = %self.path.display(), error = %e, "capture: write failed");
                    self.file = None;
                }
            }
        }
    }
}

fn numbered(path: &Path, n: usize) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{n}"));
    PathBuf::from(s)
}

/// FILE → FILE.1 → … → FILE.max_files; the oldest goes. With `max_files` 0 the file is
/// removed (a fresh one starts).
pub fn rotate(path: &Path, max_files: usize) {
    if max_files == 0 {
        let _ = std::fs::remove_file(path);
        return;
    }
    let _ = std::fs::remove_file(numbered(path, max_files));
    for n in (1..max_files).rev() {
        let _ = std::fs::rename(numbered(path, n), numbered(path, n + 1));
    }
    let _ = std::fs::rename(path, numbered(path, 1));
}
