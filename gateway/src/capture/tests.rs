use super::*;
use crate::config::CaptureConfig;
use serde_json::json;
use std::time::Duration;

fn config(file: PathBuf) -> CaptureConfig {
    CaptureConfig {
        file,
        max_file_bytes: 2048,
        max_files: 2,
        bodies: true,
        max_body_bytes: 1024,
        redact: vec![vec!["params".into(), "arguments".into()]],
    }
}

const CALL: &[u8] = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"transfer","arguments":{"account":"12345","amount":10}}}"#;

#[test]
fn tool_arguments_are_redacted_by_default_and_the_session_is_hashed() {
    let seen = Seen {
        route: "/mcp",
        session: Some("6138e698-3ecb-4729-8a71-aae6fcc29dfc"),
        http_method: "POST",
        status: Some(200),
        outcome: "ok",
        latency: Duration::from_micros(12_345),
        request_bytes: CALL.len() as u64,
        response_bytes: 99,
        backend: Some("127.0.0.1:8201"),
        request_body: Some(CALL),
        ..Seen::default()
    };
    let r = record(&seen, &config(PathBuf::from("x")));
    assert_eq!(r["method"], "tools/call");
    assert_eq!(r["name"], "transfer");
    assert_eq!(r["id"], 7);
    assert_eq!(r["request"]["params"]["arguments"], REDACTED);
    assert_eq!(r["request"]["params"]["name"], "transfer");
    assert_eq!(r["latency_ms"], 12.345);
    let session = r["session"].as_str().unwrap();
    assert_eq!(session.len(), 16);
    assert!(!r.to_string().contains("6138e698"), "{r}");
    assert!(!r.to_string().contains("12345\""), "{r}");
    assert!(r.get("response").is_none(), "not held: not recorded");
}

#[test]
fn redaction_paths_take_wildcards_and_array_elements() {
    let mut v = json!({"result": {"content": [{"type": "text", "text": "secret"}, {"type": "text", "text": "also"}]},
                       "params": {"_meta": {"a": 1, "b": 2}}});
    redact(
        &mut v,
        &["result".into(), "content".into(), "*".into(), "text".into()],
    );
    redact(&mut v, &["params".into(), "_meta".into(), "*".into()]);
    assert_eq!(v["result"]["content"][0]["text"], REDACTED);
    assert_eq!(v["result"]["content"][1]["text"], REDACTED);
    assert_eq!(v["result"]["content"][0]["type"], "text");
    assert_eq!(v["params"]["_meta"]["b"], REDACTED);
    let mut w = json!({"params": {"arguments": [1, 2]}});
    redact(&mut w, &["params".into(), "arguments".into(), "1".into()]);
    assert_eq!(w["params"]["arguments"], json!([1, REDACTED]));
}

#[test]
fn event_streams_are_redacted_per_message_and_other_bodies_recorded_by_size() {
    let mut c = config(PathBuf::from("x"));
    c.redact = vec![vec!["result".into(), "content".into()]];
    let sse = b"event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[\"x\"]}}\r\n\r\n";
    let v = body_value(sse, &c);
    assert_eq!(v["events"][0]["result"]["content"], REDACTED);
    assert_eq!(body_value(b"\x00\x01binary", &c)["omitted"], "not JSON");
    assert_eq!(body_value(&[b' '; 2000], &c)["bytes"], 2000);
}

#[test]
fn a_message_split_over_data_lines_is_recorded_whole_whatever_the_line_ends() {
    let mut c = config(PathBuf::from("x"));
    c.redact = vec![vec!["result".into(), "content".into()]];
    for eol in ["\n", "\r\n", "\r"] {
        let sse = format!(
            "event: message{eol}data: {{\"jsonrpc\":\"2.0\",\"id\":1,{eol}data: \"result\":{{\"content\":[\"x\"]}}}}{eol}{eol}"
        );
        let v = body_value(sse.as_bytes(), &c);
        assert_eq!(v["events"][0]["id"], 1, "line end {eol:?}: {v}");
        assert_eq!(v["events"][0]["result"]["content"], REDACTED);
    }
}

