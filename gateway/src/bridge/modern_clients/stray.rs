//! Server→client requests a legacy backend sends on a pooled session's GET stream instead of
//! the call's own answer (FastMCP 1.x `ctx.session.list_roots()`, and `create_message` without
//! a related request id). The gateway holds that stream for every pooled session whose client
//! declared elicitation, sampling or roots, and hands such a request to the call in flight on
//! the session that may ask for input (`tools/call`, `prompts/get`, `resources/read`) when it
//! is the only one (it must be the one that asked); otherwise the backend gets a refusal, since
//! nothing ties the request to a call.

use super::entry::Entry;
use crate::bridge::answer::Messages;
use crate::error::GatewayError;
use crate::sync::lock;
use crate::upstream::attempt::Engine;
use crate::upstream::request::{self, Target};
use bytes::Bytes;
use mcp_wire::translate::mrtr;
use mcp_wire::translate::result::peek;
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use tokio::sync::mpsc;

/// Whether a client with these capabilities may be asked for input (so its pooled sessions
/// hold their GET stream).
pub(super) fn wants_stream(capabilities: &Value) -> bool {
    ["elicitation", "sampling", "roots"]
        .iter()
        .any(|k| capabilities.get(k).is_some_and(|v| !v.is_null()))
}

/// A call's registration for the requests of its session's GET stream (only calls that may
/// ask for input register: `tools/call`, `prompts/get`, `resources/read`); removed on drop.
pub(super) struct Strays {
    rx: mpsc::UnboundedReceiver<Value>,
    id: u64,
    entry: Arc<Entry>,
}

impl Strays {
    /// The next request handed to this call.
    pub(super) async fn recv(&mut self) -> Option<Value> {
        self.rx.recv().await
    }
}

impl Drop for Strays {
    fn drop(&mut self) {
        lock(&self.entry.strays).retain(|(id, _)| *id != self.id);
    }
}

/// Whether a call of `method` may make its backend ask for input.
pub(super) fn may_ask(method: &str) -> bool {
    matches!(method, "tools/call" | "prompts/get" | "resources/read")
}

/// Registers a running call of `entry` for the requests of its GET stream.
pub(super) fn register(entry: &Arc<Entry>) -> Strays {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = mpsc::unbounded_channel();
    lock(&entry.strays).push((id, tx));
    Strays {
        rx,
        id,
        entry: entry.clone(),
    }
}

/// Opens and reads the GET stream of `entry` in the background until it ends or the entry
/// is dropped from the pool.
/// Returns once the backend accepted the stream (or refused it, or after a second): a request
/// the backend sends on it before it is open would be lost.
pub(super) async fn hold(engine: Arc<Engine>, entry: &Arc<Entry>) {
    let weak = Arc::downgrade(entry);
    let (opened, open) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        if let Err(why) = read(&engine, weak, opened).await {
            tracing::debug!(why, "a pooled session's GET stream ended");
        }
    });
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), open).await;
}

async fn read(
    engine: &Engine,
    weak: Weak<Entry>,
    opened: tokio::sync::oneshot::Sender<()>,
) -> Result<(), &'static str> {
    let entry = weak.upgrade().ok_or("gone")?;
    let target = Target {
        path: &entry.session.path,
        host: &entry.backend.host_header,
    };
    let id = Some(&*entry.session.id);
    let version = Some(&*entry.session.protocol_version);
    let mut head = request::own(http::Method::GET, target, id, version, 0, &entry.caller)
        .map_err(|_| "head")?;
    head.insert_header("accept", "text/event-stream")
        .map_err(|_| "head")?;
    let exchange = engine
        .send(&entry.pool, &entry.backend, &head, Bytes::new(), true)
        .await
        .map_err(|_| "not opened")?;
    let _ = opened.send(());
    if !exchange.header().status.is_success() {
        return Err("refused");
    }
    drop(entry);
    let mut messages = Messages::new(exchange);
    while let Some(raw) = messages.next().await.map_err(|_| "broken")? {
        let Some(entry) = weak.upgrade().filter(|e| !e.is_gone()) else {
            return Ok(());
        };
        if !peek(&raw).is_some_and(|p| p.request) {
            continue;
        }
        let Ok(msg) = serde_json::from_slice::<Value>(&raw) else {
            continue;
        };
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        let handed = mrtr::is_input_request(method) && {
            let calls = lock(&entry.strays);
            calls.len() == 1 && calls[0].1.send(msg.clone()).is_ok()
        };
        if !handed {
            let id = msg.get("id").unwrap_or(&Value::Null);
            let answer = GatewayError::no_call_for_server_request().to_backend(id);
            let _ = engine
                .post_in_session(
                    &entry.pool,
                    &entry.backend,
                    &entry.session,
                    answer.to_string(),
                    &entry.caller,
                )
                .await;
        }
    }
    Ok(())
}
