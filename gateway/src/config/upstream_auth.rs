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
    /// OAuth client credentials (RFC 6749 §4.4): the gateway fetches a token for the pool at the first request that needs it, caches it until shortly before it expires (refreshed in the background), and sends it as `Authorization: Bearer` on every request to the pool's backends.
    pub client_credentials: Option<FileClientCredentials>,
    /// RFC 8693 token exchange: the caller's validated token (a JWT bearer) exchanged at the token endpoint for one with this pool's audience and scope, cached per caller until it expires; the exchanged token is what the backends see.
    pub token_exchange: Option<FileTokenExchange>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `upstream-auth.client-credentials` in the file.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileClientCredentials {
    /// The authorization server's token endpoint (`http://` or `https://`).
    pub token_url: Option<String>,
    /// The gateway's client id there.
    pub client_id: Option<String>,
    /// The client secret: `file` (read again at each token fetch, so a rotated file is used by the next one) or `env`.
    pub client_secret: Option<FileSecret>,
    /// The `scope` asked for (space separated), if any.
    pub scope: Option<String>,
    /// The `audience` asked for, if any (the backends' identifier at the authorization server).
    pub audience: Option<String>,
    /// The `resource` asked for (RFC 8707, as MCP clients name a server), if any.
    pub resource: Option<String>,
    /// How the gateway authenticates to the token endpoint: `basic` (HTTP Basic, `client_secret_basic`, the default) or `post` (in the form, `client_secret_post`).
    pub auth_method: Option<String>,
    /// How long a token request may take before the call is answered 503. Default 5000.
    pub timeout_ms: Option<u64>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `upstream-auth.token-exchange` in the file.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileTokenExchange {
    /// The authorization server's token endpoint (`http://` or `https://`).
    pub token_url: Option<String>,
    /// The gateway's client id there.
    pub client_id: Option<String>,
    /// The client secret: `file` (read again at each request to the endpoint) or `env`.
    pub client_secret: Option<FileSecret>,
    /// The `scope` asked for, if any.
    pub scope: Option<String>,
    /// The `audience` asked for, if any (the backends' identifier at the authorization server).
    pub audience: Option<String>,
    /// The `resource` asked for (RFC 8707), if any.
    pub resource: Option<String>,
    /// `basic` (the default) or `post`, as for client credentials.
    pub auth_method: Option<String>,
    /// How long an exchange may take before the call is answered 503. Default 5000.
    pub timeout_ms: Option<u64>,
    /// Callers with an API key (no token to exchange): `refuse` (403 -32040, the default) or `client-credentials` (the gateway's own token for the pool, from the same client).
    pub api_key_callers: Option<String>,
    /// `client-credentials`: send the gateway's own token (client credentials, same client) as the `actor_token`, for delegation (`act` in the exchanged token). Default: none.
    pub actor: Option<String>,
    /// Exchanged tokens kept per caller (one per token the caller presented). Default 4.
    pub cache_per_caller: Option<usize>,
    /// Callers whose exchanged tokens are kept. Default 10000.
    pub cache_callers: Option<usize>,
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

/// How the gateway authenticates to a token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// HTTP Basic (`client_secret_basic`).
    Basic,
    /// In the form (`client_secret_post`).
    Post,
}

/// A pool's OAuth client: where it asks for tokens and who it is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthClient {
    /// The token endpoint.
    pub token_url: String,
    /// The client id.
    pub client_id: String,
    /// Where the client secret is read from (at each fetch).
    pub client_secret: SecretSource,
    /// How it authenticates.
    pub auth: ClientAuth,
    /// How long a token request may take.
    pub timeout: std::time::Duration,
}

/// `client-credentials`: the client, and what its tokens are for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    /// The client.
    pub client: OAuthClient,
    /// `scope`, as asked for.
    pub scope: Option<String>,
    /// `audience`, as asked for.
    pub audience: Option<String>,
    /// `resource` (RFC 8707), as asked for.
    pub resource: Option<String>,
}

