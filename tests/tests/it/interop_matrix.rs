//! The interop matrix (issue 5): four real SDK clients × five real SDK servers × three route
//! modes through one gateway. Prints the table (also written to target/interop-matrix.md) and
//! fails on any cell that does not do what docs/interoperability.md documents. The fifth server
//! (issue 17) sends its elicitation / sampling requests on the session's GET stream only; each of
//! its cells opens 2 × `ELICIT_SESSIONS` sessions that call at once, and every call must be
//! answered.

use mcp_gateway_tests::harness::workspace;
use mcp_gateway_tests::interop::{self, SERVERS};
use mcp_gateway_tests::machine;
use mcp_gateway_tests::{assert_eventually, Gateway};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_client_server_and_mode_works_or_fails_as_documented() {
    // ten servers and a client process per cell: no other guarded test meanwhile
    let _machine = machine::exclusive().await;
    let mut replicas = Vec::new();
    let mut pools = Vec::new();
    for server in SERVERS {
        let (name_a, name_b) = (
            format!("{}-a", server.slug()),
            format!("{}-b", server.slug()),
        );
        let (a, b) = tokio::join!(server.start(&name_a), server.start(&name_b));
        pools.push((server, vec![a.addr(), b.addr()]));
        replicas.extend([a, b]);
    }
    let gw = Gateway::start(&interop::gateway_config(&pools)).await;

    let rows = interop::run_matrix(&gw).await;
    let table = interop::table(&rows);
    println!("{table}");
    let out = workspace().join("target/interop-matrix.md");
    let _ = std::fs::write(&out, &table);

    let mismatches: Vec<String> = rows
        .iter()
        .flat_map(|(server, mode, cells)| {
            cells.iter().filter_map(move |(client, outcome)| {
                let want = interop::expected(*client, *server, mode);
                (!outcome.meets(want)).then(|| {
                    format!(
                        "{} on {} ({mode}): expected {want:?}, got {outcome:?}",
                        client.label(),
                        server.label()
                    )
                })
            })
        })
        .collect();
    assert!(mismatches.is_empty(), "{}\n{table}", mismatches.join("\n"));

    // Every session a client opened was ended (the SDKs send DELETE on close).
    assert_eventually!(
        Duration::from_secs(5),
        gw.metric("mcpgw_sessions_active").await == 0.0,
        "every session ended once every client closed"
    );
    assert!(gw.metric("mcpgw_sessions_created_total").await > 0.0);
}
