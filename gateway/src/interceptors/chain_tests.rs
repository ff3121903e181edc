//! The chain without a network: order, audit mode, `failOpen`, the checks of a mutation,
//! timeouts and bounds, each with an invoker whose interceptors answer as a table says.

use super::chain::{self, Entry, Invoker, Stop};
use super::client::Failure;
use super::types::Phase;
use super::wire::{Kind, Listed};
use serde_json::{json, Map, Value};
use std::sync::Mutex;
use std::time::Duration;

/// How a fake interceptor answers.
#[derive(Clone)]
pub(super) enum Does {
    Allow,
    Deny(&'static str),
    /// Sets `arguments.note` (request) or appends to the first text (response).
    Stamp(&'static str),
    /// Answers this payload as a mutation.
    Answer(Value),
    /// Answers this raw result.
    Raw(Value),
    Fail(Failure),
    /// Sleeps, then allows: past its deadline, the invoker fails it as a timeout.
    Slow(Duration),
}

pub(super) struct Fake {
    pub table: Vec<(String, Does)>,
    pub calls: Mutex<Vec<String>>,
    pub verdicts: Mutex<Vec<(String, String)>>,
    pub seen: Mutex<Vec<(String, Value)>>,
}

impl Fake {
    pub fn new(table: Vec<(&str, Does)>) -> Fake {
        Fake {
            table: table.into_iter().map(|(n, d)| (n.to_owned(), d)).collect(),
            calls: Mutex::default(),
            verdicts: Mutex::default(),
            seen: Mutex::default(),
        }
    }

    fn verdicts(&self) -> Vec<(String, String)> {
        self.verdicts.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl Invoker for Fake {
    async fn invoke(&self, entry: &Entry, params: Map<String, Value>) -> Result<Value, Failure> {
        let name = entry.listed.name.clone();
        self.calls.lock().unwrap().push(name.clone());
        let payload = params["payload"].clone();
        self.seen
            .lock()
            .unwrap()
            .push((name.clone(), params.clone().into()));
        let does = (self.table.iter().find(|(n, _)| *n == name))
            .map(|(_, d)| d.clone())
            .unwrap_or(Does::Allow);
        let mut payload = payload;
        match does {
            Does::Allow => Ok(json!({"type": "validation", "valid": true})),
            Does::Deny(why) => Ok(
                json!({"type": "validation", "valid": false, "severity": "error",
                "messages": [{"message": why, "severity": "error"}]}),
            ),
            Does::Stamp(s) => {
                if let Some(note) = payload.pointer_mut("/arguments/note") {
                    *note = json!(format!("{}{s}", note.as_str().unwrap_or("")));
                } else if let Some(text) = payload.pointer_mut("/content/0/text") {
                    *text = json!(format!("{}{s}", text.as_str().unwrap_or("")));
                }
                Ok(json!({"type": "mutation", "modified": true, "payload": payload}))
            }
            Does::Answer(p) => Ok(json!({"type": "mutation", "modified": true, "payload": p})),
            Does::Raw(v) => Ok(v),
            Does::Fail(f) => Err(f),
            Does::Slow(d) => {
                match tokio::time::timeout(entry.timeout, tokio::time::sleep(d)).await {
                    Ok(()) => Ok(json!({"type": "validation", "valid": true})),
                    Err(_) => Err(Failure::Timeout),
                }
            }
        }
    }

    fn verdict(&self, entry: &Entry, _: Phase, result: &str, _: Duration, _: &Value) {
        (self.verdicts.lock().unwrap()).push((entry.listed.name.clone(), result.to_owned()));
    }
}

pub(super) fn entry(place: usize, name: &str, kind: Kind) -> Entry {
    Entry {
        place,
        server: format!("s{place}"),
        listed: Listed {
            name: name.to_owned(),
            kind,
            hooks: vec![
                ("tools/call".into(), Phase::Request),
                ("tools/call".into(), Phase::Response),
            ],
            audit: false,
            fail_open: false,
            priority: (0, 0),
        },
        max_payload: 1 << 20,
        timeout: Duration::from_millis(200),
        config: None,
    }
}

fn with(mut e: Entry, f: impl FnOnce(&mut Listed)) -> Entry {
    f(&mut e.listed);
    e
}

fn call() -> Value {
    json!({"name": "echo", "arguments": {"note": "n"}})
}

fn result() -> Value {
    json!({"content": [{"type": "text", "text": "t"}], "isError": false})
}

async fn run(
    entries: Vec<Entry>,
    fake: &Fake,
    phase: Phase,
    payload: &Value,
) -> Result<Option<Value>, Stop> {
    let ordered = chain::order(entries, "tools/call", phase);
    chain::run(&ordered, fake, "tools/call", phase, payload, &json!({})).await
}

#[tokio::test]
async fn a_request_runs_mutators_by_priority_then_name_then_validators() {
    let fake = Fake::new(vec![
        ("m-b", Does::Stamp("b")),
        ("m-a", Does::Stamp("a")),
        ("m-first", Does::Stamp("1")),
    ]);
    let entries = vec![
        entry(0, "v", Kind::Validation),
        entry(0, "m-b", Kind::Mutation),
        entry(1, "m-a", Kind::Mutation),
        with(entry(1, "m-first", Kind::Mutation), |l| {
            l.priority = (-5, 9)
        }),
    ];
    let out = run(entries, &fake, Phase::Request, &call()).await.unwrap();
    // ties on priority go by the server's place in the chain first, then by name
    assert_eq!(*fake.calls.lock().unwrap(), ["m-first", "m-b", "m-a", "v"]);
    assert_eq!(out.unwrap()["arguments"]["note"], "n1ba");
    // the validator saw the payload the mutators made
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen[3].1["payload"]["arguments"]["note"], "n1ba");
}

#[tokio::test]
async fn an_answer_runs_validators_then_mutators_with_the_response_priority() {
    let fake = Fake::new(vec![("m1", Does::Stamp("1")), ("m2", Does::Stamp("2"))]);
    let entries = vec![
        with(entry(0, "m1", Kind::Mutation), |l| l.priority = (-5, 9)),
        entry(0, "m2", Kind::Mutation),
        entry(0, "v", Kind::Validation),
    ];
    let out = run(entries, &fake, Phase::Response, &result())
        .await
        .unwrap();
    assert_eq!(*fake.calls.lock().unwrap(), ["v", "m2", "m1"]);
    assert_eq!(out.unwrap()["content"][0]["text"], "t21");
}

#[tokio::test]
async fn a_denial_stops_the_request_with_every_denying_validators_messages() {
    let fake = Fake::new(vec![
        ("no1", Does::Deny("first")),
        ("no2", Does::Deny("second")),
    ]);
    let entries = vec![
        entry(0, "no1", Kind::Validation),
        entry(0, "ok", Kind::Validation),
        entry(1, "no2", Kind::Validation),
    ];
    let stop = run(entries, &fake, Phase::Request, &call())
        .await
        .unwrap_err();
    let Stop::Denied(denials) = stop else {
        panic!("{stop:?}")
    };
    let names: Vec<&str> = denials.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["s0/no1", "s1/no2"]);
    assert_eq!(denials[1].1[0]["message"], "second");
}

#[tokio::test]
async fn a_denial_before_the_mutators_of_an_answer_stops_them_from_running() {
    let fake = Fake::new(vec![("no", Does::Deny("x"))]);
    let entries = vec![
        entry(0, "m", Kind::Mutation),
        entry(0, "no", Kind::Validation),
    ];
    assert!(run(entries, &fake, Phase::Response, &result())
        .await
        .is_err());
    assert_eq!(*fake.calls.lock().unwrap(), ["no"]);
}

#[tokio::test]
async fn audit_mode_records_a_denial_and_a_mutation_and_changes_nothing() {
    let fake = Fake::new(vec![("no", Does::Deny("x")), ("m", Does::Stamp("!"))]);
    let entries = vec![
        with(entry(0, "no", Kind::Validation), |l| l.audit = true),
        with(entry(0, "m", Kind::Mutation), |l| l.audit = true),
    ];
    let out = run(entries, &fake, Phase::Request, &call()).await.unwrap();
    assert_eq!(out, None);
    let verdicts = fake.verdicts();
    assert!(
        verdicts.contains(&("no".into(), "audit-deny".into())),
        "{verdicts:?}"
    );
    assert!(
        verdicts.contains(&("m".into(), "audit-mutated".into())),
        "{verdicts:?}"
    );
}

#[tokio::test]
async fn a_failure_stops_the_chain_unless_the_interceptor_is_fail_open() {
    let down = Does::Fail(Failure::Unreachable("refused".into()));
    let fake = Fake::new(vec![("closed", down.clone()), ("open", down)]);
    let closed = vec![entry(0, "closed", Kind::Validation)];
    let stop = run(closed, &fake, Phase::Request, &call())
        .await
        .unwrap_err();
    assert!(
        matches!(stop, Stop::Failed { ref interceptor, failure: Failure::Unreachable(_) } if interceptor == "s0/closed"),
        "{stop:?}"
    );
    let open = vec![with(entry(0, "open", Kind::Validation), |l| {
        l.fail_open = true
    })];
    assert_eq!(run(open, &fake, Phase::Request, &call()).await, Ok(None));
    assert!(fake
        .verdicts()
        .contains(&("open".into(), "unreachable-open".into())));
}

#[tokio::test]
async fn an_interceptor_past_its_timeout_is_a_timeout_failure() {
    let fake = Fake::new(vec![("slow", Does::Slow(Duration::from_secs(5)))]);
    let started = std::time::Instant::now();
    let stop = run(
        vec![entry(0, "slow", Kind::Validation)],
        &fake,
        Phase::Request,
        &call(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            stop,
            Stop::Failed {
                failure: Failure::Timeout,
                ..
            }
        ),
        "{stop:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn garbage_and_an_unknown_result_type_are_failures_never_a_pass() {
    for raw in [
        json!("yes"),
        json!({"type": "verdict", "ok": true}),
        json!({"type": "validation"}),
    ] {
        let fake = Fake::new(vec![("g", Does::Raw(raw.clone()))]);
        let stop = run(
            vec![entry(0, "g", Kind::Validation)],
            &fake,
            Phase::Request,
            &call(),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(
                stop,
                Stop::Failed {
                    failure: Failure::Garbage(_),
                    ..
                }
            ),
            "{raw}: {stop:?}"
        );
    }
    // a validator that answers a mutation does not get to change the payload
    let fake = Fake::new(vec![("v", Does::Answer(json!({"name": "echo"})))]);
    let stop = run(
        vec![entry(0, "v", Kind::Validation)],
        &fake,
        Phase::Request,
        &call(),
    )
    .await;
    assert!(matches!(stop, Err(Stop::Failed { .. })), "{stop:?}");
}

#[tokio::test]
async fn a_mutation_that_renames_the_authorized_tool_is_refused() {
    let fake = Fake::new(vec![(
        "m",
        Does::Answer(json!({"name": "delete_all", "arguments": {}})),
    )]);
    let stop = run(
        vec![entry(0, "m", Kind::Mutation)],
        &fake,
        Phase::Request,
        &call(),
    )
    .await
    .unwrap_err();
    let Stop::InvalidMutation { detail, .. } = stop else {
        panic!("{stop:?}")
    };
    assert!(detail.contains("`name`"), "{detail}");
}

#[tokio::test]
async fn a_mutation_that_is_no_result_of_the_event_is_refused_or_passed_by_when_fail_open() {
    for bad in [
        json!("text"),
        json!({"content": "not a list"}),
        json!({"content": [], "isError": "no"}),
        json!({"content": [], "cacheScope": "public"}),
    ] {
        let fake = Fake::new(vec![("m", Does::Answer(bad.clone()))]);
        let stop = run(
            vec![entry(0, "m", Kind::Mutation)],
            &fake,
            Phase::Response,
            &result(),
        )
        .await;
        assert!(
            matches!(stop, Err(Stop::InvalidMutation { .. })),
            "{bad}: {stop:?}"
        );
        let open = vec![with(entry(0, "m", Kind::Mutation), |l| l.fail_open = true)];
        assert_eq!(
            run(open, &fake, Phase::Response, &result()).await,
            Ok(None),
            "{bad}"
        );
    }
}

#[tokio::test]
async fn a_request_wrapped_as_method_and_params_is_unwrapped() {
    let wrapped =
        json!({"method": "tools/call", "params": {"name": "echo", "arguments": {"note": "x"}}});
    let fake = Fake::new(vec![("m", Does::Answer(wrapped))]);
    let out = run(
        vec![entry(0, "m", Kind::Mutation)],
        &fake,
        Phase::Request,
        &call(),
    )
    .await;
    assert_eq!(
        out,
        Ok(Some(json!({"name": "echo", "arguments": {"note": "x"}})))
    );
}

#[tokio::test]
async fn a_payload_over_the_servers_limit_is_not_sent_and_refused_when_fail_closed() {
    let fake = Fake::new(vec![]);
    let mut small = entry(0, "v", Kind::Validation);
    small.max_payload = 10;
    let stop = run(vec![small], &fake, Phase::Request, &call())
        .await
        .unwrap_err();
    assert!(matches!(stop, Stop::TooLarge { limit: 10, .. }), "{stop:?}");
    assert!(fake.calls.lock().unwrap().is_empty());
}

#[tokio::test]
async fn more_interceptors_than_one_call_may_run_are_refused_whole() {
    let fake = Fake::new(vec![]);
    let many = (0..=chain::MAX_PER_CALL)
        .map(|i| entry(0, &format!("v{i}"), Kind::Validation))
        .collect();
    let stop = run(many, &fake, Phase::Request, &call()).await.unwrap_err();
    assert_eq!(stop, Stop::TooMany(chain::MAX_PER_CALL + 1));
    assert!(fake.calls.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_interceptor_hooked_to_another_event_or_phase_does_not_run() {
    let fake = Fake::new(vec![("no", Does::Deny("x"))]);
    let req_only = with(entry(0, "no", Kind::Validation), |l| {
        l.hooks = vec![("tools/call".into(), Phase::Request)];
    });
    assert_eq!(
        run(vec![req_only.clone()], &fake, Phase::Response, &result()).await,
        Ok(None)
    );
    let other = chain::order(vec![req_only], "prompts/get", Phase::Request);
    assert!(other.is_empty());
    let star = with(entry(0, "no", Kind::Validation), |l| {
        l.hooks = vec![("*".into(), Phase::Request)];
    });
    assert_eq!(
        chain::order(vec![star], "prompts/get", Phase::Request).len(),
        1
    );
}
