//! The `audit` section's validation.
use crate::config::parse;

const ROUTES: &str =
    "pools:\n  p: { backends: [127.0.0.1:1] }\nroutes:\n  - { path: /mcp, mode: stateless, pool: p }\n";

fn problems(audit: &str) -> Vec<String> {
    match parse(&format!("{audit}{ROUTES}")) {
        Ok(_) => Vec::new(),
        Err(errors) => errors
            .iter()
            .map(|e| format!("{}: {}", e.path, e.message))
            .collect(),
    }
}

#[test]
fn the_audit_section_has_its_defaults_and_the_logs_endpoint_beside_the_traces() {
    let config = parse(&format!(
        "tracing: {{ otlp: {{ endpoint: \"http://127.0.0.1:4318\" }} }}\naudit: {{ file: /tmp/a.jsonl, otlp: true }}\n{ROUTES}"
    ))
    .unwrap();
    let audit = config.audit.unwrap();
    assert_eq!(audit.otlp.as_deref(), Some("http://127.0.0.1:4318/v1/logs"));
    assert_eq!(
        (audit.max_bytes, audit.keep, audit.queue),
        (100 << 20, 5, 8192)
    );
    assert!(!audit.required && !audit.include_bodies && !audit.stdout);
    assert_eq!(
        audit.redact.len(),
        crate::config::DEFAULT_AUDIT_REDACT.len()
    );
    assert!(parse(ROUTES).unwrap().audit.is_none(), "off unless set");
}

#[test]
fn each_bad_audit_value_is_named_with_its_key() {
    let said = problems(
        "audit: { queue: 0, rotate: { max-bytes: 5, huh: 1 }, redact: [\"a..b\"], bogus: 1 }\n",
    );
    for expected in [
        "audit.bogus: unknown key",
        "audit.rotate.huh: unknown key",
        "audit.rotate.max-bytes: must be at least 1024",
        "audit.queue: must be at least 1",
        "audit.redact[0]: `a..b` is not a dot-separated path",
        "audit: names no sink",
    ] {
        assert!(
            said.iter().any(|s| s.starts_with(expected)),
            "{expected} in {said:#?}"
        );
    }
    let otlp = problems("audit: { otlp: true }\n");
    assert!(
        otlp[0].starts_with("audit.otlp: needs `tracing`"),
        "{otlp:?}"
    );
    let grpc =
        problems("tracing: { otlp: { protocol: grpc } }\naudit: { otlp: true, file: /tmp/a }\n");
    assert!(grpc[0].contains("http/protobuf"), "{grpc:?}");
    let empty = problems("audit: { file: \" \" }\n");
    assert!(
        empty
            .iter()
            .any(|s| s.starts_with("audit.file: must not be empty")),
        "{empty:?}"
    );
}
