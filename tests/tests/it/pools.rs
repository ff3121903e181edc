//! Pools for rollouts against Rust mocks: file discovery (join at once, drain on removal,
//! leave after the deadline), the admin drain API, active health checks, admin views.

use mcp_gateway_tests::harness::unique_temp_path;
use mcp_gateway_tests::{
    assert_eventually, eventually_async, open_session, Gateway, MockServer, PortClaim, Request,
};
use serde_json::Value;
use std::net::SocketAddr;
use std::time::Duration;

const V: &str = "2025-11-25";

async fn whoami(gw: SocketAddr, sid: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami"}}"#;
    let resp = Request::post("/mcp", body)
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", V)
        .send(gw)
        .await;
    resp.tool_text()
}

async fn backends(gw: &Gateway) -> Value {
    let (status, body) = gw.admin_get("/admin/backends").await;
    assert_eq!(status, 200);
    serde_json::from_str(&body).unwrap()
}

fn state_of(view: &Value, addr: SocketAddr) -> Option<String> {
    view["pools"][0]["backends"]
        .as_array()?
        .iter()
        .find(|b| b["address"] == addr.to_string())
        .map(|b| b["state"].as_str().unwrap_or("").to_owned())
}

/// How long the admin API says `addr` has been draining.
fn draining_for_ms(view: &Value, addr: SocketAddr) -> Option<u64> {
    view["pools"][0]["backends"]
        .as_array()?
        .iter()
        .find(|b| b["address"] == addr.to_string())?["drainingForMs"]
        .as_u64()
}

async fn post_admin(gw: &Gateway, path: &str) -> u16 {
    Request::bare("POST", path)
        .header(
            "Authorization",
            &format!("Bearer {}", mcp_gateway_tests::harness::ADMIN_TOKEN),
        )
        .send(gw.admin)
        .await
        .status()
}

#[tokio::test]
async fn discovered_pods_join_at_once_and_removed_ones_drain_then_leave() {
    let a = MockServer::legacy("a", 0, V).await;
    let b = MockServer::legacy("b", 0, V).await;
    let file = unique_temp_path("mcpgw-endpoints");
    std::fs::write(&file, format!("{}\n", a.addr)).unwrap();
    let gw = Gateway::start(&format!(
        "pools:\n  pods: {{ backends: [], drain-timeout-s: 2, discovery: {{ file: {}, interval-ms: 100 }} }}\nroutes: [ {{ path: /mcp, pool: pods, mode: stateful }} ]\n",
        file.display()
    ))
    .await;
    let on_a = open_session(gw.addr).await;
    assert_eq!(whoami(gw.addr, &on_a).await, "a");

    // b appears: the next session goes to it (fewest sessions)
    std::fs::write(&file, format!("{}\n{}\n", a.addr, b.addr)).unwrap();
    eventually_async("b joins", Duration::from_secs(5), || async {
        state_of(&backends(&gw).await, b.addr).as_deref() == Some("up")
    })
    .await;
    let on_b = open_session(gw.addr).await;
    assert_eq!(whoami(gw.addr, &on_b).await, "b");
    // a (found at start: the static list is empty) and b
    assert_eq!(
        gw.metric("mcpgw_discovery_changes_total{change=\"added\"}")
            .await,
        2.0
    );

    // a disappears from discovery: it drains; its session keeps working until the deadline
    std::fs::write(&file, format!("{}\n", b.addr)).unwrap();
    eventually_async("a drains", Duration::from_secs(5), || async {
        state_of(&backends(&gw).await, a.addr).as_deref() == Some("draining")
    })
    .await;
    assert_eq!(
        whoami(gw.addr, &on_a).await,
        "a",
        "sessions stay during the drain"
    );
    let fresh = open_session(gw.addr).await;
    assert_eq!(
        whoami(gw.addr, &fresh).await,
        "b",
        "no new sessions on a draining pod"
    );

    // after the drain deadline: a leaves, and its session moves at its next request
    eventually_async("a leaves", Duration::from_secs(6), || async {
        state_of(&backends(&gw).await, a.addr).is_none()
    })
    .await;
    assert_eq!(whoami(gw.addr, &on_a).await, "b");
    assert_eq!(
        gw.metric("mcpgw_discovery_changes_total{change=\"removed\"}")
            .await,
        1.0
    );
    let _ = std::fs::remove_file(file);
}

