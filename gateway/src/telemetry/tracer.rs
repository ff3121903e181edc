//! The process-wide tracer: set up once from the config, read by the request spans, and its
//! queued spans exported and the exporter stopped at shutdown.

use super::export;
use crate::config::TracingConfig;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use std::sync::OnceLock;

static TRACER: OnceLock<(SdkTracerProvider, SdkTracer)> = OnceLock::new();

/// Whether traces are on.
pub fn enabled() -> bool {
    TRACER.get().is_some()
}

pub(super) fn tracer() -> Option<&'static SdkTracer> {
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
