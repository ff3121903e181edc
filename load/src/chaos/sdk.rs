//! Real SDK clients among the chaos run's mock ones: a long-lived `tests/peers/repl_client.py`
//! (mcp 1.30.0 `ClientSession` over `streamable_http_client` with a legacy session, or mcp 2.3.0
//! `Client(url, mode="2026-07-28")`) driven over stdin, one `tools/call whoami` at a time every
//! `interval`. Each call is timed on the run's clock. A client whose session stopped working
//! (-32015, a 404) counts a lost session; a client whose transport died is started again (a new
//! session: counted as a restart, the calls it failed as failures).

use serde::Serialize;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::Instant;

/// One SDK client loop to run.
#[derive(Debug, Clone)]
pub struct SdkLoop {
    /// For the report (`mcp-1.30.0 legacy`).
    pub label: String,
    /// The venv's Python.
    pub python: PathBuf,
    /// `tests/peers/repl_client.py`.
    pub script: PathBuf,
    /// The MCP endpoint.
    pub url: String,
    /// `--mode` (`legacy`, `2026-07-28`).
    pub mode: String,
    /// Time between the starts of two calls.
    pub interval: Duration,
}

/// One call as the run's clock saw it.
#[derive(Debug, Clone, Serialize)]
pub struct Call {
    /// Sent, µs from the run's start.
    pub sent_us: u64,
    /// Answered (or failed), µs from the run's start.
    pub done_us: u64,
    /// `None`: answered; else the failure class.
    pub error: Option<String>,
}

/// What a loop did.
#[derive(Debug, Clone, Serialize)]
pub struct SdkResult {
    /// Its label.
    pub label: String,
    /// Every call.
    #[serde(skip)]
    pub calls: Vec<Call>,
    /// Calls made.
    pub total: u64,
    /// Calls that failed.
    pub failed: u64,
    /// Sessions that stopped working (the client was started again after each).
    pub sessions_lost: u64,
    /// Times the client was started again (its transport died, or its session was lost).
    pub restarts: u64,
    /// Failures by class.
    pub errors: std::collections::BTreeMap<String, u64>,
    /// The first message of each failure class (what the SDK said).
    pub messages: std::collections::BTreeMap<String, String>,
}

struct Peer {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

async fn start(l: &SdkLoop) -> Result<Peer, String> {
    let mut child = Command::new(&l.python)
        .arg(&l.script)
        .args(["--url", &l.url, "--mode", &l.mode, "--timeout", "15"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await;
    match first {
        Ok(Ok(Some(line)))
            if line.contains("\"ready\": true") || line.contains("\"ready\":true") =>
        {
            Ok(Peer {
                child,
                stdin,
                lines,
            })
        }
        Ok(Ok(Some(line))) => Err(format!("not ready: {line}")),
        _ => Err("no ready line".into()),
    }
}

/// A failure's class from the client's answer line.
fn classify(v: &serde_json::Value) -> String {
    if v["error_type"] == "ClientDead" || v["fatal"] == true {
        return "client-dead".into();
    }
    match v["code"].as_i64() {
        Some(code) => format!("rpc-{code}"),
        None => {
            let msg = v["message"].as_str().unwrap_or("");
            let kind = v["error_type"].as_str().unwrap_or("error");
            if msg.contains("404") {
                "http-404".into()
            } else if let Some(status) = ["502", "503", "500"].iter().find(|s| msg.contains(*s)) {
                format!("http-{status}")
            } else {
                kind.to_owned()
            }
        }
    }
}

fn lost(class: &str) -> bool {
    class == "rpc--32015" || class == "http-404"
}

/// Runs the loop from `t0` until `t0 + duration`.
pub async fn run(l: SdkLoop, t0: Instant, duration: Duration) -> SdkResult {
    let mut r = SdkResult {
        label: l.label.clone(),
        calls: Vec::new(),
        total: 0,
        failed: 0,
        sessions_lost: 0,
        restarts: 0,
        errors: Default::default(),
        messages: Default::default(),
    };
    let us = |at: Instant| at.duration_since(t0).as_micros() as u64;
    let end = t0 + duration;
    let mut peer: Option<Peer> = None;
    let mut next = Instant::now();
    let mut id = 0u64;
    while next < end {
        tokio::time::sleep_until(next).await;
        // (a slot missed while the client was being started again is skipped)
        next = (next + l.interval).max(Instant::now());
        if peer.is_none() {
            match tokio::time::timeout_at(end, start(&l))
                .await
                .unwrap_or(Err("the run ended".into()))
            {
                Ok(p) => peer = Some(p),
                Err(e) => {
                    *r.errors.entry(format!("start: {e}")).or_default() += 1;
                    continue;
                }
            }
        }
        let p = peer.as_mut().expect("peer");
        id += 1;
        let sent = Instant::now();
        let cmd = format!("{{\"op\":\"call\",\"name\":\"whoami\",\"args\":{{}},\"n\":{id}}}\n");
        let answer = async {
            p.stdin.write_all(cmd.as_bytes()).await.ok()?;
            p.lines.next_line().await.ok()?
        };
        let line = tokio::time::timeout(Duration::from_secs(20), answer).await;
        let done = Instant::now();
        let error = match line {
            Ok(Some(line)) => match serde_json::from_str::<serde_json::Value>(&line) {
                Ok(v) if v["ok"] == true && v["isError"] != true => None,
                Ok(v) => {
                    let class = match v["ok"] == true {
                        true => "tool-error".to_owned(),
                        false => classify(&v),
                    };
                    let mut text = line.clone();
                    text.truncate(400);
                    r.messages.entry(class.clone()).or_insert(text);
                    Some(class)
                }
                Err(_) => Some("bad-line".to_owned()),
            },
            Ok(None) => Some("client-exited".to_owned()),
            Err(_) => Some("timeout".to_owned()),
        };
        r.total += 1;
        if let Some(class) = &error {
            r.failed += 1;
            *r.errors.entry(class.clone()).or_default() += 1;
            let restart = lost(class)
                || matches!(class.as_str(), "client-dead" | "client-exited" | "timeout");
            if lost(class) {
                r.sessions_lost += 1;
            }
            if restart {
                r.restarts += 1;
                if let Some(mut p) = peer.take() {
                    let _ = p.child.kill().await;
                }
            }
        }
        r.calls.push(Call {
            sent_us: us(sent),
            done_us: us(done),
            error,
        });
    }
    if let Some(mut p) = peer.take() {
        let _ = p.stdin.write_all(b"{\"op\":\"close\"}\n").await;
        let _ = tokio::time::timeout(Duration::from_secs(3), p.child.wait()).await;
        let _ = p.child.kill().await;
    }
    r
}
