//! `tracing`: OpenTelemetry traces exported by OTLP, as written in the file and validated.
//! Off unless the key is there. The traces themselves live in [`crate::telemetry`].

use super::problems::Problems;
use super::problems::Unknown;
use schemars::JsonSchema;
use serde::Deserialize;

/// `tracing` as written.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileTracing {
    /// Where spans are exported (OTLP). Required.
    pub otlp: Option<FileOtlp>,
    /// Share of traces started here that are recorded, 0.0 to 1.0; a client's sampled flag
    /// (`traceparent`) is followed. Default 1.0.
    pub sample_ratio: Option<f64>,
    /// Keys this version does not know.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `tracing.otlp`: the collector.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileOtlp {
    /// The collector's base URL; `/v1/traces` is appended for http/protobuf. Default
    /// `http://127.0.0.1:4318` (http/protobuf) or `http://127.0.0.1:4317` (grpc).
    pub endpoint: Option<String>,
    /// `http/protobuf` (default) or `grpc`.
    #[schemars(extend("enum" = ["http/protobuf", "grpc", null]))]
    pub protocol: Option<String>,
    /// Keys this version does not know.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// The OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// Protobuf over HTTP (`POST {endpoint}/v1/traces`).
    HttpProtobuf,
    /// gRPC (`opentelemetry.proto.collector.trace.v1.TraceService/Export`).
    Grpc,
}

/// Traces, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct TracingConfig {
    /// Full URL spans are sent to (with `/v1/traces` for http/protobuf).
    pub endpoint: String,
    /// Transport.
    pub protocol: OtlpProtocol,
    /// Share of root traces recorded. Default 1.0.
    pub sample_ratio: f64,
}

/// Validates `tracing`.
pub(super) fn tracing_config(p: &mut Problems, t: &FileTracing) -> Option<TracingConfig> {
    p.unknown("tracing", &t.unknown, "otlp, sample-ratio");
    let sample_ratio = t.sample_ratio.unwrap_or(1.0);
    if !(0.0..=1.0).contains(&sample_ratio) {
        p.add("tracing.sample-ratio", "must be between 0.0 and 1.0");
    }
    let Some(otlp) = &t.otlp else {
        p.add(
            "tracing.otlp",
            "missing: give the collector (endpoint, protocol)",
        );
        return None;
    };
    p.unknown("tracing.otlp", &otlp.unknown, "endpoint, protocol");
    let protocol = match otlp.protocol.as_deref().unwrap_or("http/protobuf") {
        "http/protobuf" => OtlpProtocol::HttpProtobuf,
        "grpc" => OtlpProtocol::Grpc,
        other => {
            p.add(
                "tracing.otlp.protocol",
                format!("unknown `{other}` (http/protobuf, grpc)"),
            );
            OtlpProtocol::HttpProtobuf
        }
    };
    let base = otlp.endpoint.clone().unwrap_or_else(|| match protocol {
        OtlpProtocol::HttpProtobuf => "http://127.0.0.1:4318".into(),
        OtlpProtocol::Grpc => "http://127.0.0.1:4317".into(),
    });
    if !(base.starts_with("http://") || base.starts_with("https://"))
        || base.parse::<http::Uri>().is_err()
    {
        p.add(
            "tracing.otlp.endpoint",
            format!("`{base}` is not an http:// or https:// URL"),
        );
    }
    let endpoint = match protocol {
        OtlpProtocol::HttpProtobuf if !base.trim_end_matches('/').ends_with("/v1/traces") => {
            format!("{}/v1/traces", base.trim_end_matches('/'))
        }
        _ => base,
    };
    Some(TracingConfig {
        endpoint,
        protocol,
        sample_ratio,
    })
}
