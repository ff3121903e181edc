//! What the console charts: one sample a second for the last 15 minutes, in a ring of fixed
//! size (never a time-series database), and the counters every 15 seconds for the last
//! minutes' percentiles and error codes. Also what the sampler saw change (a backend's state,
//! a config reload): each backend's state and since when, and those changes as events.

use super::counters::{route_delta, Counters, RouteCounters};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

/// Samples kept: 15 minutes at one a second.
pub const SECONDS: usize = 900;
/// The counters are kept every this many samples...
pub const WINDOW_STEP: usize = 15;
/// ...this many of them: five minutes back, for the routes' percentiles and error codes.
pub const WINDOW_SLOTS: usize = 21;
/// The sampler's own events kept (backend state changes, reloads).
pub const EVENTS: usize = 128;

/// A ring of at most `cap` items: the newest push the oldest out.
#[derive(Debug, Clone)]
pub struct Ring<T> {
    items: VecDeque<T>,
    cap: usize,
}

impl<T> Ring<T> {
    /// An empty ring of `cap` items.
    pub fn new(cap: usize) -> Ring<T> {
        Ring {
            items: VecDeque::with_capacity(cap),
            cap,
        }
    }

    /// Adds `item`, dropping the oldest when full.
    pub fn push(&mut self, item: T) {
        if self.items.len() == self.cap {
            self.items.pop_front();
        }
        self.items.push_back(item);
    }

    /// Oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> {
        self.items.iter()
    }

    /// The oldest item.
    pub fn oldest(&self) -> Option<&T> {
        self.items.front()
    }

    /// The newest item.
    pub fn newest(&self) -> Option<&T> {
        self.items.back()
    }

    /// How many are held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.items.len()
    }
}

/// One route in one second.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteSample {
    /// Its label.
    pub route: Arc<str>,
    /// Requests finished in the second.
    pub requests: u64,
    /// Of which errors.
    pub errors: u64,
    /// Median and 99th percentile of their durations, in milliseconds.
    pub p50_ms: Option<f64>,
    /// See `p50_ms`.
    pub p99_ms: Option<f64>,
}

/// One backend at one second.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendSample {
    /// Its pool.
    pub pool: Arc<str>,
    /// `ip:port`.
    pub backend: Arc<str>,
    /// `up`, `down` or `draining`.
    pub state: &'static str,
    /// Sessions bound to it.
    pub sessions: usize,
    /// Requests in flight on it.
    pub inflight: usize,
    /// When it last failed (wall-clock milliseconds): a backend found down dates from its
    /// failure, not from the sample that saw it.
    pub failed_ms: Option<u64>,
}

/// One second of the gateway.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Wall-clock milliseconds.
    pub at_ms: u64,
    /// Each route's second.
    pub routes: Vec<RouteSample>,
    /// Each backend at the end of it.
    pub backends: Vec<BackendSample>,
    /// Sessions re-initialized on another backend in the second.
    pub moves: u64,
}

/// A change the sampler saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Its place among the changes (increasing): a stream sends those after the last it sent.
    pub seq: u64,
    /// Wall-clock milliseconds.
    pub at_ms: u64,
    /// `backend-up`, `backend-down`, `backend-draining`, `config-applied`, `config-rejected`.
    pub kind: String,
    /// The pool (empty for a config change).
    pub pool: String,
    /// The backend (empty for a config change).
    pub backend: String,
}

/// A backend by pool and address.
pub type BackendKey = (Arc<str>, Arc<str>);