/// What a token-exchange pool does for a caller with an API key (no token to exchange).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKeyCallers {
    /// 403 -32040.
    Refuse,
    /// The gateway's own client-credentials token for the pool.
    ClientCredentials,
}

/// `token-exchange`: the client, what the exchanged tokens are for, and the cache's bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenExchange {
    /// The client, and the gateway's own token's request (for `actor` and API-key callers):
    /// client credentials with the same scope, audience and resource.
    pub own: ClientCredentials,
    /// What API-key callers get.
    pub api_key_callers: ApiKeyCallers,
    /// Whether the gateway's own token goes as the `actor_token`.
    pub actor: bool,
    /// Exchanged tokens kept per caller.
    pub per_caller: usize,
    /// Callers kept.
    pub callers: usize,
}

/// A pool's upstream credentials.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamAuth {
    /// `headers`, in name order.
    pub headers: Vec<SecretHeader>,
    /// `client-credentials`, if set.
    pub client_credentials: Option<ClientCredentials>,
    /// `token-exchange`, if set.
    pub token_exchange: Option<TokenExchange>,
}

impl UpstreamAuth {
    /// Whether the pool's backends get any credentials.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty()
            && self.client_credentials.is_none()
            && self.token_exchange.is_none()
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
    if file.token_exchange.is_some() && file.client_credentials.is_some() {
        p.add(
            format!("{at}.token-exchange"),
            "give `client-credentials` or `token-exchange`, not both (both set Authorization)",
        );
    }
    let token_exchange = file
        .token_exchange
        .as_ref()
        .and_then(|te| token_exchange(p, &format!("{at}.token-exchange"), te));
    let client_credentials = file
        .client_credentials
        .as_ref()
        .and_then(|cc| client_credentials(p, &format!("{at}.client-credentials"), cc));
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
        if lower == "authorization"
            && (file.client_credentials.is_some() || file.token_exchange.is_some())
        {
            p.add(
                &here,
                "`client-credentials` and `token-exchange` set Authorization: give one or the other",
            );
            continue;
        }
        headers.push(SecretHeader {
            name: lower,
            source,
            prefix,
        });
    }
    UpstreamAuth {
        headers,
        client_credentials,
        token_exchange,
    }
}

/// Where one secret comes from (`at` names it in problems).
fn secret_source(p: &mut Problems, at: &str, secret: &FileSecret) -> Option<SecretSource> {
    p.unknown(at, &secret.unknown, "file, env");
    if secret.prefix.is_some() {
        p.add(format!("{at}.prefix"), "a client secret takes no prefix");
    }
    match (&secret.file, &secret.env) {
        (Some(f), None) if !f.is_empty() => Some(SecretSource::File(PathBuf::from(f))),
        (None, Some(e)) if !e.is_empty() => Some(SecretSource::Env(e.clone())),
        _ => {
            p.add(at, "give exactly one of `file` and `env`");
            None
        }
    }
}

/// The keys of [`ClientFields`], as an unknown key's problem names them.
const CLIENT_KEYS: &str =
    "token-url, client-id, client-secret, scope, audience, resource, auth-method, timeout-ms";

/// The keys `client-credentials` and `token-exchange` share: the OAuth client, and what its
/// tokens are asked for.
struct ClientFields<'a> {
    token_url: &'a Option<String>,
    client_id: &'a Option<String>,
    client_secret: &'a Option<FileSecret>,
    scope: &'a Option<String>,
    audience: &'a Option<String>,
    resource: &'a Option<String>,
    auth_method: &'a Option<String>,
    timeout_ms: Option<u64>,
}

/// The client and its tokens' request, from the keys `client-credentials` and `token-exchange`
/// share (`at` names the section in problems).
fn client_request(p: &mut Problems, at: &str, keys: ClientFields<'_>) -> Option<ClientCredentials> {
    Some(ClientCredentials {
        client: oauth_client(p, at, &keys)?,
        scope: nonempty(keys.scope),
        audience: nonempty(keys.audience),
        resource: nonempty(keys.resource),
    })
}

