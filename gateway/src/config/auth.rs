//! The `auth`, `listen-tls`, `routes[].auth`/`authz`, `pools.*.tls` and
//! `pools.*.identity-headers` sections: their file structs, the typed config they become, and
//! their validation (every problem listed with its key path, like the rest of `config/`; the
//! routes' part is `route_auth.rs`).

use super::problems::Problems;
use super::problems::Unknown;
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// `auth` as written in the file.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileAuth {
    pub resource: Option<String>,
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    pub jwt: Option<FileJwt>,
    pub api_keys: Option<FileApiKeys>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `auth.jwt`.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileJwt {
    pub issuer: Option<String>,
    #[serde(default)]
    pub audiences: Vec<String>,
    pub jwks: Option<FileJwks>,
    pub leeway_s: Option<u64>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `auth.jwt.jwks`: a file or an URL.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileJwks {
    pub file: Option<String>,
    pub url: Option<String>,
    pub refresh_min_interval_s: Option<u64>,
    /// Longest wait for one fetch of a JWKS URL (connect, answer and body), in seconds; a
    /// token that needs the keys then gets 503 -32025. Default 5.
    pub fetch_timeout_s: Option<u64>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `auth.api-keys`.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileApiKeys {
    pub file: Option<String>,
    pub header: Option<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `listen-tls`.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileListenTls {
    pub cert: Option<String>,
    pub key: Option<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `pools.NAME.tls`.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FilePoolTls {
    pub ca: Option<String>,
    pub sni: Option<String>,
    pub verify: Option<bool>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `pools.NAME.identity-headers`.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileIdentityHeaders {
    pub principal: Option<String>,
    pub subject: Option<String>,
    #[serde(default)]
    pub claims: BTreeMap<String, String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// Globs on the request's MCP method and name; an absent key matches anything.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileMatch {
    /// Glob on the MCP method (Mcp-Method).
    pub method: Option<String>,
    /// Glob on the tool, prompt or resource (Mcp-Name).
    pub name: Option<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `routes[].authz[]`.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileAuthzRule {
    #[serde(rename = "match", default)]
    pub matches: FileMatch,
    pub require: Option<FileRequire>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `routes[].authz[].require`: one scope, or a claim with one of some values.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileRequire {
    pub scope: Option<String>,
    pub claim: Option<String>,
    #[serde(default)]
    pub any_of: Vec<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// Who may call: the gateway is an OAuth 2.1 resource server (JWT bearer tokens) and/or
/// checks API keys. Set, it makes `auth: required` the default of every route.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthConfig {
    /// This resource's identifier (RFC 8707/9728 `resource`), e.g. `https://gw.example.com/mcp`.
    pub resource: String,
    /// Authorization servers announced in the protected-resource metadata.
    pub authorization_servers: Vec<String>,
    /// Scopes announced in the metadata. Default: none listed.
    pub scopes_supported: Vec<String>,
    /// JWT bearer tokens. Default: none.
    pub jwt: Option<JwtConfig>,
    /// API keys. Default: none.
    pub api_keys: Option<ApiKeysConfig>,
}

/// JWT validation.
#[derive(Debug, Clone, PartialEq)]
pub struct JwtConfig {
    /// Required `iss`.
    pub issuer: String,
    /// Accepted `aud` values (at least one: the token must be meant for this resource).
    pub audiences: Vec<String>,
    /// Where the signing keys come from.
    pub jwks: JwksSource,
    /// Clock leeway for `exp`/`nbf`. Default 30 s.
    pub leeway: Duration,
    /// Least time between two key-set fetches (an unknown `kid` triggers one). Default 30 s.
    pub refresh_min_interval: Duration,
    /// Longest wait for one fetch of a JWKS URL. Default [`DEFAULT_JWKS_FETCH_TIMEOUT`].
    pub fetch_timeout: Duration,
}

/// Default `auth.jwt.jwks.fetch-timeout-s`: 5 s.
pub const DEFAULT_JWKS_FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Where a key set comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    /// A JWKS file, re-read on an unknown `kid`.
    File(PathBuf),
    /// An `https://` (or, for loopback tests, `http://`) URL.
    Url(String),
}

/// API keys: a file of `<sha256 hex> <principal name>` lines, reloaded when it changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeysConfig {
    /// The file.
    pub file: PathBuf,
    /// Header carrying a key besides `Authorization: Bearer`. Default `x-api-key`.
    pub header: String,
}

/// TLS on the listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenTls {
    /// Certificate chain (PEM).
    pub cert: PathBuf,
    /// Private key (PEM).
    pub key: PathBuf,
}

/// TLS to a pool's backends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolTls {
    /// CA bundle (PEM) the backends' certificates must chain to. Default: the system roots.
    pub ca: Option<PathBuf>,
    /// Server name sent (SNI) and verified. Default: the pool's `host` without port.
    pub sni: Option<String>,
    /// Verify the backend's certificate and name. Default true.
    pub verify: bool,
}

/// Identity headers sent to a pool's backends instead of the client's token. The client's
/// own values of these headers are always removed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IdentityHeaders {
    /// Header carrying the principal (`issuer|subject`, or `key:NAME`).
    pub principal: Option<String>,
    /// Header carrying the token's `sub` (or the API key's name).
    pub subject: Option<String>,
    /// `(claim, header)`: string claims (arrays joined by `,`) copied into headers.
    pub claims: Vec<(String, String)>,
}

impl IdentityHeaders {
    /// Every header name this writes.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.principal
            .iter()
            .chain(self.subject.iter())
            .map(String::as_str)
            .chain(self.claims.iter().map(|(_, h)| h.as_str()))
    }
}

/// Whether a route requires a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteAuth {
    /// A valid token or key is required (the default once `auth` is set).
    Required,
    /// Anyone (the default without `auth`).
    None,
}

