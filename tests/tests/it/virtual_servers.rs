//! Issue 33, virtual servers for 2026-07-28 clients: one route (`mode: virtual`) in front of two
//! FastMCP 1.30.0 servers (legacy, reached through the reverse bridge; both expose `whoami`)
//! and one PyPI `mcp` 2.3.0 server (2026-07-28), asked with raw 2026-07-28 requests: the
//! merged `server/discover` and `tools/list` (prefixes, `never`, renames, include/exclude),
//! calls routed to the member owning the name with its own name restored, paging through a
//! member that pages itself, and the refusals (unknown or filtered names, forged cursors,
//! legacy clients).

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
    let listen = rpc(11, "subscriptions/listen", json!({"notifications": {}}))
        .send(gw.addr)
        .await;
    let v = listen.json();
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

/// A whole member down (its only pod SIGKILLed) and back on the same port: its tools leave
/// the merged list (counted `left-out`), a call to one gets the gateway's JSON-RPC error
/// naming the member, the other members answer throughout, and its tools return with it.
#[tokio::test]
async fn a_member_that_is_down_leaves_the_lists_its_calls_name_it_and_it_comes_back() {
    let a = PythonPeer::start("mcp1", "legacy_server.py", &["--port", "0", "--name", "a"]).await;
    let mut m = PythonPeer::start(
        "mcp2",
        "stateless_server.py",
        &["--port", "0", "--name", "m"],
    )
    .await;
    let port = m.addr().rsplit(':').next().unwrap().to_owned();
    let yaml = format!(
        "pools:\n  a: {{ era: legacy, backends: [{}] }}\n  m: {{ backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n      - {{ name: a, pool: a }}\n      - {{ name: m, pool: m }}\n",
        a.addr(),
        m.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let listed = |v: &Value, name: &str| names(v).contains(&name.to_owned());
    let list = rpc(1, "tools/list", json!({})).send(gw.addr).await.json();
    assert!(
        listed(&list, "m__whoami") && listed(&list, "a__whoami"),
        "{list}"
    );
    m.kill().await;
    let list = rpc(2, "tools/list", json!({})).send(gw.addr).await.json();
    assert!(!listed(&list, "m__whoami"), "m's tools left: {list}");
    assert!(listed(&list, "a__whoami"), "a still listed: {list}");
    let left_out =
        "mcpgw_virtual_member_events_total{event=\"left-out\",member=\"m\",route=\"/hub\"}";
    assert!(gw.metric(left_out).await >= 1.0);
    let resp = rpc(
        3,
        "tools/call",
        json!({"name": "m__whoami", "arguments": {}}),
    )
    .send(gw.addr)
    .await;
    let v = resp.json();
    assert_eq!(v["id"], 3, "{v}");
    assert_eq!(v["error"]["code"], -32011, "{v}");
    assert_eq!(v["error"]["data"]["member"], "m", "{v}");
    let resp = rpc(
        4,
        "tools/call",
        json!({"name": "a__whoami", "arguments": {}}),
    )
    .send(gw.addr)
    .await;
    assert_eq!(text(&resp), "a", "the other member never noticed");
    // the admin API shows each member's state and what it exposes
    let (status, body) = gw.admin_get("/admin/virtual").await;
    assert_eq!(status, 200, "{body}");
    let view: Value = serde_json::from_str(&body).unwrap();
    let member = |name: &str| {
        view["virtual"][0]["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {view}"))
    };
    assert_eq!(member("m")["state"], "down", "{view}");
    assert_eq!(member("a")["state"], "up", "{view}");
    assert!(member("a")["tools"].as_u64().unwrap() > 0, "{view}");
    let _m = PythonPeer::start(
        "mcp2",
        "stateless_server.py",
        &["--port", &port, "--name", "m"],
    )
    .await;
    mcp_gateway_tests::assert_eventually!(
        std::time::Duration::from_secs(10),
        listed(
            &rpc(5, "tools/list", json!({})).send(gw.addr).await.json(),
            "m__whoami"
        ),
        "m's tools came back with it"
    );
    let resp = rpc(
        6,
        "tools/call",
        json!({"name": "m__whoami", "arguments": {}}),
    )
    .send(gw.addr)
    .await;
    assert_eq!(text(&resp), "m");
}

