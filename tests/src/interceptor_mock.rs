//! A mock interceptor server (SEP-2624 draft wire shapes) on 127.0.0.1, for fast tests of the
//! paths a route's chain runs on. It answers `initialize`, `server/discover`,
//! `interceptors/list` and `interceptor/invoke` (every other request with an empty result) and
//! records each invocation. Its interceptors are [`Rule`]s that read the payload as JSON text,
//! as the draft's example mutator does, so they hold whatever shape the gateway sends:
//! a validator denies a payload whose text holds its needle, a mutator replaces the needle.

use crate::wire::{read_body, read_head};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// One interceptor of the mock.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Its name.
    pub name: &'static str,
    /// A mutator (else a validator).
    pub mutates: bool,
    /// The event it hooks.
    pub event: &'static str,
    /// The phase it hooks (`request` or `response`).
    pub phase: &'static str,
    /// What it looks for in the payload's JSON text.
    pub needle: &'static str,
    /// What a mutator puts in the needle's place.
    pub replacement: &'static str,
}

impl Rule {
    /// A validator of `event` in `phase` that denies a payload holding `needle`.
    pub fn deny(
        name: &'static str,
        event: &'static str,
        phase: &'static str,
        needle: &'static str,
    ) -> Rule {
        Rule {
            name,
            mutates: false,
            event,
            phase,
            needle,
            replacement: "",
        }
    }

    /// A mutator of `event` in `phase` that replaces `needle` with `replacement`.
    pub fn replace(
        name: &'static str,
        event: &'static str,
        phase: &'static str,
        needle: &'static str,
        replacement: &'static str,
    ) -> Rule {
        Rule {
            name,
            mutates: true,
            event,
            phase,
            needle,
            replacement,
        }
    }

    fn info(&self) -> Value {
        json!({
            "name": self.name,
            "version": "1.0.0",
            "type": if self.mutates { "mutation" } else { "validation" },
            "hooks": [{"events": [self.event], "phase": self.phase}],
            "mode": "active",
            "failOpen": false,
        })
    }

    fn invoke(&self, payload: &Value, phase: &str) -> Value {
        let text = payload.to_string();
        let hit = text.contains(self.needle);
        let common = json!({"interceptor": self.name, "phase": phase, "durationMs": 1});
        let mut out = if self.mutates {
            let changed = text.replace(self.needle, self.replacement);
            let payload = serde_json::from_str::<Value>(&changed).unwrap_or(payload.clone());
            json!({"type": "mutation", "modified": hit, "payload": payload})
        } else if hit {
            json!({"type": "validation", "valid": false, "severity": "error",
                   "messages": [{"message": format!("{} found {:?}", self.name, self.needle), "severity": "error"}]})
        } else {
            json!({"type": "validation", "valid": true})
        };
        if let (Some(out), Some(common)) = (out.as_object_mut(), common.as_object()) {
            out.extend(common.clone());
        }
        out
    }
}

/// One `interceptor/invoke` the mock answered: its name, event, phase and payload.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The interceptor asked.
    pub name: String,
    /// The event.
    pub event: String,
    /// The phase.
    pub phase: String,
    /// The payload as sent.
    pub payload: Value,
    /// The invocation's context.
    pub context: Value,
}

/// A running mock interceptor server.
pub struct MockInterceptor {
    /// Where it listens.
    pub addr: SocketAddr,
    invoked: Arc<Mutex<Vec<Invocation>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockInterceptor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockInterceptor {
    /// Starts a mock offering `rules`, on a free loopback port.
    pub async fn start(rules: Vec<Rule>) -> MockInterceptor {
        Self::start_on(0, rules).await
    }

    /// Starts a mock offering `rules` on loopback port `port` (0: any).
    pub async fn start_on(port: u16, rules: Vec<Rule>) -> MockInterceptor {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let invoked = Arc::new(Mutex::new(Vec::new()));
        let rules = Arc::new(rules);
        let seen = invoked.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (rules, seen) = (rules.clone(), seen.clone());
                tokio::spawn(async move {
                    let _ = serve(stream, &rules, &seen).await;
                });
            }
        });
        MockInterceptor {
            addr,
            invoked,
            task,
        }
    }

    /// Its URL, as the gateway's config names it.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The invocations so far.
    pub fn invocations(&self) -> Vec<Invocation> {
        self.invoked.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

async fn serve(
    stream: tokio::net::TcpStream,
    rules: &[Rule],
    seen: &Mutex<Vec<Invocation>>,
) -> std::io::Result<()> {
    let _ = stream.set_nodelay(true);
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    while let Some(head) = read_head(&mut read, true).await? {
        let body = read_body(&mut read, &head, true).await?;
        let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let (status, answer) = match msg.get("id") {
            None => (202, Vec::new()),
            Some(id) => {
                let result = answer(&msg, rules, seen);
                let out = json!({"jsonrpc": "2.0", "id": id, "result": result});
                (200, out.to_string().into_bytes())
            }
        };
        let mut out = format!(
            "HTTP/1.1 {status} {}\r\ncontent-length: {}\r\n",
            if status == 200 { "OK" } else { "Accepted" },
            answer.len()
        );
        if status == 200 {
            out.push_str("content-type: application/json\r\n");
        }
        out.push_str("\r\n");
        // one write per answer (head and body together): a second small write would wait on
        // the client's delayed ACK
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(&answer);
        write.write_all(&bytes).await?;
    }
    Ok(())
}

fn answer(msg: &Value, rules: &[Rule], seen: &Mutex<Vec<Invocation>>) -> Value {
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
    let events: Vec<&str> = rules.iter().map(|r| r.event).collect();
    let capabilities = json!({"extensions": {"io.modelcontextprotocol/interceptors": {"supportedEvents": events}}});
    match msg
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "initialize" => json!({
            "protocolVersion": params.get("protocolVersion").cloned().unwrap_or(json!("2025-11-25")),
            "capabilities": capabilities,
            "serverInfo": {"name": "mock-interceptor", "version": "1.0.0"},
        }),
        "server/discover" => json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": capabilities,
            "serverInfo": {"name": "mock-interceptor", "version": "1.0.0"},
        }),
        "interceptors/list" => {
            json!({"interceptors": rules.iter().map(Rule::info).collect::<Vec<_>>()})
        }
        "interceptor/invoke" => {
            let name = params
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let phase = params
                .get("phase")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let payload = params.get("payload").cloned().unwrap_or(Value::Null);
            if let Ok(mut seen) = seen.lock() {
                seen.push(Invocation {
                    name: name.to_owned(),
                    event: params
                        .get("event")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    phase: phase.to_owned(),
                    payload: payload.clone(),
                    context: params.get("context").cloned().unwrap_or(Value::Null),
                });
            }
            match rules.iter().find(|r| r.name == name) {
                Some(rule) => rule.invoke(&payload, phase),
                None => {
                    json!({"type": "validation", "valid": true, "interceptor": name, "phase": phase})
                }
            }
        }
        _ => json!({}),
    }
}
