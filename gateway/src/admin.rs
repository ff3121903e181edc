//! The admin listener:
//! - `GET /healthz`: the process is alive;
//! - `GET /readyz`: every pool has a backend that may take work (a session store that does not
//!   answer makes it `ready (degraded)`, still 200: the sessions held here are served, and
//!   taking every replica out of a Service at once would fail them too);
//! - `GET /metrics`: Prometheus text format;
//! - `GET /admin/backends`: every backend with its state, sessions and requests in flight;
//! - `POST /admin/backends/drain?pool=P&backend=IP:PORT` (and `/undrain`): no new sessions on
//!   it; its sessions move after the pool's `drain-timeout-s`;
//! - `GET /admin/sessions`: session counts per backend; `GET /admin/sessions/ID`: one session;
//! - `GET /admin/tasks`: the task records this replica holds, per pool and backend (also in
//!   `/admin/backends`, as each backend's `tasks`);
//! - `GET /admin/virtual`: each virtual route's members: pool, mode, backends up, and how many
//!   tools, prompts and resources each exposes (as its lists said last);
//! - `POST /admin/console/ticket`: a one-use ticket for the console's event stream, good
//!   for 60 s (`{"ticket": T, "expiresInMs": 60000}`; `null` when no `admin-token` is set);
//! - `GET /admin/tool-pins`, `POST /admin/tool-pins/approve` and `/reject`, `GET
//!   /admin/tool-pins/export`: tool pinning's pending definitions and the operator's decisions
//!   (`pinning/admin.rs`);
//! - `GET /` and `/console`: the operator's console, its files under `/console/` and its
//!   event stream `/console/events` (`console/`).
//!
//! Who may call what (browsers only from the console's own origin; `/admin/*` and the event
//! stream with the token) is `admin_auth.rs`, and so are the bounds each connection is held
//! to (`admin_auth::guarded`); each refusal is a JSON-RPC error.

use crate::console::Console;
use crate::session::{Lookup, SessionManager};
use crate::state::State;
use crate::stream::Streams;
use crate::upstream::metrics::UpstreamMetrics;
use arc_swap::ArcSwap;
use async_trait::async_trait;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderValue, Response, StatusCode};
use pingora::apps::{HttpPersistentSettings, HttpServerApp, ReusedHttpStream};
use pingora::protocols::http::ServerSession;
use pingora::server::ShutdownWatch;
use pingora_prometheus::prometheus::{Encoder, Registry, TextEncoder};
use serde_json::{json, Value};
use std::sync::Arc;

/// The admin HTTP application.
pub struct AdminApp {
    state: Arc<ArcSwap<State>>,
    sessions: Arc<SessionManager>,
    streams: Arc<Streams>,
    registry: Registry,
    /// Upstream's families whose backend gauges a scrape sets.
    upstream: UpstreamMetrics,
    /// Where tasks live.
    tasks: Arc<crate::tasks::Tasks>,
    /// The operator's console.
    console: Console,
}

impl AdminApp {
    /// Serves the given state, sessions, streams and the registry every concern registered
    /// its families into (`upstream`'s backend gauges are set at each scrape), and the console
    /// over the sampler's `samples`.
    pub fn new(
        (state, sessions, streams): (Arc<ArcSwap<State>>, Arc<SessionManager>, Arc<Streams>),
        registry: Registry,
        upstream: UpstreamMetrics,
        tasks: Arc<crate::tasks::Tasks>,
        samples: Arc<std::sync::Mutex<crate::console::Samples>>,
    ) -> AdminApp {
        let console = Console::new(crate::console::Sources {
            state: state.clone(),
            sessions: sessions.clone(),
            tasks: tasks.clone(),
            samples,
        });
        AdminApp {
            console,
            state,
            sessions,
            streams,
            registry,
            upstream,
            tasks,
        }
    }

    fn tasks_json(&self) -> Value {
        self.tasks.sweep();
        let records: Vec<Value> = self
            .tasks
            .per_backend()
            .into_iter()
            .map(|(pool, backend, n, open)| {
                json!({"pool": pool, "backend": backend.to_string(), "tasks": n, "open": open})
            })
            .collect();
        json!({ "tasks": records })
    }

