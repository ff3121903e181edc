//! The audit trail (`audit:`) end to end, with the real SDK clients (Python mcp 2.3.0 and
//! 1.30.0) and servers: one record per call on stateless, stateful and virtual routes (caller
//! from a JWT or an API key, route, pool, backend, method, name, outcome, latency, trace id),
//! an authorization deny with its rule, a session moved by a pod kill with its from and to
//! backends, drain and undrain, the OTLP export, `audit.required` refusing calls while the
//! file cannot be written, and no credential anywhere in the file. Needs `scripts/setup-peers`.

use mcp_gateway_tests::auth::{auth_yaml, repl_with_bearer, sha256_hex, token, RESOURCE};
use mcp_gateway_tests::harness::{unique_temp_path, ADMIN_TOKEN};
use mcp_gateway_tests::otlp::OtlpReceiver;
use mcp_gateway_tests::{Gateway, PythonPeer, ReplClient, Request};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const ADMIN_RULE: &str =
    "    authz:\n      - { match: { method: tools/call, name: \"admin_*\" }, require: { scope: admin } }\n";

/// A fresh directory for one test's audit file, and the file's path in it.
fn audit_dir(prefix: &str) -> (PathBuf, PathBuf) {
    let dir = unique_temp_path(prefix);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("audit.jsonl");
    (dir, file)
}

