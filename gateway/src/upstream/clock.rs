//! The upstream clock: milliseconds since the process's first reading of it, as backends' marks,
//! draining and era probe schedules keep their times (never 0, which means "not set").

use std::sync::OnceLock;
use std::time::Instant;

pub(super) fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

pub(super) fn now_ms() -> u64 {
    epoch().elapsed().as_millis() as u64 + 1
}