/// The OAuth client: where it asks for tokens, and who it is there.
fn oauth_client(p: &mut Problems, at: &str, cc: &ClientFields<'_>) -> Option<OAuthClient> {
    let token_url = match cc.token_url.as_deref() {
        Some(u) => match url::Url::parse(u) {
            Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => {
                Some(u.to_owned())
            }
            _ => {
                p.add(format!("{at}.token-url"), "not an http(s) URL");
                None
            }
        },
        None => {
            p.add(format!("{at}.token-url"), "required");
            None
        }
    };
    let client_id = match cc.client_id.as_deref() {
        Some(id) if !id.is_empty() => Some(id.to_owned()),
        _ => {
            p.add(format!("{at}.client-id"), "required");
            None
        }
    };
    let client_secret = match cc.client_secret {
        Some(secret) => secret_source(p, &format!("{at}.client-secret"), secret),
        None => {
            p.add(format!("{at}.client-secret"), "required");
            None
        }
    };
    let auth = match cc.auth_method.as_deref() {
        None | Some("basic") => ClientAuth::Basic,
        Some("post") => ClientAuth::Post,
        Some(other) => {
            p.add(
                format!("{at}.auth-method"),
                format!("`{other}`: give `basic` or `post`"),
            );
            ClientAuth::Basic
        }
    };
    let timeout = std::time::Duration::from_millis(cc.timeout_ms.unwrap_or(5000).max(1));
    Some(OAuthClient {
        token_url: token_url?,
        client_id: client_id?,
        client_secret: client_secret?,
        auth,
        timeout,
    })
}

fn nonempty(v: &Option<String>) -> Option<String> {
    v.clone().filter(|s| !s.is_empty())
}

fn client_credentials(
    p: &mut Problems,
    at: &str,
    cc: &FileClientCredentials,
) -> Option<ClientCredentials> {
    p.unknown(at, &cc.unknown, CLIENT_KEYS);
    let keys = ClientFields {
        token_url: &cc.token_url,
        client_id: &cc.client_id,
        client_secret: &cc.client_secret,
        scope: &cc.scope,
        audience: &cc.audience,
        resource: &cc.resource,
        auth_method: &cc.auth_method,
        timeout_ms: cc.timeout_ms,
    };
    client_request(p, at, keys)
}

fn token_exchange(p: &mut Problems, at: &str, te: &FileTokenExchange) -> Option<TokenExchange> {
    let known = format!("{CLIENT_KEYS}, api-key-callers, actor, cache-per-caller, cache-callers");
    p.unknown(at, &te.unknown, &known);
    let api_key_callers = match te.api_key_callers.as_deref() {
        None | Some("refuse") => ApiKeyCallers::Refuse,
        Some("client-credentials") => ApiKeyCallers::ClientCredentials,
        Some(other) => {
            p.add(
                format!("{at}.api-key-callers"),
                format!("`{other}`: give `refuse` or `client-credentials`"),
            );
            ApiKeyCallers::Refuse
        }
    };
    let actor = match te.actor.as_deref() {
        None | Some("none") => false,
        Some("client-credentials") => true,
        Some(other) => {
            p.add(
                format!("{at}.actor"),
                format!("`{other}`: give `none` or `client-credentials`"),
            );
            false
        }
    };
    let bound = |p: &mut Problems, key: &str, v: Option<usize>, default: usize| match v {
        Some(0) => {
            p.add(format!("{at}.{key}"), "must be at least 1");
            default
        }
        v => v.unwrap_or(default),
    };
    let per_caller = bound(p, "cache-per-caller", te.cache_per_caller, 4);
    let callers = bound(p, "cache-callers", te.cache_callers, 10_000);
    let keys = ClientFields {
        token_url: &te.token_url,
        client_id: &te.client_id,
        client_secret: &te.client_secret,
        scope: &te.scope,
        audience: &te.audience,
        resource: &te.resource,
        auth_method: &te.auth_method,
        timeout_ms: te.timeout_ms,
    };
    Some(TokenExchange {
        own: client_request(p, at, keys)?,
        api_key_callers,
        actor,
        per_caller,
        callers,
    })
}

#[cfg(test)]
#[path = "upstream_auth_tests.rs"]
mod tests;
