use crate::config::{parse, OtlpProtocol};

const POOLS: &str =
    "pools: { p: { backends: [127.0.0.1:1] } }\nroutes: [ { path: /mcp, pool: p } ]\n";

#[test]
fn tracing_is_off_unless_configured_and_takes_the_keys_of_the_issue() {
    assert_eq!(parse(POOLS).unwrap().tracing, None);
    let on = parse(&format!(
        "tracing: {{ otlp: {{ endpoint: \"http://127.0.0.1:4318\", protocol: http/protobuf }}, sample-ratio: 0.25 }}\n{POOLS}"
    ))
    .unwrap()
    .tracing
    .unwrap();
    assert_eq!(
        on.endpoint, "http://127.0.0.1:4318/v1/traces",
        "the signal path is appended"
    );
    assert_eq!(on.protocol, OtlpProtocol::HttpProtobuf);
    assert_eq!(on.sample_ratio, 0.25);
    let grpc = parse(&format!(
        "tracing: {{ otlp: {{ protocol: grpc }} }}\n{POOLS}"
    ))
    .unwrap()
    .tracing
    .unwrap();
    assert_eq!(
        grpc.endpoint, "http://127.0.0.1:4317",
        "gRPC: the default port, no path"
    );
    assert_eq!(grpc.sample_ratio, 1.0);
}

#[test]
fn tracing_problems_are_listed_with_their_key_paths() {
    let errors = parse(&format!(
        "tracing: {{ otlp: {{ endpoint: \"udp://x\", protocol: thrift, colour: 1 }}, sample-ratio: 2 }}\n{POOLS}"
    ))
    .unwrap_err();
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        vec![
            "tracing.sample-ratio",
            "tracing.otlp.colour",
            "tracing.otlp.protocol",
            "tracing.otlp.endpoint"
        ],
        "{errors:#?}"
    );
    let errors = parse(&format!("tracing: {{ sample-ratio: 1.0 }}\n{POOLS}")).unwrap_err();
    assert_eq!(errors[0].path, "tracing.otlp");
}

#[test]
fn injecting_without_a_span_writes_nothing() {
    let mut req = pingora::http::RequestHeader::build("POST", b"/mcp", None).unwrap();
    super::inject(&opentelemetry::Context::new(), &mut req);
    super::inject_current(&mut req);
    assert!(req.headers.get("traceparent").is_none());
}
