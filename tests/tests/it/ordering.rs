//! Issue 17: a TypeScript SDK 1.32.2 server sends a server-initiated request that is not tied to
//! a client request (`server.request(...)` without `relatedRequestId`) on the session's
//! standalone GET SSE stream, and drops it when no GET stream is open (no event store). SDK
//! clients open that GET stream right after `notifications/initialized` and call a tool at once,
//! on another connection: the TypeScript client fires the GET and immediately POSTs the call. A
//! stateful route must not let the call overtake the GET on its way to the backend, or the
//! elicitation / sampling request is lost and the call stalls until the server's timeout.
//! Directly against the server the TypeScript client's GET nearly always wins (the control
//! test); on a loaded 2-core machine it lost 2 of about 1,200 direct runs (0.2 %), so the
//! control can fail now and then for reasons outside the gateway. Needs `scripts/setup-peers`.

use crate::elicit::{race, ElicitServer, Race, RaceClient};
use mcp_gateway_tests::machine;
use mcp_gateway_tests::Gateway;

/// Sessions per tool for `client`. Each is a fresh client: connect, call at once, DELETE.
/// Measured on the gateway before the fix (2 cores, `threads: 2`): the TypeScript client lost
/// 6 to 13 of 50 calls per tool in most batches, so 50 runs show the race every time; the
/// Python 1.30.0 client, whose GET stream gets one round trip of head start (it is started
/// before `notifications/initialized` is POSTed, the call only after its 202), lost 0 to 3 of 50
/// (about 1 to 3 %), so it runs 250 times per tool (about 15 s per tool when nothing stalls).
fn runs(client: RaceClient) -> u32 {
    match client {
        RaceClient::Ts => 50,
        RaceClient::Py1 => 250,
    }
}
/// A healthy run takes well under 200 ms on loopback; a run slower than this is a stall (a
/// lost server request waits for the server's 3 s timeout; 2.5 s leaves a loaded 2-core box
/// room: 1.5 s was once exceeded by a healthy run under a load average of 7).
const CLIENT_TIMEOUT_MS: u64 = 2500;
/// How long the server's tool waits for the client's answer before failing the call.
const SERVER_TIMEOUT_MS: u64 = 3000;
const TOOLS: [&str; 2] = ["ask", "sample"];

fn stateful_route(server: &ElicitServer) -> String {
    format!(
        "pools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: p }}\n",
        server.addr()
    )
}

/// Runs `client` against `url` with every tool; returns (tool, result) and prints them.
async fn races(client: RaceClient, url: &str, how: &str) -> Vec<(&'static str, Race)> {
    let mut out = Vec::new();
    for tool in TOOLS {
        let r = race(client, url, runs(client), CLIENT_TIMEOUT_MS, tool).await;
        let mut sorted = r.ms.clone();
        sorted.sort_unstable();
        println!(
            "{} {how} {tool}: {}/{} stalls, median {} ms, max {} ms, failures {:?}",
            client.label(),
            r.stalls,
            r.runs,
            sorted.get(sorted.len() / 2).copied().unwrap_or(0),
            sorted.last().copied().unwrap_or(0),
            r.failures
        );
        out.push((tool, r));
    }
    out
}

/// Asserts at most `tolerated` stalls per tool (and every run done).
fn assert_stalls(client: RaceClient, how: &str, results: &[(&str, Race)], tolerated: u64) {
    let bad: Vec<String> = results
        .iter()
        .filter(|(_, r)| r.stalls > tolerated || r.runs != u64::from(runs(client)))
        .map(|(tool, r)| {
            format!(
                "{tool}: {} of {} runs stalled; first failures: {:?}",
                r.stalls, r.runs, r.failures
            )
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{} {how}: server-initiated requests were lost:\n{}",
        client.label(),
        bad.join("\n")
    );
}

async fn through_the_gateway(client: RaceClient) {
    let server = ElicitServer::start(SERVER_TIMEOUT_MS).await;
    let gw = Gateway::start(&stateful_route(&server)).await;
    let results = races(client, &gw.url("/mcp"), "through the gateway").await;
    // The gateway holds the session's stream before it answers `notifications/initialized`:
    // no call can overtake it, so not one stall is tolerated.
    assert_stalls(client, "through the gateway", &results, 0);
}

#[tokio::test]
async fn server_initiated_requests_reach_a_typescript_client_that_calls_right_after_connecting() {
    // counts stalls past a 2.5 s timeout: never beside an exclusive test
    let _machine = machine::shared().await;
    through_the_gateway(RaceClient::Ts).await;
}

#[tokio::test]
async fn server_initiated_requests_reach_a_python_1_30_client_that_calls_right_after_connecting() {
    // counts stalls past a 2.5 s timeout: never beside an exclusive test
    let _machine = machine::shared().await;
    through_the_gateway(RaceClient::Py1).await;
}

#[tokio::test]
async fn without_the_gateway_clients_that_call_right_after_connecting_rarely_stall() {
    // counts stalls past a 2.5 s timeout: never beside an exclusive test
    let _machine = machine::shared().await;
    let server = ElicitServer::start(SERVER_TIMEOUT_MS).await;
    for client in [RaceClient::Ts, RaceClient::Py1] {
        let results = races(client, &server.url(), "directly").await;
        // The SDKs' own race (the TypeScript client does not wait for its GET) lost 2 of about
        // 1,200 direct runs under load: the control tolerates 1 in 25, which still fails when
        // the fixture does not work at all.
        let tolerated = u64::from(runs(client)) / 25;
        assert_stalls(client, "directly", &results, tolerated);
    }
}
