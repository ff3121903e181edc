//! `pools.NAME.upstream-auth`: the credentials a pool's backends get (issue 35). File structs,
//! the typed config they become, validation. Secrets are only *named* here (a file, an
//! environment variable): `upstream::credentials` reads them, at start, on reload, and when a
//! file changes; no value ever passes through the config (so `validate` cannot print one).

use super::problems::{Problems, Unknown};
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `pools.NAME.upstream-auth` in the file.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileUpstreamAuth {
    /// Headers set on every request to this pool's backends, each from a secret (`file` or `env`, with an optional `prefix` such as `"Bearer "`). A client's own headers of these names are dropped first, in every spelling, so a client can never choose them.
    #[serde(default)]
    pub headers: BTreeMap<String, FileSecret>,
    /// OAuth client credentials (RFC 6749 §4.4) for a token the backends accept. Not built yet: refused by `validate`.
    #[schemars(with = "Option<BTreeMap<String, serde_json::Value>>")]
    pub client_credentials: Option<serde::de::IgnoredAny>,
    /// RFC 8693 token exchange of the caller's token. Not built yet: refused by `validate`.
    #[schemars(with = "Option<BTreeMap<String, serde_json::Value>>")]
    pub token_exchange: Option<serde::de::IgnoredAny>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// Where a secret is read from: exactly one of `file` and `env`.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileSecret {
    /// A file holding the secret (one trailing newline is dropped): read at start, on reload, and again whenever it changes (a rotated Kubernetes Secret takes effect without a restart).
    pub file: Option<String>,
    /// An environment variable holding the secret (read at start and on reload).
    pub env: Option<String>,
    /// Text put before the secret, such as `"Bearer "`.
    pub prefix: Option<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// Where one secret comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// A file (re-read when it changes).
    File(PathBuf),
    /// An environment variable.
    Env(String),
}

/// A header a pool's backends get from a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretHeader {
    /// Its name, lowercase.
    pub name: String,
    /// Where its value comes from.
    pub source: SecretSource,
    /// Text before the secret.
    pub prefix: String,
}

/// A pool's upstream credentials.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamAuth {
    /// `headers`, in name order.
    pub headers: Vec<SecretHeader>,
}

impl UpstreamAuth {
    /// Whether the pool's backends get any credentials.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty()
    }
}

/// Headers a pool's credentials may not set: the gateway's own framing and routing, and the
/// MCP headers the body is checked against.
const RESERVED: [&str; 10] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "te",
    "upgrade",
    "mcp-session-id",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
];

/// Validates `pools.NAME.upstream-auth` (`at` is `pools.NAME`).
pub(crate) fn validate(p: &mut Problems, at: &str, file: &FileUpstreamAuth) -> UpstreamAuth {
    let at = format!("{at}.upstream-auth");
    p.unknown(
        &at,
        &file.unknown,
        "headers, client-credentials, token-exchange",
    );
    for (key, set) in [
        ("client-credentials", file.client_credentials.is_some()),
        ("token-exchange", file.token_exchange.is_some()),
    ] {
        if set {
            p.add(
                format!("{at}.{key}"),
                "not supported yet by this build: use `headers` with a secret file",
            );
        }
    }
    let mut headers = Vec::new();
    for (name, secret) in &file.headers {
        let here = format!("{at}.headers.{name}");
        p.unknown(&here, &secret.unknown, "file, env, prefix");
        let lower = name.to_ascii_lowercase();
        if http::HeaderName::from_bytes(lower.as_bytes()).is_err()
            || RESERVED.contains(&lower.as_str())
        {
            p.add(
                &here,
                format!("`{name}` cannot be set as a backend credential"),
            );
            continue;
        }
        let prefix = secret.prefix.clone().unwrap_or_default();
        if http::HeaderValue::from_str(&prefix).is_err() {
            p.add(format!("{here}.prefix"), "not a valid header value");
            continue;
        }
        let source = match (&secret.file, &secret.env) {
            (Some(f), None) if !f.is_empty() => SecretSource::File(PathBuf::from(f)),
            (None, Some(e)) if !e.is_empty() => SecretSource::Env(e.clone()),
            _ => {
                p.add(&here, "give exactly one of `file` and `env`");
                continue;
            }
        };
        if headers.iter().any(|h: &SecretHeader| h.name == lower) {
            p.add(&here, "given twice (header names are case-insensitive)");
            continue;
        }
        headers.push(SecretHeader {
            name: lower,
            source,
            prefix,
        });
    }
    UpstreamAuth { headers }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> (UpstreamAuth, Vec<String>) {
        let file: FileUpstreamAuth = serde_saphyr::from_str(yaml).unwrap();
        let mut p = Problems::default();
        let auth = validate(&mut p, "pools.p", &file);
        (auth, p.0.iter().map(|e| e.to_string()).collect())
    }

    #[test]
    fn headers_from_files_and_env_with_a_prefix() {
        let (auth, problems) = parse(
            "headers: { Authorization: { file: /run/s/t, prefix: \"Bearer \" }, x-api-key: { env: KEY } }",
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            auth.headers,
            vec![
                SecretHeader {
                    name: "authorization".into(),
                    source: SecretSource::File("/run/s/t".into()),
                    prefix: "Bearer ".into()
                },
                SecretHeader {
                    name: "x-api-key".into(),
                    source: SecretSource::Env("KEY".into()),
                    prefix: String::new()
                },
            ]
        );
    }

    #[test]
    fn bad_entries_are_named() {
        let (auth, problems) = parse(
            "headers: { host: { env: A }, x-a: { env: A, file: /f }, x-b: {}, x-c: { env: A, extra: 1 } }\nclient-credentials: { token-url: x }",
        );
        let joined = problems.join("\n");
        assert!(
            joined.contains("pools.p.upstream-auth.headers.host"),
            "{joined}"
        );
        assert!(joined.contains("headers.x-a: give exactly one"), "{joined}");
        assert!(joined.contains("headers.x-b: give exactly one"), "{joined}");
        assert!(joined.contains("x-c"), "{joined}");
        assert!(
            joined.contains("client-credentials: not supported yet"),
            "{joined}"
        );
        assert_eq!(auth.headers.len(), 1, "x-c is kept: {auth:?}");
    }
}
