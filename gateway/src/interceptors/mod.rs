//! Interceptors (SEP-2624, draft): interceptor servers, MCP servers that offer
//! `interceptors/list` and `interceptor/invoke`, run as a chain on a route's requests and
//! answers. Validators allow or deny, mutators return a changed payload; each hooks events
//! (`tools/call`, `resources/read`, lists, ...) in a `request` or `response` phase.
//!
//! What the paths see (`forward/`, the handlers, virtual servers): a route's [`Chain`], whether
//! it [`Interceptors::hooks`] an event in a phase, and [`Interceptors::run`], which runs the
//! chain on a payload and says what became of it. The payload handed in is the request's
//! `params` (request phase) or the answer's `result` (response phase); how it is put on the
//! wire to an interceptor server, the servers' lists and their freshness, the chain's order,
//! timeouts, `failOpen` and `audit` mode are this module's: the servers' lists (`server.rs`),
//! the requests to them (`client.rs`), the draft's shapes (`wire.rs`), the order and the run
//! (`chain.rs`), what a mutation may change (`check.rs`), the errors (`errors.rs`), the
//! metrics (`metrics.rs`) and the verdicts' record (`record.rs`). docs/governance.md says it
//! for an operator.

// The paths call into it as they are wired, commit by commit; until then parts are unused.
#![allow(dead_code)]

pub mod chain;
pub mod check;
pub mod client;
mod errors;
pub mod metrics;
mod record;
pub mod server;
pub mod types;
pub mod wire;

pub use types::{Chain, Context, Phase, Verdict};

#[cfg(test)]
mod chain_tests;
#[cfg(test)]
mod client_tests;
#[cfg(test)]
mod conformance_tests;

use crate::error::GatewayError;
use crate::upstream::client::UpstreamClient;
use chain::{Entry, Invoker, Stop};
use client::Failure;
use metrics::InterceptorMetrics;
use serde_json::{json, Map, Value};
use server::Server;
use std::sync::Arc;
use std::time::Duration;

/// What every snapshot shares: the HTTP client (its pooled connections) and the families.
struct Shared {
    http: Arc<UpstreamClient>,
    metrics: InterceptorMetrics,
    audit: crate::audit::Audit,
}

/// The interceptor servers of one config snapshot and what they said they offer.
pub struct Interceptors {
    servers: Vec<Arc<Server>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Interceptors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self
            .servers
            .iter()
            .map(|s| s.config.name.as_str())
            .collect();
        f.debug_struct("Interceptors")
            .field("servers", &names)
            .finish()
    }
}

impl Default for Interceptors {
    fn default() -> Self {
        Interceptors {
            servers: Vec::new(),
            shared: Arc::new(Shared {
                http: Arc::default(),
                metrics: InterceptorMetrics::unregistered(),
                audit: crate::audit::Audit::default(),
            }),
        }
    }
}

impl Interceptors {
    /// The interceptor servers of `config`.
    pub fn new(config: &crate::config::Config) -> Interceptors {
        Interceptors {
            servers: (config.interceptors.iter())
                .map(|c| Arc::new(Server::new(c)))
                .collect(),
            ..Interceptors::default()
        }
    }

    /// These servers, counted into `metrics` (the registered families) and their verdicts
    /// recorded into `audit` (the process's one trail): `server.rs`, once at start.
    pub fn measured(self, metrics: InterceptorMetrics, audit: crate::audit::Audit) -> Interceptors {
        Interceptors {
            shared: Arc::new(Shared {
                http: self.shared.http.clone(),
                metrics,
                audit,
            }),
            ..self
        }
    }

    /// These servers after a reload from `previous`: its client and families, and each server
    /// whose config is unchanged with its list (and legacy session) as fetched.
    pub fn carry_over(self, previous: &Interceptors) -> Interceptors {
        let servers = (self.servers.into_iter())
            .map(|s| {
                (previous.servers.iter())
                    .find(|p| p.config == s.config)
                    .cloned()
                    .unwrap_or(s)
            })
            .collect();
        Interceptors {
            servers,
            shared: previous.shared.clone(),
        }
    }

    /// Whether `chain` may hook `event` in `phase` (before a server's list is known: yes).
    pub fn hooks(&self, chain: &Chain, event: &str, phase: Phase) -> bool {
        chain
            .servers
            .iter()
            .any(|&i| match self.servers.get(i).and_then(|s| s.known()) {
                Some(listing) => listing.items.iter().any(|l| l.hooks(event, phase)),
                None => true,
            })
    }