/// One authorization rule: the first rule whose globs match a request decides it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthzRule {
    /// Glob on the MCP method, compiled; `None` matches any.
    pub method: Option<super::Pattern>,
    /// Glob on the name (tool, prompt, resource URI), compiled; `None` matches any.
    pub name: Option<super::Pattern>,
    /// What the caller must have.
    pub require: Require,
}

/// What a caller must have for a rule to allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Require {
    /// This scope among the token's `scope`/`scp`.
    Scope(String),
    /// The claim (a string or an array of strings) holds one of these values.
    Claim {
        /// Claim name, e.g. `groups`.
        name: String,
        /// Accepted values.
        any_of: Vec<String>,
    },
}

fn url_ok(p: &mut Problems, at: &str, url: &str) {
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        p.add(at, format!("`{url}` is not an http(s) URL"));
    }
}

/// The key set URL as the fetch will read it (WHATWG, `url`): a host, and no userinfo (a
/// credential in it would be written in every log line naming the URL; the error repeats
/// none of it).
fn jwks_url_ok(p: &mut Problems, url: &str) {
    match url::Url::parse(url) {
        Err(e) => p.add("auth.jwt.jwks.url", format!("not an URL: {e}")),
        Ok(u) if !u.username().is_empty() || u.password().is_some() => p.add(
            "auth.jwt.jwks.url",
            "must not carry userinfo (user:password@): serve the key set without a credential in its URL",
        ),
        Ok(u) if u.host_str().is_none_or(str::is_empty) => {
            p.add("auth.jwt.jwks.url", "names no host")
        }
        Ok(_) => {}
    }
}

/// Validates `auth`.
pub(super) fn auth_config(p: &mut Problems, a: &FileAuth) -> Option<AuthConfig> {
    p.unknown(
        "auth",
        &a.unknown,
        "resource, authorization-servers, scopes-supported, jwt, api-keys",
    );
    let resource = a.resource.clone().unwrap_or_default();
    if resource.is_empty() {
        p.add("auth.resource", "required: this gateway's resource URL");
    } else {
        url_ok(p, "auth.resource", &resource);
    }
    for (i, s) in a.authorization_servers.iter().enumerate() {
        url_ok(p, &format!("auth.authorization-servers[{i}]"), s);
    }
    let jwt = a.jwt.as_ref().and_then(|j| jwt_config(p, j));
    let api_keys = a.api_keys.as_ref().and_then(|k| {
        p.unknown("auth.api-keys", &k.unknown, "file, header");
        let header = k.header.clone().unwrap_or_else(|| "x-api-key".into());
        if http::HeaderName::from_bytes(header.as_bytes()).is_err() {
            p.add(
                "auth.api-keys.header",
                format!("`{header}` is not a header name"),
            );
        }
        match &k.file {
            Some(f) => Some(ApiKeysConfig {
                file: f.into(),
                header: header.to_ascii_lowercase(),
            }),
            None => {
                p.add("auth.api-keys.file", "required: the file of key hashes");
                None
            }
        }
    });
    if a.jwt.is_none() && a.api_keys.is_none() {
        p.add("auth", "give jwt, api-keys or both");
    }
    Some(AuthConfig {
        resource,
        authorization_servers: a.authorization_servers.clone(),
        scopes_supported: a.scopes_supported.clone(),
        jwt,
        api_keys,
    })
}

