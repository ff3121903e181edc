//! The chain: which interceptors run, in which order, and what their answers make of the
//! payload. Behind [`Invoker`] (how one invocation reaches its server), so the order, audit
//! mode, `failOpen` and the checks of a mutation are tested without a network
//! (`chain_tests.rs`, and the draft's conformance fixtures).
//!
//! Order (the draft's trust-boundary order): on a request, mutators, then validators; on an
//! answer, validators, then mutators; sinks with the validators. Mutators run one after
//! another, each on the payload the one before returned, by `priorityHint` ascending, ties by
//! the server's place in the route's chain, then by name. Validators (and sinks) run at once,
//! on the same payload; every one is waited for, and their denials answered together.

use super::check;
use super::client::Failure;
use super::types::Phase;
use super::wire::{self, Answer, Kind, Listed};
use serde_json::{json, Map, Value};
use std::time::{Duration, Instant};

/// The most interceptors one chain runs on one payload: a chain that hooks more is refused
/// (never run in part).
pub const MAX_PER_CALL: usize = 64;

/// One interceptor the chain runs.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The server's place in the route's chain.
    pub place: usize,
    /// The server's name.
    pub server: String,
    /// What it listed.
    pub listed: Listed,
    /// The server's `max-payload-bytes`.
    pub max_payload: usize,
    /// The server's `timeout-ms`, sent as `timeoutMs`.
    pub timeout: Duration,
    /// Its `config`, if the server's config gives one.
    pub config: Option<Value>,
}

impl Entry {
    /// `SERVER/NAME`, as metrics and records name it.
    pub fn label(&self) -> String {
        format!("{}/{}", self.server, self.listed.name)
    }
}

/// How one invocation reaches its server, and where its verdict is told.
#[async_trait::async_trait]
pub trait Invoker: Sync {
    /// Sends `interceptor/invoke` with `params`; its result.
    async fn invoke(&self, entry: &Entry, params: Map<String, Value>) -> Result<Value, Failure>;

    /// One interceptor's verdict (`result`: the metric's word), for metrics and the audit trail.
    fn verdict(&self, entry: &Entry, phase: Phase, result: &str, took: Duration, detail: &Value);
}

/// Why a chain stopped a payload.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// Validators denied it: each denying one's name and messages.
    Denied(Vec<(String, Vec<Value>)>),
    /// An interceptor that is neither fail-open nor in audit mode failed.
    Failed {
        /// `SERVER/NAME`, or the server's name when its list could not be had.
        interceptor: String,
        /// Why.
        failure: Failure,
    },
    /// A mutator returned a payload the event may not carry (and is not fail-open).
    InvalidMutation {
        /// `SERVER/NAME`.
        interceptor: String,
        /// Why, for a person.
        detail: String,
    },
    /// More interceptors hook the event than [`MAX_PER_CALL`].
    TooMany(usize),
    /// A payload larger than a (fail-closed) interceptor's server takes.
    TooLarge {
        /// `SERVER/NAME`.
        interceptor: String,
        /// Its server's `max-payload-bytes`.
        limit: usize,
    },
}

/// The interceptors of `entries` that hook `event` in `phase`, in the order they run.
pub fn order(mut entries: Vec<Entry>, event: &str, phase: Phase) -> Vec<Entry> {
    entries.retain(|e| e.listed.hooks(event, phase));
    let stage = |e: &Entry| {
        let mutator = e.listed.kind == Kind::Mutation;
        match phase {
            Phase::Request => !mutator,
            Phase::Response => mutator,
        }
    };
    entries.sort_by(|a, b| {
        (stage(a), a.listed.priority(phase), a.place, &a.listed.name).cmp(&(
            stage(b),
            b.listed.priority(phase),
            b.place,
            &b.listed.name,
        ))
    });
    entries
}