/// Every record of the audit file (none when it does not exist yet).
fn records(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The records of `file` once `done` holds for them (polled, at most 15 s).
async fn records_until(file: &Path, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        let got = records(file);
        if done(&got) {
            return got;
        }
        assert!(
            Instant::now() < until,
            "the audit file never held what was awaited: {got:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The call records of tool `name`.
fn calls_of<'a>(records: &'a [Value], name: &str) -> Vec<&'a Value> {
    records
        .iter()
        .filter(|r| r["event"] == "call" && r["name"] == name)
        .collect()
}

async fn post_admin(gw: &Gateway, path: &str) -> u16 {
    Request::bare("POST", path)
        .header("Authorization", &format!("Bearer {ADMIN_TOKEN}"))
        .send(gw.admin)
        .await
        .status()
}

#[tokio::test]
async fn calls_on_stateless_and_stateful_routes_are_recorded_once_with_caller_route_pool_and_backend(
) {
    let (stateless, sessions) = tokio::join!(
        PythonPeer::stateless_v2("py-stateless"),
        PythonPeer::sessions_v2("py-sessions")
    );
    let (_dir, file) = audit_dir("mcpgw-audit-calls");
    let gw = Gateway::start(&format!(
        "audit: {{ file: {} }}\n{}pools:\n  modern: {{ backends: [{}] }}\n  legacy: {{ backends: [{}] }}\nroutes:\n\
         \x20 - path: /mcp\n    mode: stateless\n    pool: modern\n{ADMIN_RULE}\
         \x20 - path: /legacy\n    mode: stateful\n    pool: legacy\n    upstream-path: /mcp\n{ADMIN_RULE}",
        file.display(),
        auth_yaml(RESOURCE),
        stateless.addr(),
        sessions.addr(),
    ))
    .await;
    let alice = token("alice", "tools");
    for (path, mode) in [("/mcp", "auto"), ("/legacy", "legacy")] {
        let mut client = repl_with_bearer("mcp2", &gw.url(path), Some(mode), &alice)
            .await
            .unwrap_or_else(|hello| panic!("{path}: {hello}"));
        client.call_text("whoami", json!({})).await;
        assert_eq!(
            client.cmd(json!({"op": "list"})).await["ok"],
            true,
            "{path}"
        );
        let denied = client
            .cmd(json!({"op": "call", "name": "admin_reset", "args": {}}))
            .await;
        assert_eq!(denied["code"], -32024, "{path}: {denied}");
        assert!(client.close().await, "{path}: unclean close");
    }
    // a raw call with a trace id of the client's
    let traced = Request::tools_call("/mcp", 7, "whoami")
        .header("Authorization", &format!("Bearer {alice}"))
        .header("X-Request-Id", "audit-trace-0001")
        .send(gw.addr)
        .await;
    assert_eq!(traced.status(), 200);

    let all = records_until(&file, |r| {
        calls_of(r, "whoami").len() >= 3
            && calls_of(r, "admin_reset").len() >= 2
            && r.iter().any(|r| r["event"] == "session.closed")
    })
    .await;
    let whoami = calls_of(&all, "whoami");
    assert_eq!(whoami.len(), 3, "one record per call: {whoami:#?}");
    for (record, (route, pool, backend)) in whoami.iter().zip([
        ("/mcp", "modern", stateless.addr()),
        ("/legacy", "legacy", sessions.addr()),
        ("/mcp", "modern", stateless.addr()),
    ]) {
        assert_eq!(record["route"], route, "{record}");
        assert_eq!(record["pool"], pool, "{record}");
        assert_eq!(record["backend"], backend, "{record}");
        assert_eq!(record["method"], "tools/call", "{record}");
        assert_eq!(record["outcome"], "ok", "{record}");
        assert_eq!(record["status"], 200, "{record}");
        assert_eq!(record["caller"]["subject"], "alice", "{record}");
        assert!(record["latency_ms"].as_f64().unwrap() > 0.0, "{record}");
        assert!(
            record["trace_id"].as_str().is_some_and(|t| !t.is_empty()),
            "{record}"
        );
        assert_eq!(record["decision"], "allow", "{record}");
        assert_eq!(record["rule"], "no rule matches: allowed", "{record}");
    }
    assert!(
        whoami[1]["session"].as_str().is_some_and(|s| s.len() == 16),
        "the stateful call names its session, hashed: {}",
        whoami[1]
    );
    assert_eq!(whoami[2]["trace_id"], "audit-trace-0001");
    for denied in calls_of(&all, "admin_reset") {
        assert_eq!(denied["decision"], "deny", "{denied}");
        assert_eq!(denied["code"], -32024, "{denied}");
        let rule = denied["rule"].as_str().unwrap();
        assert!(
            rule.ends_with("authz[0]: method: tools/call, name: admin_*, scope: admin"),
            "{rule}"
        );
        assert!(
            denied.get("backend").is_none(),
            "a denied call reached no backend: {denied}"
        );
    }
    // a list on a route with rules: an authz record of its own
    let lists: Vec<&Value> = all
        .iter()
        .filter(|r| r["event"] == "authz" && r["method"] == "tools/list")
        .collect();
    // (the 2.3.0 client lists the tools itself too, for their output schemas)
    assert!(lists.len() >= 2, "{lists:#?}");
    for list in lists {
        assert_eq!(list["decision"], "allow", "{list}");
        assert_eq!(list["rule"], "no rule matches: allowed", "{list}");
        assert_eq!(list["caller"]["subject"], "alice", "{list}");
    }
    // the stateful session's life
    assert!(all
        .iter()
        .any(|r| r["event"] == "session.opened" && r["pool"] == "legacy"));
    assert!(all
        .iter()
        .any(|r| r["event"] == "session.closed" && r["reason"] == "deleted"));
}

#[tokio::test]
async fn a_session_moved_by_a_pod_kill_is_recorded_with_its_from_and_to_backends() {
    let mut pods = Vec::new();
    for name in ["pod-0", "pod-1", "pod-2"] {
        pods.push((name, PythonPeer::legacy_v1(name, 0).await));
    }
    let (_dir, file) = audit_dir("mcpgw-audit-move");
    let list: Vec<String> = pods.iter().map(|(_, p)| p.addr()).collect();
    let gw = Gateway::start(&format!(
        "audit: {{ file: {} }}\npools:\n  legacy: {{ backends: [{}], failure-cooldown-ms: 60000 }}\nroutes:\n  - path: /mcp\n    mode: stateful\n    pool: legacy\n",
        file.display(),
        list.join(", ")
    ))
    .await;
    let mut client = ReplClient::connect("mcp1", &gw.url("/mcp"), None).await;
    let pinned = client.call_text("whoami", json!({})).await;
    let (_, peer) = pods.iter_mut().find(|(n, _)| *n == pinned).unwrap();
    let from = peer.addr();
    peer.kill().await;
    let now = client.call_text("whoami", json!({})).await;
    assert_ne!(now, pinned);
    let to = pods.iter().find(|(n, _)| *n == now).unwrap().1.addr();
    assert!(client.close().await);

    let all = records_until(&file, |r| {
        r.iter().any(|r| r["event"] == "session.moved") && calls_of(r, "whoami").len() == 2
    })
    .await;
    let moved: Vec<&Value> = all
        .iter()
        .filter(|r| r["event"] == "session.moved")
        .collect();
    assert_eq!(moved.len(), 1, "{moved:#?}");
    assert_eq!(moved[0]["from_backend"], from.as_str());
    assert_eq!(moved[0]["to_backend"], to.as_str());
    assert_eq!(moved[0]["pool"], "legacy");
    assert!(moved[0]["reason"].is_string(), "{}", moved[0]);
    let calls = calls_of(&all, "whoami");
    assert_eq!(calls[0]["backend"], from.as_str());
    assert_eq!(calls[1]["backend"], to.as_str());
    assert_eq!(
        calls[0]["session"], moved[0]["session"],
        "the same gateway session"
    );
}

#[tokio::test]
async fn a_call_on_a_virtual_route_is_recorded_once_with_its_member() {
    let (a, b) = tokio::join!(
        PythonPeer::legacy_v1("va", 0),
        PythonPeer::legacy_v1("vb", 0)
    );
    let (_dir, file) = audit_dir("mcpgw-audit-virtual");
    let gw = Gateway::start(&format!(
        "audit: {{ file: {} }}\npools:\n  a: {{ backends: [{}] }}\n  b: {{ backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n\
         \x20     - {{ name: a, pool: a, mode: stateful, prefix: never }}\n      - {{ name: b, pool: b, mode: stateful }}\n",
        file.display(),
        a.addr(),
        b.addr()
    ))
    .await;
    let mut client = ReplClient::connect("mcp1", &gw.url("/hub"), None).await;
    assert_eq!(client.call_text("whoami", json!({})).await, "va");
    assert!(client.close().await);
    let all = records_until(&file, |r| !calls_of(r, "whoami").is_empty()).await;
    let calls = calls_of(&all, "whoami");
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert_eq!(calls[0]["route"], "/hub");
    assert_eq!(calls[0]["member"], "a");
    assert_eq!(calls[0]["pool"], "a");
    assert_eq!(calls[0]["backend"], a.addr().as_str());
    assert_eq!(calls[0]["outcome"], "ok");
}

#[tokio::test]
async fn a_2026_call_on_a_virtual_route_is_recorded_once_with_its_member() {
    let (a, b) = tokio::join!(
        PythonPeer::stateless_v2("sa"),
        PythonPeer::stateless_v2("sb")
    );
    let (_dir, file) = audit_dir("mcpgw-audit-virtual-2026");
    let gw = Gateway::start(&format!(
        "audit: {{ file: {} }}\npools:\n  a: {{ backends: [{}] }}\n  b: {{ backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n\
         \x20     - {{ name: a, pool: a }}\n      - {{ name: b, pool: b }}\n",
        file.display(),
        a.addr(),
        b.addr()
    ))
    .await;
    let answer = Request::tools_call("/hub", 1, "b__whoami")
        .send(gw.addr)
        .await;
    assert_eq!(answer.status(), 200, "{}", answer.text());
    assert!(answer.text().contains("sb"), "{}", answer.text());
    let all = records_until(&file, |r| !calls_of(r, "b__whoami").is_empty()).await;
    let calls: Vec<&Value> = all.iter().filter(|r| r["event"] == "call").collect();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert_eq!(calls[0]["route"], "/hub");
    assert_eq!(calls[0]["member"], "b");
    assert_eq!(calls[0]["pool"], "b");
    assert_eq!(calls[0]["backend"], b.addr().as_str());
    assert_eq!(calls[0]["outcome"], "ok");
}

#[tokio::test]
async fn no_credential_of_any_kind_reaches_the_audit_file() {
    let peer = PythonPeer::stateless_v2("py-creds").await;
    let (dir, file) = audit_dir("mcpgw-audit-creds");
    let keys = dir.join("api-keys.txt");
    let api_key = "k-audit-secret-4711";
    std::fs::write(
        &keys,
        format!("{} ci-bot tools\n", sha256_hex(api_key.as_bytes())),
    )
    .unwrap();
    let upstream_secret = "upstream-secret-0815";
    let secret_file = dir.join("upstream.token");
    std::fs::write(&secret_file, upstream_secret).unwrap();
    let gw = Gateway::start(&format!(
        "audit: {{ file: {}, include-bodies: true }}\n{}pools:\n  modern:\n    backends: [{}]\n    \
         upstream-auth: {{ headers: {{ authorization: {{ file: {}, prefix: \"Bearer \" }} }} }}\nroutes:\n\
         \x20 - path: /mcp\n    mode: stateless\n    pool: modern\n",
        file.display(),
        auth_yaml(RESOURCE).replace(
            "  jwt:",
            &format!("  api-keys: {{ file: {} }}\n  jwt:", keys.display())
        ),
        peer.addr(),
        secret_file.display(),
    ))
    .await;
    let jwt = token("alice", "tools");
    let call = |credential: (&str, String)| {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo_size","arguments":{{"text":"x","password":"pw-in-args-99"}},{}}}}}"#,
            mcp_gateway_tests::client::META
        );
        Request::post("/mcp", body)
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", "echo_size")
            .header(credential.0, &credential.1)
            .header("Cookie", "session=cookie-secret-1234")
    };
    for credential in [
        ("Authorization", format!("Bearer {jwt}")),
        ("X-Api-Key", api_key.to_owned()),
        ("Authorization", format!("Bearer {api_key}")),
    ] {
        let answer = call(credential).send(gw.addr).await;
        assert_eq!(answer.status(), 200, "{}", answer.text());
    }
    // admin actions, with the admin token
    let backend = peer.addr();
    let drain = format!("/admin/backends/drain?pool=modern&backend={backend}");
    assert_eq!(post_admin(&gw, &drain).await, 200);
    let undrain = format!("/admin/backends/undrain?pool=modern&backend={backend}");
    assert_eq!(post_admin(&gw, &undrain).await, 200);

    let all = records_until(&file, |r| {
        calls_of(r, "echo_size").len() == 3 && r.iter().any(|r| r["event"] == "admin.undrain")
    })
    .await;
    let calls = calls_of(&all, "echo_size");
    assert_eq!(calls[0]["caller"]["subject"], "alice");
    assert_eq!(calls[1]["caller"]["id"], "key:ci-bot");
    assert_eq!(calls[2]["caller"]["id"], "key:ci-bot");
    assert_eq!(
        calls[0]["arguments"]["text"], "x",
        "bodies are on: {}",
        calls[0]
    );
    assert_eq!(calls[0]["arguments"]["password"], "[redacted]");
    for (event, name) in [("admin.drain", "drain"), ("admin.undrain", "undrain")] {
        let admin = all
            .iter()
            .find(|r| r["event"] == event)
            .unwrap_or_else(|| panic!("no {name}"));
        assert_eq!(admin["backend"], backend.as_str());
        assert_eq!(admin["pool"], "modern");
        assert_eq!(admin["outcome"], "ok");
    }
    let text = std::fs::read_to_string(&file).unwrap();
    let jwt_parts: Vec<&str> = jwt.split('.').collect();
    for secret in [
        jwt.as_str(),
        jwt_parts[1],
        jwt_parts[2],
        api_key,
        upstream_secret,
        ADMIN_TOKEN,
        "cookie-secret-1234",
        "pw-in-args-99",
    ] {
        assert!(
            !text.contains(secret),
            "the audit file holds a credential ({secret})"
        );
    }
    assert!(!text.to_ascii_lowercase().contains("bearer"), "{text}");
}

