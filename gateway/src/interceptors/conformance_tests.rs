//! The draft's conformance fixtures that fit a chain runner (`gateway/tests/fixtures/
//! interceptors/`, copied from modelcontextprotocol/experimental-ext-interceptors, their
//! README names the commits), replayed through [`super::chain`] by the adapter contract
//! (`conformance/ADAPTER.md`): each fixture's interceptors bound to the contract's behaviours,
//! each `apply`/`chain` step's decision and final payload compared (canonical JSON).

use super::chain::{self, Entry, Invoker};
use super::client::Failure;
use super::types::Phase;
use super::wire::{self, Kind};
use serde_json::{json, Map, Value};
use std::time::Duration;

/// The contract's behaviours, by interceptor name.
struct Adapter {
    behaviours: Vec<(String, String)>,
}

#[async_trait::async_trait]
impl Invoker for Adapter {
    async fn invoke(&self, entry: &Entry, params: Map<String, Value>) -> Result<Value, Failure> {
        let behaviour = (self.behaviours.iter())
            .find(|(n, _)| *n == entry.listed.name)
            .map(|(_, b)| b.as_str())
            .unwrap_or("");
        let payload = &params["payload"];
        let note = payload.pointer("/arguments/note").and_then(Value::as_str);
        let valid = |ok: bool, why: &str| {
            if ok {
                json!({"type": "validation", "valid": true})
            } else {
                json!({"type": "validation", "valid": false, "severity": "error",
                    "messages": [{"message": why, "severity": "error"}]})
            }
        };
        Ok(match behaviour {
            "allow-all" => valid(true, ""),
            "deny-all" => valid(false, "denied by policy"),
            "require-note" => valid(note.is_some_and(|n| !n.is_empty()), "note is required"),
            "require-uppercase-note" => valid(
                note.is_some_and(|n| n == n.to_uppercase()),
                "note must be uppercase",
            ),
            "uppercase-note" => match note {
                Some(n) => {
                    let mut changed = payload.clone();
                    if let Some(slot) = changed.pointer_mut("/arguments/note") {
                        *slot = json!(n.to_uppercase());
                    }
                    json!({"type": "mutation", "modified": true, "payload": changed})
                }
                None => json!({"type": "mutation", "modified": false, "payload": payload}),
            },
            "crash" => {
                return Err(Failure::Error {
                    code: -32603,
                    message: "Interceptor execution failed".into(),
                })
            }
            other => panic!("a behaviour the adapter contract does not name: {other}"),
        })
    }

    fn verdict(&self, _: &Entry, _: Phase, _: &str, _: Duration, _: &Value) {}
}

/// RFC 8785's canonical form for the values the fixtures hold (keys sorted, no whitespace).
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            let inner: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", Value::from(k.as_str()), canonical(&o[k.as_str()])))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

/// The fixture's interceptors as one server's listed entries, and their behaviours.
fn session(fixture: &Value) -> (Vec<Entry>, Adapter) {
    let mut entries = Vec::new();
    let mut behaviours = Vec::new();
    for i in fixture["interceptors"].as_array().unwrap() {
        let phases = match i["phases"].as_str().unwrap() {
            "both" => vec!["request", "response"],
            one => vec![one],
        };
        let hooks: Vec<Value> = (phases.iter())
            .map(|p| json!({"events": i["events"], "phase": p}))
            .collect();
        let mode = match i.get("mode").and_then(Value::as_str) {
            Some("audit") => "audit",
            _ => "active",
        };
        let info = json!({"name": i["name"], "type": i["type"], "hooks": hooks, "mode": mode,
            "failOpen": i.get("failOpen").cloned().unwrap_or(json!(false))});
        let listed = wire::listed(&info).unwrap();
        assert_ne!(listed.kind, Kind::Sink);
        behaviours.push((
            listed.name.clone(),
            i["behavior"].as_str().unwrap().to_owned(),
        ));
        entries.push(Entry {
            place: 0,
            server: "conformance".into(),
            listed,
            max_payload: 1 << 20,
            timeout: Duration::from_secs(1),
            config: None,
        });
    }
    (entries, Adapter { behaviours })
}

/// Replays one fixture; `Err` says which step failed and how.
async fn replay(fixture: &Value) -> Result<(), String> {
    let (entries, adapter) = session(fixture);
    for (n, step) in fixture["steps"].as_array().unwrap().iter().enumerate() {
        let op = step["op"].as_str().unwrap();
        if op != "apply" && op != "chain" {
            return Err(format!("step {n}: `{op}` is not a chain step"));
        }
        let event = step["event"].as_str().unwrap();
        let phase = match step["phase"].as_str().unwrap() {
            "request" => Phase::Request,
            _ => Phase::Response,
        };
        let payload = &step["payload"];
        let ordered = chain::order(entries.clone(), event, phase);
        let context = json!({"sessionId": step["context"].get("sessionId")});
        let outcome = chain::run(&ordered, &adapter, event, phase, payload, &context).await;
        let decision = if outcome.is_ok() { "allow" } else { "deny" };
        let expect = &step["expect"];
        if expect["decision"] != decision {
            return Err(format!(
                "step {n}: {decision}, expected {}",
                expect["decision"]
            ));
        }
        let Ok(changed) = outcome else { continue };
        let final_payload = canonical(changed.as_ref().unwrap_or(payload));
        if let Some(want) = expect.get("finalPayloadCanonical").and_then(Value::as_str) {
            if final_payload != want {
                return Err(format!(
                    "step {n}: final payload {final_payload}, expected {want}"
                ));
            }
        }
        for absent in expect
            .get("forbids")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if final_payload.contains(absent.as_str().unwrap()) {
                return Err(format!("step {n}: {absent} is in the final payload"));
            }
        }
        for present in expect
            .get("requires")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !final_payload.contains(present.as_str().unwrap()) {
                return Err(format!("step {n}: {present} is not in the final payload"));
            }
        }
    }
    Ok(())
}

#[tokio::test]
async fn every_chain_fixture_of_the_draft_passes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/interceptors");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    let mut failed = Vec::new();
    for path in &names {
        let fixture: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        if let Err(why) = replay(&fixture).await {
            failed.push(format!("{}: {why}", fixture["id"]));
        }
    }
    assert_eq!(names.len(), 7, "the fixtures copied: {names:?}");
    assert!(
        failed.is_empty(),
        "{} of {} failed: {failed:#?}",
        failed.len(),
        names.len()
    );
}

#[test]
fn the_canonical_form_sorts_keys_and_drops_whitespace() {
    let v = json!({"name": "echo", "arguments": {"note": "HELLO"}});
    assert_eq!(
        canonical(&v),
        r#"{"arguments":{"note":"HELLO"},"name":"echo"}"#
    );
}