/// Runs the ordered `entries` on `payload`; the changed payload (`None`: unchanged), or why it
/// is stopped.
pub async fn run(
    entries: &[Entry],
    invoker: &dyn Invoker,
    event: &str,
    phase: Phase,
    payload: &Value,
    context: &Value,
) -> Result<Option<Value>, Stop> {
    if entries.len() > MAX_PER_CALL {
        return Err(Stop::TooMany(entries.len()));
    }
    let mut current: Option<Value> = None;
    let mut at = 0;
    while at < entries.len() {
        let mutator = entries[at].listed.kind == Kind::Mutation;
        let end = (at..entries.len())
            .find(|&i| (entries[i].listed.kind == Kind::Mutation) != mutator)
            .unwrap_or(entries.len());
        if mutator {
            for entry in &entries[at..end] {
                let seen = current.as_ref().unwrap_or(payload);
                if let Some(changed) = mutate(entry, invoker, event, phase, seen, context).await? {
                    current = Some(changed);
                }
            }
        } else {
            let seen = current.as_ref().unwrap_or(payload);
            validate(&entries[at..end], invoker, event, phase, seen, context).await?;
        }
        at = end;
    }
    Ok(current)
}

/// What one invocation came to, before `failOpen` and audit mode are applied.
enum Came {
    Answer(Answer),
    Failed(Failure),
    TooLarge,
}

async fn invoke(
    entry: &Entry,
    invoker: &dyn Invoker,
    event: &str,
    phase: Phase,
    payload: &Value,
    context: &Value,
) -> Came {
    let size = serde_json::to_vec(payload)
        .map(|b| b.len())
        .unwrap_or(usize::MAX);
    if size > entry.max_payload {
        return Came::TooLarge;
    }
    let mut params = Map::new();
    params.insert("name".into(), json!(entry.listed.name));
    params.insert("event".into(), json!(event));
    params.insert("phase".into(), json!(phase.as_str()));
    params.insert("payload".into(), payload.clone());
    if let Some(config) = &entry.config {
        params.insert("config".into(), config.clone());
    }
    params.insert("timeoutMs".into(), json!(entry.timeout.as_millis() as u64));
    params.insert("context".into(), context.clone());
    match invoker.invoke(entry, params).await {
        Ok(result) => match wire::answer(&result) {
            Ok(answer) => Came::Answer(answer),
            Err(why) => Came::Failed(Failure::Garbage(why)),
        },
        Err(failure) => Came::Failed(failure),
    }
}

/// A failure of `entry`: passed by (`Ok`) when it is fail-open or in audit mode, else the
/// chain stops.
fn failed(
    entry: &Entry,
    invoker: &dyn Invoker,
    phase: Phase,
    stop: Stop,
    result: &str,
    took: Duration,
) -> Result<(), Stop> {
    let open = entry.listed.fail_open || entry.listed.audit;
    let word = if open {
        format!("{result}-open")
    } else {
        result.to_owned()
    };
    let detail = match &stop {
        Stop::Failed { failure, .. } => {
            json!({"reason": failure.reason(), "detail": failure.detail()})
        }
        Stop::InvalidMutation { detail, .. } => {
            json!({"reason": "invalid-mutation", "detail": detail})
        }
        Stop::TooLarge { limit, .. } => json!({"reason": "payload-too-large", "limit": limit}),
        _ => Value::Null,
    };
    invoker.verdict(entry, phase, &word, took, &detail);
    match open {
        true => Ok(()),
        false => Err(stop),
    }
}

