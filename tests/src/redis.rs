//! Debian's `redis-server` for the tests that need the shared session store: started on a
//! loopback port proven to be its own, with its data in a temp dir (append-only file on, so a
//! restart on the same port keeps what was written), stopped when dropped.

use crate::harness::unique_temp_path;
use crate::ports::{free_port, prove_ownership};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

/// A running (or stopped, to be restarted) redis-server.
pub struct RedisServer {
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
    /// `--appendfsync`: `always` (every write on disk before it is answered) unless started
    /// with [`RedisServer::start_with_fsync`].
    fsync: &'static str,
}

impl RedisServer {
    /// Starts one on a free port.
    pub async fn start() -> RedisServer {
        Self::start_with_fsync("always").await
    }

    /// Starts one with `--appendfsync <fsync>` (`everysec`, Redis's default for the
    /// append-only file: writes answered before they reach the disk).
    pub async fn start_with_fsync(fsync: &'static str) -> RedisServer {
        let dir = unique_temp_path("mcpgw-redis");
        std::fs::create_dir_all(&dir).expect("temp dir");
        for _ in 0..8 {
            let mut server = RedisServer {
                port: free_port(),
                dir: dir.clone(),
                child: None,
                fsync,
            };
            if server.spawn().await.is_ok() {
                return server;
            }
        }
        panic!("redis-server never got a port of its own");
    }

    async fn spawn(&mut self) -> Result<(), String> {
        let mut child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                self.fsync,
            ])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("redis-server (Debian's redis-server package): {e}"))?;
        let ports = [self.port];
        let proven = prove_ownership(&mut child, &ports, "redis-server", Duration::from_secs(10));
        match proven.await {
            Ok(()) => {
                self.child = Some(child);
                Ok(())
            }
            Err(why) => {
                let _ = child.kill().await;
                Err(why)
            }
        }
    }

    /// `redis://127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// One field of its `INFO` (`blocked_clients`, `cmdstat_xread`, ...) as `redis-cli` prints
    /// it, `None` when it is absent (a command never run has no `cmdstat_` line).
    pub fn info(&self, field: &str) -> Option<String> {
        let out = std::process::Command::new("redis-cli")
            .args(["-p", &self.port.to_string(), "INFO", "everything"])
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
            let (k, v) = l.trim_end().split_once(':')?;
            (k == field).then(|| v.to_owned())
        })
    }

    /// Clients blocked in a command right now (an `XREAD BLOCK` waiting for an entry).
    pub fn blocked_clients(&self) -> u64 {
        self.info("blocked_clients")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// How many times `command` (lowercase, `xread`) has been run (a blocking read counts when
    /// it starts: on one connection, a second one means the first returned).
    pub fn command_calls(&self, command: &str) -> u64 {
        self.info(&format!("cmdstat_{command}"))
            .and_then(|v| {
                v.split(',')
                    .find_map(|kv| kv.strip_prefix("calls=").and_then(|n| n.parse().ok()))
            })
            .unwrap_or(0)
    }

    /// Kills it (SIGKILL): the outage.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// Stops it without killing it (SIGSTOP): its socket stays open and takes commands, which
    /// it runs once [`RedisServer::resume`]d, as a Redis stalled by a long fork or a full disk.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a paused server run again (SIGCONT): it runs the commands it was sent meanwhile.
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self
            .child
            .as_ref()
            .and_then(|c| c.id())
            .expect("a running redis-server");
        let sent = std::process::Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .expect("kill");
        assert!(sent.success(), "kill {signal} {pid}");
    }

    /// Starts it again on the same port, with the data it had appended.
    pub async fn restart(&mut self) {
        self.kill().await;
        for _ in 0..40 {
            if self.spawn().await.is_ok() {
                return;
            }
            // a bounded retry of the start itself (the old process may still hold the port)
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        panic!("redis-server could not start again on port {}", self.port);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
