//! OpenTelemetry traces end to end: a real OTLP receiver in the test (decoding with the
//! `opentelemetry-proto` types), a real MCP 1.30.0 client that sends `traceparent`, FastMCP
//! pods, and a pod SIGKILLed under a session: the failover shows up as one trace, the
//! client's, with the re-initialization in it. Also: the context goes upstream, gRPC export
//! works, and with `tracing` unset the gateway adds nothing. Needs `scripts/setup-peers`.

use mcp_gateway_tests::harness::{python, workspace};
use mcp_gateway_tests::otlp::{attribute, hex, OtlpReceiver};
use mcp_gateway_tests::{assert_eventually, Gateway, MockServer, PythonPeer, Request};
use opentelemetry_proto::tonic::trace::v1::Span;
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// Export every 100 ms instead of the SDK's 5 s: the environment of the gateways that export
/// (given to each, as the process is shared with every other test).
const EXPORT_QUICKLY: &[(&str, &str)] = &[("OTEL_BSP_SCHEDULE_DELAY", "100")];

fn tracing_yaml(receiver: &OtlpReceiver, protocol: &str) -> String {
    format!(
        "tracing:\n  otlp: {{ endpoint: \"{}\", protocol: {protocol} }}\n  sample-ratio: 1.0\n",
        receiver.endpoint()
    )
}

/// `tests/peers/traced_client.py`: a real 1.30.0 client whose calls carry a `traceparent`.
struct TracedClient {
    _child: Child,
    stdin: ChildStdin,
    lines: tokio::io::Lines<BufReader<ChildStdout>>,
}

impl TracedClient {
    async fn connect(url: &str) -> TracedClient {
        let mut child = Command::new(python("mcp1"))
            .arg(workspace().join("tests/peers/traced_client.py"))
            .args(["--url", url])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn traced_client.py");
        let stdin = child.stdin.take().expect("stdin");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let hello = next(&mut lines).await;
        assert_eq!(hello["ready"], true, "{hello}");
        TracedClient {
            _child: child,
            stdin,
            lines,
        }
    }

    async fn call(&mut self, tool: &str, traceparent: &str) -> String {
        let cmd = json!({"op": "call", "name": tool, "traceparent": traceparent});
        self.stdin
            .write_all(format!("{cmd}\n").as_bytes())
            .await
            .expect("write");
        let answer = next(&mut self.lines).await;
        assert_eq!(answer["ok"], true, "{answer}");
        answer["text"].as_str().unwrap_or_default().to_owned()
    }
}

async fn next(lines: &mut tokio::io::Lines<BufReader<ChildStdout>>) -> Value {
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("the client answered in time")
        .expect("read")
        .expect("a line");
    serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"))
}

