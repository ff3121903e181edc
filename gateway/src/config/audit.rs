//! `audit`: the audit trail, as written in the file and validated. Off unless the key is
//! there. The trail itself lives in [`crate::audit`].

use super::problems::Problems;
use super::problems::Unknown;
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::PathBuf;

/// Default size of the audit file before it is rotated: 100 MiB.
pub const DEFAULT_AUDIT_FILE_BYTES: u64 = 100 * 1024 * 1024;
/// Default rotated audit files kept besides the current one.
pub const DEFAULT_AUDIT_KEEP: usize = 5;
/// Default records queued for the writer before new ones are dropped.
pub const DEFAULT_AUDIT_QUEUE: usize = 8192;
/// The largest queue accepted.
pub const MAX_AUDIT_QUEUE: usize = 1 << 20;

/// `audit` as written.
#[derive(Debug, Deserialize, JsonSchema, Default, Clone)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileAudit {
    /// The audit file (JSON lines, one record a line); rotated to FILE.1, FILE.2, … Default:
    /// none (set `file`, `stdout` or `otlp`, at least one).
    pub file: Option<String>,
    /// Write each record to the gateway's standard output too. Default false.
    pub stdout: Option<bool>,
    /// When the file is rotated, and how many rotated files are kept.
    pub rotate: Option<FileRotate>,
    /// Export each record as an OTLP log record to the collector `tracing.otlp` names
    /// (OTLP/HTTP JSON, `POST {endpoint}/v1/logs`; needs `tracing` with `http/protobuf` on
    /// an `http://` endpoint). Default false.
    pub otlp: Option<bool>,
    /// Records queued for the writer before new ones are dropped (and counted in
    /// `mcpgw_audit_dropped_total`). Default 8192.
    pub queue: Option<usize>,
    /// Refuse `tools/call`, `prompts/get` and `resources/read` (-32041) while the sink cannot
    /// write (the file cannot be opened or written, standard output fails, or the queue is
    /// full). Default false.
    pub required: Option<bool>,
    /// Add a call's arguments (and, where the gateway holds the whole answer, its result) to
    /// its record, redacted by `redact`. Default false.
    pub include_bodies: Option<bool>,
    /// JSON paths redacted from recorded bodies, as `routes[].capture.redact` writes them
    /// (dot-separated keys of the JSON-RPC message, `*` any key or element). Default
    /// `[params.arguments.password, params.arguments.token, params.arguments.secret,
    /// params.arguments.api_key, params.arguments.apiKey]`.
    pub redact: Option<Vec<String>>,
    /// Keys this version does not know.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `audit.rotate` as written.
#[derive(Debug, Deserialize, JsonSchema, Default, Clone)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileRotate {
    /// Size at which the file is rotated, in bytes. Default 104857600 (100 MiB).
    pub max_bytes: Option<u64>,
    /// Rotated files kept besides the current one (the oldest removed). Default 5.
    pub keep: Option<usize>,
    /// Keys this version does not know.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// The default `audit.redact` paths: argument names that usually hold a secret.
pub const DEFAULT_AUDIT_REDACT: &[&str] = &[
    "params.arguments.password",
    "params.arguments.token",
    "params.arguments.secret",
    "params.arguments.api_key",
    "params.arguments.apiKey",
];

/// The audit trail, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditConfig {
    /// The audit file. Default none.
    pub file: Option<PathBuf>,
    /// Records to standard output too. Default false.
    pub stdout: bool,
    /// Size at which the file is rotated. Default 100 MiB.
    pub max_bytes: u64,
    /// Rotated files kept. Default 5.
    pub keep: usize,
    /// The OTLP logs endpoint (`…/v1/logs`) when `otlp` is on. Default none.
    pub otlp: Option<String>,
    /// Records queued before drops. Default 8192.
    pub queue: usize,
    /// Calls refused while the sink cannot write. Default false.
    pub required: bool,
    /// Arguments and results recorded. Default false.
    pub include_bodies: bool,
    /// Redacted JSON paths, each split into its keys. Default [`DEFAULT_AUDIT_REDACT`].
    pub redact: Vec<Vec<String>>,
}

