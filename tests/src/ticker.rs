//! The TypeScript SDK server whose tool sends notifications on the session's standalone GET
//! stream (`tests/peers/node/ticker_server.mjs`), what it reports about the GETs it saw, and a
//! client GET read event by event as it comes.

use crate::client::Request;
use crate::harness::{node, workspace};
use crate::wire::read_chunk;
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// `ticker_server.mjs` on a free port, killed on drop.
pub struct TickerServer {
    /// Its address on 127.0.0.1.
    pub addr: SocketAddr,
    _child: Child,
}

impl TickerServer {
    /// Starts it.
    pub async fn start() -> TickerServer {
        Self::start_with(&[]).await
    }

    /// Starts it with these arguments too (`--event-store`).
    pub async fn start_with(args: &[&str]) -> TickerServer {
        let mut child = Command::new(node())
            .arg(workspace().join("tests/peers/node/ticker_server.mjs"))
            .args(["--port", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn ticker_server.mjs");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let port = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .ok()
            .and_then(|l| l.ok().flatten())
            .and_then(|l| l.strip_prefix("READY ")?.trim().parse::<u16>().ok())
            .expect("ticker_server.mjs printed READY <port>");
        TickerServer {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            _child: child,
        }
    }

    /// What it saw: `{gets: [...], ticks: [...], max_concurrent_gets, refused_gets}`.
    pub async fn stats(&self) -> serde_json::Value {
        let resp = Request::bare("GET", "/stats").send(self.addr).await;
        resp.json()
    }
}

/// One SSE event a client read.
#[derive(Debug, Clone)]
pub struct Event {
    /// Its `id:`, if any.
    pub id: Option<String>,
    /// Its joined `data:`.
    pub data: String,
}

/// A client GET read in the background: its status, then each event as it arrives (the
/// channel closes when the stream ends or breaks).
pub async fn open_stream(req: Request, addr: SocketAddr) -> (u16, mpsc::UnboundedReceiver<Event>) {
    let (head, mut reader) = req.send_for_head(addr).await;
    let (tx, rx) = mpsc::unbounded_channel();
    let status = head.status;
    tokio::spawn(async move {
        let mut buf = String::new();
        while let Ok(Some(chunk)) = read_chunk(&mut reader).await {
            buf.push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
            while let Some(end) = buf.find("\n\n") {
                let raw: String = buf.drain(..end + 2).collect();
                let mut event = Event {
                    id: None,
                    data: String::new(),
                };
                for line in raw.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        event.id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        event.data.push_str(v.trim_start());
                    }
                }
                if (event.id.is_some() || !event.data.is_empty()) && tx.send(event).is_err() {
                    return;
                }
            }
        }
    });
    (status, rx)
}
