//! One audit record: a builder the events' owners fill in, and its JSON line. Pure: no I/O.
//!
//! Nothing here takes a credential: the caller is read from an authenticated
//! [`Principal`](crate::auth::Principal) (its subject, stable id, `client_id` and the
//! subjects of its `act` chain, never its other claims), a session id is hashed
//! ([`crate::session_hash::hash_session`]), and bodies are added only redacted.

use crate::auth::Principal;
use serde::Serialize;
use serde_json::Value;
use std::time::{Duration, SystemTime};

/// Deepest `act` chain recorded (a token exchanged more often is cut there, marked `…`).
const MAX_ACT: usize = 8;
/// Longest string field recorded, in bytes (a longer one is cut, marked `…`).
const MAX_FIELD: usize = 512;

/// One audit record, built with its setters and handed to [`super::Audit::record`].
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    /// When it happened (RFC 3339 UTC, milliseconds), set by [`Record::new`].
    #[serde(serialize_with = "rfc3339")]
    time: SystemTime,
    /// What happened: `call`, `authz`, `session.opened`, `admin.drain`, ...
    event: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    route: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    member: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    backend: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    caller: Option<Caller>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    otel_trace_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    from_backend: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    to_backend: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<Value>,
}

/// Who called: what an authenticated principal says of itself, no credential.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Caller {
    /// The principal's stable id: `issuer|subject` for a token, `key:NAME` for an API key.
    pub id: String,
    /// The token's `sub`, or the key's name.
    pub subject: String,
    /// The token's `client_id` (else `azp`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The subjects of a token exchange's `act` chain, the current actor first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub act: Vec<String>,
}

impl Caller {
    /// What `principal` says of itself.
    pub fn of(principal: &Principal) -> Caller {
        let text = |v: &Value| v.as_str().map(cut);
        let client_id = principal
            .claims
            .get("client_id")
            .or_else(|| principal.claims.get("azp"))
            .and_then(text);
        let mut act = Vec::new();
        let mut next = principal.claims.get("act");
        while let Some(actor) = next {
            if act.len() == MAX_ACT {
                act.push("…".to_owned());
                break;
            }
            act.push(actor.get("sub").and_then(text).unwrap_or_default());
            next = actor.get("act");
        }
        Caller {
            id: cut(&principal.id),
            subject: cut(&principal.subject),
            client_id,
            act,
        }
    }
}