    /// Sessions per backend of a pool, from the session store (empty if it fails).
    async fn session_counts(&self, pool: &str) -> Vec<(std::net::SocketAddr, usize)> {
        self.sessions.backend_counts(pool).await.unwrap_or_default()
    }

    async fn backends_json(&self) -> Value {
        let state = self.state.load_full();
        let mut pools = Vec::new();
        let tasks = self.tasks.per_backend();
        for pool in &state.pools {
            let counts = self.session_counts(&pool.name).await;
            let tasks_of = |addr| {
                tasks
                    .iter()
                    .find(|(p, b, _, _)| *p == pool.name && *b == addr)
                    .map_or((0, 0), |(_, _, n, open)| (*n, *open))
            };
            let backends: Vec<Value> = pool
                .backends()
                .iter()
                .map(|b| {
                    json!({
                        "address": b.label,
                        "state": b.state().as_str(),
                        "era": b.era().map(|e| e.as_str()),
                        "sessions": sessions_of(&counts, b.addr),
                        "inflight": b.inflight(),
                        "tasks": tasks_of(b.addr).0,
                        "openTasks": tasks_of(b.addr).1,
                        "drainingForMs": b.draining_for().map(|d| d.as_millis() as u64),
                    })
                })
                .collect();
            pools.push(json!({"pool": pool.name, "backends": backends}));
        }
        json!({ "pools": pools })
    }

    fn virtual_json(&self) -> Value {
        use crate::config::Kind;
        let state = self.state.load_full();
        let mut routes = Vec::new();
        for route in state.router.routes() {
            let Some(members) = &route.members else {
                continue;
            };
            let map = members.names.shown();
            let names = crate::sync::read(&map);
            let list: Vec<Value> = members
                .server
                .members
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let pool = state.pools.get(m.pool);
                    let backends = pool.map_or(0, |p| p.backends().len());
                    let up = pool.map_or(0, |p| {
                        let all = p.backends();
                        all.iter()
                            .filter(|b| b.state() == crate::upstream::BackendState::Up)
                            .count()
                    });
                    json!({
                        "name": m.names.name,
                        "pool": pool.map(|p| p.name.clone()),
                        "mode": format!("{:?}", m.mode).to_lowercase(),
                        "state": if up > 0 { "up" } else { "down" },
                        "backends": backends,
                        "backendsUp": up,
                        "tools": names.count(i, Kind::Tool),
                        "prompts": names.count(i, Kind::Prompt),
                        "resources": names.count(i, Kind::Resource),
                    })
                })
                .collect();
            routes.push(json!({
                "route": route.label,
                "server": {"name": members.server.name, "version": members.server.version},
                "members": list,
            }));
        }
        json!({ "virtual": routes })
    }

    async fn sessions_json(&self) -> Value {
        let state = self.state.load_full();
        let mut per_backend = Vec::new();
        for pool in &state.pools {
            let counts = self.session_counts(&pool.name).await;
            for b in pool.backends().iter() {
                let n = sessions_of(&counts, b.addr);
                per_backend.push(json!({"pool": pool.name, "backend": b.label, "sessions": n}));
            }
        }
        let total = self.sessions.count().await.ok();
        json!({"total": total, "perBackend": per_backend})
    }

    async fn session_json(&self, id: &str) -> Option<Value> {
        match self.sessions.inspect(id).await {
            Ok(Lookup::Live(r)) => Some(json!({
                "id": r.id.as_ref(),
                "pool": r.pool.as_ref(),
                "backend": r.binding.backend.to_string(),
                "generation": r.binding.generation,
                "stale": r.binding.stale,
                "protocolVersion": r.protocol_version.as_ref(),
                "lastUseMs": r.last_use_ms,
                "logLevelSet": r.settings.log_level.is_some(),
                "subscriptions": r.settings.subscriptions.len(),
            })),
            Ok(Lookup::Gone(reason)) => Some(json!({"id": id, "gone": reason.as_str()})),
            Ok(Lookup::Unknown) => None,
            Err(e) => Some(json!({"id": id, "error": e.message, "detail": e.data})),
        }
    }

    fn drain(&self, query: &str, on: bool) -> Response<Vec<u8>> {
        let (pool_name, addr) = match drain_target(query) {
            Ok(target) => target,
            Err(missing) => return *missing,
        };
        let state = self.state.load();
        let backend = state
            .pools
            .iter()
            .find(|p| p.name == pool_name)
            .and_then(|p| addr.parse().ok().and_then(|a| p.find(a)));
        if state.audit.on() {
            let event = if on { "admin.drain" } else { "admin.undrain" };
            let outcome = if backend.is_some() { "ok" } else { "not-found" };
            state.audit.record(
                crate::audit::Record::new(event)
                    .pool(&pool_name)
                    .backend(&addr)
                    .reason("admin API (admin-token)")
                    .outcome(outcome),
            );
        }
        match backend {
            Some(b) => {
                b.set_draining(on);
                tracing::info!(pool = %pool_name, backend = %addr, draining = on, "drain changed by the admin API");
                reply_json(
                    StatusCode::OK,
                    &json!({"pool": pool_name, "backend": addr, "state": b.state().as_str()}),
                )
            }
            None => reply_json(
                StatusCode::NOT_FOUND,
                &json!({"error": format!("no backend {addr} in pool {pool_name}")}),
            ),
        }
    }

    /// Copies live counts into their gauges (done at scrape time, off the hot path), each
    /// concern its own: streams, upstream's backends, sessions per backend; and drops the
    /// series of departed backends first.
    async fn refresh_gauges(&self) {
        self.streams.publish_gauges();
        let state = self.state.load_full();
        let sessions = self.sessions.metrics();
        crate::upstream::discovery::drop_departed(state.pools.iter(), |live| {
            self.upstream.retain_backends(live) + sessions.retain_backends(live)
        });
        for pool in &state.pools {
            let counts = self.session_counts(&pool.name).await;
            self.upstream.publish_backends(pool);
            sessions.publish_active(pool, &counts);
        }
    }

    async fn metrics_text(&self) -> Vec<u8> {
        self.refresh_gauges().await;
        let mut out = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        out
    }
}

