//! The demo's scripted failover: a client opens a session on `/legacy`, the pod holding it is
//! killed, and the next call on the same session is answered by another pod. Printed step by
//! step. A tiny blocking HTTP client is enough here (loopback, small JSON answers).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::time::Duration;

/// How long the failover waits before it starts: time to open the console.
const LEAD_IN: Duration = Duration::from_secs(10);
/// Between its steps: a second of the console's samples each.
const STEP: Duration = Duration::from_secs(2);

struct Answer {
    status: u16,
    session: Option<String>,
    body: String,
}

fn post(port: u16, session: Option<&str>, body: &str) -> std::io::Result<Answer> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let session_header = session
        .map(|s| format!("Mcp-Session-Id: {s}\r\nMCP-Protocol-Version: 2025-11-25\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "POST /legacy HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{session_header}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut session = None;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("mcp-session-id") {
                session = Some(v.trim().to_owned());
            }
        }
    }
    let mut body = String::new();
    reader.read_to_string(&mut body)?;
    Ok(Answer {
        status,
        session,
        body,
    })
}

fn tool_text(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/result/content/0/text")?
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| body.to_owned())
}

/// Runs the scripted failover against the demo gateway on `port`.
pub fn failover(port: u16, mut pods: Vec<(String, Child)>) {
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}"#;
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo-client","version":"1"}}}"#;
    std::thread::sleep(Duration::from_millis(300));
    println!("── failover demo on /legacy in {LEAD_IN:?}: watch it in the console ─────────");
    std::thread::sleep(LEAD_IN);
    let mut answer = None;
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(100));
        if let Ok(a) = post(port, None, init) {
            if a.status == 200 {
                answer = Some(a);
                break;
            }
        }
    }
    let Some(Answer {
        session: Some(sid), ..
    }) = answer
    else {
        eprintln!("demo: the scripted failover could not open a session");
        return;
    };
    println!("1. initialize → gateway session {sid}");
    let first = post(port, Some(&sid), call)
        .map(|a| tool_text(&a.body))
        .unwrap_or_default();
    println!("2. whoami     → {first}");
    std::thread::sleep(STEP);
    let victim = pods
        .iter_mut()
        .find(|(name, _)| first.starts_with(name.as_str()));
    if let Some((name, child)) = victim {
        let _ = child.kill();
        let _ = child.wait();
        println!("3. SIGKILL {name} (the pod holding this session)");
    }
    std::thread::sleep(STEP);
    match post(port, Some(&sid), call) {
        Ok(a) if a.status == 200 => println!(
            "4. whoami     → {}  (same client session, new pod: the gateway replayed initialize)",
            tool_text(&a.body)
        ),
        Ok(a) => println!("4. whoami     → HTTP {}: {}", a.status, a.body),
        Err(e) => println!("4. whoami     → {e}"),
    }
    println!("   the console's timeline shows the move; mcpgw_session_reinits_total on /metrics counts it");
    println!("──────────────────────────────────────────────────────────────────────");
    // Dropping a `Child` neither kills nor reaps it: the surviving pods exit with the demo.
    drop(pods);
}