#[tokio::test]
async fn records_are_exported_as_otlp_logs_to_the_collector_the_traces_use() {
    let peer = PythonPeer::stateless_v2("py-otlp").await;
    let collector = OtlpReceiver::http().await;
    let gw = Gateway::start(&format!(
        "tracing: {{ otlp: {{ endpoint: {} }} }}\naudit: {{ otlp: true }}\npools:\n  modern: {{ backends: [{}] }}\nroutes:\n\
         \x20 - path: /mcp\n    mode: stateless\n    pool: modern\n",
        collector.endpoint(),
        peer.addr(),
    ))
    .await;
    let answer = Request::tools_call("/mcp", 1, "whoami")
        .header("X-Request-Id", "otlp-trace-42")
        .send(gw.addr)
        .await;
    assert_eq!(answer.status(), 200);
    let until = Instant::now() + Duration::from_secs(15);
    let record = loop {
        let found = collector.logs().into_iter().find_map(|log| {
            let body: Value = serde_json::from_str(log["body"]["stringValue"].as_str()?).ok()?;
            (body["name"] == "whoami").then_some((log, body))
        });
        if let Some(found) = found {
            break found;
        }
        assert!(
            Instant::now() < until,
            "no audit record reached the collector"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let (log, body) = record;
    assert_eq!(log["attributes"][0]["value"]["stringValue"], "call");
    assert_eq!(body["trace_id"], "otlp-trace-42");
    assert_eq!(body["backend"], peer.addr().as_str());
    // the record joins the request's trace: its span's trace id
    let trace = body["otel_trace_id"]
        .as_str()
        .expect("traces are on")
        .to_owned();
    assert_eq!(log["traceId"], trace.as_str());
    let until = Instant::now() + Duration::from_secs(15);
    while !collector
        .spans()
        .iter()
        .any(|s| mcp_gateway_tests::otlp::hex(&s.trace_id) == trace)
    {
        assert!(Instant::now() < until, "no span of trace {trace}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn an_audit_section_added_by_a_reload_takes_effect_without_a_restart() {
    let peer = PythonPeer::stateless_v2("py-reload").await;
    let (_dir, file) = audit_dir("mcpgw-audit-reload");
    let routes = format!(
        "pools:\n  modern: {{ backends: [{}] }}\nroutes:\n  - path: /mcp\n    mode: stateless\n    pool: modern\n",
        peer.addr()
    );
    let gw = Gateway::start(&routes).await;
    let before = Request::tools_call("/mcp", 1, "whoami").send(gw.addr).await;
    assert_eq!(before.status(), 200);
    assert!(!file.exists(), "no audit section, no file");
    gw.rewrite_config(&format!("audit: {{ file: {} }}\n{routes}", file.display()));
    let until = Instant::now() + Duration::from_secs(15);
    while gw
        .metric("mcpgw_config_reloads_total{result=\"applied\"}")
        .await
        < 1.0
    {
        assert!(Instant::now() < until, "the config was never reloaded");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let after = Request::tools_call("/mcp", 2, "whoami").send(gw.addr).await;
    assert_eq!(after.status(), 200);
    let all = records_until(&file, |r| !calls_of(r, "whoami").is_empty()).await;
    assert_eq!(
        calls_of(&all, "whoami").len(),
        1,
        "only the call after the reload"
    );
    assert!(all
        .iter()
        .any(|r| r["event"] == "admin.reload" && r["outcome"] == "applied"));
}

#[tokio::test]
async fn required_audit_refuses_calls_while_the_file_cannot_be_written_and_serves_them_once_it_can()
{
    let peer = PythonPeer::stateless_v2("py-required").await;
    let (dir, _) = audit_dir("mcpgw-audit-required");
    // the file's directory is a plain file: nothing can open the audit file (even as root,
    // for whom a read-only directory is no bar)
    let blocked = dir.join("logs");
    std::fs::write(&blocked, "not a directory").unwrap();
    let file = blocked.join("audit.jsonl");
    // `/raw`: a route whose fast path never reads the body (`check-headers: false`)
    let gw = Gateway::start(&format!(
        "audit: {{ file: {}, required: true }}\npools:\n  modern: {{ backends: [{}] }}\nroutes:\n\
         \x20 - path: /mcp\n    mode: stateless\n    pool: modern\n\
         \x20 - path: /raw\n    mode: stateless\n    pool: modern\n    upstream-path: /mcp\n    check-headers: false\n",
        file.display(),
        peer.addr(),
    ))
    .await;
    for path in ["/mcp", "/raw"] {
        let refused = Request::tools_call(path, 9, "whoami").send(gw.addr).await;
        assert_eq!(refused.status(), 503, "{path}: {}", refused.text());
        let error = &refused.json()["error"];
        assert_eq!(error["code"], -32041, "{path}: {error}");
        assert_eq!(refused.json()["id"], 9, "{path}");
        assert_eq!(error["data"]["reason"], "unwritable", "{path}: {error}");
        assert_eq!(error["data"]["method"], "tools/call", "{path}: {error}");
    }
    assert_eq!(gw.metric("mcpgw_audit_sink_healthy").await, 0.0);
    // a list is not a call: it is served
    let list = Request::post(
        "/mcp",
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{{}}}}}"#,
            mcp_gateway_tests::client::META
        ),
    )
    .header("MCP-Protocol-Version", "2026-07-28")
    .header("Mcp-Method", "tools/list")
    .send(gw.addr)
    .await;
    assert_eq!(list.status(), 200, "{}", list.text());

    // the directory can be made: the sink writes again on its own
    std::fs::remove_file(&blocked).unwrap();
    std::fs::create_dir_all(&blocked).unwrap();
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        let answer = Request::tools_call("/mcp", 10, "whoami")
            .send(gw.addr)
            .await;
        if answer.status() == 200 {
            break;
        }
        assert_eq!(answer.json()["error"]["code"], -32041);
        assert!(Instant::now() < until, "calls were still refused");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(gw.metric("mcpgw_audit_sink_healthy").await, 1.0);
    // the refused calls' records, queued while the file could not be written, and the call
    // that passed
    let all = records_until(&file, |r| {
        calls_of(r, "whoami").iter().any(|c| c["outcome"] == "ok")
    })
    .await;
    let refused = calls_of(&all, "whoami")
        .into_iter()
        .filter(|c| c["code"] == -32041)
        .count();
    assert!(refused >= 2, "the refused calls are recorded too: {all:#?}");
}

#[tokio::test]
async fn a_legacy_call_on_a_plain_route_is_recorded_and_an_unauthenticated_claim_is_not() {
    use mcp_gateway_tests::MockServer;
    let backend = MockServer::start("plain").await;
    let (_dir, file) = audit_dir("mcpgw-audit-plain");
    // a plain stateless route: no rules, no pins, no chain (a legacy body would take the fast
    // path, its method unread, but for the audit trail)
    let gw = Gateway::start(&format!(
        "audit: {{ file: {} }}\n{}pools: {{ p: {{ backends: [{}] }} }}\nroutes:\n  - {{ path: /mcp, pool: p }}\n",
        file.display(),
        auth_yaml(RESOURCE),
        backend.addr
    ))
    .await;
    let bearer = format!("Bearer {}", token("alice", "tools"));
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"legacy_tool","arguments":{}}}"#;
    // first a caller without a token claims a call in its headers
    let resp = Request::post("/mcp", body)
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "forged_name")
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 401);
    // then a legacy call, its method only in its body
    let resp = Request::post("/mcp", body)
        .header("Authorization", &bearer)
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    // one writer, in the order requests ended: the refused claim's record would be first
    let got = records_until(&file, |r| !calls_of(r, "legacy_tool").is_empty()).await;
    assert_eq!(calls_of(&got, "legacy_tool").len(), 1, "{got:#?}");
    assert_eq!(
        calls_of(&got, "legacy_tool")[0]["caller"]["subject"],
        "alice",
        "{got:#?}"
    );
    assert!(calls_of(&got, "forged_name").is_empty(), "{got:#?}");
}
