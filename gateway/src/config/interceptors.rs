//! `interceptors` (SEP-2624, draft): the interceptor servers the gateway asks
//! (`interceptors.NAME`), and `routes[].interceptors`, the chain a route runs. File structs, the
//! typed settings with their defaults, validation. A leaf of `crate::config`: it imports only
//! `problems.rs` and `upstream_auth.rs` (the credentials, as a pool's).

use super::problems::{Problems, Unknown};
use super::upstream_auth::{FileUpstreamAuth, UpstreamAuth};
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// How long one invocation (and one `interceptors/list`) may take, by default.
pub const DEFAULT_TIMEOUT_MS: u64 = 2000;
/// The largest payload sent to an interceptor server, by default.
pub const DEFAULT_MAX_PAYLOAD_BYTES: usize = 1 << 20;
/// The most interceptors kept of one server's list, by default.
pub const DEFAULT_MAX_LISTED: usize = 32;
/// How long a list is used when its answer gives no `ttlMs`, by default.
pub const DEFAULT_LIST_TTL_MS: u64 = 60_000;

/// `interceptors.NAME` in the file: one interceptor server.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileInterceptorServer {
    /// The interceptor server's MCP endpoint (Streamable HTTP), `http://` or `https://`, e.g. `http://127.0.0.1:9400/mcp`. Required; no userinfo.
    pub url: Option<String>,
    /// How long one `interceptor/invoke` (or `interceptors/list`) may take, in milliseconds, connection included; it is also sent as `timeoutMs`. Past it the interceptor has failed (-32000, or passed by when it is `failOpen`). Default 2000.
    pub timeout_ms: Option<u64>,
    /// The credentials the gateway sends to this server, as a pool's `upstream-auth`: `headers` from secrets, or `client-credentials`. (`token-exchange` is refused: the gateway asks on its own behalf, never as the caller.) Default: none.
    pub upstream_auth: Option<FileUpstreamAuth>,
    /// The largest payload (a request's `params`, an answer's `result`, as JSON) sent to this server; a larger one is not sent and counts as the interceptor's failure (refused unless it is `failOpen`). An answer may be this plus 64 KiB. Default 1048576 (1 MiB).
    pub max_payload_bytes: Option<usize>,
    /// The most interceptors kept of this server's `interceptors/list` (the first ones, in its order); the rest are left out and logged. Default 32.
    pub max_interceptors: Option<usize>,
    /// How long a list is used when its answer gives no `ttlMs`, in milliseconds; a `ttlMs` is kept between 1000 and 3600000. Default 60000.
    pub list_ttl_ms: Option<u64>,
    /// Per interceptor name, the JSON object sent as the invocation's `config`. Default: none sent.
    #[serde(default)]
    pub config: BTreeMap<String, serde_json::Value>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// One interceptor server, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct InterceptorServerConfig {
    /// Its name (the key under `interceptors`).
    pub name: String,
    /// `url`.
    pub url: String,
    /// `timeout-ms`. Default 2 s.
    pub timeout: Duration,
    /// `upstream-auth`. Default: none.
    pub auth: UpstreamAuth,
    /// `max-payload-bytes`. Default 1 MiB.
    pub max_payload_bytes: usize,
    /// `max-interceptors`. Default 32.
    pub max_listed: usize,
    /// `list-ttl-ms`. Default 60 s.
    pub list_ttl: Duration,
    /// `config`: per interceptor name, its `config` object.
    pub config: BTreeMap<String, serde_json::Value>,
}

/// Validates the `interceptors` section: the servers, in name order (routes name them by index).
pub(crate) fn validate(
    p: &mut Problems,
    file: &BTreeMap<String, FileInterceptorServer>,
) -> Vec<InterceptorServerConfig> {
    file.iter()
        .filter_map(|(name, server)| server_config(p, name, server))
        .collect()
}