/// Everything the sampler keeps.
#[derive(Debug)]
pub struct Samples {
    /// One a second.
    pub seconds: Ring<Sample>,
    /// The counters every [`WINDOW_STEP`] seconds (and the latest, last).
    pub window: Ring<(u64, Arc<Counters>)>,
    /// The last reading.
    pub last: Option<(u64, Arc<Counters>)>,
    /// Each backend's state and since when (wall-clock milliseconds), by (pool, backend).
    pub states: HashMap<BackendKey, (&'static str, u64)>,
    /// The changes seen, newest last.
    pub changes: Ring<Change>,
    /// The config as loaded: its version (1 as started, one more per reload applied), when
    /// it was loaded, and the last reload's result and time.
    pub config: ConfigVersion,
    /// What the last sample cost, in microseconds (the gather, the store's counts).
    pub cost_us: u64,
    /// Readings taken.
    taken: u64,
    /// Changes seen.
    taken_changes: u64,
}

/// The loaded config's version and the last reload's result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigVersion {
    /// 1 as started, one more for each reload applied.
    pub version: u64,
    /// When the running config was loaded (wall-clock milliseconds).
    pub loaded_ms: u64,
    /// The last reload's result (`applied`, `rejected`) and when the sampler saw it.
    pub last_reload: Option<(&'static str, u64)>,
}

impl Samples {
    /// Nothing sampled yet; the config loaded at `now_ms`.
    pub fn new(now_ms: u64) -> Samples {
        Samples {
            seconds: Ring::new(SECONDS),
            window: Ring::new(WINDOW_SLOTS),
            last: None,
            states: HashMap::new(),
            changes: Ring::new(EVENTS),
            config: ConfigVersion {
                version: 1,
                loaded_ms: now_ms,
                last_reload: None,
            },
            cost_us: 0,
            taken: 0,
            taken_changes: 0,
        }
    }

    /// Takes one reading: the second since the last one is sampled, the backends' states
    /// compared with the last ones, the reloads counted.
    pub fn take(&mut self, now_ms: u64, counters: Counters, backends: Vec<BackendSample>) {
        let counters = Arc::new(counters);
        let before = self.last.as_ref().map(|(_, c)| c.clone());
        let routes = (counters.routes.iter())
            .map(|(route, now)| {
                let before = before.as_ref().and_then(|b| b.routes.get(route));
                second_of(route, now, before)
            })
            .collect();
        let moves = (counters.reinits).saturating_sub(before.as_ref().map_or(0, |b| b.reinits));
        self.note_reloads(now_ms, &counters, before.as_deref());
        self.note_states(now_ms, &backends);
        self.seconds.push(Sample {
            at_ms: now_ms,
            routes,
            backends,
            moves: if before.is_some() { moves } else { 0 },
        });
        if self.taken.is_multiple_of(WINDOW_STEP as u64) {
            self.window.push((now_ms, counters.clone()));
        }
        self.taken += 1;
        self.last = Some((now_ms, counters));
    }

    fn note_reloads(&mut self, now_ms: u64, now: &Counters, before: Option<&Counters>) {
        let Some(before) = before else {
            return;
        };
        let applied = now.reloads.0.saturating_sub(before.reloads.0);
        let rejected = now.reloads.1.saturating_sub(before.reloads.1);
        if applied > 0 {
            self.config.version += applied;
            self.config.loaded_ms = now_ms;
        }
        for (n, result) in [(applied, "applied"), (rejected, "rejected")] {
            if n > 0 {
                self.config.last_reload = Some((result, now_ms));
                self.change(now_ms, format!("config-{result}"), "", "");
            }
        }
    }

    fn change(&mut self, at_ms: u64, kind: String, pool: &str, backend: &str) {
        self.taken_changes += 1;
        self.changes.push(Change {
            seq: self.taken_changes,
            at_ms,
            kind,
            pool: pool.to_owned(),
            backend: backend.to_owned(),
        });
    }

    fn note_states(&mut self, now_ms: u64, backends: &[BackendSample]) {
        let mut seen = HashMap::with_capacity(backends.len());
        for b in backends {
            let key = (b.pool.clone(), b.backend.clone());
            let since = match self.states.get(&key) {
                Some((state, since)) if *state == b.state => *since,
                Some(_) => {
                    let last = self.seconds.newest().map_or(0, |s| s.at_ms);
                    let at = match b.failed_ms {
                        Some(failed) if b.state == "down" && failed > last => failed.min(now_ms),
                        _ => now_ms,
                    };
                    self.change(at, format!("backend-{}", b.state), &b.pool, &b.backend);
                    at
                }
                None => now_ms,
            };
            seen.insert(key, (b.state, since));
        }
        // a backend no pool lists any more is forgotten: the map stays as large as the pools
        self.states = seen;
    }

