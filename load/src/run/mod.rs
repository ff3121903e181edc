//! One load run: requests scheduled by the clock (open loop: a slow answer never delays the
//! next request, and latency counts from the scheduled instant, so slow periods are not hidden)
//! or as fast as `concurrency` workers go (closed loop, for throughput ceilings).

mod progress;

use crate::http::{Client, HttpError};
use crate::mcp::{verdict, Dialect, Verdict, Wire};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// What to run.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// Where to send requests.
    pub target: SocketAddr,
    /// The MCP endpoint path.
    pub path: String,
    /// Which protocol era.
    pub dialect: Dialect,
    /// Requests per second offered; 0 runs closed loop.
    pub rate: f64,
    /// How long requests are started.
    pub duration: Duration,
    /// Most requests in flight at once.
    pub concurrency: usize,
    /// Legacy dialect: sessions (virtual clients) the requests are spread over.
    pub sessions: usize,
    /// Keep connections open between requests (else one connection per request).
    pub reuse: bool,
    /// The tool every call invokes.
    pub tool: String,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Draw a progress bar on stderr.
    pub progress: bool,
    /// `Authorization` value sent on every request (the auth benchmark).
    pub bearer: Option<String>,
}

/// Something done at an instant of the run (a backend kill), with its effect measured.
pub struct Event {
    /// When, from the start of the run.
    pub at: Duration,
    /// What (for the report).
    pub label: String,
    /// Done on the clock; the event takes effect when this future completes (a killed
    /// process has exited), which is the boundary for "failed after".
    pub action: Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>,
}

/// The result of a run (serialized as the run's JSON).
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    /// `legacy` or `stateless`.
    pub dialect: Dialect,
    /// The target `host:port/path`.
    pub target: String,
    /// `new` (a connection per request) or `reuse`.
    pub connections: &'static str,
    /// Offered requests per second (0: closed loop).
    pub offered_rate: f64,
    /// Seconds during which requests were started.
    pub duration_s: f64,
    /// Requests started.
    pub offered: u64,
    /// Requests answered with a JSON-RPC result.
    pub ok: u64,
    /// Requests that failed, any way.
    pub failed: u64,
    /// `ok` per second of the run.
    pub achieved_rps: f64,
    /// Requests lost because the server did not know their session (legacy).
    pub session_losses: u64,
    /// `initialize` exchanges (first ones and re-initializations after losses).
    pub initializes: u64,
    /// Failures by class (`session-lost`, `http-502`, `rpc--32013`, `connect`, `broken`,
    /// `timeout`, `init-...` when the (re)initialize itself failed).
    pub errors: BTreeMap<String, u64>,
    /// Latency of successful requests from their scheduled start (what a user waits,
    /// including any time the generator could not send yet; the timer adds up to 1 ms).
    pub latency_ms: Latency,
    /// Latency of successful requests from the moment they were sent (service time).
    pub service_ms: Latency,
    /// Per second (by completion): successes and failures.
    pub timeline: Vec<Second>,
    /// Events and the failures around them.
    pub events: Vec<EventResult>,
    /// Every failure: when it was scheduled and done (µs from the start) and its class (for
    /// the chaos run's own windows; not in the JSON).
    #[serde(skip)]
    pub failure_spans: Vec<(u64, u64, String)>,
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// One second of the run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Second {
    /// Seconds from the start.
    pub t: u64,
    /// Successes completed in this second.
    pub ok: u64,
    /// Failures completed in this second.
    pub failed: u64,
    /// Of which session losses.
    pub session_lost: u64,
}

/// What an event did to the requests.
#[derive(Debug, Clone, Serialize)]
pub struct EventResult {
    /// What happened.
    pub label: String,
    /// When it was done (s from the start).
    pub at_s: f64,
    /// When it had taken effect (the killed process had exited).
    pub effective_s: f64,
    /// Requests in flight when it was done, and those started before it took effect.
    pub inflight: usize,
    /// Failed requests that were in flight meanwhile (started before it took effect,
    /// finished after it was done).
    pub failed_in_flight: u64,
    /// Failed requests started after it took effect.
    pub failed_after: u64,
}

#[derive(Default)]
struct Stats {
    ok: u64,
    errors: BTreeMap<String, u64>,
    timeline: Vec<Second>,
    /// (sent, done) offsets in µs of every failure.
    failures: Vec<(u64, u64)>,
    /// The same with the failure's class.
    spans: Vec<(u64, u64, String)>,
}

/// A virtual client's session (legacy dialect).
#[derive(Default)]
struct Slot {
    sid: tokio::sync::Mutex<Option<String>>,
}