#[tokio::test]
async fn the_admin_api_drains_a_backend_and_moves_its_sessions_after_the_deadline() {
    let a = MockServer::legacy("a", 0, V).await;
    let b = MockServer::legacy("b", 0, V).await;
    let gw = Gateway::start(&format!(
        "pools:\n  pods: {{ backends: [{}, {}], drain-timeout-s: 1 }}\nroutes: [ {{ path: /mcp, pool: pods, mode: stateful }} ]\n",
        a.addr, b.addr
    ))
    .await;
    let first = open_session(gw.addr).await;
    let pinned = whoami(gw.addr, &first).await;
    let (pinned_addr, other) = if pinned == "a" {
        (a.addr, "b")
    } else {
        (b.addr, "a")
    };
    let status = post_admin(
        &gw,
        &format!("/admin/backends/drain?pool=pods&backend={pinned_addr}"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        state_of(&backends(&gw).await, pinned_addr).as_deref(),
        Some("draining")
    );
    assert_eq!(
        gw.metric(&format!(
            "mcpgw_backend_draining{{backend=\"{pinned_addr}\"}}"
        ))
        .await,
        1.0
    );
    for _ in 0..3 {
        let s = open_session(gw.addr).await;
        assert_eq!(whoami(gw.addr, &s).await, other);
    }
    assert_eq!(
        whoami(gw.addr, &first).await,
        pinned,
        "kept until the deadline"
    );
    // the gateway moves a session once its backend has drained for drain-timeout-s
    assert_eventually!(
        Duration::from_secs(5),
        draining_for_ms(&backends(&gw).await, pinned_addr).is_some_and(|ms| ms >= 1000),
        "{pinned_addr} has drained past its 1 s deadline"
    );
    assert_eq!(whoami(gw.addr, &first).await, other, "moved after it");
    assert_eq!(
        gw.metric("mcpgw_session_reinits_total{reason=\"drained\"}")
            .await,
        1.0
    );
    assert_eq!(
        post_admin(
            &gw,
            &format!("/admin/backends/undrain?pool=pods&backend={pinned_addr}")
        )
        .await,
        200
    );
    assert_eq!(
        state_of(&backends(&gw).await, pinned_addr).as_deref(),
        Some("up")
    );
    assert_eq!(
        post_admin(&gw, "/admin/backends/drain?pool=pods&backend=127.0.0.1:1").await,
        404
    );
}

#[tokio::test]
async fn active_health_checks_mark_a_dead_backend_down_and_bring_it_back() {
    let claim = PortClaim::new();
    let a = MockServer::legacy_on(&claim, "a", V).await;
    let gw = Gateway::start(&format!(
        "pools:\n  pods: {{ backends: [{}], health: {{ path: /mcp, interval-ms: 100, timeout-ms: 200, fall: 2, rise: 2 }} }}\nroutes: [ {{ path: /mcp, pool: pods, mode: stateful }} ]\n",
        a.addr
    ))
    .await;
    let addr = a.addr;
    // a sessionless GET is refused with 400 by a legacy server: that still counts as alive.
    // A third check arriving means the first two (`fall`) were answered and judged.
    let checks = |m: &MockServer| {
        m.requests()
            .iter()
            .filter(|r| r.head.method == "GET")
            .count()
    };
    assert_eventually!(
        Duration::from_secs(5),
        checks(&a) >= 3,
        "two health checks of {addr} were answered with 400"
    );
    assert_eq!(state_of(&backends(&gw).await, addr).as_deref(), Some("up"));
    a.kill();
    drop(a);
    eventually_async("marked down", Duration::from_secs(5), || async {
        state_of(&backends(&gw).await, addr).as_deref() == Some("down")
    })
    .await;
    assert_eq!(gw.admin_get("/readyz").await.0, 503);
    let _back = MockServer::legacy_on(&claim, "a2", V).await;
    eventually_async("back up", Duration::from_secs(5), || async {
        state_of(&backends(&gw).await, addr).as_deref() == Some("up")
    })
    .await;
    assert_eq!(gw.admin_get("/readyz").await.0, 200);
}

#[tokio::test]
async fn the_admin_api_shows_sessions_per_backend_and_one_session() {
    let a = MockServer::legacy("a", 0, V).await;
    let gw = Gateway::start(&format!(
        "pools:\n  pods: {{ backends: [{}] }}\nroutes: [ {{ path: /mcp, pool: pods, mode: stateful }} ]\n",
        a.addr
    ))
    .await;
    let sid = open_session(gw.addr).await;
    open_session(gw.addr).await;
    let (_, body) = gw.admin_get("/admin/sessions").await;
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["total"], 2);
    assert_eq!(v["perBackend"][0]["sessions"], 2);
    let (status, body) = gw.admin_get(&format!("/admin/sessions/{sid}")).await;
    assert_eq!(status, 200);
    let one: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(one["backend"], a.addr.to_string());
    assert_eq!(one["generation"], 1);
    assert_eq!(gw.admin_get("/admin/sessions/nope").await.0, 404);
}