fn in_trace(receiver: &OtlpReceiver, trace: &str) -> Vec<Span> {
    receiver
        .spans()
        .into_iter()
        .filter(|s| hex(&s.trace_id) == trace)
        .collect()
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

#[tokio::test]
async fn a_failover_under_a_real_sdk_client_is_one_trace_with_the_reinitialization() {
    let receiver = OtlpReceiver::http().await;
    let mut pods = [
        PythonPeer::legacy_v1("pod-0", 0).await,
        PythonPeer::legacy_v1("pod-1", 0).await,
    ];
    let backends: Vec<String> = pods.iter().map(|p| p.addr()).collect();
    let yaml = format!(
        "{}pools:\n  legacy: {{ backends: [{}], failure-cooldown-ms: 60000 }}\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: legacy }}\n",
        tracing_yaml(&receiver, "http/protobuf"),
        backends.join(", ")
    );
    let gw = Gateway::start_with_env(&yaml, EXPORT_QUICKLY).await;
    let mut client = TracedClient::connect(&gw.url("/mcp")).await;
    let first_trace = "11111111111111111111111111111111";
    let pinned = client
        .call("whoami", &format!("00-{first_trace}-2222222222222222-01"))
        .await;
    let dead = pinned.trim_start_matches("pod-").parse::<usize>().unwrap();
    pods[dead].kill().await;

    let moved = client
        .call("whoami", &format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"))
        .await;
    assert_ne!(moved, pinned, "answered by the surviving pod");
    assert_eventually!(
        Duration::from_secs(15),
        {
            let spans = in_trace(&receiver, CLIENT_TRACE);
            !named(&spans, "tools/call whoami").is_empty()
                && !named(&spans, "mcp.session.reinitialize").is_empty()
        },
        "the failover call and its re-initialization reach the receiver ({} spans so far)",
        receiver.spans().len()
    );

    let spans = in_trace(&receiver, CLIENT_TRACE);
    let request = named(&spans, "tools/call whoami");
    assert_eq!(request.len(), 1, "one request span: {spans:#?}");
    let request = request[0];
    assert_eq!(
        hex(&request.parent_span_id),
        CLIENT_SPAN,
        "continues the client's span"
    );
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "whoami"),
        ("mcp_gateway.route", "/mcp"),
        ("mcp_gateway.pool", "legacy"),
        ("mcp_gateway.outcome", "ok"),
        ("http.response.status_code", "200"),
        ("server.address", backends[1 - dead].as_str()),
    ] {
        assert_eq!(
            attribute(request, key).as_deref(),
            Some(value),
            "{key}: {request:#?}"
        );
    }
    let session = attribute(request, "mcp.session.id").expect("a hashed session id");
    assert_eq!(session.len(), 16, "hashed, not the gateway's session id");

    let reinit = named(&spans, "mcp.session.reinitialize");
    assert_eq!(
        reinit.len(),
        1,
        "one re-initialization attempt: {reinit:#?}"
    );
    assert_eq!(
        reinit[0].parent_span_id, request.span_id,
        "a child of the request span"
    );
    assert_eq!(
        attribute(reinit[0], "mcp_gateway.outcome").as_deref(),
        Some("ok")
    );
    assert_eq!(
        attribute(reinit[0], "server.address").as_deref(),
        Some(backends[1 - dead].as_str())
    );
    let reason = attribute(reinit[0], "mcp_gateway.reason").unwrap_or_default();
    assert!(
        ["connect-refused", "connection-lost"].contains(&reason.as_str()),
        "the pod is gone: {reason}"
    );
    let event = request
        .events
        .iter()
        .find(|e| e.name == "mcp.session.reinitialized")
        .expect("the move is an event of the request span");
    let from = event
        .attributes
        .iter()
        .find(|kv| kv.key == "mcp_gateway.from");
    assert!(format!("{from:?}").contains(&backends[dead]), "{event:#?}");

    // the first call is a trace of its own, without a re-initialization
    let first = in_trace(&receiver, first_trace);
    assert_eq!(named(&first, "tools/call whoami").len(), 1, "{first:#?}");
    assert!(named(&first, "mcp.session.reinitialize").is_empty());
}

#[tokio::test]
async fn the_trace_context_goes_upstream_and_spans_export_over_grpc() {
    let receiver = OtlpReceiver::grpc().await;
    let mock = MockServer::start("m-0").await;
    let yaml = format!(
        "{}pools:\n  modern: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, pool: modern }}\n",
        tracing_yaml(&receiver, "grpc"),
        mock.addr
    );
    let gw = Gateway::start_with_env(&yaml, EXPORT_QUICKLY).await;
    let answer = Request::tools_call("/mcp", 7, "whoami")
        .header(
            "traceparent",
            &format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"),
        )
        .header("tracestate", "vendor=opaque")
        .send(gw.addr)
        .await;
    assert_eq!(answer.status(), 200);
    assert_eventually!(
        Duration::from_secs(15),
        !named(&in_trace(&receiver, CLIENT_TRACE), "tools/call whoami").is_empty(),
        "the span arrives over gRPC ({} exports so far)",
        receiver.exports()
    );
    let spans = in_trace(&receiver, CLIENT_TRACE);
    let span = named(&spans, "tools/call whoami")[0];
    assert_eq!(hex(&span.parent_span_id), CLIENT_SPAN);
    assert_eq!(span.trace_state, "vendor=opaque", "tracestate continued");

    let upstream = &mock.requests()[0].head;
    let traceparent = upstream
        .header("traceparent")
        .expect("traceparent upstream");
    assert_eq!(
        traceparent,
        format!("00-{CLIENT_TRACE}-{}-01", hex(&span.span_id)),
        "the backend's parent is the gateway's span"
    );
    assert_eq!(upstream.header("tracestate"), Some("vendor=opaque"));
}