    /// Each route's counters over the window (up to five minutes back): requests, errors,
    /// durations and codes between the oldest reading kept and the latest.
    pub fn window_routes(&self) -> BTreeMap<String, RouteCounters> {
        let (Some((_, oldest)), Some((_, latest))) = (self.window.oldest(), self.last.as_ref())
        else {
            return BTreeMap::new();
        };
        (latest.routes.iter())
            .map(|(route, now)| (route.clone(), route_delta(now, oldest.routes.get(route))))
            .collect()
    }

    /// The window's length in seconds.
    pub fn window_seconds(&self) -> u64 {
        match (self.window.oldest(), self.last.as_ref()) {
            (Some((from, _)), Some((to, _))) => to.saturating_sub(*from) / 1000,
            _ => 0,
        }
    }
}

fn second_of(route: &str, now: &RouteCounters, before: Option<&RouteCounters>) -> RouteSample {
    // the first reading has nothing before it: its second is empty, not the process's life
    let delta = match before {
        Some(b) => route_delta(now, Some(b)),
        None => RouteCounters::default(),
    };
    RouteSample {
        route: route.into(),
        requests: delta.requests,
        errors: delta.errors,
        p50_ms: super::counters::quantile_ms(0.5, &delta.buckets),
        p99_ms: super::counters::quantile_ms(0.99, &delta.buckets),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend(state: &'static str, sessions: usize) -> BackendSample {
        BackendSample {
            pool: "p".into(),
            backend: "127.0.0.1:1".into(),
            state,
            sessions,
            inflight: 0,
            failed_ms: (state == "down").then_some(2500),
        }
    }

    fn counters(requests: u64, reinits: u64, applied: u64) -> Counters {
        let mut c = Counters::default();
        c.routes.insert(
            "/mcp".into(),
            RouteCounters {
                requests,
                ..Default::default()
            },
        );
        c.reinits = reinits;
        c.reloads = (applied, 0);
        c
    }

    #[test]
    fn the_rings_stay_at_their_size_however_long_the_gateway_runs() {
        let mut s = Samples::new(0);
        for i in 0..(SECONDS as u64 * 2) {
            s.take(i * 1000, counters(i * 3, 0, 0), vec![backend("up", 1)]);
        }
        assert_eq!(s.seconds.len(), SECONDS);
        assert_eq!(s.window.len(), WINDOW_SLOTS);
        assert_eq!(s.seconds.newest().unwrap().routes[0].requests, 3);
        assert_eq!(s.window_routes()["/mcp"].requests, 3 * s.window_seconds());
        assert!(s.window_seconds() <= (WINDOW_SLOTS * WINDOW_STEP) as u64);
    }

    #[test]
    fn a_state_change_is_an_event_and_resets_since() {
        let mut s = Samples::new(0);
        s.take(1000, counters(0, 0, 0), vec![backend("up", 2)]);
        s.take(2000, counters(0, 0, 0), vec![backend("up", 2)]);
        s.take(3000, counters(0, 2, 1), vec![backend("down", 0)]);
        let key = (Arc::from("p"), Arc::from("127.0.0.1:1"));
        // dated from its failure, between the last sample and this one
        assert_eq!(s.states[&key], ("down", 2500));
        let kinds: Vec<&str> = s.changes.iter().map(|c| c.kind.as_str()).collect();
        assert_eq!(kinds, ["config-applied", "backend-down"]);
        assert_eq!(s.config.version, 2);
        assert_eq!(s.seconds.newest().unwrap().moves, 2);
        s.take(4000, counters(0, 2, 1), vec![]);
        assert!(s.states.is_empty(), "a departed backend is forgotten");
    }
}