    /// Runs `chain` on `payload` of `event` in `phase`. `Err`: a denial, or a failure of an
    /// interceptor that is not fail-open, as the JSON-RPC error to answer.
    pub async fn run(
        &self,
        chain: &Chain,
        event: &str,
        phase: Phase,
        payload: &Value,
        cx: &Context,
    ) -> Result<Verdict, GatewayError> {
        let entries = self.entries(chain, event, phase, cx).await?;
        if entries.is_empty() {
            return Ok(Verdict::Pass);
        }
        let live = Live {
            interceptors: self,
            event,
            cx,
        };
        let context = context(cx);
        match chain::run(&entries, &live, event, phase, payload, &context).await {
            Ok(None) => Ok(Verdict::Pass),
            Ok(Some(changed)) => Ok(Verdict::Changed(changed)),
            Err(stop) => Err(errors::answer(stop, event, phase)),
        }
    }

    /// The interceptors of `chain` that hook `event` in `phase`, in the order they run; a
    /// server whose list cannot be had stops the chain (its interceptors, and whether they are
    /// fail-open, are unknown).
    async fn entries(
        &self,
        chain: &Chain,
        event: &str,
        phase: Phase,
        cx: &Context,
    ) -> Result<Vec<Entry>, GatewayError> {
        let mut entries = Vec::new();
        for (place, &index) in chain.servers.iter().enumerate() {
            let Some(server) = self.servers.get(index) else {
                continue;
            };
            let listing = match server
                .listing(&self.shared.http, &self.shared.metrics)
                .await
            {
                Ok(listing) => listing,
                Err(failure) => {
                    let audit = &self.shared.audit;
                    record::unlisted(audit, &server.config.name, event, phase, &failure, cx);
                    let interceptor = server.config.name.clone();
                    let stop = Stop::Failed {
                        interceptor,
                        failure,
                    };
                    return Err(errors::answer(stop, event, phase));
                }
            };
            for listed in listing.items.iter().filter(|l| l.hooks(event, phase)) {
                entries.push(Entry {
                    place,
                    server: server.config.name.clone(),
                    listed: listed.clone(),
                    max_payload: server.config.max_payload_bytes,
                    timeout: server.config.timeout,
                    config: server.config.config.get(&listed.name).cloned(),
                });
            }
        }
        Ok(chain::order(entries, event, phase))
    }

    fn server(&self, name: &str) -> Option<&Arc<Server>> {
        self.servers.iter().find(|s| s.config.name == name)
    }
}

/// The invoker of a live chain: each invocation to its server, each verdict counted and
/// recorded.
struct Live<'a> {
    interceptors: &'a Interceptors,
    event: &'a str,
    cx: &'a Context,
}

#[async_trait::async_trait]
impl Invoker for Live<'_> {
    async fn invoke(&self, entry: &Entry, params: Map<String, Value>) -> Result<Value, Failure> {
        let server = (self.interceptors.server(&entry.server))
            .ok_or_else(|| Failure::Unreachable("its server left the config".into()))?;
        let shared = &self.interceptors.shared;
        (server.endpoint)
            .call(
                &shared.http,
                &shared.metrics.tokens,
                "interceptor/invoke",
                params,
            )
            .await
    }

    fn verdict(&self, entry: &Entry, phase: Phase, result: &str, took: Duration, detail: &Value) {
        let label = entry.label();
        (self.interceptors.shared.metrics).invoked(&label, phase.as_str(), result, took);
        const SAID: [&str; 7] = [
            "pass",
            "deny",
            "mutated",
            "unchanged",
            "recorded",
            "audit-deny",
            "audit-mutated",
        ];
        if !SAID.contains(&result) {
            tracing::warn!(interceptor = %label, event = self.event, phase = phase.as_str(), result, %detail, "an interceptor failed");
        }
        let audit = &self.interceptors.shared.audit;
        let said = record::Said {
            interceptor: &label,
            result,
            took,
            detail,
        };
        record::verdict(audit, said, self.event, phase, self.cx);
    }
}

/// The draft's `context` of an invocation: the principal (its type, id and claims: never a
/// credential), the trace and session ids, the time.
fn context(cx: &Context) -> Value {
    let principal = match &cx.principal {
        Some(p) => json!({
            "type": if p.id.starts_with("key:") { "service" } else { "user" },
            "id": &*p.id,
            "claims": &p.claims,
        }),
        None => json!({"type": "anonymous"}),
    };
    let mut context = json!({
        "principal": principal,
        "timestamp": chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now())
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    });
    if let Some(o) = context.as_object_mut() {
        if !cx.trace_id.is_empty() {
            o.insert("traceId".into(), json!(cx.trace_id));
        }
        if let Some(session) = &cx.session {
            o.insert("sessionId".into(), json!(session));
        }
    }
    context
}
