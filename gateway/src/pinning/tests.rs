//! The pins of a whole config: lists rewritten, calls checked, and both at once from many
//! threads while the list changes.

use super::*;
use crate::metrics::scratch;

fn pins(mode: &str) -> Pins {
    let dir = std::env::temp_dir().join(format!("mcpgw-pins-unit-{}-{mode}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let state = dir.join("state.json");
    let yaml = format!(
        "pools:\n  p: {{ backends: [127.0.0.1:9], tool-pinning: {{ mode: {mode}, state-file: \"{}\" }} }}\nroutes:\n  - {{ path: /mcp, pool: p }}\n",
        state.display()
    );
    let config = crate::config::parse(&yaml).unwrap();
    let pins = Pins::new(
        None,
        scratch(metrics::PinMetrics::register),
        crate::audit::Audit::default(),
    );
    pins.configure(&config);
    pins
}

fn list(description: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0", "id": 1,
        "result": {"tools": [
            {"name": "search", "description": description, "inputSchema": {"type": "object"}},
            {"name": "stable", "inputSchema": {"type": "object", "properties": {}}}
        ]}
    }))
    .unwrap()
}

fn names(body: &[u8]) -> Vec<String> {
    let v: Value = serde_json::from_slice(body).unwrap();
    let tools = v["result"]["tools"].as_array().unwrap();
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

const JSON: Option<&str> = Some("application/json");

#[test]
fn enforce_leaves_a_changed_tool_out_and_refuses_its_call_until_approved() {
    let pins = pins("enforce");
    assert!(pins.rewrite("p", JSON, &list("a")).is_none());
    assert_eq!(pins.check_call("p", "search"), Ok(()));
    assert_eq!(pins.check_call("p", "other"), Err("unpinned"));
    let out = pins.rewrite("p", JSON, &list("b")).unwrap();
    assert_eq!(names(&out), ["stable"]);
    assert_eq!(pins.check_call("p", "search"), Err("pending"));
    let fp = {
        let p = pins.pool("p").unwrap();
        let book = lock(&p.book);
        book.tools["search"]
            .pending
            .as_ref()
            .unwrap()
            .fingerprint
            .clone()
    };
    let p = pins.pool("p").unwrap();
    lock(&p.book).approve("search", &fp, 1).unwrap();
    assert_eq!(pins.check_call("p", "search"), Ok(()));
    assert!(pins.rewrite("p", JSON, &list("b")).is_none());
}

#[test]
fn record_mode_changes_no_list_and_no_call() {
    let pins = pins("record");
    assert!(pins.rewrite("p", JSON, &list("a")).is_none());
    assert!(pins.rewrite("p", JSON, &list("b")).is_none());
    assert_eq!(pins.check_call("p", "search"), Ok(()));
    let p = pins.pool("p").unwrap();
    assert!(lock(&p.book).tools["search"].pending.is_some());
}

#[test]
fn an_event_stream_list_is_rewritten_event_by_event() {
    let pins = pins("enforce");
    pins.rewrite("p", JSON, &list("a"));
    let mut sse = b"event: message\ndata: ".to_vec();
    sse.extend_from_slice(&list("b"));
    sse.extend_from_slice(b"\n\n");
    let out = pins.rewrite("p", Some("text/event-stream"), &sse).unwrap();
    let text = String::from_utf8(out.to_vec()).unwrap();
    assert!(
        text.contains("\"stable\"") && !text.contains("\"search\""),
        "{text}"
    );
}

#[test]
fn a_list_that_changes_while_calls_are_checked_leaves_every_answer_whole() {
    let pins = Arc::new(pins("enforce"));
    pins.rewrite("p", JSON, &list("a"));
    let lists = {
        let pins = pins.clone();
        std::thread::spawn(move || {
            for i in 0..500 {
                let d = if i % 2 == 0 { "b" } else { "a" };
                let out = pins.rewrite("p", JSON, &list(d));
                let shown = out.map_or_else(|| names(&list(d)), |b| names(&b));
                assert!(
                    shown == ["stable"] || shown == ["search", "stable"],
                    "{shown:?}"
                );
            }
        })
    };
    let calls: Vec<_> = (0..4)
        .map(|_| {
            let pins = pins.clone();
            std::thread::spawn(move || {
                for _ in 0..2000 {
                    let r = pins.check_call("p", "search");
                    assert!(r == Ok(()) || r == Err("pending"), "{r:?}");
                    assert_eq!(pins.check_call("p", "stable"), Ok(()));
                }
            })
        })
        .collect();
    lists.join().unwrap();
    for c in calls {
        c.join().unwrap();
    }
    // the last list was the pin: served; the change is one pending definition
    assert_eq!(pins.check_call("p", "search"), Ok(()));
    let p = pins.pool("p").unwrap();
    let book = lock(&p.book);
    assert_eq!(book.tools.len(), 2);
    assert_eq!(
        book.tools["search"].pending.as_ref().unwrap().kind,
        "changed"
    );
}
