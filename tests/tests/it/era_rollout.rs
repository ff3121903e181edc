//! `mcp-load rollout` (issue 22, test 3): three FastMCP 1.30.0 pods replaced one by one by
//! modern-only TypeScript SDK v2 pods while legacy sessions and 2026-07-28 calls run; every
//! failure is a call in flight at a replacement, the 2026-07-28 load loses nothing, the legacy
//! sessions go on over the era bridge once the last legacy pod is gone, and the gateway shows
//! the eras changing.

use mcp_gateway_tests::harness::{workspace, workspace_bin};
use mcp_gateway_tests::machine;
use serde_json::Value;

#[tokio::test]
async fn legacy_pods_replaced_by_modern_ones_lose_only_calls_in_flight() {
    // pods killed under load, failures counted against calls in flight: the machine to itself
    let _machine = machine::exclusive().await;
    let json =
        std::env::temp_dir().join(format!("mcp-load-rollout-test-{}.json", std::process::id()));
    let out = tokio::process::Command::new(workspace_bin("mcp-load"))
        .current_dir(workspace())
        .args(["rollout", "--pods", "3", "--every", "4", "--after", "4"])
        .args([
            "--legacy-rate",
            "20",
            "--modern-rate",
            "20",
            "--sessions",
            "6",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .await
        .expect("run mcp-load rollout");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value =
        serde_json::from_slice(&std::fs::read(&json).expect("json written")).expect("JSON");
    assert!(out.status.success(), "{stdout}");
    assert_eq!(report["failed_outside"], 0, "{stdout}");
    assert_eq!(report["failed_after_last"], 0, "{stdout}");
    assert_eq!(report["modern"]["failed"], 0, "{stdout}");
    assert!(report["legacy"]["ok"].as_u64().unwrap() > 100, "{stdout}");
    assert!(report["modern"]["ok"].as_u64().unwrap() > 50, "{stdout}");
    let eras: Vec<&str> = report["eras_at_end"]
        .as_array()
        .expect("eras")
        .iter()
        .filter_map(|b| b["era"].as_str())
        .collect();
    // every pod modern at the end: the legacy calls after the last replacement (none failed,
    // above) were served by the era bridge
    assert_eq!(eras, ["modern", "modern", "modern"], "{stdout}");
    let _ = std::fs::remove_file(&json);
}
