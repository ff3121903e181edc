//! Issue 33, legacy (2025-era) clients on virtual routes: one client session holding a session
//! per member (each pinned to its pod and re-initialized on a surviving one), the members'
//! requests renumbered on the call's stream and on the merged session stream, both eras of
//! members, list-changed notifications when a member comes or goes. Real peers: FastMCP
//! 1.30.0, PyPI mcp 2.3.0 and TypeScript SDK v2 servers; PyPI mcp 1.30.0 and TypeScript SDK 1.x
//! clients.

use super::session_client;
use mcp_gateway_tests::{Gateway, PythonPeer, Request};
use serde_json::{json, Value};

/// A legacy client (PyPI mcp 1.30.0, `tests/peers/repl_client.py`) on a virtual route: one
/// client session holding a session per member (two FastMCP 1.30.0 pods behind member `fast`,
/// one behind `conf` with bare names, a 2026-07-28 server behind `m`). Lists merge, calls
/// reach their members in their sessions (a counter counts per session), `logging/setLevel`
/// reaches every member; SIGKILL of the pod holding `fast`'s session: the client keeps its
/// session, the next `fast` call is answered from the surviving pod (its counter restarts,
/// its log level replayed), and `conf` and `m` never notice.
#[tokio::test]
async fn a_legacy_client_keeps_its_session_when_the_pod_of_one_members_session_dies() {
    use mcp_gateway_tests::harness::ReplClient;
    let mut pods = [
        PythonPeer::start(
            "mcp1",
            "legacy_server.py",
            &["--port", "0", "--name", "pod-0"],
        )
        .await,
        PythonPeer::start(
            "mcp1",
            "legacy_server.py",
            &["--port", "0", "--name", "pod-1"],
        )
        .await,
    ];
    let c = PythonPeer::start("mcp1", "legacy_server.py", &["--port", "0", "--name", "c"]).await;
    let m = PythonPeer::start(
        "mcp2",
        "stateless_server.py",
        &["--port", "0", "--name", "m"],
    )
    .await;
    let yaml = format!(
        "pools:\n  fast: {{ era: legacy, backends: [{}, {}] }}\n  conf: {{ era: legacy, backends: [{}] }}\n  m: {{ backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n{}",
        pods[0].addr(),
        pods[1].addr(),
        c.addr(),
        m.addr(),
        r#"      - { name: fast, pool: fast, mode: stateful }
      - { name: conf, pool: conf, mode: stateful, prefix: never }
      - { name: m, pool: m, mode: stateless, prefix: "m." }
"#
    );
    let gw = Gateway::start(&yaml).await;
    let mut client = ReplClient::connect("mcp1", &gw.url("/hub"), None).await;
    let listed = client.cmd(json!({"op": "list"})).await;
    let tools: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for t in ["fast__whoami", "fast__count", "whoami", "count", "m.whoami"] {
        assert!(tools.contains(&t), "{t} in {listed}");
    }
    let pinned = client.call_text("fast__whoami", json!({})).await;
    assert!(pinned == "pod-0" || pinned == "pod-1", "{pinned}");
    assert_eq!(client.call_text("fast__count", json!({})).await, "1");
    assert_eq!(client.call_text("fast__count", json!({})).await, "2");
    assert_eq!(
        client.call_text("count", json!({})).await,
        "1",
        "conf counts its own session"
    );
    assert_eq!(client.call_text("whoami", json!({})).await, "c");
    assert_eq!(client.call_text("m.whoami", json!({})).await, "m");
    let set = client
        .cmd(json!({"op": "set_level", "level": "debug"}))
        .await;
    assert_eq!(set["ok"], true, "{set}");
    assert_eq!(
        client.call_text("fast__log_level", json!({})).await,
        "debug"
    );
    // the pod holding fast's session dies
    let dead = if pinned == "pod-0" { 0 } else { 1 };
    pods[dead].kill().await;
    let survivor = client.call_text("fast__whoami", json!({})).await;
    assert_ne!(
        survivor, pinned,
        "fast's session moved to the surviving pod"
    );
    assert_eq!(
        client.call_text("fast__count", json!({})).await,
        "1",
        "a new session there"
    );
    assert_eq!(
        client.call_text("fast__log_level", json!({})).await,
        "debug",
        "replayed"
    );
    assert_eq!(
        client.call_text("count", json!({})).await,
        "2",
        "conf's session never noticed"
    );
    assert_eq!(client.call_text("m.whoami", json!({})).await, "m");
    assert!(client.close().await, "DELETE ends every member session");
}

