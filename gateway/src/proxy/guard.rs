//! DNS-rebinding protection for the listener: the `Host` must be one the gateway serves
//! (`allowed-hosts`) and a browser's `Origin` one it trusts (`allowed-origins`). Checked before
//! anything else, so a foreign page never reaches a backend.

use crate::config::Config;
use crate::error::GatewayError;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use pingora::http::RequestHeader;

/// Compiled `allowed-hosts` / `allowed-origins`; `None` means "any".
#[derive(Debug, Default)]
pub struct PeerGuard {
    hosts: Option<GlobSet>,
    origins: Option<GlobSet>,
}

impl PeerGuard {
    /// Compiles the listener's lists.
    pub fn new(config: &Config) -> PeerGuard {
        PeerGuard {
            hosts: compile(&config.allowed_hosts),
            origins: compile(&config.allowed_origins),
        }
    }

    /// Whether the request may proceed; the error to answer otherwise.
    pub fn check(&self, req: &RequestHeader) -> Result<(), GatewayError> {
        if let Some(hosts) = &self.hosts {
            let host = req
                .headers
                .get(http::header::HOST)
                .and_then(|v| v.to_str().ok())
                .or_else(|| req.uri.authority().map(|a| a.as_str()));
            match host {
                Some(h) if hosts.is_match(h) => {}
                other => return Err(GatewayError::host_not_allowed(other)),
            }
        }
        if let Some(origins) = &self.origins {
            if let Some(origin) = req.headers.get(http::header::ORIGIN) {
                let origin = String::from_utf8_lossy(origin.as_bytes());
                if !origins.is_match(origin.as_ref()) {
                    return Err(GatewayError::origin_not_allowed(&origin));
                }
            }
        }
        Ok(())
    }
}

/// Patterns use `*` and `?` only (brackets stay literal: `[::1]:*` is an IPv6 host);
/// `name:*` also matches `name` without a port.
fn compile(patterns: &[String]) -> Option<GlobSet> {
    if patterns.is_empty() {
        return None;
    }
    let mut set = GlobSetBuilder::new();
    for p in patterns {
        let p = p.trim();
        let bare = p.strip_suffix(":*").map(str::to_owned);
        for pattern in std::iter::once(p.to_owned()).chain(bare) {
            let glob = GlobBuilder::new(&literal_brackets(&pattern))
                .literal_separator(false)
                .case_insensitive(true)
                .build()
                .expect("escaped patterns always compile");
            set.add(glob);
        }
    }
    Some(set.build().expect("escaped patterns always compile"))
}

fn literal_brackets(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    for c in pattern.chars() {
        match c {
            '[' | ']' | '{' | '}' | '\\' => {
                out.push('[');
                out.push(c);
                out.push(']');
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(hosts: &[&str], origins: &[&str]) -> PeerGuard {
        let mut config = crate::config::parse(
            "pools: {p: {backends: ['127.0.0.1:1']}}\nroutes: [{path: /mcp, pool: p}]\n",
        )
        .expect("valid config");
        config.allowed_hosts = hosts.iter().map(|s| s.to_string()).collect();
        config.allowed_origins = origins.iter().map(|s| s.to_string()).collect();
        PeerGuard::new(&config)
    }

    fn req(host: Option<&str>, origin: Option<&str>) -> RequestHeader {
        let mut r = RequestHeader::build("POST", b"/mcp", None).unwrap();
        if let Some(h) = host {
            r.insert_header("host", h).unwrap();
        }
        if let Some(o) = origin {
            r.insert_header("origin", o).unwrap();
        }
        r
    }

    #[test]
    fn empty_lists_allow_everything() {
        let g = guard(&[], &[]);
        assert!(g
            .check(&req(
                Some("evil.example.com"),
                Some("http://evil.example.com")
            ))
            .is_ok());
        assert!(g.check(&req(None, None)).is_ok());
    }

    #[test]
    fn hosts_match_with_and_without_port() {
        let g = guard(
            &["localhost:*", "127.0.0.1:*", "[::1]:*", "*.corp.example"],
            &[],
        );
        for ok in [
            "localhost",
            "LOCALHOST:8080",
            "127.0.0.1:3000",
            "[::1]:9",
            "mcp.corp.example",
        ] {
            assert!(g.check(&req(Some(ok), None)).is_ok(), "{ok}");
        }
        for bad in [
            "evil.example.com",
            "127.0.0.2:80",
            "localhost.evil.com",
            "corp.example",
        ] {
            let e = g.check(&req(Some(bad), None)).unwrap_err();
            assert_eq!(e.kind.code(), -32009, "{bad}");
            assert_eq!(e.kind.http_status(), 421);
        }
        assert!(g.check(&req(None, None)).is_err(), "no Host at all");
    }

    #[test]
    fn origins_are_checked_only_when_sent() {
        let g = guard(&[], &["http://localhost:*", "https://app.example.com"]);
        assert!(g.check(&req(Some("x"), None)).is_ok());
        assert!(g
            .check(&req(Some("x"), Some("http://localhost:5173")))
            .is_ok());
        assert!(g
            .check(&req(Some("x"), Some("https://app.example.com")))
            .is_ok());
        let e = g
            .check(&req(Some("x"), Some("http://evil.example.com")))
            .unwrap_err();
        assert_eq!(e.kind.code(), -32008);
        assert_eq!(e.kind.http_status(), 403);
        assert_eq!(e.data["origin"], "http://evil.example.com");
    }
}