/// `s`, cut to [`MAX_FIELD`] bytes on a character boundary.
fn cut(s: &str) -> String {
    if s.len() <= MAX_FIELD {
        return s.to_owned();
    }
    let mut end = MAX_FIELD;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

fn rfc3339<S: serde::Serializer>(at: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    let at = chrono::DateTime::<chrono::Utc>::from(*at);
    s.serialize_str(&at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

impl Record {
    /// A record of `event`, now.
    pub fn new(event: &'static str) -> Record {
        Record {
            time: SystemTime::now(),
            event,
            route: None,
            member: None,
            pool: None,
            backend: None,
            caller: None,
            session: None,
            method: None,
            name: None,
            decision: None,
            rule: None,
            reason: None,
            outcome: None,
            code: None,
            status: None,
            latency_ms: None,
            trace_id: None,
            otel_trace_id: None,
            from_backend: None,
            to_backend: None,
            arguments: None,
            result: None,
            detail: None,
        }
    }

    /// The event's name.
    pub fn event(&self) -> &'static str {
        self.event
    }

    /// When it happened.
    pub fn time(&self) -> SystemTime {
        self.time
    }

    /// When it happened (default: when the record was made).
    pub fn at(mut self, time: SystemTime) -> Record {
        self.time = time;
        self
    }

    /// The route (its label: the configured path).
    pub fn route(mut self, route: &str) -> Record {
        self.route = Some(cut(route));
        self
    }

    /// A virtual route's member.
    pub fn member(mut self, member: &str) -> Record {
        self.member = Some(cut(member));
        self
    }

    /// The pool.
    pub fn pool(mut self, pool: &str) -> Record {
        self.pool = Some(cut(pool));
        self
    }

    /// The backend (its label, `IP:PORT`).
    pub fn backend(mut self, backend: &str) -> Record {
        self.backend = Some(cut(backend));
        self
    }

    /// The caller, from an authenticated principal (no credential is read).
    pub fn principal(mut self, principal: Option<&Principal>) -> Record {
        self.caller = principal.map(Caller::of);
        self
    }

    /// The caller by a principal's stable id only (`issuer|subject` or `key:NAME`), as a
    /// session record keeps it: the subject is what follows the last `|` (or `key:`).
    pub fn principal_id(mut self, id: Option<&str>) -> Record {
        self.caller = id.map(|id| {
            let subject = id
                .rsplit_once('|')
                .map(|(_, s)| s)
                .or_else(|| id.strip_prefix("key:"))
                .unwrap_or(id);
            Caller {
                id: cut(id),
                subject: cut(subject),
                client_id: None,
                act: Vec::new(),
            }
        });
        self
    }

    /// The gateway session, by its id: recorded hashed, as logs carry it.
    pub fn session(mut self, id: Option<&str>) -> Record {
        self.session = id.map(crate::session_hash::hash_session);
        self
    }

    /// The gateway session, already hashed (`session_hash::hash_session`), as an interceptor's
    /// context carries it.
    pub fn session_hashed(mut self, hashed: Option<&str>) -> Record {
        self.session = hashed.map(cut);
        self
    }

    /// The JSON-RPC method.
    pub fn method(mut self, method: &str) -> Record {
        self.method = Some(cut(method));
        self
    }

    /// The tool or prompt name, or the resource URI.
    pub fn name(mut self, name: &str) -> Record {
        self.name = Some(cut(name));
        self
    }

    /// The decision: `allow` or `deny`.
    pub fn decision(mut self, decision: &'static str) -> Record {
        self.decision = Some(decision);
        self
    }

    /// The rule that decided (e.g. `routes[0].authz[2]: tools: [delete_*]`).
    pub fn rule(mut self, rule: &str) -> Record {
        self.rule = Some(cut(rule));
        self
    }

    /// Why (a session's move: `backend-down`; a deny without a rule: `no rule allows`).
    pub fn reason(mut self, reason: &str) -> Record {
        self.reason = Some(cut(reason));
        self
    }

    /// The outcome label (`ok`, `tool-error`, `rpc-error`, an error kind, `4xx`, ...).
    pub fn outcome(mut self, outcome: &str) -> Record {
        self.outcome = Some(cut(outcome));
        self
    }

    /// The JSON-RPC error code the answer carried.
    pub fn outcome_code(mut self, code: i64) -> Record {
        self.code = Some(code);
        self
    }

    /// The HTTP status of the answer.
    pub fn status(mut self, status: u16) -> Record {
        self.status = Some(status);
        self
    }

    /// How long it took.
    pub fn latency(mut self, took: Duration) -> Record {
        self.latency_ms = Some((took.as_secs_f64() * 1_000_000.0).round() / 1000.0);
        self
    }

    /// The request's trace id (`X-Request-Id`, also the span's).
    pub fn trace_id(mut self, id: &str) -> Record {
        if !id.is_empty() {
            self.trace_id = Some(cut(id));
        }
        self
    }

    /// The W3C trace id of the request's span (traces on): 32 hex digits.
    pub fn otel_trace_id(mut self, id: String) -> Record {
        self.otel_trace_id = Some(id);
        self
    }

    /// The span's trace id, when set.
    pub fn otel_trace(&self) -> Option<&str> {
        self.otel_trace_id.as_deref()
    }

    /// A session's move: the backend it left and the one it went to.
    pub fn moved(mut self, from: Option<&str>, to: Option<&str>) -> Record {
        self.from_backend = from.map(cut);
        self.to_backend = to.map(cut);
        self
    }

    /// A call's arguments, already redacted by the caller (see [`super::Audit::bodies`]).
    pub fn arguments(mut self, arguments: Value) -> Record {
        self.arguments = Some(arguments);
        self
    }

    /// A call's result, already redacted by the caller.
    pub fn result(mut self, result: Value) -> Record {
        self.result = Some(result);
        self
    }

    /// Anything else the event's owner says (no credential: the owner's promise).
    pub fn detail(mut self, detail: Value) -> Record {
        self.detail = Some(detail);
        self
    }

    /// The record as one JSON line, with its newline.
    pub fn line(&self) -> String {
        let mut text = serde_json::to_string(self).unwrap_or_else(|e| {
            format!(
                "{{\"event\":\"{}\",\"error\":\"unserializable: {e}\"}}",
                self.event
            )
        });
        text.push('\n');
        text
    }
}
