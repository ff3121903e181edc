//! Reading one secret, from a file or an environment variable (a file's one trailing newline
//! dropped; an error names where from, never a value): the pools' header secrets
//! (`credentials.rs`) and the OAuth client secrets (`tokens.rs`) alike, and from a runtime
//! thread on a blocking one, within a timeout, one read of a file at a time.

use crate::config::SecretSource;
use std::sync::Arc;

/// [`read_secret`] from a runtime thread (a token fetch): a file is read on a blocking thread,
/// within `timeout` (a file on a slow or hung mount held the runtime thread, and every request
/// on it, as long as it took). Reads of one file take turns ([`turn`]).
pub(super) async fn read_secret_off_runtime(
    source: &SecretSource,
    timeout: std::time::Duration,
) -> Result<String, String> {
    let SecretSource::File(path) = source else {
        return read_secret(source);
    };
    let (owned, turn) = (source.clone(), turn(path));
    let read = async move {
        let held = turn.lock_owned().await;
        tokio::task::spawn_blocking(move || {
            let _held = held;
            read_secret(&owned)
        })
        .await
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(Ok(read)) => read,
        Ok(Err(e)) => Err(format!("{} was not read: {e}", where_from(source))),
        Err(_) => Err(format!(
            "{} was not read within {timeout:?}",
            where_from(source)
        )),
    }
}

/// The turn to read the file at `path` from a runtime thread, held by the blocking read itself
/// until it ends: a file on a hung mount holds one blocking thread, not one more per fetch
/// that wants it (each waits its timeout for the turn, then fails); reads of a healthy file
/// take microseconds each.
pub(super) fn turn(path: &std::path::Path) -> Arc<tokio::sync::Mutex<()>> {
    type Turns = std::sync::Mutex<std::collections::HashMap<std::path::PathBuf, Arc<TurnLock>>>;
    type TurnLock = tokio::sync::Mutex<()>;
    static TURNS: std::sync::OnceLock<Turns> = std::sync::OnceLock::new();
    let mut turns = (TURNS.get_or_init(Default::default).lock()).unwrap_or_else(|e| e.into_inner());
    turns.entry(path.to_owned()).or_default().clone()
}

/// Reads one secret (a file's one trailing newline dropped); the error names where from, never
/// a value. The header secrets and the OAuth client secrets (`tokens.rs`) alike.
pub(super) fn read_secret(source: &SecretSource) -> Result<String, String> {
    let secret = match source {
        SecretSource::File(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("file {} cannot be read: {e}", path.display()))?;
            let text = text.strip_suffix('\n').unwrap_or(&text);
            text.strip_suffix('\r').unwrap_or(text).to_owned()
        }
        SecretSource::Env(var) => {
            std::env::var(var).map_err(|e| format!("environment variable {var}: {e}"))?
        }
    };
    if secret.is_empty() {
        return Err(format!("{} is empty", where_from(source)));
    }
    Ok(secret)
}

pub(super) fn where_from(source: &SecretSource) -> String {
    match source {
        SecretSource::File(path) => format!("file {}", path.display()),
        SecretSource::Env(var) => format!("environment variable {var}"),
    }
}

/// Secret files that block their reader, for tests that a read never holds a runtime thread.
#[cfg(test)]
pub(super) mod blocking_file {
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    /// A named pipe in place of `path` (made a fresh directory when `None`): opening it to
    /// read blocks until it is written, as a file on a hung mount does.
    pub fn fifo(name: &str, path: Option<&Path>) -> PathBuf {
        let path = path.map(Path::to_owned).unwrap_or_else(|| {
            let dir = std::env::temp_dir().join(format!("mcpgw-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            dir.join("secret")
        });
        let _ = std::fs::remove_file(&path);
        let made = std::process::Command::new("mkfifo").arg(&path).status();
        assert!(made.unwrap().success(), "mkfifo {}", path.display());
        path
    }

    /// Runs `work` on a runtime of one thread (as a gateway runtime thread runs requests and
    /// fetches) beside a 50 ms timer, while `work` meets `fifo`: how long the timer took, or
    /// `None` if it had not fired after 2 s (the thread was held). `fifo` is then written
    /// with `secret`, so the reading ends; returns once the runtime is done.
    pub fn timer_beside<W>(fifo: &Path, secret: &str, work: W) -> Option<Duration>
    where
        W: std::future::Future + Send + 'static,
        W::Output: Send,
    {
        let (fired, took) = std::sync::mpsc::channel();
        let runtime = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let work = tokio::spawn(work);
                let started = Instant::now();
                tokio::time::sleep(Duration::from_millis(50)).await;
                let _ = fired.send(started.elapsed());
                let _ = work.await;
            });
        });
        let took = took.recv_timeout(Duration::from_secs(2)).ok();
        std::fs::write(fifo, secret).unwrap();
        runtime.join().unwrap();
        took
    }
}
