//! The official conformance suite (`@modelcontextprotocol/conformance`, every server scenario of
//! its default suite) against real servers directly and through the gateway in `stateful` and
//! `auto` modes: the results through the gateway must equal the direct ones, check for check.
//! Servers: npm server-everything, and tests/peers/conformance_server.py (FastMCP 1.30.0, the
//! suite's fixture tools, resources and prompts), which must pass every check.

use mcp_gateway_tests::conformance::{self, Results};
use mcp_gateway_tests::harness::workspace;
use mcp_gateway_tests::{Gateway, PythonPeer};

/// The listener guards DNS rebinding the way loopback SDK servers do.
const LISTENER: &str = "allowed-hosts: [\"127.0.0.1:*\", \"localhost:*\", \"[::1]:*\"]\n\
                        allowed-origins: [\"http://127.0.0.1:*\", \"http://localhost:*\"]\n";

fn gateway_config(listener: &str, server: &PythonPeer) -> String {
    format!(
        "{listener}pools:\n  p: {{ backends: [{}] }}\nroutes:\n\
         \x20 - {{ path: /stateful, mode: stateful, pool: p, upstream-path: /mcp }}\n\
         \x20 - {{ path: /auto, mode: auto, pool: p, upstream-path: /mcp }}\n",
        server.addr()
    )
}

/// Runs the suite directly and through the gateway (`stateful` and `auto` routes, `listener`
/// settings); fails on any difference.
async fn compare(name: &str, server: &PythonPeer, listener: &str) -> Vec<(String, Results)> {
    let gw = Gateway::start(&gateway_config(listener, server)).await;
    let out = workspace().join(format!("target/conformance/{name}"));
    let direct = conformance::run(
        &format!("http://{}/mcp", server.addr()),
        &out.join("direct"),
    )
    .await;
    let mut runs = vec![("direct".to_owned(), direct.clone())];
    let mut problems = Vec::new();
    for mode in ["stateful", "auto"] {
        let through = conformance::run(&gw.url(&format!("/{mode}")), &out.join(mode)).await;
        for d in conformance::differences(&direct, &through) {
            problems.push(format!("{mode}: {d}"));
        }
        runs.push((format!("gateway {mode}"), through));
    }
    let table = conformance::summary(
        name,
        &runs
            .iter()
            .map(|(h, r)| (h.as_str(), r))
            .collect::<Vec<_>>(),
    );
    println!(
        "| server | run | checks | passed | failed | other |\n|---|---|---|---|---|---|\n{table}"
    );
    let _ = std::fs::write(out.join("summary.md"), &table);
    assert!(
        problems.is_empty(),
        "results differ:\n{}",
        problems.join("\n")
    );
    runs
}

#[tokio::test]
async fn server_everything_gives_the_same_results_through_the_gateway() {
    let server = PythonPeer::everything("everything", 0).await;
    // A transparent gateway (no listener guard) changes nothing.
    let runs = compare("server-everything", &server, "").await;
    let direct = &runs[0].1;
    let (passed, _, _) = conformance::counts(direct);
    assert!(passed > 0, "the suite ran no passing check at all");

    // server-everything does not guard DNS rebinding itself; with `allowed-hosts` the gateway
    // does, and that scenario's checks are then the only difference.
    let gw = Gateway::start(&gateway_config(LISTENER, &server)).await;
    let out = workspace().join("target/conformance/server-everything/guarded");
    let guarded = conformance::run(&gw.url("/stateful"), &out).await;
    let diffs = conformance::differences(direct, &guarded);
    assert!(!diffs.is_empty(), "the listener guard changed nothing");
    for d in &diffs {
        assert!(
            d.starts_with("dns-rebinding-protection/")
                && d.ends_with("through the gateway Some(\"SUCCESS\")"),
            "unexpected difference with the listener guard: {d}"
        );
    }
    println!("with allowed-hosts: {}", diffs.join("; "));
    let summary = conformance::summary(
        "server-everything",
        &[("gateway stateful + allowed-hosts", &guarded)],
    );
    let _ = std::fs::write(out.join("summary.md"), summary);
}

#[tokio::test]
async fn the_fixture_server_passes_every_check_directly_and_through_the_gateway() {
    let server = PythonPeer::start(
        "mcp1",
        "conformance_server.py",
        &["--port", "0", "--name", "conformance"],
    )
    .await;
    for (how, results) in compare("fixture", &server, LISTENER).await {
        let failing: Vec<_> = results.iter().filter(|(_, s)| *s != "SUCCESS").collect();
        assert!(
            failing.is_empty(),
            "{how}: not every check passes: {failing:?}"
        );
    }
}