#[test]
fn capture_files_rotate_at_their_size_and_keep_the_configured_number() {
    let dir = std::env::temp_dir().join(format!("mcpgw-capture-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("c.jsonl");
    let c = config(file.clone());
    let captures = Captures::default();
    let seen = Seen {
        route: "/mcp",
        http_method: "POST",
        request_body: Some(CALL),
        ..Seen::default()
    };
    for _ in 0..60 {
        captures.write(&c, &seen);
    }
    let numbered = |n: usize| PathBuf::from(format!("{}.{n}", file.display()));
    let settled = || {
        file.exists()
            && numbered(1).exists()
            && numbered(2).exists()
            && std::fs::read_to_string(&file)
                .unwrap_or_default()
                .lines()
                .count()
                > 0
    };
    let start = std::time::Instant::now();
    while !settled() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(settled(), "rotated files missing in {}", dir.display());
    assert!(
        !numbered(3).exists(),
        "only max-files rotated files are kept"
    );
    for path in [file.clone(), numbered(1), numbered(2)] {
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len <= 2048, "{} is {len} bytes", path.display());
    }
    let text = std::fs::read_to_string(numbered(1)).unwrap();
    let mut printed = Vec::new();
    let n = print_file(text.as_bytes(), &mut printed).unwrap();
    assert!(n >= 1);
    let printed = String::from_utf8(printed).unwrap();
    assert!(printed.contains("POST tools/call transfer"), "{printed}");
    assert!(
        printed.contains("\"arguments\": \"[redacted]\""),
        "{printed}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn capture_config_is_validated_with_its_key_paths() {
    let yaml = "pools: { p: { backends: [127.0.0.1:1] } }\nroutes:\n  - { path: /a, pool: p, capture: { file: /tmp/a.jsonl } }\n  - { path: /b, pool: p, capture: { redact: [\"params..x\"], colour: 1, max-file-bytes: 10 } }\n";
    let errors = crate::config::parse(yaml).unwrap_err();
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        vec![
            "routes[1].capture.colour",
            "routes[1].capture.file",
            "routes[1].capture.max-file-bytes",
            "routes[1].capture.redact[0]"
        ],
        "{errors:#?}"
    );
    let ok = crate::config::parse(
        "pools: { p: { backends: [127.0.0.1:1] } }\nroutes: [ { path: /a, pool: p, capture: { file: /tmp/a.jsonl } } ]\n",
    )
    .unwrap();
    let c = ok.routes[0].capture.as_ref().unwrap();
    assert_eq!(c.redact.len(), crate::config::DEFAULT_REDACT.len());
    assert_eq!(c.redact[0], ["params", "arguments"]);
    assert!(c
        .redact
        .contains(&vec!["params".into(), "argument".into(), "value".into()]));
    assert_eq!((c.max_files, c.bodies), (3, true));
}

#[test]
fn request_state_is_redacted_whatever_the_paths_say() {
    // a retry carries the sealed state; anyone holding it can resume the call (issue 31)
    let retry: &[u8] = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"book","requestState":"SEALED-RETRY","inputResponses":{}}}"#;
    let parked: &[u8] = br#"{"jsonrpc":"2.0","id":3,"result":{"resultType":"input_required","inputRequests":{"k":{"method":"elicitation/create","params":{}}},"requestState":"SEALED-ANSWER"}}"#;
    let streamed: &[u8] = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"resultType\":\"input_required\",\"requestState\":\"SEALED-EVENT\"}}\n\n";
    let batch: &[u8] = br#"[{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"b","requestState":"SEALED-BATCH"}}]"#;
    let odd: &[u8] = br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"b","requestState":{"nested":"SEALED-OBJECT"}}}"#;
    for redact in [vec![], config(PathBuf::from("x")).redact] {
        let config = CaptureConfig {
            redact,
            ..config(PathBuf::from("x"))
        };
        for (request, response) in [
            (retry, parked),
            (retry, streamed),
            (batch, parked),
            (odd, parked),
        ] {
            let seen = Seen {
                route: "/mcp",
                http_method: "POST",
                request_body: Some(request),
                response_body: Some(response),
                ..Seen::default()
            };
            let r = record(&seen, &config).to_string();
            assert!(!r.contains("SEALED"), "{r}");
            assert!(r.contains(REDACTED), "{r}");
        }
    }
    let seen = Seen {
        route: "/mcp",
        http_method: "POST",
        request_body: Some(retry),
        response_body: Some(parked),
        ..Seen::default()
    };
    let r = record(&seen, &config(PathBuf::from("x")));
    assert_eq!(r["request"]["params"]["requestState"], REDACTED);
    assert_eq!(r["request"]["params"]["name"], "book");
    assert_eq!(r["response"]["result"]["requestState"], REDACTED);
    assert_eq!(r["response"]["result"]["resultType"], "input_required");
}
