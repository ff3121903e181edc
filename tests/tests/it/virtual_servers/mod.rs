//! Issue 33, virtual servers for 2026-07-28 clients: one route (`mode: virtual`) in front of two
//! FastMCP 1.30.0 servers (legacy, reached through the reverse bridge; both expose `whoami`)
//! and one PyPI `mcp` 2.3.0 server (2026-07-28), asked with raw 2026-07-28 requests: the
//! merged `server/discover` and `tools/list` (prefixes, `never`, renames, include/exclude),
//! calls routed to the member owning the name with its own name restored, paging through a
//! member that pages itself, and the refusals (unknown or filtered names, forged cursors,
//! legacy clients).

mod callers;
mod fast;
mod hub;
mod legacy;
mod listen;
mod lists_by_caller;
mod member_names;
mod merged_list_bounds;
mod merged_list_share;
mod operations;
mod resource_conflicts;
mod resource_forms;
mod resume;
mod snapshot;
mod tasks_member;
mod uri_templates;

use mcp_gateway_tests::{Gateway, PythonPeer, Request, Response};
use serde_json::{json, Value};

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}"#;

fn rpc(id: u64, method: &str, params: Value) -> Request {
    rpc_on("/hub", id, method, params)
}

fn rpc_on(path: &str, id: u64, method: &str, mut params: Value) -> Request {
    params["_meta"] = serde_json::from_str(META).unwrap();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut r = Request::post(path, body.to_string())
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method);
    if let Some(name) = body["params"]["name"].as_str() {
        r = r.header("Mcp-Name", name);
    }
    r
}

struct Hub {
    _peers: Vec<PythonPeer>,
    gw: Gateway,
}

async fn hub(members: &str) -> Hub {
    let a = PythonPeer::start("mcp1", "legacy_server.py", &["--port", "0", "--name", "a"]).await;
    let b = PythonPeer::start("mcp1", "legacy_server.py", &["--port", "0", "--name", "b"]).await;
    let m = PythonPeer::start(
        "mcp2",
        "stateless_server.py",
        &["--port", "0", "--name", "m"],
    )
    .await;
    let yaml = format!(
        "pools:\n  a: {{ era: legacy, backends: [{}] }}\n  b: {{ era: legacy, backends: [{}] }}\n  m: {{ backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    server-info: {{ name: hub, version: 1.0.0 }}\n    members:\n{members}",
        a.addr(),
        b.addr(),
        m.addr()
    );
    Hub {
        _peers: vec![a, b, m],
        gw: Gateway::start(&yaml).await,
    }
}

const MEMBERS: &str = r#"      - { name: a, pool: a, upstream-path: /mcp, prefix: never }
      - { name: b, pool: b, upstream-path: /mcp }
      - name: m
        pool: m
        upstream-path: /mcp
        prefix: "m."
        tools: { exclude: ["admin_*"], rename: { report_sales: sales } }
"#;

