//! Request spans: started from the client's headers, finished with MCP attributes, child
//! spans and events for what happens inside (a re-initialization), and the W3C headers
//! injected into upstream requests.

use super::tracer::{enabled, tracer};
use opentelemetry::context::FutureExt;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use pingora::http::RequestHeader;
use std::future::Future;

struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

struct Upstream<'a>(&'a mut RequestHeader);

impl Injector for Upstream<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let Ok(name) = http::HeaderName::from_bytes(key.as_bytes()) {
            let _ = self.0.insert_header(name, value);
        }
    }
}

/// The span of a request arriving with `req`, as the current context of its handling; the
/// client's `traceparent`/`tracestate` are its parent. `None` when traces are off.
pub fn start(req: &RequestHeader) -> Option<Context> {
    let tracer = tracer()?;
    let parent = TraceContextPropagator::new().extract(&Headers(&req.headers));
    let span = tracer
        .span_builder("mcp.request")
        .with_kind(SpanKind::Server)
        .with_attributes([
            KeyValue::new("http.request.method", req.method.as_str().to_owned()),
            KeyValue::new("url.path", req.uri.path().to_owned()),
        ])
        .start_with_context(tracer, &parent);
    Some(parent.with_span(span))
}

/// Writes `cx`'s `traceparent` (and `tracestate`) into an upstream request, replacing the
/// client's: the backend's spans become children of the gateway's.
pub fn inject(cx: &Context, req: &mut RequestHeader) {
    if cx.span().span_context().is_valid() {
        TraceContextPropagator::new().inject_context(cx, &mut Upstream(req));
    }
}

/// [`inject`] with the current context (inside a request handled by the gateway itself, or a
/// re-initialization's child span). Nothing when traces are off.
pub fn inject_current(req: &mut RequestHeader) {
    if enabled() {
        inject(&Context::current(), req);
    }
}

/// Adds an event to the current request's span.
pub fn event(name: &'static str, attributes: Vec<KeyValue>) {
    if enabled() {
        Context::current().span().add_event(name, attributes);
    }
}

/// Runs `fut` in a child span of the current one, named `name`; `outcome` labels the result
/// (`mcp_gateway.outcome`, an error status unless it is "ok").
pub async fn child<T, F: Future<Output = T>>(
    name: &'static str,
    attributes: Vec<KeyValue>,
    fut: F,
    outcome: impl FnOnce(&T) -> &'static str,
) -> T {
    let Some(tracer) = tracer() else {
        return fut.await;
    };
    let parent = Context::current();
    let span = tracer
        .span_builder(name)
        .with_kind(SpanKind::Client)
        .with_attributes(attributes)
        .start_with_context(tracer, &parent);
    let cx = parent.with_span(span);
    let out = fut.with_context(cx.clone()).await;
    let label = outcome(&out);
    let span = cx.span();
    span.set_attribute(KeyValue::new("mcp_gateway.outcome", label));
    if label != "ok" {
        span.set_status(Status::error(label));
    }
    span.end();
    out
}

/// How a request ended, for its span.
#[derive(Debug, Default)]
pub struct Finished<'a> {
    /// The MCP method (`mcp.method.name`).
    pub method: Option<&'a str>,
    /// The tool, prompt or resource (`gen_ai.tool.name`, `gen_ai.prompt.name`, `mcp.resource.uri`).
    pub name: Option<&'a str>,
    /// The route's label (`mcp_gateway.route`).
    pub route: Option<&'a str>,
    /// The pool (`mcp_gateway.pool`).
    pub pool: Option<&'a str>,
    /// The backend, ip:port (`server.address`).
    pub backend: Option<&'a str>,
    /// The session id (recorded hashed: `mcp.session.id`).
    pub session: Option<&'a str>,
    /// `MCP-Protocol-Version` (`mcp.protocol.version`).
    pub protocol_version: Option<&'a str>,
    /// HTTP status written (`http.response.status_code`).
    pub status: Option<u16>,
    /// The outcome label, as in metrics (`mcp_gateway.outcome`).
    pub outcome: &'a str,
    /// How the response cache answered (`mcp_gateway.cache`: `hit`, `miss`, `bypass`), when it
    /// saw the request.
    pub cache: Option<&'a str>,
}

/// Sets the request span's attributes and ends it. The span is named "METHOD NAME" (as
/// OpenTelemetry's MCP conventions do), or "mcp.request" for what carries no method.
pub fn finish(cx: &Context, done: &Finished<'_>) {
    let span = cx.span();
    if let Some(method) = done.method {
        let name = match done.name {
            Some(n) => format!("{method} {n}"),
            None => method.to_owned(),
        };
        span.update_name(name);
        span.set_attribute(KeyValue::new("mcp.method.name", method.to_owned()));
        if let Some(n) = done.name {
            let key = match method {
                "tools/call" => "gen_ai.tool.name",
                "prompts/get" => "gen_ai.prompt.name",
                _ => "mcp.resource.uri",
            };
            span.set_attribute(KeyValue::new(key, n.to_owned()));
        }
    }
    let text = |key: &'static str, v: Option<&str>| v.map(|v| KeyValue::new(key, v.to_owned()));
    let mut attributes: Vec<KeyValue> = [
        text("mcp_gateway.route", done.route),
        text("mcp_gateway.pool", done.pool),
        text("server.address", done.backend),
        text("mcp.protocol.version", done.protocol_version),
        text("mcp_gateway.cache", done.cache),
        done.session
            .map(|s| KeyValue::new("mcp.session.id", crate::session_hash::hash_session(s))),
        done.status
            .map(|s| KeyValue::new("http.response.status_code", i64::from(s))),
    ]
    .into_iter()
    .flatten()
    .collect();
    attributes.push(KeyValue::new(
        "mcp_gateway.outcome",
        done.outcome.to_owned(),
    ));
    span.set_attributes(attributes);
    if !matches!(done.outcome, "ok" | "client-gone") {
        span.set_status(Status::error(done.outcome.to_owned()));
    }
    span.end();
}
