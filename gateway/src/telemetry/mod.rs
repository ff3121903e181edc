//! OpenTelemetry traces (`tracing:` in the config, off unless set): a span per request that
//! continues the client's W3C `traceparent`/`tracestate` (or starts a trace), carries MCP
//! attributes, shows a session's re-initialization as child spans and an event, and is
//! propagated upstream in `traceparent`; exported by OTLP (http/protobuf or gRPC) in batches
//! from a thread of the SDK's own. Spans are started and ended at a request's start and end,
//! never on the byte path of a body.
//!
//! The tracer is process-wide (a `OnceLock`), as OpenTelemetry's API is: the session manager
//! adds re-initialization spans to whatever request is current (`Context::current()`, set
//! while a gateway-driven request is polled) without the proxy handing it down.

mod export;
mod span;

pub use span::{child, event, finish, inject, inject_current, start, Finished};

use crate::config::TracingConfig;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use std::sync::OnceLock;

static TRACER: OnceLock<(SdkTracerProvider, SdkTracer)> = OnceLock::new();

/// Whether traces are on.
pub fn enabled() -> bool {
    TRACER.get().is_some()
}

fn tracer() -> Option<&'static SdkTracer> {
    TRACER.get().map(|(_, t)| t)
}

/// Starts exporting with `config`. Called once, before the server runs (outside any async
/// runtime); a second call is ignored.
pub fn init(config: &TracingConfig) -> Result<(), String> {
    if enabled() {
        return Ok(());
    }
    let provider = export::provider(config)?;
    let tracer = opentelemetry::trace::TracerProvider::tracer(&provider, "mcp-gateway");
    let _ = TRACER.set((provider, tracer));
    tracing::info!(endpoint = %config.endpoint, protocol = ?config.protocol, sample_ratio = config.sample_ratio, "OpenTelemetry traces on");
    Ok(())
}

/// Exports what is queued and stops the exporter (at shutdown). Blocks: call it where
/// blocking is fine.
pub fn shutdown() {
    if let Some((provider, _)) = TRACER.get() {
        if let Err(e) = provider.shutdown() {
            tracing::warn!(error = %e, "OpenTelemetry: shutdown");
        }
    }
}

/// A background service that flushes the spans at shutdown.
pub struct FlushAtShutdown;

#[async_trait::async_trait]
impl pingora::services::background::BackgroundService for FlushAtShutdown {
    async fn start(&self, mut shutdown: pingora::server::ShutdownWatch) {
        let _ = shutdown.changed().await;
        let _ = tokio::task::spawn_blocking(shutdown_now).await;
    }
}

fn shutdown_now() {
    shutdown();
}

#[cfg(test)]
mod tests;
