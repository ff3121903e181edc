//! Issue 59, item 22: resource URIs are not prefixed, so a member listed first takes every URI
//! it lists or one of its templates expands to, also where a later member serves it too (a
//! catch-all template takes every URI of the members after it). Before, only the `collision`
//! metric ever recorded it. Now `mcp-gateway validate` warns about every member that may do so
//! (one listed before others, with no `resources.include`), and the gateway logs each conflict
//! it meets at warn, once: the first read a later member's template expands to as well names
//! both members and both templates; reads after it through the same templates add nothing.
//!
//! Peers: two PyPI mcp 2.3.0 servers (`resource_rules_server.py`), each with the template
//! `admin://users/{uid}`.

use super::rpc_on;
use mcp_gateway_tests::harness::{unique_temp_path, workspace_bin};
use mcp_gateway_tests::{logs, Gateway, PythonPeer};
use serde_json::json;

/// `/hub` over `first` and `second`, two members whose templates expand to the same URIs.
fn hub(first: &PythonPeer, second: &PythonPeer) -> String {
    format!(
        "pools:\n  p1: {{ backends: [{}] }}\n  p2: {{ backends: [{}] }}\nroutes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n\
         \x20     - {{ name: first, pool: p1 }}\n      - {{ name: second, pool: p2 }}\n",
        first.addr(),
        second.addr()
    )
}

#[tokio::test]
async fn a_member_listed_first_that_takes_later_members_uris_is_warned_about_at_validation_and_once_in_the_log(
) {
    let peer = |name: &'static str| async move {
        let args = ["--port", "0", "--name", name];
        PythonPeer::start("mcp2", "resource_rules_server.py", &args).await
    };
    let (first, second) = (peer("first").await, peer("second").await);
    let yaml = hub(&first, &second);

    let file = unique_temp_path("mcpgw-resource-conflicts.yaml");
    std::fs::write(&file, &yaml).unwrap();
    let validate = std::process::Command::new(workspace_bin("mcp-gateway"))
        .arg("validate")
        .arg(&file)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    let said = String::from_utf8_lossy(&validate.stderr);
    assert!(validate.status.success(), "{said}");
    let warned: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("resource URIs are not prefixed"))
        .collect();
    assert_eq!(warned.len(), 1, "{said}");
    assert!(
        warned[0].contains("warning: routes[0] (/hub).members[0] (first)")
            && warned[0].contains("(`second`)")
            && warned[0].contains("resources.include"),
        "{said}"
    );

    let log = unique_temp_path("mcpgw-resource-conflicts-log");
    let gw = Gateway::start_logging_to(&yaml, &[], &log).await;
    for (id, user) in [(1, "grace"), (2, "ada"), (3, "linus")] {
        let uri = format!("admin://users/{user}");
        let resp = rpc_on("/hub", id, "resources/read", json!({"uri": uri}))
            .header("Mcp-Name", &uri)
            .send(gw.addr)
            .await;
        let v = resp.json();
        assert_eq!(
            v["result"]["contents"][0]["text"],
            format!("user {user}"),
            "{v}"
        );
    }
    let routed = gw
        .metric(
            "mcpgw_virtual_member_events_total{event=\"routed\",member=\"first\",route=\"/hub\"}",
        )
        .await;
    assert_eq!(routed, 3.0, "the member listed first took every read");
    // the log is written before each answer: every line of the three reads is there
    let lines = logs::read(&log);
    let conflicts: Vec<&logs::Line> = lines
        .iter()
        .filter(|l| l.message.contains("takes resource URIs a later member"))
        .collect();
    assert_eq!(conflicts.len(), 1, "once, not per read: {conflicts:#?}");
    let line = &conflicts[0];
    assert_eq!(line.level, "WARN", "{line:?}");
    for field in ["\"first\"", "\"second\"", "admin://users/{uid}"] {
        assert!(line.raw.contains(field), "{field} in {}", line.raw);
    }
    drop(gw);
    let _ = std::fs::remove_file(&log);
}
