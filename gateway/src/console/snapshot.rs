//! One frame of the console's event stream: the gateway's state now (routes, pools and their
//! backends and credentials, sessions, virtual servers, tasks, admission, the config), the
//! samples and events a page has not seen yet, built from what the admin API reads and what
//! the sampler keeps. Every string in it is data for the page to show as text.

use super::samples::{Change, Sample, Samples};
use crate::session::{SessionEvent, SessionManager};
use crate::state::State;
use crate::upstream::tokens::TokenStatus;
use crate::upstream::Pool;
use arc_swap::ArcSwap;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The most names of one member a frame lists (the count is always whole).
const NAMES_SHOWN: usize = 50;

/// The most routes, and the most backends, one sample carries in a frame (the charts draw a
/// line for each: more would be unreadable, and the fleet's size must not size the frame).
pub const SERIES_SHOWN: usize = 64;

/// The most rows (a sample's routes and backends, and one for the sample) the samples of one
/// frame carry in all: the first frame sends the newest samples that fit (the whole 15
/// minutes of a small config, the last minute or two of a large one), so it stays under
/// about 300 KB whatever the fleet.
pub const SAMPLE_ROWS: usize = 8_192;

/// The most backends of one pool a frame lists (`backendCount` is always whole).
pub const BACKENDS_SHOWN: usize = 64;

/// What a frame is built from.
#[derive(Clone)]
pub struct Sources {
    /// The running state.
    pub state: Arc<ArcSwap<State>>,
    /// The session manager (its store's counts, its timeline).
    pub sessions: Arc<SessionManager>,
    /// The task records of this replica.
    pub tasks: Arc<crate::tasks::Tasks>,
    /// The sampler's readings.
    pub samples: Arc<Mutex<Samples>>,
}

/// What one stream has sent so far: later frames carry only what is newer.
#[derive(Debug, Default, Clone, Copy)]
pub struct Cursor {
    /// The last session event sent.
    pub session_seq: u64,
    /// The last sampler change sent.
    pub change_seq: u64,
    /// The last sample sent (wall-clock milliseconds).
    pub sample_ms: u64,
}

/// The frame after `cursor`, and the cursor after it.
pub async fn frame(src: &Sources, cursor: Cursor) -> (Value, Cursor) {
    let state = src.state.load_full();
    let store = src.sessions.store_ready().await.err().map(|e| e.message);
    let total = src.sessions.count().await.ok();
    let backends = super::sampler::backends(&state, &src.sessions).await;
    let sessions = src.sessions.timeline().after(cursor.session_seq);
    let mut next = cursor;
    next.session_seq = sessions.last().map_or(cursor.session_seq, |e| e.seq);
    let (samples, changes, routes, config, cost) = {
        let s = crate::sync::lock(&src.samples);
        let mut rows = 0;
        let mut samples: Vec<Value> = (s.seconds.iter().rev())
            .filter(|x| x.at_ms > cursor.sample_ms)
            .take_while(|x| {
                rows += rows_of(x);
                rows <= SAMPLE_ROWS
            })
            .map(sample_json)
            .collect();
        samples.reverse();
        next.sample_ms = s.seconds.newest().map_or(cursor.sample_ms, |x| x.at_ms);
        let changes: Vec<Value> = (s.changes.iter())
            .filter(|c| c.seq > cursor.change_seq)
            .map(change_json)
            .collect();
        next.change_seq = s.changes.newest().map_or(cursor.change_seq, |c| c.seq);
        let routes = routes_json(&state, &s);
        (samples, changes, routes, config_json(&s), s.cost_us)
    };
    let frame = json!({
        "at": crate::session::now_ms(),
        "config": config,
        "store": {"kind": store_kind(&state), "ready": store.is_none(), "error": store, "sessions": total},
        "routes": routes,
        "pools": pools_json(&state, &backends, &src.tasks, &src.samples),
        "virtual": virtual_json(&state, &src.samples),
        "admission": admission_json(&state, &src.samples),
        "samples": samples,
        "events": sessions.iter().map(session_event_json).chain(changes).collect::<Vec<_>>(),
        "samplerMicros": cost,
    });
    (frame, next)
}

fn store_kind(state: &State) -> &'static str {
    match state.config.sessions.store {
        crate::config::StoreConfig::Memory => "memory",
        crate::config::StoreConfig::Redis(_) => "redis",
    }
}

fn config_json(s: &Samples) -> Value {
    json!({
        "version": s.config.version,
        "loadedAt": s.config.loaded_ms,
        "lastReload": s.config.last_reload.map(|(result, at)| json!({"result": result, "at": at})),
    })
}