#[tokio::test]
async fn without_tracing_the_gateway_adds_no_trace_context() {
    let mock = MockServer::start("m-0").await;
    let yaml = format!(
        "pools:\n  modern: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, pool: modern }}\n",
        mock.addr
    );
    let gw = Gateway::start(&yaml).await;
    let client_traceparent = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    Request::tools_call("/mcp", 1, "whoami").send(gw.addr).await;
    Request::tools_call("/mcp", 2, "whoami")
        .header("traceparent", &client_traceparent)
        .send(gw.addr)
        .await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].head.header("traceparent"),
        None,
        "nothing added"
    );
    assert_eq!(
        requests[1].head.header("traceparent"),
        Some(client_traceparent.as_str()),
        "the client's passes through untouched"
    );
}

#[tokio::test]
async fn the_replayed_initialize_carries_the_reinitialization_span_upstream() {
    let receiver = OtlpReceiver::http().await;
    let pods = [
        MockServer::legacy("a", 0, "2025-11-25").await,
        MockServer::legacy("b", 0, "2025-11-25").await,
    ];
    let yaml = format!(
        "{}pools:\n  legacy: {{ backends: [{}, {}], failure-cooldown-ms: 60000 }}\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: legacy }}\n",
        tracing_yaml(&receiver, "http/protobuf"),
        pods[0].addr,
        pods[1].addr
    );
    let gw = Gateway::start_with_env(&yaml, EXPORT_QUICKLY).await;
    let sid = mcp_gateway_tests::open_session(gw.addr).await;
    let pinned = usize::from(pods[0].count() == 0);
    let survivor = &pods[1 - pinned];
    pods[pinned].die().await;
    let body = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"whoami","arguments":{}}}"#;
    let answer = Request::post("/mcp", body)
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", "2025-11-25")
        .header(
            "traceparent",
            &format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"),
        )
        .send(gw.addr)
        .await;
    assert_eq!(answer.tool_text(), survivor.name);
    assert_eventually!(
        Duration::from_secs(15),
        !named(
            &in_trace(&receiver, CLIENT_TRACE),
            "mcp.session.reinitialize"
        )
        .is_empty()
            && !named(&in_trace(&receiver, CLIENT_TRACE), "tools/call whoami").is_empty(),
        "the spans arrive"
    );
    let spans = in_trace(&receiver, CLIENT_TRACE);
    let reinit = named(&spans, "mcp.session.reinitialize")[0];
    let request = named(&spans, "tools/call whoami")[0];
    let parent_of = |method: &str| {
        survivor
            .requests()
            .iter()
            .find(|r| String::from_utf8_lossy(&r.body).contains(method))
            .and_then(|r| r.head.header("traceparent").map(str::to_owned))
            .unwrap_or_else(|| panic!("{method} reached {} with a traceparent", survivor.name))
    };
    assert_eq!(
        parent_of("\"method\":\"initialize\""),
        format!("00-{CLIENT_TRACE}-{}-01", hex(&reinit.span_id)),
        "the replay is a child of the re-initialization span"
    );
    assert_eq!(
        parent_of("\"method\":\"tools/call\""),
        format!("00-{CLIENT_TRACE}-{}-01", hex(&request.span_id)),
        "the call is a child of the request span"
    );
}
