//! The soak, two minutes of it (issue 15): `mcp-load soak` runs legacy sessions (100 rps over
//! 50 sessions) and stateless calls (50 rps) through the gateway while a backend is SIGKILLed
//! and restarted every 30 s and the config reloads every 45 s. No call may fail that was not in
//! flight at a kill, file descriptors end where they began, and the sessions held are the 50
//! the load keeps (then none once it ends them). The 30-minute run: `mcp-load soak` (see
//! docs/benchmarks.md).

use mcp_gateway_tests::harness::workspace_bin;
use mcp_gateway_tests::machine;

#[tokio::test(flavor = "multi_thread")]
async fn two_minutes_of_kills_and_reloads_fail_only_calls_in_flight_and_leak_nothing() {
    // two minutes of fixed-rate load with kills: no other guarded test meanwhile
    let _machine = machine::exclusive().await;
    let bin_dir = workspace_bin("mcp-gateway")
        .parent()
        .expect("binary directory")
        .to_path_buf();
    let json = std::env::temp_dir().join(format!("mcp-soak-{}.json", std::process::id()));
    let out = tokio::process::Command::new(workspace_bin("mcp-load"))
        .args(["soak", "--duration", "120", "--kill-every", "30"])
        .args(["--reload-every", "45", "--bin-dir"])
        .arg(&bin_dir)
        .arg("--json")
        .arg(&json)
        .output()
        .await
        .expect("run mcp-load soak");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("report written")).expect("JSON");
    assert_eq!(report["kills"], 3);
    assert!(
        report["reloads"].as_u64() >= Some(2),
        "{}",
        report["reloads"]
    );
    assert_eq!(report["failed_outside_kills"], 0);
    assert_eq!(report["sessions_under_load"], 50.0);
    assert_eq!(report["sessions_after_end"], 0.0);
    let _ = std::fs::remove_file(&json);
}