fn server_config(
    p: &mut Problems,
    name: &str,
    file: &FileInterceptorServer,
) -> Option<InterceptorServerConfig> {
    let at = format!("interceptors.{name}");
    p.unknown(
        &at,
        &file.unknown,
        "url, timeout-ms, upstream-auth, max-payload-bytes, max-interceptors, list-ttl-ms, config",
    );
    if name.is_empty() {
        p.add(&at, "an interceptor server needs a name");
    }
    let url = url(p, &at, file.url.as_deref());
    let timeout_ms = p.at_least_one(
        &format!("{at}.timeout-ms"),
        file.timeout_ms,
        DEFAULT_TIMEOUT_MS,
    );
    let max_payload_bytes = p.at_least_one(
        &format!("{at}.max-payload-bytes"),
        file.max_payload_bytes,
        DEFAULT_MAX_PAYLOAD_BYTES,
    );
    let max_listed = p.at_least_one(
        &format!("{at}.max-interceptors"),
        file.max_interceptors,
        DEFAULT_MAX_LISTED,
    );
    let list_ttl_ms = p.at_least_one(
        &format!("{at}.list-ttl-ms"),
        file.list_ttl_ms,
        DEFAULT_LIST_TTL_MS,
    );
    let auth = match &file.upstream_auth {
        Some(a) => {
            if a.token_exchange.is_some() {
                p.add(
                    format!("{at}.upstream-auth.token-exchange"),
                    "an interceptor server is asked by the gateway on its own behalf: give `headers` or `client-credentials`",
                );
            }
            super::upstream_auth::validate(p, &at, a)
        }
        None => UpstreamAuth::default(),
    };
    for (interceptor, value) in &file.config {
        if !value.is_object() {
            p.add(
                format!("{at}.config.{interceptor}"),
                "must be a mapping (it is sent as the invocation's `config` object)",
            );
        }
    }
    Some(InterceptorServerConfig {
        name: name.to_owned(),
        url: url?,
        timeout: Duration::from_millis(timeout_ms),
        auth,
        max_payload_bytes,
        max_listed,
        list_ttl: Duration::from_millis(list_ttl_ms),
        config: file.config.clone(),
    })
}

/// `url`: an http(s) URL with a host and no userinfo (it is named in logs).
fn url(p: &mut Problems, at: &str, url: Option<&str>) -> Option<String> {
    let Some(text) = url else {
        p.add(format!("{at}.url"), "required");
        return None;
    };
    let problem = match url::Url::parse(text) {
        Ok(u) if !matches!(u.scheme(), "http" | "https") => "not an http(s) URL",
        Ok(u) if !u.has_host() || u.host_str().is_some_and(str::is_empty) => "names no host",
        Ok(u) if !u.username().is_empty() || u.password().is_some() => {
            "must not carry userinfo (user:password@): give credentials in `upstream-auth`"
        }
        Ok(u) if u.fragment().is_some() => "must not carry a fragment",
        Ok(_) => return Some(text.to_owned()),
        Err(_) => "not an URL",
    };
    p.add(format!("{at}.url"), problem);
    None
}

/// `routes[i].interceptors`: each name an interceptor server of `servers`, at most once; the
/// indices, in the route's order.
pub(crate) fn route_chain(
    p: &mut Problems,
    at: &str,
    names: &[String],
    servers: &[InterceptorServerConfig],
) -> Vec<usize> {
    let mut chain = Vec::new();
    for (j, name) in names.iter().enumerate() {
        let here = format!("{at}.interceptors[{j}]");
        match servers.iter().position(|s| &s.name == name) {
            Some(i) if chain.contains(&i) => p.add(here, format!("`{name}` is named twice")),
            Some(i) => chain.push(i),
            None => {
                let known: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
                p.add(
                    here,
                    format!(
                        "`{name}` is no interceptor server (configured under `interceptors`: {})",
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ),
                );
            }
        }
    }
    chain
}

#[cfg(test)]
#[path = "interceptors_tests.rs"]
mod tests;
