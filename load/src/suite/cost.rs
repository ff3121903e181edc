//! The cost part of the suite (`--only cost`): what each feature costs when it is turned on
//! alone, against the default config on the same route, interleaved in one run so a slow
//! moment of the machine hits every row alike. One mock backend per run; closed loop, 32
//! requests in flight on kept-alive connections; req/s and the gateway's CPU per request
//! (user + system, from /proc), medians. The CPU ratio is the steadier figure on a loaded box.

use super::procs::{self, Backend, BackendKind, Proxy};
use super::report::median;
use super::Suite;
use crate::mcp::Dialect;
use crate::run::{self, LoadConfig};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

/// An API key the cost part presents; the key file holds its SHA-256 (`printf %s KEY | sha256sum`).
const API_KEY: &str = "mcpgw-bench-key";
const API_KEY_SHA256: &str = "5cc9aa72df9c878486d5d0e700d0799fc39f36a37822c4a7716da51b7b0e93e9";

/// One row: a feature on one route.
struct Row {
    label: &'static str,
    stateful: bool,
    /// Config lines added at the top level (`{dir}` becomes the run's directory).
    extra: String,
    /// Fields added to the route.
    route: String,
    bearer: Option<String>,
    rps: Vec<f64>,
    cpu: Vec<f64>,
}

impl Row {
    fn new(label: &'static str, stateful: bool, extra: &str, route: &str) -> Row {
        Row {
            label,
            stateful,
            extra: extra.into(),
            route: route.into(),
            bearer: None,
            rps: Vec::new(),
            cpu: Vec::new(),
        }
    }
}

fn rows(fixtures: &Path, redis: &str) -> Vec<Row> {
    let jwt = format!(
        "auth:\n  resource: {r}\n  authorization-servers: [{i}]\n  \
         jwt: {{ issuer: {i}, audiences: [{r}], jwks: {{ file: {} }} }}\n",
        fixtures.join("jwks.json").display(),
        r = super::auth::RESOURCE,
        i = super::auth::ISSUER,
    );
    let keys = format!(
        "auth:\n  resource: {}\n  authorization-servers: [{}]\n  api-keys: {{ file: \"{{dir}}/keys.txt\" }}\n",
        super::auth::RESOURCE,
        super::auth::ISSUER,
    );
    let mut rows = vec![
        Row::new("default", false, "", ""),
        Row::new("JWT auth (RS256)", false, &jwt, ""),
        Row::new("API keys", false, &keys, ""),
        Row::new(
            "capture on (default redaction)",
            false,
            "",
            ", capture: { file: \"{dir}/capture.jsonl\" }",
        ),
        Row::new(
            "tracing, sample 1.0",
            false,
            "tracing: { otlp: { endpoint: \"http://127.0.0.1:9\" }, sample-ratio: 1.0 }\n",
            "",
        ),
        Row::new(
            "tracing, sample 0.01",
            false,
            "tracing: { otlp: { endpoint: \"http://127.0.0.1:9\" }, sample-ratio: 0.01 }\n",
            "",
        ),
        Row::new("default", true, "", ""),
        Row::new(
            "resumable streams off",
            true,
            "sessions:\n  resume: { enabled: false }\n",
            "",
        ),
        Row::new(
            "held streams off",
            true,
            "sessions:\n  hold-streams: false\n",
            "",
        ),
        Row::new(
            "Redis session store",
            true,
            &super::store::redis_sessions(redis, "cost"),
            "",
        ),
    ];
    rows[1].bearer = Some(super::auth::token(
        fixtures,
        jsonwebtoken::Algorithm::RS256,
        "rs-1",
        "rs256.pem",
    ));
    rows[2].bearer = Some(format!("Bearer {API_KEY}"));
    rows
}

impl Suite {
    pub(super) async fn cost(&self) -> String {
        let fixtures = self.args.root.join("tests/fixtures/auth");
        let fixtures = std::fs::canonicalize(&fixtures).unwrap_or(fixtures);
        let (_redis, port) = super::store::start_redis().await;
        let mut rows = rows(&fixtures, &format!("redis://127.0.0.1:{port}/0"));
        let runs = self.args.runs.max(3);
        let duration = self.args.overhead_duration;
        for i in 0..runs {
            for (n, row) in rows.iter_mut().enumerate() {
                self.cost_run(row, n, i, duration).await;
                eprintln!(
                    "  cost {} ({}) {}/{runs}: {:.0} req/s, CPU {:.1} µs/req",
                    row.label,
                    route_of(row),
                    i + 1,
                    row.rps.last().copied().unwrap_or(0.0),
                    row.cpu.last().copied().unwrap_or(0.0),
                );
            }
        }
        report(&rows, duration, runs)
    }