struct Ctx {
    cfg: LoadConfig,
    client: Client,
    wire: Wire,
    slots: Vec<Slot>,
    start: Instant,
    ids: AtomicU64,
    inflight: AtomicUsize,
    /// Requests started so far.
    started: AtomicUsize,
    initializes: AtomicU64,
    session_losses: AtomicU64,
    stats: Mutex<Stats>,
    /// Latency from the scheduled start (response time: includes any wait to be sent).
    hist: Mutex<Histogram<u64>>,
    /// Latency from the actual send (service time).
    service: Mutex<Histogram<u64>>,
}

/// Runs the load with timed `events`, and returns its result.
pub async fn run(cfg: LoadConfig, events: Vec<Event>) -> RunResult {
    let wire = Wire {
        path: cfg.path.clone(),
        host: cfg.target.to_string(),
        close: !cfg.reuse,
        tool: cfg.tool.clone(),
        bearer: cfg.bearer.clone(),
    };
    let ctx = Arc::new(Ctx {
        client: Client::new(cfg.target, cfg.reuse, cfg.timeout),
        wire,
        slots: (0..cfg.sessions.max(1)).map(|_| Slot::default()).collect(),
        start: Instant::now(),
        ids: AtomicU64::new(1),
        inflight: AtomicUsize::new(0),
        started: AtomicUsize::new(0),
        initializes: AtomicU64::new(0),
        session_losses: AtomicU64::new(0),
        stats: Mutex::new(Stats::default()),
        hist: Mutex::new(histogram()),
        service: Mutex::new(histogram()),
        cfg,
    });
    let marks = Arc::new(Mutex::new(Vec::new()));
    let timer = tokio::spawn(fire(ctx.clone(), events, marks.clone()));
    let progress = ctx
        .cfg
        .progress
        .then(|| tokio::spawn(progress::draw(ctx.clone())));
    let offered = if ctx.cfg.rate > 0.0 {
        open_loop(&ctx).await
    } else {
        closed_loop(&ctx).await
    };
    let elapsed = ctx.cfg.duration.as_secs_f64();
    timer.abort();
    if let Some(p) = progress {
        p.abort();
        eprintln!();
    }
    close_sessions(&ctx).await;
    let marks = marks.lock().expect("marks").clone();
    summarize(&ctx, offered, elapsed, marks)
}

/// When an event was done, when it took effect, and the requests in flight then.
type Mark = (String, Duration, Duration, usize);

async fn fire(ctx: Arc<Ctx>, events: Vec<Event>, marks: Arc<Mutex<Vec<Mark>>>) {
    let mut events = events;
    events.sort_by_key(|e| e.at);
    for ev in events {
        tokio::time::sleep_until(ctx.start + ev.at).await;
        let done = ctx.start.elapsed();
        let inflight = ctx.inflight.load(Ordering::SeqCst);
        let started = ctx.started.load(Ordering::SeqCst);
        (ev.action)().await;
        let effective = ctx.start.elapsed();
        // and those started while it took effect (a call sent as the process died)
        let inflight = inflight + ctx.started.load(Ordering::SeqCst) - started;
        marks
            .lock()
            .expect("marks")
            .push((ev.label, done, effective, inflight));
    }
}

/// Starts request `i` at `start + i / rate`, whatever happened to earlier ones.
async fn open_loop(ctx: &Arc<Ctx>) -> u64 {
    let limit = Arc::new(Semaphore::new(ctx.cfg.concurrency.max(1)));
    let interval = Duration::from_secs_f64(1.0 / ctx.cfg.rate);
    let mut tasks = tokio::task::JoinSet::new();
    let mut i: u32 = 0;
    loop {
        let at = ctx.start + interval * i;
        if at.duration_since(ctx.start) >= ctx.cfg.duration {
            break;
        }
        tokio::time::sleep_until(at).await;
        // Over the concurrency cap the request waits, and its wait counts in its latency.
        let permit = limit.clone().acquire_owned().await.expect("semaphore open");
        let ctx = ctx.clone();
        tasks.spawn(async move {
            one(&ctx, at).await;
            drop(permit);
        });
        while tasks.try_join_next().is_some() {}
        i += 1;
    }
    while tasks.join_next().await.is_some() {}
    u64::from(i)
}

/// `concurrency` workers, each sending its next request when the previous one is answered.
async fn closed_loop(ctx: &Arc<Ctx>) -> u64 {
    let offered = Arc::new(AtomicU64::new(0));
    let end = ctx.start + ctx.cfg.duration;
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..ctx.cfg.concurrency.max(1) {
        let (ctx, offered) = (ctx.clone(), offered.clone());
        workers.spawn(async move {
            loop {
                let at = Instant::now();
                if at >= end {
                    return;
                }
                offered.fetch_add(1, Ordering::Relaxed);
                one(&ctx, at).await;
            }
        });
    }
    while workers.join_next().await.is_some() {}
    offered.load(Ordering::Relaxed)
}

