//! Sharing the machine between the tests of one process. Every integration test runs in the one
//! `it` binary (`tests/tests/it/`), two at a time on a 2-core machine, beside any other test of
//! the suite (each file used to be a binary of its own, whose tests ran beside their siblings
//! only, and one-test binaries alone). Most tests need nothing for that: each starts its own
//! processes on ports proven its own, and they already passed under a load average of 5 to 8 from
//! other builds on the machine. Two kinds of test do:
//! - [`exclusive`]: a test that loads the whole machine by itself for a long time (the two-minute
//!   soak at a fixed request rate with kills; the interop matrix, ten servers and a client
//!   process per cell). It used to have a binary, and so the suite, to itself.
//! - [`shared`]: a test whose verdict counts races or timings (the ordering races, with a 2.5 s
//!   client timeout against the server's 3 s; the conformance scenarios repeated to catch a race).
//!   Shared tests run beside each other, as they did in their files, but never beside an
//!   exclusive one, and two exclusive tests never run at once.
//!
//! Take the guard first thing in the test and keep it to the end, in a named binding
//! (`let _machine = machine::exclusive().await;`: `let _ =` would drop it at once). A test holds
//! one guard at most, so none can wait on itself. The lock is fair: a waiting exclusive test
//! holds back shared tests that come after it.

use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

static MACHINE: RwLock<()> = RwLock::const_new(());

/// Waits until no other test holds a guard, then keeps every other guard-taking test waiting
/// while the returned guard lives.
pub async fn exclusive() -> RwLockWriteGuard<'static, ()> {
    MACHINE.write().await
}

/// Waits while an exclusive test runs (or waits its turn); other shared tests may run meanwhile.
pub async fn shared() -> RwLockReadGuard<'static, ()> {
    MACHINE.read().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// With time paused on the one-thread runtime, a sleep returns only once every other task
    /// is idle: each spawned task has then run up to its wait for the lock, so "not finished"
    /// means "waiting", never "not polled yet".
    async fn until_idle() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    #[tokio::test(start_paused = true)]
    async fn an_exclusive_guard_waits_for_shared_ones_and_holds_back_those_after_it() {
        let first = shared().await;
        let second = shared().await;
        let exclusive = tokio::spawn(async { exclusive().await });
        until_idle().await;
        assert!(!exclusive.is_finished(), "taken while shared guards live");
        let late = tokio::spawn(async { drop(shared().await) });
        until_idle().await;
        assert!(
            !late.is_finished(),
            "a shared guard overtook the waiting exclusive one"
        );
        drop((first, second));
        let guard = tokio::time::timeout(Duration::from_secs(5), exclusive)
            .await
            .expect("taken once the shared guards are gone")
            .expect("task");
        until_idle().await;
        assert!(
            !late.is_finished(),
            "a shared guard beside the exclusive one"
        );
        drop(guard);
        tokio::time::timeout(Duration::from_secs(5), late)
            .await
            .expect("shared again after the exclusive guard")
            .expect("task");
    }
}