/// The rows a sample takes in a frame.
fn rows_of(s: &Sample) -> usize {
    1 + s.routes.len().min(SERIES_SHOWN) + s.backends.len().min(SERIES_SHOWN)
}

/// A sample, compact (a page receives up to 900 of them when it opens): `t` time, `r` routes
/// as `[route, requests, errors, p50, p99]`, `b` backends as `[pool, backend, state,
/// sessions, inflight]` (the first [`SERIES_SHOWN`] of each), `m` sessions moved.
fn sample_json(s: &Sample) -> Value {
    let routes: Vec<Value> = (s.routes.iter().take(SERIES_SHOWN))
        .map(|r| json!([&*r.route, r.requests, r.errors, r.p50_ms, r.p99_ms]))
        .collect();
    let backends: Vec<Value> = (s.backends.iter().take(SERIES_SHOWN))
        .map(|b| json!([&*b.pool, &*b.backend, b.state, b.sessions, b.inflight]))
        .collect();
    json!({"t": s.at_ms, "r": routes, "b": backends, "m": s.moves})
}

fn change_json(c: &Change) -> Value {
    json!({"at": c.at_ms, "kind": c.kind, "pool": c.pool, "from": c.backend})
}

fn session_event_json(e: &SessionEvent) -> Value {
    json!({
        "at": e.at_ms,
        "kind": e.kind,
        "pool": e.pool,
        "session": e.session,
        "from": e.from.map(|a| a.to_string()),
        "to": e.to.map(|a| a.to_string()),
        "reason": e.reason,
        "trigger": e.trigger,
    })
}

/// Each route: its mode and pool, and over the window (up to five minutes) its requests a
/// second, errors by code, and p50/p99.
fn routes_json(state: &State, s: &Samples) -> Vec<Value> {
    let window = s.window_routes();
    let seconds = s.window_seconds().max(1) as f64;
    let latest = s.seconds.newest();
    state
        .router
        .routes()
        .iter()
        .map(|route| {
            let mode = match &route.members {
                Some(_) => "virtual".to_owned(),
                None => format!("{:?}", route.mode).to_lowercase(),
            };
            let pool = state
                .config
                .pools
                .get(route.default_pool)
                .map(|p| p.name.clone());
            let counted = window.get(&route.label);
            let now = latest.and_then(|x| x.routes.iter().find(|r| *r.route == route.label));
            json!({
                "route": route.label,
                "mode": mode,
                "pool": if route.members.is_some() { None } else { pool },
                "windowSeconds": s.window_seconds(),
                "rps": counted.map_or(0.0, |c| c.requests as f64 / seconds),
                "errorsPerSecond": counted.map_or(0.0, |c| c.errors as f64 / seconds),
                "errors": counted.map(|c| c.codes.clone()).unwrap_or_default(),
                "p50": counted.and_then(|c| super::counters::quantile_ms(0.5, &c.buckets)),
                "p99": counted.and_then(|c| super::counters::quantile_ms(0.99, &c.buckets)),
                "lastSecond": now.map(|r| r.requests),
            })
        })
        .collect()
}

fn pools_json(
    state: &State,
    backends: &[super::samples::BackendSample],
    tasks: &crate::tasks::Tasks,
    samples: &Mutex<Samples>,
) -> Vec<Value> {
    let records = tasks.per_backend();
    let since = crate::sync::lock(samples).states.clone();
    let backend = |pool: &Arc<Pool>, b: &crate::upstream::Backend| {
        let sample = backends
            .iter()
            .find(|s| *s.pool == pool.name && *s.backend == b.label);
        let task = (records.iter()).find(|(p, a, _, _)| *p == pool.name && *a == b.addr);
        let key = (Arc::from(pool.name.as_str()), Arc::from(b.label.as_str()));
        json!({
            "address": b.label,
            "state": b.state().as_str(),
            "since": since.get(&key).map(|(_, at)| *at),
            "era": b.era().map(|e| e.as_str()),
            "sessions": sample.map_or(0, |s| s.sessions),
            "inflight": b.inflight(),
            "tasks": task.map_or(0, |t| t.3),
            "drainingForMs": b.draining_for().map(|d| d.as_millis() as u64),
            "lastFailure": b.last_failure().map(|(at, what)| json!({"at": at, "what": what})),
        })
    };
    (state.pools.iter())
        .map(|pool| {
            let (records_n, open) = (records.iter())
                .filter(|(p, _, _, _)| *p == pool.name)
                .fold((0, 0), |(n, o), t| (n + t.2, o + t.3));
            let all = pool.backends();
            let shown = all.iter().take(BACKENDS_SHOWN);
            json!({
                "pool": pool.name,
                "backends": shown.map(|b| backend(pool, b)).collect::<Vec<_>>(),
                "backendCount": all.len(),
                "credentials": credentials_json(pool),
                "tasks": {"records": records_n, "open": open},
            })
        })
        .collect()
}

