use super::*;
use crate::config::AuditConfig;
use serde_json::json;
use std::time::{Duration, Instant};

fn config(dir: &std::path::Path) -> AuditConfig {
    AuditConfig {
        file: Some(dir.join("audit.jsonl")),
        stdout: false,
        max_bytes: 1024,
        keep: 2,
        otlp: None,
        queue: 64,
        required: true,
        include_bodies: false,
        redact: vec![vec!["params".into(), "arguments".into(), "password".into()]],
    }
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpgw-audit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Polls `check` until it holds, for at most 5 s.
fn settle(mut check: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    check()
}

fn lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_record_is_one_json_line_with_only_the_fields_set() {
    let principal = crate::auth::Principal {
        id: "https://idp|alice".into(),
        subject: "alice".into(),
        scopes: vec!["mcp".into()],
        claims: serde_json::from_value(json!({
            "sub": "alice", "client_id": "agent-7", "secret_claim": "s3cr3t",
            "act": {"sub": "svc-a", "act": {"sub": "svc-b"}}
        }))
        .unwrap(),
    };
    let line = Record::new("call")
        .route("/mcp")
        .pool("github")
        .backend("127.0.0.1:9001")
        .principal(Some(&principal))
        .session(Some("session-id-1"))
        .method("tools/call")
        .name("delete_branch")
        .decision("allow")
        .rule("routes[0].authz[3]")
        .outcome("ok")
        .latency(Duration::from_micros(180_250))
        .trace_id("t-1")
        .line();
    assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["event"], "call");
    assert_eq!(v["caller"]["subject"], "alice");
    assert_eq!(v["caller"]["id"], "https://idp|alice");
    assert_eq!(v["caller"]["client_id"], "agent-7");
    assert_eq!(v["caller"]["act"], json!(["svc-a", "svc-b"]));
    assert_eq!(
        v["session"],
        crate::session_hash::hash_session("session-id-1")
    );
    assert_eq!(v["latency_ms"], 180.25);
    assert_eq!(v["rule"], "routes[0].authz[3]");
    assert!(v["time"].as_str().unwrap().ends_with('Z'));
    assert!(v.get("member").is_none() && v.get("code").is_none());
    assert!(!line.contains("s3cr3t") && !line.contains("session-id-1"));
}

#[test]
fn records_reach_the_file_and_it_rotates_by_size_keeping_n() {
    let dir = temp_dir("rotate");
    let audit = Audit::default();
    audit.configure(Some(&config(&dir)));
    for i in 0..40 {
        audit.record(
            Record::new("call")
                .name(&format!("tool-{i:02}"))
                .detail(json!("x".repeat(40))),
        );
    }
    let file = dir.join("audit.jsonl");
    let rotated = |n: usize| dir.join(format!("audit.jsonl.{n}"));
    assert!(settle(|| lines(&file)
        .last()
        .is_some_and(|v| v["name"] == "tool-39")));
    assert!(rotated(1).exists() && rotated(2).exists());
    assert!(!rotated(3).exists(), "only `keep` rotated files stay");
    for path in [file, rotated(1), rotated(2)] {
        assert!(std::fs::metadata(&path).unwrap().len() <= 1024);
    }
}

#[test]
fn a_full_queue_drops_records_and_counts_them() {
    let dir = temp_dir("full");
    let mut cfg = config(&dir);
    cfg.queue = 1;
    let metrics = AuditMetrics::unregistered();
    let audit = Audit::new(metrics.clone());
    audit.configure(Some(&cfg));
    for _ in 0..2000 {
        audit.record(Record::new("call"));
    }
    let dropped = metrics.dropped.with_label_values(&["queue-full"]).get();
    assert!(dropped > 0, "a queue of 1 under 2000 records drops some");
    assert!(settle(|| {
        let written = metrics.records.with_label_values(&["call"]).get();
        written + dropped == 2000
    }));
}

#[test]
fn an_unwritable_file_makes_the_sink_unhealthy_until_it_can_write_again() {
    let dir = temp_dir("unwritable");
    let mut cfg = config(&dir);
    // a directory that does not exist yet: the file cannot be opened
    let missing = dir.join("later");
    cfg.file = Some(missing.join("audit.jsonl"));
    let audit = Audit::default();
    audit.configure(Some(&cfg));
    assert!(!audit.healthy());
    assert_eq!(audit.refuses("tools/call"), Some("unwritable"));
    assert_eq!(audit.refuses("tools/list"), None, "only calls are refused");
    std::fs::create_dir_all(&missing).unwrap();
    assert!(settle(|| audit.healthy()));
    assert_eq!(audit.refuses("tools/call"), None);
}

#[test]
fn bodies_are_redacted_by_the_audit_paths_and_request_state_always() {
    let dir = temp_dir("redact");
    let audit = Audit::default();
    audit.configure(Some(&config(&dir)));
    let message = json!({"params": {"arguments": {"password": "hunter2", "q": "x"}, "requestState": "sealed"}});
    let redacted = audit.redacted(message);
    assert_eq!(
        redacted["params"]["arguments"]["password"],
        crate::capture::REDACTED
    );
    assert_eq!(redacted["params"]["arguments"]["q"], "x");
    assert_eq!(redacted["params"]["requestState"], crate::capture::REDACTED);
}

#[test]
fn a_trail_that_is_off_records_nothing_and_refuses_nothing() {
    let audit = Audit::default();
    assert!(!audit.on() && audit.healthy() && audit.refuses("tools/call").is_none());
    audit.record(Record::new("call"));
}

#[test]
fn drain_returns_once_the_writer_has_taken_every_queued_record() {
    let dir = temp_dir("drain");
    let mut cfg = config(&dir);
    cfg.max_bytes = 1 << 20;
    let metrics = AuditMetrics::unregistered();
    let audit = Audit::new(metrics.clone());
    audit.configure(Some(&cfg));
    for _ in 0..50 {
        audit.record(Record::new("call"));
    }
    audit.drain(Duration::from_secs(5));
    // every record taken from the queue (each is counted as its write begins; the last one
    // may be in its write still)
    let taken = metrics.records.with_label_values(&["call"]).get();
    assert!(taken >= 49, "drain returned with {taken} of 50 taken");
    assert_eq!(metrics.dropped.with_label_values(&["queue-full"]).get(), 0);
}

#[test]
fn a_collector_that_fails_is_left_alone_for_a_while_its_batches_counted_as_dropped() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = accepted.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ =
                conn.write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n");
        }
    });
    let metrics = AuditMetrics::unregistered();
    let mut otlp = super::otlp::Otlp::new(format!("http://{addr}/v1/logs"));
    let record = Record::new("call");
    otlp.push(&record, &record.line(), &metrics);
    otlp.flush(&metrics);
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
    let dropped = || metrics.dropped.with_label_values(&["otlp"]).get();
    assert_eq!(dropped(), 1, "the batch the collector refused");
    otlp.push(&record, &record.line(), &metrics);
    otlp.push(&record, &record.line(), &metrics);
    otlp.flush(&metrics);
    assert_eq!(dropped(), 3, "dropped while the export rests");
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "no second post"
    );
}
