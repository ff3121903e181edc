//! `--pin`: where the overhead part's processes run. The proxy measured gets the last CPU and
//! one worker thread, the load generator (this process) and the backends the others.

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::process::Command;

/// `--pin`: the measured proxy on the last CPU with one worker thread, everything else (the
/// load generator, backends) on the others. The proxy is then the one bottleneck and its req/s
/// reads as its cost per request, as in the harness of issue #25 (wrk on one core, the proxy
/// on the other); unpinned, every process shares every core.
static PINNED: AtomicBool = AtomicBool::new(false);

/// Turns pinning on or off for processes started from now on, and pins this process (the load
/// generator) to the CPUs that are not the proxy's, or unpins it.
pub fn pin(on: bool) {
    PINNED.store(on && cpus() >= 2, Ordering::Relaxed);
    let list = if pinned() {
        cpu_list(Role::Other)
    } else {
        format!("0-{}", cpus() - 1)
    };
    let pid = std::process::id().to_string();
    let status = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", &list, &pid])
        .stdout(Stdio::null())
        .status();
    if !matches!(status, Ok(s) if s.success()) {
        eprintln!("  taskset failed: the load generator is not pinned");
    }
}

fn pinned() -> bool {
    PINNED.load(Ordering::Relaxed)
}

/// The machine's CPUs, counted once: once this process is pinned, `available_parallelism`
/// counts only the CPUs it may use.
fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Which CPUs a process may run on when pinned.
#[derive(Clone, Copy)]
pub(crate) enum Role {
    /// The proxy measured.
    Proxy,
    /// Backends and the load generator.
    Other,
}

fn cpu_list(role: Role) -> String {
    let last = cpus() - 1;
    match role {
        Role::Proxy => last.to_string(),
        Role::Other if last == 1 => "0".into(),
        Role::Other => format!("0-{}", last - 1),
    }
}

/// A command running `program`, under `taskset` when pinning is on.
pub(crate) fn launch(program: &Path, role: Role) -> Command {
    if !pinned() {
        return Command::new(program);
    }
    let mut c = Command::new("taskset");
    c.arg("-c").arg(cpu_list(role)).arg(program);
    c
}

/// Worker threads of bare pingora and mcp-gateway: 2, or 1 when pinned to one CPU.
pub fn proxy_threads() -> usize {
    if pinned() {
        1
    } else {
        2
    }
}

/// Whether pinning is on (for the report).
pub fn is_pinned() -> bool {
    pinned()
}
