//! Support for the era-bridge tests (issue 22): running the legacy client drivers
//! (`tests/peers/bridge_client_v1.py` under PyPI mcp 1.30.0, `tests/peers/node/
//! bridge_client_v1.mjs` under the TypeScript SDK 1.32.2) and reading their verdicts.

use crate::harness::{node, python, workspace};
use serde_json::Value;
use std::time::Duration;
use tokio::process::Command;

/// A legacy client SDK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegacyClient {
    /// PyPI `mcp` 1.30.0 `ClientSession`.
    Python,
    /// npm `@modelcontextprotocol/sdk` 1.32.2 `Client`.
    TypeScript,
}

impl LegacyClient {
    /// Both of them.
    pub const ALL: [LegacyClient; 2] = [LegacyClient::Python, LegacyClient::TypeScript];

    /// Runs `scenario` (with `arg`) against `url`; whether it exited 0, and its last JSON line.
    pub async fn run(self, url: &str, scenario: &str, arg: Option<&str>) -> (bool, Value) {
        let mut cmd = match self {
            LegacyClient::Python => {
                let mut c = Command::new(python("mcp1"));
                c.arg(workspace().join("tests/peers/bridge_client_v1.py"));
                c
            }
            LegacyClient::TypeScript => {
                let mut c = Command::new(node());
                c.arg(workspace().join("tests/peers/node/bridge_client_v1.mjs"));
                c
            }
        };
        cmd.args(["--url", url, scenario])
            .args(arg)
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(90), cmd.output())
            .await
            .unwrap_or_else(|_| panic!("{self:?} {scenario} did not finish in 90 s"))
            .expect("run the client");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let last = stdout
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .unwrap_or("{}");
        let verdict: Value = serde_json::from_str(last).unwrap_or_else(|e| {
            panic!(
                "{self:?} {scenario}: no JSON verdict ({e}): {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.success(), verdict)
    }
}
