//! The draft's wire shapes, read from what an interceptor server answers: an
//! `interceptors/list` entry ([`Listed`]) and an `interceptor/invoke` result ([`Answer`]).
//! Pure: no I/O. Unknown fields are ignored; a shape the gateway cannot trust is an error (an
//! unknown result `type` is never read as success).

use super::types::Phase;
use serde_json::{Map, Value};

/// What an interceptor is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `validation`: allows or denies.
    Validation,
    /// `mutation`: returns the payload, maybe changed.
    Mutation,
    /// `sink` (the draft's amendment): observes only, never blocks.
    Sink,
}

impl Kind {
    /// The draft's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Validation => "validation",
            Kind::Mutation => "mutation",
            Kind::Sink => "sink",
        }
    }
}

/// One interceptor as its server lists it (`InterceptorInfo`), the parts the chain reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// `name`.
    pub name: String,
    /// `type`.
    pub kind: Kind,
    /// `hooks` (each `{events, phase}`; the draft's older `hook` with `phase: both` too):
    /// the (event, phase) pairs it hooks; the event `*` matches every event.
    pub hooks: Vec<(String, Phase)>,
    /// `mode: audit`: records, never blocks or changes. Default `active`.
    pub audit: bool,
    /// `failOpen`. Default false.
    pub fail_open: bool,
    /// `priorityHint` per phase (request, response). Default 0.
    pub priority: (i64, i64),
}

impl Listed {
    /// Whether it hooks `event` in `phase`.
    pub fn hooks(&self, event: &str, phase: Phase) -> bool {
        (self.hooks.iter()).any(|(e, p)| *p == phase && (e == event || e == "*"))
    }

    /// Its priority in `phase`.
    pub fn priority(&self, phase: Phase) -> i64 {
        match phase {
            Phase::Request => self.priority.0,
            Phase::Response => self.priority.1,
        }
    }
}

/// Reads one `interceptors/list` entry; `Err` says why it is left out.
pub fn listed(v: &Value) -> Result<Listed, String> {
    let o = v.as_object().ok_or("an entry that is not an object")?;
    let name = (o.get("name").and_then(Value::as_str))
        .filter(|n| !n.is_empty())
        .ok_or("an entry without a name")?;
    let kind = match o.get("type").and_then(Value::as_str) {
        Some("validation") => Kind::Validation,
        Some("mutation") => Kind::Mutation,
        Some("sink") => Kind::Sink,
        other => return Err(format!("`{name}`: unknown type {other:?}")),
    };
    let hooks = hooks_of(o).ok_or_else(|| format!("`{name}`: no readable hooks"))?;
    let audit = match o.get("mode").and_then(Value::as_str) {
        None | Some("active") | Some("enforce") => false,
        Some("audit") => true,
        Some(other) => return Err(format!("`{name}`: unknown mode `{other}`")),
    };
    let fail_open = o.get("failOpen").and_then(Value::as_bool).unwrap_or(false);
    let priority = match o.get("priorityHint") {
        None | Some(Value::Null) => (0, 0),
        Some(Value::Number(n)) => {
            let p = n
                .as_i64()
                .ok_or_else(|| format!("`{name}`: a priorityHint that is no integer"))?;
            (p, p)
        }
        Some(Value::Object(per)) => {
            let at = |k: &str| per.get(k).and_then(Value::as_i64).unwrap_or(0);
            (at("request"), at("response"))
        }
        Some(_) => return Err(format!("`{name}`: an unreadable priorityHint")),
    };
    Ok(Listed {
        name: name.to_owned(),
        kind,
        hooks,
        audit,
        fail_open,
        priority,
    })
}

/// The (event, phase) pairs of `hooks: [{events, phase}]`, or of the older `hook: {events,
/// phase}` (`phase: both` meaning both); `None` when neither is readable.
fn hooks_of(o: &Map<String, Value>) -> Option<Vec<(String, Phase)>> {
    let entries: Vec<&Value> = match (o.get("hooks"), o.get("hook")) {
        (Some(Value::Array(list)), _) => list.iter().collect(),
        (None, Some(one @ Value::Object(_))) => vec![one],
        _ => return None,
    };
    let mut pairs = Vec::new();
    for entry in entries {
        let events = entry.get("events")?.as_array()?;
        let phases: &[Phase] = match entry.get("phase")?.as_str()? {
            "request" => &[Phase::Request],
            "response" => &[Phase::Response],
            "both" => &[Phase::Request, Phase::Response],
            _ => return None,
        };
        for event in events {
            for phase in phases {
                pairs.push((event.as_str()?.to_owned(), *phase));
            }
        }
    }
    Some(pairs)
}

/// What one `interceptor/invoke` answered, as the chain reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A validation result.
    Validation {
        /// Whether it blocks: `valid: false` with severity `error` (or, without a severity,
        /// an error message or none at all: an invalid result without one fails secure).
        denies: bool,
        /// Its `messages` (each `{message, severity, path?}`), as sent, at most 16.
        messages: Vec<Value>,
    },
    /// A mutation result.
    Mutation {
        /// `modified`.
        modified: bool,
        /// `payload`.
        payload: Value,
    },
    /// A sink result: observed.
    Sink,
}

/// The most validation messages carried into an error's `data`.
pub const MAX_MESSAGES: usize = 16;

/// Reads an `interceptor/invoke` result; `Err`: garbage (not an object, an unknown `type`, the
/// fields its type needs missing).
pub fn answer(v: &Value) -> Result<Answer, String> {
    let o = v.as_object().ok_or("a result that is not an object")?;
    match o.get("type").and_then(Value::as_str) {
        Some("validation") => {
            let valid = (o.get("valid").and_then(Value::as_bool))
                .ok_or("a validation result without `valid`")?;
            let messages: Vec<Value> = match o.get("messages") {
                Some(Value::Array(list)) => list.iter().take(MAX_MESSAGES).cloned().collect(),
                _ => Vec::new(),
            };
            Ok(Answer::Validation {
                denies: !valid && blocking(o, &messages),
                messages,
            })
        }
        Some("mutation") => Ok(Answer::Mutation {
            modified: (o.get("modified").and_then(Value::as_bool))
                .ok_or("a mutation result without `modified`")?,
            payload: o.get("payload").cloned().unwrap_or(Value::Null),
        }),
        Some("sink") => Ok(Answer::Sink),
        Some(other) => Err(format!("a result of unknown type `{other}`")),
        None => Err("a result without a type".to_owned()),
    }
}

/// Whether an invalid result blocks: severity `error` does, `info` and `warn` do not; without a
/// severity, a message that is not `info` or `warn`, or no message at all. An unknown severity
/// blocks (fails secure), as the draft's SDK reads an invalid result without one.
fn blocking(o: &Map<String, Value>, messages: &[Value]) -> bool {
    let soft = |s: Option<&Value>| matches!(s.and_then(Value::as_str), Some("info" | "warn"));
    if let Some(severity) = o.get("severity") {
        return !soft(Some(severity));
    }
    if messages.is_empty() {
        return true;
    }
    (messages.iter()).any(|m| !soft(m.get("severity")))
}