/// Policy reads the exposed names: an `authz` rule on `m.*` (scope `admin`, which neither API
/// key has) refuses a call of `m.whoami` with 403 -32024 and filters `m.*` out of the merged
/// list, while the bare names of the other member stay callable; a merged cursor is the
/// caller's own (another principal's use of it is refused by name).
#[tokio::test]
async fn authz_rules_and_cursors_read_the_exposed_names_and_the_caller() {
    let a = PythonPeer::start("mcp1", "legacy_server.py", &["--port", "0", "--name", "a"]).await;
    let m = PythonPeer::start("mcp2", "paged_server.py", &["--port", "0", "--name", "m"]).await;
    let yaml = format!(
        "{}pools:\n  a: {{ era: legacy, backends: [{}] }}\n  m: {{ backends: [{}] }}\n\
         routes:\n  - path: /other\n    mode: virtual\n    upstream-path: /mcp\n    members:\n      - {{ name: m, pool: m, prefix: \"m.\" }}\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n      - {{ name: a, pool: a, prefix: never }}\n      - {{ name: m, pool: m, prefix: \"m.\" }}\n    authz:\n      - {{ match: {{ method: tools/call, name: \"m.*\" }}, require: {{ scope: admin }} }}\n",
        super::pooled_bridge::keys_yaml(),
        a.addr(),
        m.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let as_one = |r: Request| r.header("X-Api-Key", "k-one");
    let refused = as_one(rpc(
        1,
        "tools/call",
        json!({"name": "m.t00", "arguments": {}}),
    ))
    .send(gw.addr)
    .await;
    assert_eq!(refused.status(), 403, "{}", refused.text());
    assert_eq!(refused.json()["error"]["code"], -32024);
    let allowed = as_one(rpc(
        2,
        "tools/call",
        json!({"name": "whoami", "arguments": {}}),
    ))
    .send(gw.addr)
    .await;
    assert_eq!(text(&allowed), "a");
    let list = as_one(rpc(3, "tools/list", json!({})))
        .send(gw.addr)
        .await
        .json();
    let tools = names(&list);
    assert!(tools.contains(&"whoami".to_owned()), "{tools:?}");
    assert!(
        tools.iter().all(|t| !t.starts_with("m.")),
        "m.* filtered: {tools:?}"
    );
    let cursor = list["result"]["nextCursor"]
        .as_str()
        .expect("m pages")
        .to_owned();
    let theirs = rpc(4, "tools/list", json!({"cursor": cursor}))
        .header("X-Api-Key", "k-two")
        .send(gw.addr)
        .await;
    assert_eq!(theirs.status(), 400, "{}", theirs.text());
    assert_eq!(
        theirs.json()["error"]["data"]["reason"],
        "cursor-of-another-caller"
    );
    let elsewhere = as_one(rpc_on("/other", 6, "tools/list", json!({"cursor": cursor})))
        .send(gw.addr)
        .await;
    assert_eq!(elsewhere.status(), 400, "{}", elsewhere.text());
    assert_eq!(
        elsewhere.json()["error"]["data"]["reason"],
        "cursor-of-another-virtual-server"
    );
    let mine = as_one(rpc(5, "tools/list", json!({"cursor": cursor})))
        .send(gw.addr)
        .await;
    assert_eq!(mine.status(), 200, "{}", mine.text());
}

/// A reload adds a member and removes another without a restart: the next merged list has the
/// new member's items and not the removed one's, and a call of a removed member's name is
/// -32037.
#[tokio::test]
async fn a_reload_adds_and_removes_members() {
    let a = PythonPeer::start("mcp1", "legacy_server.py", &["--port", "0", "--name", "a"]).await;
    let m = PythonPeer::start(
        "mcp2",
        "stateless_server.py",
        &["--port", "0", "--name", "m"],
    )
    .await;
    let config = |members: &str| {
        format!(
            "pools:\n  a: {{ era: legacy, backends: [{}] }}\n  m: {{ backends: [{}] }}\n\
             routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n{members}",
            a.addr(),
            m.addr()
        )
    };
    let gw = Gateway::start(&config("      - { name: a, pool: a }\n")).await;
    let list = |id| rpc(id, "tools/list", json!({}));
    let tools = names(&list(1).send(gw.addr).await.json());
    assert!(tools.contains(&"a__whoami".to_owned()) && !tools.iter().any(|t| t.starts_with("m__")));
    gw.rewrite_config(&config("      - { name: m, pool: m }\n"));
    mcp_gateway_tests::assert_eventually!(
        std::time::Duration::from_secs(10),
        names(&list(2).send(gw.addr).await.json()).contains(&"m__whoami".to_owned()),
        "the added member's tools are listed"
    );
    let tools = names(&list(3).send(gw.addr).await.json());
    assert!(!tools.iter().any(|t| t.starts_with("a__")), "{tools:?}");
    let gone = rpc(
        4,
        "tools/call",
        json!({"name": "a__whoami", "arguments": {}}),
    )
    .send(gw.addr)
    .await;
    assert_eq!(gone.json()["error"]["code"], -32037, "{}", gone.text());
}

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
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let resp = Request::post("/hub", init.to_string())
        .header("Accept", "application/json, text/event-stream")
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let v = resp.json();
    assert_eq!(
        v["result"]["capabilities"]["tools"]["listChanged"], true,
        "{v}"
    );
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
    let (head, mut stream) = Request::bare("GET", "/hub")
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Accept", "text/event-stream")
        .send_for_head(gw.addr)
        .await;
    assert_eq!(head.status, 200);
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