/// Elicitation and sampling from two members in one legacy client session (PyPI mcp 1.30.0
/// client, two FastMCP 1.30.0 members whose first requests both carry id 0): each request
/// reaches the client renumbered per member, and each answer goes back to the member that
/// asked, which finishes its call with it.
#[tokio::test]
async fn elicitation_and_sampling_from_two_members_reach_one_legacy_client_and_go_back() {
    let e1 = PythonPeer::start(
        "mcp1",
        "elicit_v1_server.py",
        &["--port", "0", "--name", "e1"],
    )
    .await;
    let e2 = PythonPeer::start(
        "mcp1",
        "elicit_v1_server.py",
        &["--port", "0", "--name", "e2"],
    )
    .await;
    let yaml = format!(
        "pools:\n  e1: {{ era: legacy, backends: [{}] }}\n  e2: {{ era: legacy, backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n      - {{ name: e1, pool: e1, mode: stateful }}\n      - {{ name: e2, pool: e2, mode: stateful }}\n",
        e1.addr(),
        e2.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let v = session_client(
        &gw.url("/hub"),
        &["e1__ask", "e2__ask", "e1__sample", "e2__sample"],
    )
    .await;
    assert_eq!(v["calls"]["e1__ask"], "e1:accept:42", "{v}");
    assert_eq!(v["calls"]["e2__ask"], "e2:accept:42", "{v}");
    assert_eq!(v["calls"]["e1__sample"], "e1:hello from the client", "{v}");
    assert_eq!(v["calls"]["e2__sample"], "e2:hello from the client", "{v}");
    assert_eq!(v["elicited"], 2);
    assert_eq!(v["sampled"], 2);
    assert_eq!(v["server"], "mcp-gateway");
}

/// The TypeScript SDK client (1.x, `tests/peers/node/repl_client.mjs`) on the same kind of
/// virtual route: lists, calls in each member's session, SIGKILL of the pod holding one
/// member's session survived.
#[tokio::test]
async fn the_typescript_client_keeps_its_virtual_session_across_a_pod_kill() {
    use mcp_gateway_tests::harness::ReplClient;
    let mut pods = [
        PythonPeer::start(
            "mcp1",
            "legacy_server.py",
            &["--port", "0", "--name", "pod-0"],
        )
        .await,
        PythonPeer::start(
            "mcp1",
            "legacy_server.py",
            &["--port", "0", "--name", "pod-1"],
        )
        .await,
    ];
    let c = PythonPeer::start("mcp1", "legacy_server.py", &["--port", "0", "--name", "c"]).await;
    let yaml = format!(
        "pools:\n  fast: {{ era: legacy, backends: [{}, {}] }}\n  conf: {{ era: legacy, backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n      - {{ name: fast, pool: fast, mode: stateful }}\n      - {{ name: conf, pool: conf, mode: stateful, prefix: never }}\n",
        pods[0].addr(),
        pods[1].addr(),
        c.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let mut client = ReplClient::try_connect_ts(&gw.url("/hub"))
        .await
        .unwrap_or_else(|e| panic!("the TypeScript client connects: {e}"));
    let listed = client.cmd(json!({"op": "list"})).await;
    assert!(listed.to_string().contains("fast__count"), "{listed}");
    let pinned = client.call_text("fast__whoami", json!({})).await;
    assert_eq!(client.call_text("fast__count", json!({})).await, "1");
    assert_eq!(client.call_text("count", json!({})).await, "1");
    let dead = if pinned == "pod-0" { 0 } else { 1 };
    pods[dead].kill().await;
    assert_ne!(client.call_text("fast__whoami", json!({})).await, pinned);
    assert_eq!(
        client.call_text("count", json!({})).await,
        "2",
        "conf never noticed"
    );
    assert!(client.close().await);
}

/// A legacy client's GET stream on a virtual route merges every member's own: FastMCP 1.30.0
/// sends `roots/list` and `sampling/createMessage` of `list_roots()` and `create_message()`
/// there (no call to relate them to), and they reach the client (renumbered) while the call
/// waits, and its answers go back to the member, which finishes the call.
#[tokio::test]
async fn requests_members_send_on_their_own_streams_reach_a_legacy_client_on_the_merged_stream() {
    let p = PythonPeer::start("mcp1", "pooled_server.py", &["--port", "0", "--name", "p"]).await;
    let e = PythonPeer::start(
        "mcp1",
        "elicit_v1_server.py",
        &["--port", "0", "--name", "e"],
    )
    .await;
    let yaml = format!(
        "pools:\n  p: {{ era: legacy, backends: [{}] }}\n  e: {{ era: legacy, backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n      - {{ name: p, pool: p, mode: stateful }}\n      - {{ name: e, pool: e, mode: stateful }}\n",
        p.addr(),
        e.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let v = session_client(&gw.url("/hub"), &["p__roots", "p__sample", "e__ask"]).await;
    assert_eq!(v["calls"]["p__roots"], "roots: file:///a,file:///b", "{v}");
    assert_eq!(
        v["calls"]["p__sample"], "sampled: hello from the client",
        "{v}"
    );
    assert_eq!(v["calls"]["e__ask"], "e:accept:42", "{v}");
    assert_eq!(v["rooted"], 1, "{v}");
}

/// Both eras inside one legacy client session: a TypeScript SDK v2 server (2026-07-28 only)
/// as a member beside a FastMCP 1.30.0 one; its `ask` answers `input_required` twice, which
/// reach the session-era client as two elicitations (renumbered for the member) and go back
/// as the retries the server expects (the era bridge of the member's route), while the other
/// member's elicitation is answered within its own call.
#[tokio::test]
async fn a_legacy_client_answers_a_2026_members_input_required_rounds_as_elicitations() {
    let ts = PythonPeer::modern_ts("ts", false).await;
    let e = PythonPeer::start(
        "mcp1",
        "elicit_v1_server.py",
        &["--port", "0", "--name", "e"],
    )
    .await;
    let yaml = format!(
        "pools:\n  ts: {{ era: modern, backends: [{}] }}\n  e: {{ era: legacy, backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n      - {{ name: ts, pool: ts, mode: stateful }}\n      - {{ name: e, pool: e, mode: stateful }}\n",
        ts.addr(),
        e.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let v = session_client(&gw.url("/hub"), &["ts__whoami", "ts__ask", "e__ask"]).await;
    assert_eq!(v["calls"]["ts__whoami"], "ts", "{v}");
    assert_eq!(v["calls"]["ts__ask"], "answers:42,42", "{v}");
    assert_eq!(v["calls"]["e__ask"], "e:accept:42", "{v}");
    assert_eq!(v["elicited"], 3, "{v}");
}

/// A member that goes away (its only pod SIGKILLed; health checks mark it down) and comes
/// back: a legacy client's session stream gets `notifications/tools/list_changed` each time,
/// as from a server whose own list changed (the virtual server says `listChanged: true`).
#[tokio::test]
async fn a_member_coming_and_going_sends_list_changed_on_the_session_stream() {
    let a = PythonPeer::start("mcp1", "legacy_server.py", &["--port", "0", "--name", "a"]).await;
    let mut b =
        PythonPeer::start("mcp1", "legacy_server.py", &["--port", "0", "--name", "b"]).await;
    let port = b.addr().rsplit(':').next().unwrap().to_owned();
    let health = "health: { path: /mcp, interval-ms: 200, timeout-ms: 500, fall: 1, rise: 1 }";
    let yaml = format!(
        "pools:\n  a: {{ era: legacy, backends: [{}] }}\n  b: {{ era: legacy, backends: [{}], {health} }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n      - {{ name: a, pool: a, mode: stateful }}\n      - {{ name: b, pool: b, mode: stateful }}\n",
        a.addr(),
        b.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let (v, mut stream) = hub_session_stream(&gw).await;
    assert_eq!(
        v["result"]["capabilities"]["tools"]["listChanged"], true,
        "{v}"
    );
    b.kill().await;
    let told = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        list_changed(&mut stream),
    )
    .await;
    assert_eq!(told, Ok(true), "list_changed when b went away");
    let _b = PythonPeer::start(
        "mcp1",
        "legacy_server.py",
        &["--port", &port, "--name", "b"],
    )
    .await;
    let told = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        list_changed(&mut stream),
    )
    .await;
    assert_eq!(told, Ok(true), "list_changed when b came back");
}

/// A raw legacy client's session on `/hub` (`initialize`, then `notifications/initialized`) and
/// its session stream, opened (200): the `initialize` answer and the stream.
async fn hub_session_stream(gw: &Gateway) -> (Value, tokio::io::BufReader<tokio::net::TcpStream>) {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let resp = Request::post("/hub", init.to_string())
        .header("Accept", "application/json, text/event-stream")
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let v = resp.json();
    let sid = resp
        .head
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let resp = Request::post("/hub", initialized.to_string())
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", "2025-11-25")
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 202, "{}", resp.text());
    let (head, stream) = Request::bare("GET", "/hub")
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Accept", "text/event-stream")
        .send_for_head(gw.addr)
        .await;
    assert_eq!(head.status, 200);
    (v, stream)
}

/// Reads a session stream until `notifications/tools/list_changed` (`true`) or its end.
async fn list_changed(stream: &mut tokio::io::BufReader<tokio::net::TcpStream>) -> bool {
    use tokio::io::AsyncBufReadExt;
    let mut line = String::new();
    loop {
        line.clear();
        if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
            return false;
        }
        if line.contains("notifications/tools/list_changed") {
            return true;
        }
    }
}

/// `limits.tool-rate` counts a legacy client's call on a virtual route once, by the exposed
/// name on the virtual route, as it counts a 2026-07-28 client's: the member's session handler,
/// which classifies the member request on the member's route, charges nothing again (it did,
/// so a burst of 2 let one call through). PyPI mcp 1.30.0 client, FastMCP 1.30.0 member.
#[tokio::test]
async fn a_legacy_clients_call_on_a_virtual_route_is_charged_the_tool_rate_once() {
    use mcp_gateway_tests::harness::ReplClient;
    let a = PythonPeer::start("mcp1", "legacy_server.py", &["--port", "0", "--name", "a"]).await;
    let yaml = format!(
        "limits: {{ tool-rate: {{ per-second: 0.01, burst: 2, tools: [whoami] }} }}\n\
         pools:\n  a: {{ era: legacy, backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n\
         \x20     - {{ name: a, pool: a, mode: stateful, prefix: never }}\n",
        a.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let mut client = ReplClient::connect("mcp1", &gw.url("/hub"), None).await;
    assert_eq!(client.call_text("whoami", json!({})).await, "a");
    assert_eq!(
        client.call_text("whoami", json!({})).await,
        "a",
        "the burst of 2 holds two calls"
    );
    let third = client
        .cmd(json!({"op": "call", "name": "whoami", "args": {}}))
        .await;
    assert_eq!(third["ok"], false, "{third}");
    let message = third["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("429"),
        "the third is over the rate: {third}"
    );
}

/// A legacy client that leaves its quiet session stream on a virtual route is noticed at once:
/// the merged stream ends with it, and so does every member's stream it held, instead of
/// waiting for the next member event (FastMCP 1.30.0 members write nothing on an idle stream).
#[tokio::test]
async fn a_client_leaving_a_quiet_merged_session_stream_ends_it_and_the_members_streams() {
    let a = PythonPeer::start("mcp1", "legacy_server.py", &["--port", "0", "--name", "a"]).await;
    let b = PythonPeer::start("mcp1", "legacy_server.py", &["--port", "0", "--name", "b"]).await;
    let yaml = format!(
        "pools:\n  a: {{ era: legacy, backends: [{}] }}\n  b: {{ era: legacy, backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n      - {{ name: a, pool: a, mode: stateful }}\n      - {{ name: b, pool: b, mode: stateful }}\n",
        a.addr(),
        b.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let (_, stream) = hub_session_stream(&gw).await;
    mcp_gateway_tests::assert_eventually!(
        std::time::Duration::from_secs(5),
        gw.metric("mcpgw_open_streams").await == 1.0,
        "the merged stream is open"
    );
    drop(stream);
    mcp_gateway_tests::assert_eventually!(
        std::time::Duration::from_secs(3),
        gw.metric("mcpgw_open_streams").await == 0.0,
        "the merged stream ended when its client left"
    );
}
