//! The resume part of the suite: what resumable streams (`sessions.resume`) cost. The added
//! time per relayed SSE event with gateway event ids and buffering on, against the same gateway
//! with them off and against a direct connection, interleaved in one run; and the memory a
//! buffered stream keeps for its window.

use super::procs::{Backend, BackendKind, Proxy};
use super::report::median;
use super::Suite;
use crate::http::{Client, Request};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Progress events per answer (plus the result): long enough that per-event costs dominate.
const EVENTS: u32 = 100;
/// Answers kept for the memory measurement.
const KEPT: usize = 2000;

/// A legacy session at `target`: its id.
async fn session(client: &Client, host: &str) -> String {
    let wire = crate::mcp::Wire {
        path: "/mcp".into(),
        host: host.into(),
        close: false,
        tool: "whoami".into(),
        bearer: None,
    };
    let resp = client.send(&wire.initialize(1)).await.expect("initialize");
    let sid = resp.session_id.expect("a session id");
    client
        .send(&wire.initialized(&sid))
        .await
        .expect("initialized");
    sid
}

/// A call of the mock's `sse_progress`: `steps` events back to back, then the result.
fn progress_call(host: &str, sid: &str, steps: u32) -> Request {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"sse_progress","arguments":{{"steps":{steps},"gap_ms":0}}}}}}"#
    );
    Request::new(
        "POST",
        "/mcp",
        host,
        &[
            ("Accept", "application/json, text/event-stream"),
            ("Content-Type", "application/json"),
            ("Mcp-Session-Id", sid),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        body.as_bytes(),
        false,
    )
}

/// Closed-loop answers of `EVENTS` events for `duration`: the median time per answer (µs).
async fn answer_time(target: SocketAddr, duration: Duration) -> f64 {
    let host = target.to_string();
    let client = Client::new(target, true, Duration::from_secs(10));
    let sid = session(&client, &host).await;
    let call = progress_call(&host, &sid, EVENTS);
    let mut times = Vec::new();
    let end = Instant::now() + duration;
    while Instant::now() < end {
        let start = Instant::now();
        if let Ok(resp) = client.send(&call).await {
            if resp.status == 200 {
                times.push(start.elapsed().as_secs_f64() * 1e6);
            }
        }
    }
    median(&times)
}

impl Suite {
    async fn resume_gateway(&self, tag: &str, backend: SocketAddr, extra: &str) -> Proxy {
        let dir = self.args.out.join("resume").join(tag);
        Proxy::gateway(&self.programs.gateway, &dir, "stateful", &[backend], extra).await
    }

    pub(super) async fn resume(&self) -> String {
        let p = &self.programs;
        let backend = Backend::start(p, BackendKind::MockLegacy, "resume-mock", 0).await;
        let runs = self.args.runs.max(3);
        let duration = Duration::from_secs_f64(self.args.overhead_duration);
        let off = "sessions:\n  resume: { enabled: false }\n";
        let on = "sessions:\n  resume: { enabled: true }\n";
        let mut times: [Vec<f64>; 3] = Default::default();
        for i in 0..runs {
            times[0].push(answer_time(backend.addr, duration).await);
            for (k, extra) in [(1, off), (2, on)] {
                let gw = self
                    .resume_gateway(&format!("{k}-{i}"), backend.addr, extra)
                    .await;
                times[k].push(answer_time(gw.addr, duration).await);
            }
            eprintln!("  resume run {}/{runs}", i + 1);
        }
        let per_event = |t: &[f64]| median(t) / f64::from(EVENTS + 1);
        let [direct, off_t, on_t] = [&times[0], &times[1], &times[2]].map(|t| per_event(t));

        // memory: answers kept for their window (600 s, longer than the measurement)
        let keep = "sessions:\n  resume: { enabled: true, window-s: 600 }\n";
        let gw = self.resume_gateway("memory", backend.addr, keep).await;
        let host = gw.addr.to_string();
        let client = Arc::new(Client::new(gw.addr, true, Duration::from_secs(10)));
        let sid = session(&client, &host).await;
        let warm = progress_call(&host, &sid, 10);
        for _ in 0..200 {
            let _ = client.send(&warm).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = gw.rss_kib().unwrap_or(0);
        let mut bytes = 0usize;
        for _ in 0..KEPT {
            if let Ok(resp) = client.send(&warm).await {
                bytes += resp.body.len();
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let after = gw.rss_kib().unwrap_or(0);
        // the 200 warm-up streams are kept too; both counts are inside the window
        let per_stream = (after.saturating_sub(before) * 1024) as f64 / KEPT as f64;
        let event_bytes = bytes as f64 / KEPT as f64;

        let mut md = String::new();
        let _ = writeln!(md, "\n## Resumable streams (`sessions.resume`)\n");
        let _ = writeln!(
            md,
            "Closed loop, one session, answers of {EVENTS} SSE progress events + the result from the Rust legacy mock, \
             {runs} interleaved runs of {:.0} s each; time per event = median answer time / {}.\n",
            duration.as_secs_f64(),
            EVENTS + 1
        );
        let _ = writeln!(
            md,
            "| target | µs per event | vs resume off |\n|---|---|---|"
        );
        let _ = writeln!(md, "| direct (mock) | {direct:.2} | |");
        let _ = writeln!(md, "| gateway, resume off | {off_t:.2} | 1.00x |");
        let _ = writeln!(
            md,
            "| gateway, resume on (ids + buffering) | {on_t:.2} | {:.2}x (+{:.2} µs per event) |",
            on_t / off_t.max(f64::MIN_POSITIVE),
            on_t - off_t
        );
        let _ = writeln!(
            md,
            "\nMemory: {KEPT} answers of 10 progress events + the result ({event_bytes:.0} bytes on the wire each) kept \
             for their window: RSS {before} → {after} KiB, **{per_stream:.0} bytes per buffered stream**.\n"
        );
        self.all.lock().expect("all").push(serde_json::json!({
            "cell": "resume",
            "us_per_event": {"direct": direct, "off": off_t, "on": on_t},
            "runs": times,
            "memory": {"streams": KEPT, "rss_before_kib": before, "rss_after_kib": after,
                       "bytes_per_stream": per_stream, "answer_bytes": event_bytes},
        }));
        md
    }
}