#[tokio::test]
async fn a_config_reload_keeps_sessions_and_a_bad_config_is_refused() {
    let a = MockServer::legacy("a", 0, V).await;
    let b = MockServer::start("b").await;
    let first = format!("pools:\n  pods: {{ backends: [{}] }}\nroutes: [ {{ path: /mcp, pool: pods, mode: stateful }} ]\n", a.addr);
    let gw = Gateway::start(&first).await;
    let sid = open_session(gw.addr).await;
    assert_eq!(whoami(gw.addr, &sid).await, "a");

    // a new route and pool appear; the session keeps its backend without a re-initialization
    let second = format!(
        "pools:\n  pods: {{ backends: [{}] }}\n  modern: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, pool: pods, mode: stateful }}\n  - {{ path: /v2, pool: modern }}\n",
        a.addr, b.addr
    );
    gw.rewrite_config(&second);
    eventually_async("reloaded", Duration::from_secs(5), || async {
        gw.metric("mcpgw_config_reloads_total{result=\"applied\"}")
            .await
            == 1.0
    })
    .await;
    assert_eq!(
        Request::tools_call("/v2", 1, "whoami")
            .send(gw.addr)
            .await
            .tool_text(),
        "b"
    );
    assert_eq!(whoami(gw.addr, &sid).await, "a");
    assert_eq!(gw.metric("mcpgw_session_reinits_total").await, 0.0);
    assert_eq!(
        gw.metric("mcpgw_sessions_active").await,
        1.0,
        "session counts carried over"
    );

    // an invalid config is refused; the running one stays
    gw.rewrite_config("pools: { pods: { backends: [nowhere] } }\nroutes: []\n");
    eventually_async("refused", Duration::from_secs(5), || async {
        gw.metric("mcpgw_config_reloads_total{result=\"rejected\"}")
            .await
            == 1.0
    })
    .await;
    assert_eq!(whoami(gw.addr, &sid).await, "a");
    assert_eq!(
        Request::tools_call("/v2", 2, "whoami")
            .send(gw.addr)
            .await
            .tool_text(),
        "b"
    );

    // SIGHUP reloads even when the file's time did not change
    let modified = std::fs::metadata(&gw.config_path)
        .unwrap()
        .modified()
        .unwrap();
    gw.rewrite_config(&first);
    std::fs::File::options()
        .write(true)
        .open(&gw.config_path)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    let status = std::process::Command::new("kill")
        .args(["-HUP", &gw.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    eventually_async("reloaded by SIGHUP", Duration::from_secs(5), || async {
        gw.metric("mcpgw_config_reloads_total{result=\"applied\"}")
            .await
            == 2.0
    })
    .await;
    assert_eq!(
        Request::tools_call("/v2", 3, "whoami")
            .send(gw.addr)
            .await
            .status(),
        404
    );
    assert_eq!(whoami(gw.addr, &sid).await, "a");
}

#[tokio::test]
async fn dns_discovery_follows_a_headless_service_as_pods_come_and_go() {
    use mcp_gateway_tests::dns::DnsServer;
    use std::net::Ipv4Addr;
    let mut pods =
        MockServer::legacy_same_port(&[("pod-1", "127.0.0.11"), ("pod-2", "127.0.0.12")], V).await;
    let (pod2, pod1) = (pods.pop().unwrap(), pods.pop().unwrap());
    let port = pod1.addr.port();
    let ip = |last: u8| Ipv4Addr::new(127, 0, 0, last);
    let dns = DnsServer::start(&[ip(11)]).await;
    let gw = Gateway::start(&format!(
        "pools:\n  pods: {{ backends: [], drain-timeout-s: 0, discovery: {{ dns: \"mcp-backends.default.svc.cluster.local:{port}\", resolver: \"{}\", interval-ms: 100 }} }}\nroutes: [ {{ path: /mcp, pool: pods, mode: stateful }} ]\n",
        dns.addr
    ))
    .await;
    eventually_async("pod-1 resolved", Duration::from_secs(5), || async {
        state_of(&backends(&gw).await, pod1.addr).is_some()
    })
    .await;
    let sid = open_session(gw.addr).await;
    assert_eq!(whoami(gw.addr, &sid).await, "pod-1");
    // a new pod is ready: it joins and takes the next session
    dns.set(&[ip(11), ip(12)]);
    eventually_async("pod-2 resolved", Duration::from_secs(5), || async {
        state_of(&backends(&gw).await, pod2.addr).is_some()
    })
    .await;
    let sid2 = open_session(gw.addr).await;
    assert_eq!(whoami(gw.addr, &sid2).await, "pod-2");
    // pod-1 leaves the Service: with no drain time it leaves the pool, its session moves
    dns.set(&[ip(12)]);
    eventually_async("pod-1 gone", Duration::from_secs(5), || async {
        state_of(&backends(&gw).await, pod1.addr).is_none()
    })
    .await;
    assert_eq!(whoami(gw.addr, &sid).await, "pod-2");
    assert_eq!(
        gw.metric("mcpgw_session_reinits_total{reason=\"backend-gone\"}")
            .await,
        1.0
    );
}