/// One request, measured and recorded.
fn histogram() -> Histogram<u64> {
    // 1 µs to 1 h, 3 significant digits
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("histogram bounds")
}

async fn one(ctx: &Ctx, scheduled: Instant) {
    let started = Instant::now();
    ctx.started.fetch_add(1, Ordering::SeqCst);
    ctx.inflight.fetch_add(1, Ordering::SeqCst);
    let outcome = call(ctx).await;
    ctx.inflight.fetch_sub(1, Ordering::SeqCst);
    let done = match &outcome {
        Ok(answered) => *answered,
        Err(_) => Instant::now(),
    };
    let second = done.duration_since(ctx.start).as_secs() as usize;
    let mut stats = ctx.stats.lock().expect("stats");
    if stats.timeline.len() <= second {
        let from = stats.timeline.len();
        stats.timeline.extend((from..=second).map(|t| Second {
            t: t as u64,
            ..Second::default()
        }));
    }
    match outcome {
        Ok(_) => {
            stats.ok += 1;
            stats.timeline[second].ok += 1;
            drop(stats);
            let micros = |from: Instant| done.duration_since(from).as_micros().max(1) as u64;
            let _ = ctx.hist.lock().expect("hist").record(micros(scheduled));
            let _ = ctx.service.lock().expect("hist").record(micros(started));
        }
        Err(class) => {
            stats.timeline[second].failed += 1;
            if class == "session-lost" {
                stats.timeline[second].session_lost += 1;
            }
            let sent = scheduled.duration_since(ctx.start).as_micros() as u64;
            let finished = done.duration_since(ctx.start).as_micros() as u64;
            stats.failures.push((sent, finished));
            stats.spans.push((sent, finished, class.clone()));
            *stats.errors.entry(class).or_default() += 1;
        }
    }
}

fn http_class(e: &HttpError) -> String {
    match e {
        HttpError::Connect => "connect",
        HttpError::Broken => "broken",
        HttpError::Timeout => "timeout",
    }
    .to_owned()
}

fn verdict_class(v: &Verdict) -> String {
    match v {
        Verdict::Ok => "ok".to_owned(),
        Verdict::SessionLost => "session-lost".to_owned(),
        Verdict::RpcError(code) => format!("rpc-{code}"),
        Verdict::Http(status) => format!("http-{status}"),
    }
}

/// The class of a failed answer; an HTTP error with a JSON-RPC error in its body names its
/// code too (`http-503 -32006`).
fn http_error_class(v: &Verdict, resp: &crate::http::Response) -> String {
    let code = crate::mcp::response_message(resp)
        .and_then(|m| m.pointer("/error/code").and_then(serde_json::Value::as_i64));
    match (v, code) {
        (Verdict::Http(_), Some(code)) => format!("{} {code}", verdict_class(v)),
        _ => verdict_class(v),
    }
}

/// One `tools/call`; in the legacy dialect inside a session, (re)initialized first if needed.
/// Returns when the answer arrived.
async fn call(ctx: &Ctx) -> Result<Instant, String> {
    let id = ctx.ids.fetch_add(1, Ordering::Relaxed);
    let dialect = ctx.cfg.dialect;
    let slot = &ctx.slots[(id as usize) % ctx.slots.len()];
    let sid = match dialect {
        Dialect::Stateless => None,
        Dialect::SessionPerCall => return per_call(ctx, id).await,
        Dialect::Legacy => Some(session(ctx, slot).await.map_err(|c| format!("init-{c}"))?),
    };
    let resp = ctx
        .client
        .send(&ctx.wire.call(dialect, id, sid.as_deref()))
        .await
        .map_err(|e| http_class(&e))?;
    let v = verdict(&resp);
    match (&v, sid) {
        (Verdict::Ok, _) => Ok(resp.answered),
        // A careful client starts over with initialize when its session is gone (404, a
        // 400 naming the session) and when the server failed (5xx).
        (Verdict::SessionLost, Some(sid)) => {
            ctx.session_losses.fetch_add(1, Ordering::Relaxed);
            forget(slot, &sid).await;
            Err(verdict_class(&v))
        }
        (Verdict::Http(500..), Some(sid)) => {
            forget(slot, &sid).await;
            Err(http_error_class(&v, &resp))
        }
        _ => Err(http_error_class(&v, &resp)),
    }
}