fn jwt_config(p: &mut Problems, j: &FileJwt) -> Option<JwtConfig> {
    p.unknown("auth.jwt", &j.unknown, "issuer, audiences, jwks, leeway-s");
    let issuer = j.issuer.clone().unwrap_or_default();
    if issuer.is_empty() {
        p.add("auth.jwt.issuer", "required: the tokens' `iss`");
    }
    if j.audiences.is_empty() {
        p.add(
            "auth.jwt.audiences",
            "required: the `aud` values meaning this resource (RFC 8707)",
        );
    }
    let Some(jwks) = &j.jwks else {
        p.add("auth.jwt.jwks", "required: {file: PATH} or {url: URL}");
        return None;
    };
    p.unknown(
        "auth.jwt.jwks",
        &jwks.unknown,
        "file, url, refresh-min-interval-s, fetch-timeout-s",
    );
    if jwks.fetch_timeout_s == Some(0) {
        p.add("auth.jwt.jwks.fetch-timeout-s", "must be at least 1");
    }
    let source = match (&jwks.file, &jwks.url) {
        (Some(f), None) => JwksSource::File(f.into()),
        (None, Some(u)) => {
            url_ok(p, "auth.jwt.jwks.url", u);
            jwks_url_ok(p, u);
            JwksSource::Url(u.clone())
        }
        _ => {
            p.add("auth.jwt.jwks", "give exactly one of file or url");
            return None;
        }
    };
    Some(JwtConfig {
        issuer,
        audiences: j.audiences.clone(),
        jwks: source,
        leeway: Duration::from_secs(j.leeway_s.unwrap_or(30)),
        refresh_min_interval: Duration::from_secs(jwks.refresh_min_interval_s.unwrap_or(30)),
        fetch_timeout: jwks
            .fetch_timeout_s
            .map_or(DEFAULT_JWKS_FETCH_TIMEOUT, Duration::from_secs),
    })
}

/// Validates `listen-tls`.
pub(super) fn listen_tls(p: &mut Problems, t: &FileListenTls) -> Option<ListenTls> {
    p.unknown("listen-tls", &t.unknown, "cert, key");
    match (&t.cert, &t.key) {
        (Some(cert), Some(key)) => Some(ListenTls {
            cert: cert.into(),
            key: key.into(),
        }),
        _ => {
            p.add("listen-tls", "give both cert and key (PEM files)");
            None
        }
    }
}

/// Validates `pools.NAME.tls`.
pub(super) fn pool_tls(p: &mut Problems, at: &str, t: &FilePoolTls) -> PoolTls {
    p.unknown(&format!("{at}.tls"), &t.unknown, "ca, sni, verify");
    PoolTls {
        ca: t.ca.as_ref().map(PathBuf::from),
        sni: t.sni.clone(),
        verify: t.verify.unwrap_or(true),
    }
}

/// Validates `pools.NAME.identity-headers`.
pub(super) fn identity_headers(
    p: &mut Problems,
    at: &str,
    h: &FileIdentityHeaders,
) -> IdentityHeaders {
    let at = format!("{at}.identity-headers");
    p.unknown(&at, &h.unknown, "principal, subject, claims");
    let out = IdentityHeaders {
        principal: h.principal.as_ref().map(|s| s.to_ascii_lowercase()),
        subject: h.subject.as_ref().map(|s| s.to_ascii_lowercase()),
        claims: h
            .claims
            .iter()
            .map(|(c, hd)| (c.clone(), hd.to_ascii_lowercase()))
            .collect(),
    };
    for name in out.names() {
        if http::HeaderName::from_bytes(name.as_bytes()).is_err()
            || name == "authorization"
            || name == "host"
        {
            p.add(&at, format!("`{name}` cannot be an identity header"));
        }
    }
    out
}
