//! The TypeScript SDK server of issue 17 (`tests/peers/node/elicit_server.mjs`): its tools send
//! server-initiated requests (`elicitation/create`, `sampling/createMessage`) on the session's
//! standalone GET stream only. It binds port 0 itself and reports the port it got.

use crate::harness::{node, workspace};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// `elicit_server.mjs` on a free port, killed on drop.
pub struct ElicitServer {
    /// Its port on 127.0.0.1.
    pub port: u16,
    _child: Child,
}

impl ElicitServer {
    /// Starts it; its tools give up on an unanswered request after `request_timeout_ms`.
    pub async fn start(request_timeout_ms: u64) -> ElicitServer {
        let mut child = Command::new(node())
            .arg(workspace().join("tests/peers/node/elicit_server.mjs"))
            .args(["--port", "0", "--request-timeout-ms"])
            .arg(request_timeout_ms.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn elicit_server.mjs");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let port = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .ok()
            .and_then(|l| l.ok().flatten())
            .and_then(|l| l.strip_prefix("READY ")?.trim().parse::<u16>().ok())
            .expect("elicit_server.mjs printed READY <port>");
        ElicitServer {
            port,
            _child: child,
        }
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `http://127.0.0.1:port/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr())
    }
}