    async fn cost_run(&self, row: &mut Row, n: usize, i: usize, duration: f64) {
        let (kind, dialect, mode) = match row.stateful {
            true => (BackendKind::MockLegacy, Dialect::Legacy, "stateful"),
            false => (BackendKind::MockStateless, Dialect::Stateless, "stateless"),
        };
        let backend = Backend::start(&self.programs, kind, "pod-0", 0).await;
        let dir = self.args.out.join("work").join(format!("cost-{n}-{i}"));
        std::fs::create_dir_all(&dir).expect("cost dir");
        std::fs::write(
            dir.join("keys.txt"),
            format!("{API_KEY_SHA256} bench tools\n"),
        )
        .expect("key file");
        let d = dir.display().to_string();
        let (extra, route) = (
            row.extra.replace("{dir}", &d),
            row.route.replace("{dir}", &d),
        );
        let gw = Proxy::gateway_routed(
            &self.programs.gateway,
            &dir,
            mode,
            &[backend.addr],
            &extra,
            &route,
        )
        .await;
        let cfg = LoadConfig {
            target: gw.addr,
            path: "/mcp".into(),
            dialect,
            rate: 0.0,
            duration: Duration::from_secs_f64(duration),
            concurrency: 32,
            sessions: self.args.sessions,
            reuse: true,
            tool: "whoami".into(),
            timeout: Duration::from_secs(10),
            progress: false,
            bearer: row.bearer.clone(),
        };
        let before = gw.pid().and_then(procs::cpu_seconds);
        let r = run::run(cfg, Vec::new()).await;
        let after = gw.pid().and_then(procs::cpu_seconds);
        drop(gw);
        drop(backend);
        assert!(
            r.ok > 0,
            "cost {}: every request failed: {:?}",
            row.label,
            r.errors
        );
        if let (Some(a), Some(b)) = (before, after) {
            row.cpu.push((b - a) * 1e6 / r.ok as f64);
        }
        row.rps.push(r.achieved_rps);
        self.all.lock().expect("all").push(
            serde_json::json!({"cell": format!("cost-{}-{}", row.label, route_of(row)), "run": i, "result": r}),
        );
    }
}

fn route_of(row: &Row) -> &'static str {
    if row.stateful {
        "stateful"
    } else {
        "stateless"
    }
}

fn report(rows: &[Row], duration: f64, runs: usize) -> String {
    let mut md = format!(
        "\n## Cost per feature\n\n\
         Each feature on alone, against the default config on the same route; closed loop, 32 \
         requests in flight on kept-alive connections, {duration} s per run, {runs} runs \
         interleaved, one mock backend; medians (min–max). `×` is the ratio to the default \
         row of the same route (req/s: higher is better; CPU: lower is better).\n\n\
         | feature | route | req/s | × req/s | gateway CPU µs/req | × CPU |\n\
         |---|---|---|---:|---|---:|\n"
    );
    for row in rows {
        let base = rows
            .iter()
            .find(|b| b.stateful == row.stateful && b.label == "default")
            .unwrap_or(row);
        let (rps, cpu) = (median(&row.rps), median(&row.cpu));
        let (brps, bcpu) = (median(&base.rps), median(&base.cpu));
        let span = |v: &[f64]| {
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            let max = v.iter().copied().fold(0.0, f64::max);
            format!("({min:.0}–{max:.0})")
        };
        let _ = writeln!(
            md,
            "| {} | {} | {rps:.0} {} | {:.2} | {cpu:.1} {} | {:.2} |",
            row.label,
            route_of(row),
            span(&row.rps),
            if brps > 0.0 { rps / brps } else { 0.0 },
            span(&row.cpu),
            if bcpu > 0.0 { cpu / bcpu } else { 0.0 },
        );
    }
    md
}