/// Runs one mutator on `payload`: the payload it changed it to (`None`: unchanged, or audit
/// mode, or passed by).
async fn mutate(
    entry: &Entry,
    invoker: &dyn Invoker,
    event: &str,
    phase: Phase,
    payload: &Value,
    context: &Value,
) -> Result<Option<Value>, Stop> {
    let start = Instant::now();
    let came = invoke(entry, invoker, event, phase, payload, context).await;
    let took = start.elapsed();
    let label = entry.label();
    let (modified, changed) = match came {
        Came::Answer(Answer::Mutation {
            modified,
            payload: changed,
        }) => (modified, changed),
        Came::Answer(_) => {
            let failure = Failure::Garbage("a mutator answered a result of another type".into());
            let stop = Stop::Failed {
                interceptor: label,
                failure,
            };
            return failed(entry, invoker, phase, stop, "garbage", took).map(|()| None);
        }
        Came::Failed(failure) => {
            let result = failure.reason();
            let stop = Stop::Failed {
                interceptor: label,
                failure,
            };
            return failed(entry, invoker, phase, stop, result, took).map(|()| None);
        }
        Came::TooLarge => {
            let stop = Stop::TooLarge {
                interceptor: label,
                limit: entry.max_payload,
            };
            return failed(entry, invoker, phase, stop, "payload-too-large", took).map(|()| None);
        }
    };
    if !modified {
        invoker.verdict(entry, phase, "unchanged", took, &Value::Null);
        return Ok(None);
    }
    let changed = check::unwrapped(event, phase, changed);
    if let Err(detail) = check::mutation(event, phase, payload, &changed) {
        let stop = Stop::InvalidMutation {
            interceptor: label,
            detail,
        };
        return failed(entry, invoker, phase, stop, "invalid-mutation", took).map(|()| None);
    }
    if entry.listed.audit {
        invoker.verdict(entry, phase, "audit-mutated", took, &Value::Null);
        return Ok(None);
    }
    invoker.verdict(entry, phase, "mutated", took, &Value::Null);
    Ok(Some(changed))
}

/// Runs validators and sinks at once on `payload`; every denial of an active one, together.
async fn validate(
    entries: &[Entry],
    invoker: &dyn Invoker,
    event: &str,
    phase: Phase,
    payload: &Value,
    context: &Value,
) -> Result<(), Stop> {
    let runs = entries.iter().map(|entry| async move {
        let start = Instant::now();
        let came = invoke(entry, invoker, event, phase, payload, context).await;
        (came, start.elapsed())
    });
    let outcomes = futures_util::future::join_all(runs).await;
    let mut denials = Vec::new();
    let mut first_failure = None;
    for (entry, (came, took)) in entries.iter().zip(outcomes) {
        let label = entry.label();
        let stopped = match (came, entry.listed.kind) {
            (Came::Answer(Answer::Validation { denies, messages }), Kind::Validation) => {
                let word = match (denies, entry.listed.audit) {
                    (false, _) => "pass",
                    (true, true) => "audit-deny",
                    (true, false) => "deny",
                };
                invoker.verdict(entry, phase, word, took, &json!({"messages": messages}));
                if denies && !entry.listed.audit {
                    denials.push((label, messages));
                }
                Ok(())
            }
            (Came::Answer(Answer::Sink), Kind::Sink) => {
                invoker.verdict(entry, phase, "recorded", took, &Value::Null);
                Ok(())
            }
            (Came::Answer(_), _) => {
                let failure = Failure::Garbage(format!(
                    "a {} answered a result of another type",
                    entry.listed.kind.as_str()
                ));
                let stop = Stop::Failed {
                    interceptor: label,
                    failure,
                };
                failed(entry, invoker, phase, stop, "garbage", took)
            }
            (Came::Failed(failure), _) => {
                let result = failure.reason();
                let stop = Stop::Failed {
                    interceptor: label,
                    failure,
                };
                failed(entry, invoker, phase, stop, result, took)
            }
            (Came::TooLarge, _) => {
                let stop = Stop::TooLarge {
                    interceptor: label,
                    limit: entry.max_payload,
                };
                failed(entry, invoker, phase, stop, "payload-too-large", took)
            }
        };
        if let Err(stop) = stopped {
            first_failure.get_or_insert(stop);
        }
    }
    if !denials.is_empty() {
        return Err(Stop::Denied(denials));
    }
    first_failure.map_or(Ok(()), Err)
}