fn names(v: &Value) -> Vec<String> {
    v["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {v}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn text(resp: &Response) -> String {
    let v = resp.json();
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {v}"))
        .to_owned()
}

#[tokio::test]
async fn lists_merge_every_member_and_calls_reach_the_member_that_owns_the_name() {
    let hub = hub(MEMBERS).await;
    let gw = &hub.gw;
    let discover = rpc(1, "server/discover", json!({})).send(gw.addr).await;
    assert_eq!(discover.status(), 200, "{}", discover.text());
    let d = discover.json();
    assert_eq!(d["id"], 1);
    assert_eq!(
        d["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "hub"
    );
    assert!(d["result"]["capabilities"]["tools"].is_object(), "{d}");

    let list = rpc(2, "tools/list", json!({})).send(gw.addr).await;
    assert_eq!(list.status(), 200, "{}", list.text());
    let tools = names(&list.json());
    // a: bare names; b: `b__` before each; m: `m.`, renamed, `admin_*` left out
    for name in [
        "whoami",
        "count",
        "b__whoami",
        "b__count",
        "m.whoami",
        "m.sales",
        "m.echo_size",
    ] {
        assert!(tools.contains(&name.to_owned()), "{name} in {tools:?}");
    }
    for hidden in ["m.admin_reset", "m.report_sales", "b__m.whoami"] {
        assert!(!tools.contains(&hidden.to_owned()), "{hidden} in {tools:?}");
    }
    assert!(list.json()["result"].get("nextCursor").is_none());

    for (name, backend) in [("whoami", "a"), ("b__whoami", "b"), ("m.whoami", "m")] {
        let resp = rpc(3, "tools/call", json!({"name": name, "arguments": {}}))
            .send(gw.addr)
            .await;
        assert_eq!(resp.status(), 200, "{}", resp.text());
        assert_eq!(text(&resp), backend, "{name} reached its member");
    }
    let renamed = rpc(
        4,
        "tools/call",
        json!({"name": "m.sales", "arguments": {"region": "eu"}}),
    )
    .send(gw.addr)
    .await;
    assert_eq!(text(&renamed), "m:report:eu", "{}", renamed.text());
    let routed = gw
        .metric("mcpgw_virtual_member_events_total{event=\"routed\",member=\"m\",route=\"/hub\"}")
        .await;
    assert_eq!(routed, 2.0);
}

#[tokio::test]
async fn unknown_filtered_and_forged_names_get_json_rpc_errors_with_the_id() {
    let hub = hub(MEMBERS).await;
    let gw = &hub.gw;
    // names no member exposes: filtered out, renamed away, bare and unknown to every list
    for name in ["nope", "m.admin_reset", "m.report_sales"] {
        let resp = rpc(7, "tools/call", json!({"name": name, "arguments": {}}))
            .send(gw.addr)
            .await;
        assert_eq!(resp.status(), 200, "{}", resp.text());
        let v = resp.json();
        assert_eq!(v["id"], 7);
        assert_eq!(v["error"]["code"], -32037, "{name}: {v}");
        assert_eq!(v["error"]["data"]["reason"], "unknown-name", "{v}");
        assert_eq!(v["error"]["data"]["name"], name, "{v}");
    }
    // a prefixed name goes to its member, which answers for a tool it does not have
    let resp = rpc(7, "tools/call", json!({"name": "b__nope", "arguments": {}}))
        .send(gw.addr)
        .await;
    let v = resp.json();
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert_eq!(text(&resp), "Unknown tool: nope", "b's own name reached b");
    let forged = rpc(8, "tools/list", json!({"cursor": "AAAA"}))
        .send(gw.addr)
        .await;
    assert_eq!(forged.status(), 400, "{}", forged.text());
    let v = forged.json();
    assert_eq!(v["id"], 8);
    assert_eq!(v["error"]["code"], -32602);
    assert_eq!(v["error"]["data"]["reason"], "forged-cursor", "{v}");
    // a call naming nothing, a method the route does not serve
    let nameless = rpc(10, "tools/call", json!({"arguments": {}}))
        .send(gw.addr)
        .await;
    assert_eq!(nameless.status(), 400, "{}", nameless.text());
    assert_eq!(nameless.json()["error"]["code"], -32602);
    let other = rpc(11, "sampling/createMessage", json!({}))
        .send(gw.addr)
        .await;
    let v = other.json();
    assert_eq!(v["id"], 11);
    assert_eq!(v["error"]["data"]["reason"], "not-on-virtual-route", "{v}");
    // a session-era request without the session its initialize answered, a session id the
    // gateway did not seal
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"});
    let resp = Request::post("/hub", call.to_string()).send(gw.addr).await;
    assert_eq!(resp.status(), 400, "{}", resp.text());
    assert_eq!(resp.json()["id"], 9);
    assert_eq!(resp.json()["error"]["code"], -32600);
    let resp = Request::post("/hub", call.to_string())
        .header("Mcp-Session-Id", "forged")
        .header("MCP-Protocol-Version", "2025-11-25")
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 404, "{}", resp.text());
    assert_eq!(resp.json()["id"], 9);
    assert_eq!(resp.json()["error"]["code"], -32015);
}

/// Runs `tests/peers/virtual_client_v2.py` (PyPI mcp 2.3.0 pinned to 2026-07-28): its verdict.
async fn pinned_client(url: &str, tools: &[&str]) -> Value {
    client("mcp2", "virtual_client_v2.py", url, tools).await
}

/// Runs `tests/peers/virtual_client_v1.py` (PyPI mcp 1.30.0, a session): its verdict.
async fn session_client(url: &str, tools: &[&str]) -> Value {
    client("mcp1", "virtual_client_v1.py", url, tools).await
}

/// Runs a client script of `tests/peers` under `venv` calling `tools` at `url`; its verdict
/// (the last JSON line), which must say it succeeded.
async fn client(venv: &str, script: &str, url: &str, tools: &[&str]) -> Value {
    use mcp_gateway_tests::harness::{python, workspace};
    let out = tokio::process::Command::new(python(venv))
        .arg(workspace().join("tests/peers").join(script))
        .args(["--url", url])
        .args(tools)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(90), out)
        .await
        .expect("the client finished in 90 s")
        .expect("run the client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let verdict: Value = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "no verdict: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    assert!(out.status.success(), "{verdict}");
    verdict
}

/// The issue's real-peer tour with a real client: FastMCP 1.30.0 with a resource, a prompt and
/// an eliciting tool (bare names), a second FastMCP (prefixed, its `whoami` colliding with the
/// first's), a 2026-07-28 server (a literal prefix) and a 2026-07-28 server that pages its own
/// tools/list, 3 to a page: the client pages through the merged list, every call reaches its
/// member, and the elicitation of a legacy member reaches it as an `input_required` round
/// (answered and retried to the same member).
#[tokio::test]
async fn a_pinned_2026_client_pages_calls_reads_and_answers_an_elicitation_across_members() {
    let conf = PythonPeer::start(
        "mcp1",
        "pooled_server.py",
        &["--port", "0", "--name", "conf"],
    )
    .await;
    let fast = PythonPeer::start(
        "mcp1",
        "legacy_server.py",
        &["--port", "0", "--name", "fast"],
    )
    .await;
    let m = PythonPeer::start(
        "mcp2",
        "stateless_server.py",
        &["--port", "0", "--name", "m"],
    )
    .await;
    let paged =
        PythonPeer::start("mcp2", "paged_server.py", &["--port", "0", "--name", "pg"]).await;
    let yaml = format!(
        "pools:\n  conf: {{ era: legacy, backends: [{}] }}\n  fast: {{ era: legacy, backends: [{}] }}\n  m: {{ backends: [{}] }}\n  pg: {{ backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    server-info: {{ name: hub, version: 1.0.0 }}\n    members:\n{}",
        conf.addr(),
        fast.addr(),
        m.addr(),
        paged.addr(),
        r#"      - { name: conf, pool: conf, prefix: never }
      - { name: fast, pool: fast }
      - { name: m, pool: m, prefix: "m.", tools: { include: ["whoami", "report_*"] } }
      - { name: pg, pool: pg }
"#
    );
    let gw = Gateway::start(&yaml).await;
    let url = format!("http://{}/hub", gw.addr);
    let v = pinned_client(
        &url,
        &[
            "whoami",
            "fast__whoami",
            "m.whoami",
            "pg__t05",
            "m.report_sales",
        ],
    )
    .await;
    let tools: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let paged: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| t.starts_with("pg__"))
        .collect();
    assert_eq!(
        paged,
        ["pg__t00", "pg__t01", "pg__t02", "pg__t03", "pg__t04", "pg__t05", "pg__t06"],
        "{v}"
    );
    assert!(
        v["pages"].as_u64().unwrap() >= 3,
        "the member's 3 pages make as many merged ones: {v}"
    );
    for t in [
        "whoami",
        "ask",
        "fast__whoami",
        "m.whoami",
        "m.report_sales",
    ] {
        assert!(tools.contains(&t), "{t} in {tools:?}");
    }
    assert!(
        !tools.contains(&"m.echo_size"),
        "m's include keeps only its globs: {tools:?}"
    );
    assert_eq!(v["calls"]["whoami"], "conf");
    assert_eq!(v["calls"]["fast__whoami"], "fast");
    assert_eq!(v["calls"]["m.whoami"], "m");
    assert_eq!(v["calls"]["pg__t05"], "pg:t05");
    assert_eq!(v["calls"]["m.report_sales"], "m:report:all");
    assert_eq!(v["resource"], "hello from conf");
    assert_eq!(v["prompt"], "Hello, ada, from conf");
    assert_eq!(v["ask"], "hello ada", "{v}");
    assert_eq!(v["elicited"].as_array().map(Vec::len), Some(1), "{v}");
}