fn sessions_of(counts: &[(std::net::SocketAddr, usize)], addr: std::net::SocketAddr) -> usize {
    counts
        .iter()
        .find(|(a, _)| *a == addr)
        .map_or(0, |(_, n)| *n)
}

fn reply_json(status: StatusCode, value: &Value) -> Response<Vec<u8>> {
    // `{:#}` prints a `Value` as `to_vec_pretty` writes it, and printing it cannot fail
    reply(
        status,
        "application/json",
        format!("{value:#}").into_bytes(),
    )
}

fn reply(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Response<Vec<u8>> {
    let length = HeaderValue::from(body.len());
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CONTENT_LENGTH, length);
    response
}

/// The answer of tool pinning's admin API (`pinning/admin.rs`).
fn pins_reply(
    pins: &crate::pinning::Pins,
    path: &str,
    query: &str,
    post: bool,
) -> Response<Vec<u8>> {
    match crate::pinning::admin::answer(pins, path, query, post) {
        (status, crate::pinning::admin::Body::Json(v)) => reply_json(status, &v),
        (status, crate::pinning::admin::Body::Text(t)) => {
            reply(status, "text/plain", t.into_bytes())
        }
    }
}

/// Why a request may not be served, as its answer (`None`: it may).
fn refusal(session: &ServerSession, state: &State) -> Option<Response<Vec<u8>>> {
    let refused = crate::admin_auth::check(session.req_header(), &state.config).err()?;
    Some(refused_answer(&refused))
}

/// A refusal's JSON-RPC error, with `WWW-Authenticate: Bearer` on a 401.
fn refused_answer(refused: &crate::admin_auth::Refusal) -> Response<Vec<u8>> {
    let mut resp = Console::error(&refused.error());
    if refused.status == StatusCode::UNAUTHORIZED {
        resp.headers_mut().insert(
            http::header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static("Bearer"),
        );
    }
    resp
}

