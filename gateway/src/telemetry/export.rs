//! The OTLP exporter behind the SDK's batch span processor. The processor exports from a
//! thread of its own, where neither hyper (http/protobuf) nor tonic (gRPC) finds the Tokio
//! reactor they need (opentelemetry-rust's "no reactor running" panics); the exporter here
//! therefore owns a small runtime and runs each export on it.

use crate::config::{OtlpProtocol, TracingConfig};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchSpanProcessor, Sampler, SdkTracerProvider, SpanData, SpanExporter,
};
use opentelemetry_sdk::Resource;
use std::time::Duration;

/// An OTLP exporter that runs on its own Tokio runtime.
#[derive(Debug)]
struct OnRuntime {
    inner: opentelemetry_otlp::SpanExporter,
    runtime: tokio::runtime::Runtime,
}

impl SpanExporter for OnRuntime {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        if tokio::runtime::Handle::try_current().is_ok() {
            // called from inside a runtime (a flush from async code): no nested block_on
            return self.inner.export(batch).await;
        }
        self.runtime.block_on(self.inner.export(batch))
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The tracer provider for `config`: OTLP over the configured transport, batched, sampling
/// `sample-ratio` of new traces and following a client's sampled flag.
pub(super) fn provider(config: &TracingConfig) -> Result<SdkTracerProvider, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("mcpgw-otlp")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the OTLP runtime: {e}"))?;
    let inner = {
        // tonic builds its channel inside a runtime
        let _entered = runtime.enter();
        let built = match config.protocol {
            OtlpProtocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(&config.endpoint)
                .build(),
            OtlpProtocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(&config.endpoint)
                .build(),
        };
        built.map_err(|e| format!("cannot build the OTLP exporter: {e}"))?
    };
    let exporter = OnRuntime { inner, runtime };
    let sampler = Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(config.sample_ratio)));
    Ok(SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(exporter).build())
        .with_sampler(sampler)
        .with_resource(resource())
        .build())
}

/// `service.name` is `mcp-gateway` unless `OTEL_SERVICE_NAME` names it (with the SDK's other
/// resource detectors: `OTEL_RESOURCE_ATTRIBUTES`).
fn resource() -> Resource {
    let builder = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_some() {
        builder.build()
    } else {
        builder.with_service_name("mcp-gateway").build()
    }
}