/// One call the toolhive vMCP way: initialize, notifications/initialized, the call, DELETE;
/// answered when the DELETE is.
async fn per_call(ctx: &Ctx, id: u64) -> Result<Instant, String> {
    ctx.initializes.fetch_add(1, Ordering::Relaxed);
    let resp = ctx
        .client
        .send(&ctx.wire.initialize(id))
        .await
        .map_err(|e| http_class(&e))?;
    let sid = match (verdict(&resp), resp.session_id) {
        (Verdict::Ok, Some(s)) => s,
        (Verdict::Ok, None) => return Err("no-session-id".into()),
        (v, _) => return Err(verdict_class(&v)),
    };
    let _ = ctx.client.send(&ctx.wire.initialized(&sid)).await;
    let resp = ctx
        .client
        .send(&ctx.wire.call(Dialect::Legacy, id, Some(&sid)))
        .await
        .map_err(|e| http_class(&e))?;
    let v = verdict(&resp);
    let deleted = ctx
        .client
        .send(&ctx.wire.delete(&sid))
        .await
        .map_err(|e| http_class(&e))?;
    match v {
        Verdict::Ok => Ok(deleted.answered),
        v => Err(verdict_class(&v)),
    }
}

/// The slot's session id, initializing a new session when it has none.
async fn session(ctx: &Ctx, slot: &Slot) -> Result<String, String> {
    let mut sid = slot.sid.lock().await;
    if let Some(s) = sid.as_ref() {
        return Ok(s.clone());
    }
    ctx.initializes.fetch_add(1, Ordering::Relaxed);
    let id = ctx.ids.fetch_add(1, Ordering::Relaxed);
    let resp = ctx
        .client
        .send(&ctx.wire.initialize(id))
        .await
        .map_err(|e| http_class(&e))?;
    let v = verdict(&resp);
    let new = match (&v, resp.session_id.clone()) {
        (Verdict::Ok, Some(s)) => s,
        (Verdict::Ok, None) => return Err("no-session-id".into()),
        (v, _) => return Err(http_error_class(v, &resp)),
    };
    // Like the Python SDK, the client does not look at the answer to its notification (a
    // round-robin proxy may have sent it to another backend, which answers 404).
    let _ = ctx.client.send(&ctx.wire.initialized(&new)).await;
    *sid = Some(new.clone());
    Ok(new)
}

async fn forget(slot: &Slot, lost: &str) {
    let mut sid = slot.sid.lock().await;
    if sid.as_deref() == Some(lost) {
        *sid = None;
    }
}

/// Ends every open session with DELETE, as a client leaving does (not measured).
async fn close_sessions(ctx: &Ctx) {
    for slot in &ctx.slots {
        if let Some(sid) = slot.sid.lock().await.take() {
            let _ = ctx.client.send(&ctx.wire.delete(&sid)).await;
        }
    }
}

fn percentiles(hist: &Histogram<u64>) -> Latency {
    if hist.is_empty() {
        return Latency::default();
    }
    let ms = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
    Latency {
        p50: ms(0.5),
        p90: ms(0.9),
        p99: ms(0.99),
        max: hist.max() as f64 / 1000.0,
    }
}

fn summarize(ctx: &Ctx, offered: u64, elapsed: f64, marks: Vec<Mark>) -> RunResult {
    let stats = ctx.stats.lock().expect("stats");
    let latency = percentiles(&ctx.hist.lock().expect("hist"));
    let service = percentiles(&ctx.service.lock().expect("hist"));
    let events = marks
        .into_iter()
        .map(|(label, done, effective, inflight)| {
            let (done_us, effective_us) = (done.as_micros() as u64, effective.as_micros() as u64);
            let in_flight = stats
                .failures
                .iter()
                .filter(|(sent, finished)| *sent < effective_us && *finished >= done_us)
                .count() as u64;
            let after = stats
                .failures
                .iter()
                .filter(|(sent, _)| *sent >= effective_us)
                .count() as u64;
            EventResult {
                label,
                at_s: done.as_secs_f64(),
                effective_s: effective.as_secs_f64(),
                inflight,
                failed_in_flight: in_flight,
                failed_after: after,
            }
        })
        .collect();
    let failed: u64 = stats.errors.values().sum();
    RunResult {
        dialect: ctx.cfg.dialect,
        target: format!("{}{}", ctx.cfg.target, ctx.cfg.path),
        connections: if ctx.cfg.reuse { "reuse" } else { "new" },
        offered_rate: ctx.cfg.rate,
        duration_s: elapsed,
        offered,
        ok: stats.ok,
        failed,
        achieved_rps: stats.ok as f64 / elapsed,
        session_losses: ctx.session_losses.load(Ordering::Relaxed),
        initializes: ctx.initializes.load(Ordering::Relaxed),
        errors: stats.errors.clone(),
        latency_ms: latency,
        service_ms: service,
        timeline: stats.timeline.clone(),
        events,
        failure_spans: stats.spans.clone(),
    }
}
