//! Safe defaults for a gateway facing hostile clients: the admin API's token, the client
//! timeouts (slow headers, slow bodies, idle keep-alive connections), and DNS-rebinding
//! protection that a loopback listener turns on by itself, as the MCP SDKs do.

use super::file::{FileAdminToken, FileClientTimeouts};
use super::problems::Problems;
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

/// `Host` patterns a loopback listener serves when `allowed-hosts` is not set.
pub const LOOPBACK_HOSTS: &[&str] = &["localhost:*", "127.0.0.1:*", "[::1]:*"];

/// `Origin` patterns a loopback listener accepts when `allowed-origins` is not set.
pub const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

/// How long a client may take, per connection. Defaults follow nginx (`client_header_timeout`
/// 60 s, `client_body_timeout` 60 s, `keepalive_timeout` 75 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientTimeouts {
    /// From the first byte of a request to the end of its header block. Default 60 s.
    pub header: Duration,
    /// Longest silence while a request body is read. Default 60 s.
    pub body: Duration,
    /// Longest wait for the next request on a kept-alive connection. Default 75 s.
    pub idle: Duration,
}

impl Default for ClientTimeouts {
    fn default() -> Self {
        ClientTimeouts {
            header: Duration::from_secs(60),
            body: Duration::from_secs(60),
            idle: Duration::from_secs(75),
        }
    }
}

/// The admin API's bearer token (`Authorization: Bearer …`) and where it came from. Its
/// `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct AdminToken {
    /// `file PATH` or `env NAME`, for logs.
    pub source: String,
    secret: String,
}

impl AdminToken {
    /// A token with this secret (tests; the config loader reads files and variables).
    pub fn new(source: impl Into<String>, secret: impl Into<String>) -> AdminToken {
        AdminToken {
            source: source.into(),
            secret: secret.into(),
        }
    }

    /// Whether `presented` is the token, compared in time independent of where it differs
    /// (`subtle`'s constant-time equality; a presented token of another length is refused at
    /// once: the length is not the secret).
    pub fn matches(&self, presented: &str) -> bool {
        use subtle::ConstantTimeEq;
        self.secret.as_bytes().ct_eq(presented.as_bytes()).into()
    }
}

impl fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AdminToken({}, ***)", self.source)
    }
}

/// `admin-token`: exactly one of `file` and `env`, naming a non-empty token.
pub(super) fn admin_token(p: &mut Problems, t: &Option<FileAdminToken>) -> Option<AdminToken> {
    let t = t.as_ref()?;
    p.unknown("admin-token", &t.unknown, "file, env");
    let (source, read) = match (&t.file, &t.env) {
        (Some(path), None) => (
            format!("file {path}"),
            std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}")),
        ),
        (None, Some(name)) => (
            format!("env {name}"),
            std::env::var(name).map_err(|_| format!("environment variable {name} is not set")),
        ),
        _ => {
            p.add("admin-token", "give exactly one of `file` and `env`");
            return None;
        }
    };
    match read.map(|s| s.trim().to_owned()) {
        Ok(secret) if secret.len() >= 16 => Some(AdminToken { source, secret }),
        Ok(_) => {
            p.add("admin-token", "the token must be at least 16 characters");
            None
        }
        Err(e) => {
            p.add("admin-token", e);
            None
        }
    }
}

/// `client-timeouts`: each at least one second.
pub(super) fn client_timeouts(p: &mut Problems, t: &FileClientTimeouts) -> ClientTimeouts {
    p.unknown("client-timeouts", &t.unknown, "header-s, body-s, idle-s");
    let d = ClientTimeouts::default();
    let mut secs = |key: &str, v: Option<u64>, default: Duration| match v {
        Some(0) => {
            p.add(format!("client-timeouts.{key}"), "must be at least 1");
            default
        }
        Some(s) => Duration::from_secs(s),
        None => default,
    };
    ClientTimeouts {
        header: secs("header-s", t.header_s, d.header),
        body: secs("body-s", t.body_s, d.body),
        idle: secs("idle-s", t.idle_s, d.idle),
    }
}

/// The listener's allowed hosts or origins: the configured ones, or the loopback names when
/// the listener is on loopback and none are configured.
pub(super) fn guard_list(
    listen: Option<SocketAddr>,
    given: Vec<String>,
    loopback: &[&str],
) -> Vec<String> {
    match listen {
        Some(addr) if given.is_empty() && addr.ip().is_loopback() => {
            loopback.iter().map(|s| (*s).to_owned()).collect()
        }
        _ => given,
    }
}