fn secs(d: Option<Duration>) -> Option<u64> {
    d.map(|d| d.as_secs())
}

fn token_json(t: &TokenStatus) -> Value {
    json!({
        "ageSeconds": secs(t.age),
        "expiresInSeconds": secs(t.usable_for),
        "lastFailure": t.last_failure.map(|(ago, why)| json!({"agoSeconds": ago.as_secs(), "reason": why})),
    })
}

/// A pool's credentials: kinds, where secrets come from, token ages; never a value.
fn credentials_json(pool: &Pool) -> Value {
    let status = pool.credentials.status();
    let headers: Vec<Value> = (status.headers.iter())
        .map(|(name, from, problem)| json!({"header": name, "from": from, "error": problem}))
        .collect();
    let mut kinds: Vec<&str> = Vec::new();
    if !headers.is_empty() {
        kinds.push("headers");
    }
    if status.token.is_some() {
        kinds.push("client-credentials");
    }
    if status.exchanges.is_some() {
        kinds.push("token-exchange");
    }
    json!({
        "kinds": kinds,
        "headers": headers,
        "token": status.token.as_ref().map(token_json),
        "exchange": status.exchanges.as_ref().map(|(callers, own)| json!({"callers": callers, "own": token_json(own)})),
    })
}

/// Each virtual route's members: pool, mode, state, the names they expose (the first
/// [`NAMES_SHOWN`] tools, and counts), collisions and answers merged without them.
fn virtual_json(state: &State, samples: &Mutex<Samples>) -> Vec<Value> {
    use crate::config::Kind;
    let counters = crate::sync::lock(samples)
        .last
        .as_ref()
        .map(|(_, c)| c.clone());
    let events = |route: &str, member: &str, event: &str| {
        (counters.as_ref()).map_or(0, |c| c.member_events(route, member, event))
    };
    let mut out = Vec::new();
    for route in state.router.routes() {
        let Some(members) = &route.members else {
            continue;
        };
        let shown = members.names.shown();
        let names = crate::sync::read(&shown);
        let list: Vec<Value> = (members.server.members.iter().enumerate())
            .map(|(i, m)| {
                let pool = state.pools.get(m.pool);
                let all = pool.map_or(0, |p| p.backends().len());
                let up = pool.map_or(0, |p| {
                    let b = p.backends();
                    b.iter().filter(|b| b.state().as_str() == "up").count()
                });
                let name = m.names.name.as_str();
                json!({
                    "name": name,
                    "pool": pool.map(|p| p.name.clone()),
                    "mode": format!("{:?}", m.mode).to_lowercase(),
                    "state": if up > 0 { "up" } else { "down" },
                    "backends": all,
                    "backendsUp": up,
                    "tools": names.exposed(i, Kind::Tool, NAMES_SHOWN),
                    "toolCount": names.count(i, Kind::Tool),
                    "promptCount": names.count(i, Kind::Prompt),
                    "resourceCount": names.count(i, Kind::Resource),
                    "collisions": events(&route.label, name, "collision"),
                    "leftOut": events(&route.label, name, "left-out"),
                })
            })
            .collect();
        out.push(json!({
            "route": route.label,
            "server": {"name": members.server.name, "version": members.server.version},
            "members": list,
        }));
    }
    out
}

/// The concurrency caps in use and the refusals by reason (since start).
fn admission_json(state: &State, samples: &Mutex<Samples>) -> Value {
    let caps: Vec<Value> = (state.admission.usage().into_iter())
        .map(|(route, what, used, limit)| {
            let scope =
                match route.and_then(|i| state.router.routes().iter().find(|r| r.index == i)) {
                    Some(r) => r.label.clone(),
                    None => "gateway".to_owned(),
                };
            json!({"scope": scope, "what": what, "used": used, "limit": limit})
        })
        .collect();
    let refusals = (crate::sync::lock(samples).last.as_ref())
        .map(|(_, c)| c.refusals.clone())
        .unwrap_or_default();
    json!({"caps": caps, "refusals": refusals})
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod tests;
