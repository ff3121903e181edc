//! The progress bar: elapsed time, successes, failures and requests in flight, redrawn in place
//! on a terminal (a line every 5 s otherwise).

use super::Ctx;
use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Draws until aborted.
pub(super) async fn draw(ctx: Arc<Ctx>) {
    let total = ctx.cfg.duration.as_secs_f64();
    let tty = std::io::stderr().is_terminal();
    loop {
        tokio::time::sleep(Duration::from_millis(if tty { 250 } else { 5000 })).await;
        let elapsed = ctx.start.elapsed().as_secs_f64().min(total);
        let (ok, failed) = {
            let s = ctx.stats.lock().expect("stats");
            (s.ok, s.errors.values().sum::<u64>())
        };
        let width = 30;
        let filled = ((elapsed / total) * width as f64) as usize;
        let bar = format!(
            "{}{}",
            "#".repeat(filled),
            " ".repeat(width - filled.min(width))
        );
        let line = format!(
            "[{bar}] {elapsed:>5.1}/{total:.0} s  ok {ok}  failed {failed}  in flight {}",
            ctx.inflight.load(Ordering::Relaxed)
        );
        let mut err = std::io::stderr().lock();
        let _ = if tty {
            write!(err, "\r{line}")
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
    }
}