/// Validates `audit`; `traces` is the validated `tracing` endpoint and protocol, if any.
pub(super) fn audit_config(
    p: &mut Problems,
    a: &FileAudit,
    traces: Option<&super::TracingConfig>,
) -> Option<AuditConfig> {
    p.unknown(
        "audit",
        &a.unknown,
        "file, stdout, rotate, otlp, queue, required, include-bodies, redact",
    );
    let file = match a.file.as_deref() {
        Some(f) if f.trim().is_empty() => {
            p.add("audit.file", "must not be empty: name the audit file");
            None
        }
        f => f.map(PathBuf::from),
    };
    let rotate = a.rotate.clone().unwrap_or_default();
    p.unknown("audit.rotate", &rotate.unknown, "max-bytes, keep");
    let max_bytes = rotate.max_bytes.unwrap_or(DEFAULT_AUDIT_FILE_BYTES);
    if max_bytes < 1024 {
        p.add("audit.rotate.max-bytes", "must be at least 1024");
    }
    let queue = p.at_least_one("audit.queue", a.queue, DEFAULT_AUDIT_QUEUE);
    if queue > MAX_AUDIT_QUEUE {
        p.add("audit.queue", format!("must be at most {MAX_AUDIT_QUEUE}"));
    }
    let otlp = match a.otlp {
        Some(true) => otlp_endpoint(p, traces),
        _ => None,
    };
    let stdout = a.stdout.unwrap_or(false);
    if file.is_none() && !stdout && otlp.is_none() && a.otlp != Some(true) {
        p.add(
            "audit",
            "names no sink: set file, stdout: true or otlp: true (or remove the section)",
        );
    }
    Some(AuditConfig {
        file,
        stdout,
        max_bytes,
        keep: rotate.keep.unwrap_or(DEFAULT_AUDIT_KEEP),
        otlp,
        queue,
        required: a.required.unwrap_or(false),
        include_bodies: a.include_bodies.unwrap_or(false),
        redact: redact_paths(p, a.redact.as_deref()),
    })
}

/// The logs endpoint beside the traces' one: `…/v1/traces` becomes `…/v1/logs`.
fn otlp_endpoint(p: &mut Problems, traces: Option<&super::TracingConfig>) -> Option<String> {
    let problem = match traces {
        None => "needs `tracing` (the collector the traces use)",
        Some(t) if t.protocol != super::OtlpProtocol::HttpProtobuf => {
            "needs tracing.otlp.protocol http/protobuf (records go as OTLP/HTTP JSON)"
        }
        Some(t) if !t.endpoint.starts_with("http://") => {
            "needs an http:// tracing.otlp.endpoint (the audit exporter speaks plain HTTP; put a collector beside the gateway)"
        }
        Some(t) => {
            let base = t.endpoint.trim_end_matches('/');
            let base = base.strip_suffix("/v1/traces").unwrap_or(base);
            return Some(format!("{base}/v1/logs"));
        }
    };
    p.add("audit.otlp", problem);
    None
}

/// `audit.redact`, each path split into its keys.
fn redact_paths(p: &mut Problems, paths: Option<&[String]>) -> Vec<Vec<String>> {
    let split = |path: &str| -> Vec<String> { path.split('.').map(str::to_owned).collect() };
    match paths {
        None => DEFAULT_AUDIT_REDACT.iter().map(|s| split(s)).collect(),
        Some(paths) => paths
            .iter()
            .enumerate()
            .map(|(i, path)| {
                let keys = split(path);
                if keys.iter().any(String::is_empty) {
                    p.add(
                        format!("audit.redact[{i}]"),
                        format!(
                            "`{path}` is not a dot-separated path (e.g. params.arguments.password)"
                        ),
                    );
                }
                keys
            })
            .collect(),
    }
}
