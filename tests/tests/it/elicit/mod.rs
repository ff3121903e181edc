//! Issue 17's peers, shared by `ordering.rs` and `conformance.rs`: the TypeScript SDK server whose
//! tools send server-initiated requests on the standalone GET stream only
//! (`tests/peers/node/elicit_server.mjs`), and the clients that call a tool right after connecting
//! (`tests/peers/node/elicit_race_client.mjs`, `tests/peers/elicit_race_client.py`).

use mcp_gateway_tests::harness::{node, python, workspace};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

pub use mcp_gateway_tests::elicit::ElicitServer;

/// A client that calls right after connecting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RaceClient {
    /// `@modelcontextprotocol/sdk@1.32.2` `Client`.
    Ts,
    /// `mcp==1.30.0` `ClientSession`.
    Py1,
}

impl RaceClient {
    /// For messages.
    pub fn label(self) -> &'static str {
        match self {
            RaceClient::Ts => "TypeScript SDK 1.32.2",
            RaceClient::Py1 => "Python 1.30.0",
        }
    }
}

/// What one batch of runs saw.
#[derive(Debug, Clone)]
pub struct Race {
    /// Runs made.
    pub runs: u64,
    /// Runs that failed or took longer than the timeout.
    pub stalls: u64,
    /// The first few failures.
    pub failures: Vec<String>,
    /// Each run's duration.
    pub ms: Vec<u64>,
}

/// Runs `client` `runs` times against `url`, each a new session calling `tool` (`ask` or
/// `sample`) at once; a run slower than `timeout_ms` is a stall.
pub async fn race(client: RaceClient, url: &str, runs: u32, timeout_ms: u64, tool: &str) -> Race {
    let mut cmd = match client {
        RaceClient::Ts => {
            let mut c = Command::new(node());
            c.arg(workspace().join("tests/peers/node/elicit_race_client.mjs"));
            c
        }
        RaceClient::Py1 => {
            let mut c = Command::new(python("mcp1"));
            c.arg(workspace().join("tests/peers/elicit_race_client.py"));
            c
        }
    };
    cmd.args(["--url", url, "--tool", tool, "--runs"])
        .arg(runs.to_string())
        .arg("--timeout-ms")
        .arg(timeout_ms.to_string())
        .stdin(Stdio::null())
        .kill_on_drop(true);
    // Every run is bounded (a stall costs about 2 * timeout_ms at most) plus start-up.
    let bound = Duration::from_millis(u64::from(runs) * (2 * timeout_ms + 3000) + 30_000);
    let out = tokio::time::timeout(bound, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{} race client ran over {bound:?}", client.label()))
        .expect("run the race client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "{} race client printed no verdict; stdout: {stdout}\nstderr: {}",
                client.label(),
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let nums = |k: &str| -> Vec<u64> {
        v[k].as_array()
            .map(|a| a.iter().filter_map(|x| x.as_u64()).collect())
            .unwrap_or_default()
    };
    Race {
        runs: v["runs"].as_u64().unwrap_or(0),
        stalls: v["stalls"].as_u64().unwrap_or(u64::MAX),
        failures: v["failures"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        ms: nums("ms"),
    }
}
