//! The auth part of the suite (`--only auth`): stateless requests through mcp-gateway with JWT
//! validation off, on with RS256 tokens and on with ES256 tokens, interleaved in one run, as
//! closed-loop throughput and CPU per request with the ratio to "off". Each client reuses its
//! token, as real clients do; the gateway checks it on every request (a verified token is
//! remembered until it expires, so the signature itself is checked once per token). Tokens are
//! signed with the committed test keys (`tests/fixtures/auth/`).

use super::procs::{self, Backend, BackendKind, Proxy};
use super::report::median;
use super::Suite;
use crate::mcp::Dialect;
use crate::run::{self, LoadConfig};
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(super) const ISSUER: &str = "https://idp.example.com";
pub(super) const RESOURCE: &str = "https://gw.example.com/mcp";

/// One variant: its label, the `Authorization` value, and the config section.
struct Variant {
    label: &'static str,
    bearer: Option<String>,
    extra: String,
    rps: Vec<f64>,
    cpu: Vec<f64>,
    p50: Vec<f64>,
}

pub(super) fn token(fixtures: &Path, alg: Algorithm, kid: &str, pem: &str) -> String {
    let exp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        + 3600;
    let claims = serde_json::json!({
        "iss": ISSUER, "aud": RESOURCE, "sub": "bench", "exp": exp, "scope": "tools"
    });
    let mut header = Header::new(alg);
    header.kid = Some(kid.into());
    let bytes = std::fs::read(fixtures.join(pem)).expect("a test key in tests/fixtures/auth");
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(&bytes),
        _ => EncodingKey::from_rsa_pem(&bytes),
    }
    .expect("a PEM key");
    format!("Bearer {}", encode(&header, &claims, &key).expect("sign"))
}

impl Suite {
    pub(super) async fn auth(&self) -> String {
        let fixtures = self.args.root.join("tests/fixtures/auth");
        let fixtures = std::fs::canonicalize(&fixtures).unwrap_or(fixtures);
        let section = format!(
            "auth:\n  resource: {RESOURCE}\n  authorization-servers: [{ISSUER}]\n  \
             jwt: {{ issuer: {ISSUER}, audiences: [{RESOURCE}], jwks: {{ file: {} }} }}\n",
            fixtures.join("jwks.json").display()
        );
        let mut variants = vec![
            Variant {
                label: "JWT off",
                bearer: None,
                extra: String::new(),
                rps: vec![],
                cpu: vec![],
                p50: vec![],
            },
            Variant {
                label: "JWT on, RS256",
                bearer: Some(token(&fixtures, Algorithm::RS256, "rs-1", "rs256.pem")),
                extra: section.clone(),
                rps: vec![],
                cpu: vec![],
                p50: vec![],
            },
            Variant {
                label: "JWT on, ES256",
                bearer: Some(token(&fixtures, Algorithm::ES256, "es-1", "es256.pem")),
                extra: section,
                rps: vec![],
                cpu: vec![],
                p50: vec![],
            },
        ];
        let runs = self.args.runs.max(3);
        let duration = self.args.overhead_duration;
        // Interleaved, so a slow moment of the machine hits every variant alike.
        for i in 0..runs {
            for (n, v) in variants.iter_mut().enumerate() {
                let backend =
                    Backend::start(&self.programs, BackendKind::MockStateless, "pod-0", 0).await;
                let dir = self.args.out.join("work").join(format!("auth-{n}-{i}"));
                let gw = Proxy::gateway(
                    &self.programs.gateway,
                    &dir,
                    "stateless",
                    &[backend.addr],
                    &v.extra,
                )
                .await;
                let cfg = LoadConfig {
                    target: gw.addr,
                    path: "/mcp".into(),
                    dialect: Dialect::Stateless,
                    rate: 0.0,
                    duration: Duration::from_secs_f64(duration),
                    concurrency: 32,
                    sessions: 1,
                    reuse: true,
                    tool: "whoami".into(),
                    timeout: Duration::from_secs(10),
                    progress: false,
                    bearer: v.bearer.clone(),
                };
                let before = gw.pid().and_then(procs::cpu_seconds);
                let r = run::run(cfg, Vec::new()).await;
                let after = gw.pid().and_then(procs::cpu_seconds);
                drop(gw);
                drop(backend);
                if let (Some(a), Some(b)) = (before, after) {
                    if r.ok > 0 {
                        v.cpu.push((b - a) * 1e6 / r.ok as f64);
                    }
                }
                eprintln!(
                    "  auth {} ({}/{runs}): {}",
                    v.label,
                    i + 1,
                    crate::summary_line(&r)
                );
                assert!(
                    r.failed == 0 || r.ok > 0,
                    "{}: every request failed: {:?}",
                    v.label,
                    r.errors
                );
                v.rps.push(r.achieved_rps);
                v.p50.push(r.latency_ms.p50);
                self.all.lock().expect("all").push(
                    serde_json::json!({"cell": format!("auth-{}", v.label), "run": i, "result": r}),
                );
            }
        }
        report(&variants, duration, runs)
    }
}

fn report(variants: &[Variant], duration: f64, runs: usize) -> String {
    let off = median(&variants[0].rps);
    let mut md = format!(
        "\n## Auth: JWT validation on the stateless path\n\n\
         Closed loop, 32 concurrent requests on kept-alive connections, {duration} s per run, \
         {runs} runs interleaved; one mock 2026-07-28 backend; medians (min–max). With JWT on, \
         every request carries the same bearer token (as a real client's requests do) and the \
         gateway checks it on every request: a verified token is remembered until its `exp`.\n\n\
         | variant | req/s | × JWT off | p50 ms | gateway CPU µs/req |\n|---|---|---|---|---|\n"
    );
    for v in variants {
        let rps = median(&v.rps);
        let min = v.rps.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.rps.iter().copied().fold(0.0, f64::max);
        let _ = writeln!(
            md,
            "| {} | {rps:.0} ({min:.0}–{max:.0}) | {:.2} | {:.2} | {} |",
            v.label,
            if off > 0.0 { rps / off } else { 0.0 },
            median(&v.p50),
            if v.cpu.is_empty() {
                "?".to_owned()
            } else {
                format!("{:.1}", median(&v.cpu))
            },
        );
    }
    md
}