impl AdminApp {
    /// The answer to one request (all but the console's event stream, which streams).
    async fn response(&self, session: &mut ServerSession) -> Response<Vec<u8>> {
        if let Some(refused) = refusal(session, &self.state.load()) {
            return refused;
        }
        let path = session.req_header().uri.path().to_owned();
        if Console::serves(&path) {
            return self.console.file(&path);
        }
        let query = session.req_header().uri.query().unwrap_or("").to_owned();
        let post = session.req_header().method == http::Method::POST;
        if crate::pinning::admin::serves(&path) {
            return pins_reply(&self.state.load().pins, &path, &query, post);
        }
        match path.as_str() {
            "/admin/backends" => reply_json(StatusCode::OK, &self.backends_json().await),
            "/admin/backends/drain" if post => self.drain(&query, true),
            "/admin/backends/undrain" if post => self.drain(&query, false),
            "/admin/sessions" => reply_json(StatusCode::OK, &self.sessions_json().await),
            "/admin/virtual" => reply_json(StatusCode::OK, &self.virtual_json()),
            "/admin/tasks" => reply_json(StatusCode::OK, &self.tasks_json()),
            crate::admin_auth::TICKET_PATH if post => self.ticket(),
            p if p.starts_with("/admin/sessions/") => {
                match self.session_json(&p["/admin/sessions/".len()..]).await {
                    Some(v) => reply_json(StatusCode::OK, &v),
                    None => reply_json(StatusCode::NOT_FOUND, &json!({"error": "no such session"})),
                }
            }
            "/healthz" => reply(StatusCode::OK, "text/plain", b"ok\n".to_vec()),
            "/readyz" => self.readyz().await,
            "/metrics" => reply(
                StatusCode::OK,
                "text/plain; version=0.0.4",
                self.metrics_text().await,
            ),
            _ => reply(
                StatusCode::NOT_FOUND,
                "text/plain",
                b"admin endpoints: / (the console) /healthz /readyz /metrics\n".to_vec(),
            ),
        }
    }

    /// A ticket for one event stream, or `null` when the stream needs none (no token set).
    fn ticket(&self) -> Response<Vec<u8>> {
        if self.state.load().config.admin_token.is_none() {
            return reply_json(StatusCode::OK, &json!({"ticket": null}));
        }
        let ttl = crate::console::TICKET_TTL.as_millis() as u64;
        reply_json(
            StatusCode::OK,
            &json!({"ticket": self.console.ticket(), "expiresInMs": ttl}),
        )
    }

    async fn readyz(&self) -> Response<Vec<u8>> {
        let store = self.sessions.store_ready().await.err();
        let state = self.state.load();
        let not_ready: Vec<&str> = state
            .pools
            .iter()
            .filter(|p| !p.any_ready())
            .map(|p| p.name.as_str())
            .collect();
        if let (true, Some(e)) = (not_ready.is_empty(), store) {
            let body = format!(
                "ready (degraded): the session store: {}; sessions held here are served, new sessions and moves get 503 -32006\n",
                e.data["detail"]
            );
            reply(StatusCode::OK, "text/plain", body.into_bytes())
        } else if not_ready.is_empty() {
            reply(StatusCode::OK, "text/plain", b"ready\n".to_vec())
        } else {
            let body = format!(
                "not ready: no reachable backend in pool(s) {}\n",
                not_ready.join(", ")
            );
            reply(
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain",
                body.into_bytes(),
            )
        }
    }
}

/// The admin listener serves each connection itself (not through pingora's `ServeHttp`, whose
/// whole-body answers cannot stream): the console's event stream is written as it goes.
#[async_trait]
impl HttpServerApp for AdminApp {
    async fn process_new_http(
        self: &Arc<Self>,
        mut session: ServerSession,
        shutdown: &ShutdownWatch,
    ) -> Option<ReusedHttpStream> {
        if !matches!(session.read_request().await, Ok(true)) {
            return None; // no request head: the client went away or sent garbage
        }
        session.set_keepalive((!*shutdown.borrow()).then_some(60));
        let is_events = session.req_header().uri.path() == crate::console::EVENTS_PATH
            && session.req_header().method == http::Method::GET;
        // the stream's verdict, taken on the state of now (a stream holds no old state)
        let verdict = is_events.then(|| {
            let state = self.state.load();
            let config = &state.config;
            refusal(&session, &state).is_none().then(|| {
                crate::admin_auth::stream_access(session.req_header(), config, |t| {
                    self.console.redeem(t)
                })
            })
        });
        match verdict.flatten() {
            Some(Ok(())) => {
                self.console.events(&mut session, shutdown).await;
                return None;
            }
            Some(Err(refused)) => return self.answer(session, refused_answer(&refused)).await,
            None => {}
        }
        let answer = self.response(&mut session).await;
        self.answer(session, answer).await
    }
}

