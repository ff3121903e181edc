//! `routes[].capture`: request capture of one route, as written in the file and validated.
//! Off unless the key is there. Capture itself lives in [`crate::capture`].

use super::problems::Problems;
use super::problems::Unknown;
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::PathBuf;

/// Default size of a capture file before it is rotated: 10 MiB.
pub const DEFAULT_CAPTURE_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// Default rotated files kept besides the current one.
pub const DEFAULT_CAPTURE_FILES: usize = 3;
/// Default largest body recorded; larger bodies are recorded by size only.
pub const DEFAULT_CAPTURE_BODY_BYTES: usize = 64 * 1024;

/// The JSON paths redacted by default: tool arguments, what a user typed into a completion
/// (`completion/complete`) and the context arguments sent with it, and what a client answers
/// to a server's request (`result` of an elicitation, sampling or roots answer; the
/// 2026-07-28 `params.inputResponses` carrying the same).
pub const DEFAULT_REDACT: &[&str] = &[
    "params.arguments",
    "params.argument.value",
    "params.context.arguments",
    "params.inputResponses",
    "result.content",
    "result.roots",
];

/// `routes[].capture` as written.
#[derive(Debug, Deserialize, JsonSchema, Default, Clone)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileCapture {
    /// The capture file (JSON lines); rotated to FILE.1, FILE.2, … Required.
    pub file: Option<String>,
    /// Size at which the file is rotated, in bytes. Default 10485760 (10 MiB).
    pub max_file_bytes: Option<u64>,
    /// Rotated files kept besides the current one. Default 3.
    pub max_files: Option<usize>,
    /// Record the request and (where the gateway holds it) response bodies. Default true.
    pub bodies: Option<bool>,
    /// Bodies larger than this are recorded by their size only, in bytes. Default 65536.
    pub max_body_bytes: Option<usize>,
    /// JSON paths whose values are replaced by "[redacted]" in recorded bodies: dot-separated
    /// keys from the JSON-RPC message (each message of a batch), `*` for any key or array
    /// element. Default `[params.arguments, params.argument.value, params.context.arguments,
    /// params.inputResponses, result.content, result.roots]` (tool arguments, completion
    /// values, what a client answers to elicitation, sampling and roots requests); `[]`
    /// records bodies unredacted.
    pub redact: Option<Vec<String>>,
    /// Keys this version does not know.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// Request capture of a route, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureConfig {
    /// The capture file.
    pub file: PathBuf,
    /// Size at which the file is rotated. Default 10 MiB.
    pub max_file_bytes: u64,
    /// Rotated files kept. Default 3.
    pub max_files: usize,
    /// Record bodies. Default true.
    pub bodies: bool,
    /// Largest body recorded. Default 64 KiB.
    pub max_body_bytes: usize,
    /// Redacted JSON paths, each split into its keys. Default [`DEFAULT_REDACT`].
    pub redact: Vec<Vec<String>>,
}

/// Validates `capture` of the route at `at`.
pub(super) fn capture_config(p: &mut Problems, at: &str, c: &FileCapture) -> Option<CaptureConfig> {
    let at = format!("{at}.capture");
    p.unknown(
        &at,
        &c.unknown,
        "file, max-file-bytes, max-files, bodies, max-body-bytes, redact",
    );
    let file = match c.file.as_deref() {
        Some(f) if !f.trim().is_empty() => PathBuf::from(f),
        _ => {
            p.add(format!("{at}.file"), "missing: name the capture file");
            PathBuf::new()
        }
    };
    let max_file_bytes = c.max_file_bytes.unwrap_or(DEFAULT_CAPTURE_FILE_BYTES);
    if max_file_bytes < 1024 {
        p.add(format!("{at}.max-file-bytes"), "must be at least 1024");
    }
    let redact = match &c.redact {
        None => DEFAULT_REDACT
            .iter()
            .map(|path| path.split('.').map(str::to_owned).collect())
            .collect(),
        Some(paths) => paths
            .iter()
            .enumerate()
            .map(|(i, path)| {
                let keys: Vec<String> = path.split('.').map(str::to_owned).collect();
                if keys.iter().any(String::is_empty) {
                    p.add(
                        format!("{at}.redact[{i}]"),
                        format!(
                            "`{path}` is not a dot-separated path (e.g. params.arguments.password)"
                        ),
                    );
                }
                keys
            })
            .collect(),
    };
    Some(CaptureConfig {
        file,
        max_file_bytes,
        max_files: c.max_files.unwrap_or(DEFAULT_CAPTURE_FILES),
        bodies: c.bodies.unwrap_or(true),
        max_body_bytes: c.max_body_bytes.unwrap_or(DEFAULT_CAPTURE_BODY_BYTES),
        redact,
    })
}