impl AdminApp {
    /// Writes `answer` on `session`; the connection, if it may serve another request.
    async fn answer(
        &self,
        mut session: ServerSession,
        answer: Response<Vec<u8>>,
    ) -> Option<ReusedHttpStream> {
        let (parts, body) = answer.into_parts();
        if let Err(e) = session.write_response_header(Box::new(parts.into())).await {
            tracing::debug!(error = %e, "an admin client went away before its answer");
            return None;
        }
        if !body.is_empty()
            && session
                .write_response_body(body.into(), true)
                .await
                .is_err()
        {
            return None;
        }
        let settings = HttpPersistentSettings::for_session(&session);
        match session.finish().await {
            Ok(reusable) => reusable.map(|s| ReusedHttpStream::from_reusable_stream(s, settings)),
            Err(_) => None,
        }
    }
}

/// The pool and backend a drain or undrain names: the query `pool=P&backend=IP:PORT` read as
/// a form (`url::form_urlencoded`, as a browser's `URLSearchParams` writes it: `+` is a space,
/// `%XX` a byte, `:` may come as `%3A`); a key given twice counts as its first. When
/// either is missing, the answer: 400, `{"error": "give ?pool=NAME&backend=IP:PORT"}`.
fn drain_target(query: &str) -> Result<(String, String), Box<Response<Vec<u8>>>> {
    let (mut pool, mut backend) = (None, None);
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        let slot = match &*key {
            "pool" => &mut pool,
            "backend" => &mut backend,
            _ => continue,
        };
        slot.get_or_insert_with(|| value.into_owned());
    }
    match (pool, backend) {
        (Some(pool), Some(backend)) => Ok((pool, backend)),
        _ => Err(Box::new(reply_json(
            StatusCode::BAD_REQUEST,
            &json!({"error": "give ?pool=NAME&backend=IP:PORT"}),
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::drain_target;
    use http::StatusCode;

    fn target(query: &str) -> (String, String) {
        match drain_target(query) {
            Ok(target) => target,
            Err(answer) => panic!("{query}: {}", answer.status()),
        }
    }

    fn pair(pool: &str, backend: &str) -> (String, String) {
        (pool.to_owned(), backend.to_owned())
    }

    #[test]
    fn a_drain_query_reads_plus_as_a_space_and_percent_escapes_as_bytes() {
        assert_eq!(
            target("pool=p&backend=127.0.0.1:8000"),
            pair("p", "127.0.0.1:8000")
        );
        // as URLSearchParams writes them
        assert_eq!(
            target("pool=my+pool&backend=127.0.0.1%3A8000"),
            pair("my pool", "127.0.0.1:8000")
        );
        assert_eq!(
            target("backend=%5B%3A%3A1%5D%3A8000&pool=caf%C3%A9%2B%26"),
            pair("caf\u{e9}+&", "[::1]:8000")
        );
    }

    #[test]
    fn a_key_given_twice_counts_as_its_first() {
        assert_eq!(
            target("pool=a&backend=127.0.0.1:1&pool=b&backend=127.0.0.1:2"),
            pair("a", "127.0.0.1:1")
        );
    }

    #[test]
    fn a_drain_query_without_its_pool_or_backend_is_answered_400_with_how_to_ask() {
        for query in [
            "",
            "pool=p",
            "backend=127.0.0.1:1",
            "pools=p&backends=127.0.0.1:1",
        ] {
            let Err(answer) = drain_target(query) else {
                panic!("{query}: named a backend");
            };
            assert_eq!(answer.status(), StatusCode::BAD_REQUEST, "{query}");
            let body: serde_json::Value = serde_json::from_slice(answer.body()).unwrap();
            assert_eq!(body["error"], "give ?pool=NAME&backend=IP:PORT", "{query}");
        }
        // given but empty: named (and then found in no pool: 404)
        assert_eq!(target("pool=&backend="), pair("", ""));
    }
}
