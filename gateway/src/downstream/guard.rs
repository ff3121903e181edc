//! DNS-rebinding protection for the listener: the `Host` must be one the gateway serves
//! (`allowed-hosts`) and a browser's `Origin` one it trusts (`allowed-origins`). Checked before
//! anything else, so a foreign page never reaches a backend. A loopback listener serves only
//! loopback names unless told otherwise (config defaults).
//!
//! Patterns are matched by hand rather than with a glob library: a `*` must stay inside one
//! DNS label or one port (it never matches `.`, `:`, `/` or `@`), so `localhost:*` cannot
//! match `localhost:8080.evil.com` nor `http://localhost:*` match `http://localhost:1@evil.com`.
//! A pattern that is just `*` matches anything (the guard turned off on purpose).

use crate::config::Config;
use crate::error::GatewayError;
use pingora::http::RequestHeader;

/// Compiled `allowed-hosts` / `allowed-origins`; `None` means "any".
#[derive(Debug, Default)]
pub struct PeerGuard {
    hosts: Option<Patterns>,
    origins: Option<Patterns>,
}

impl PeerGuard {
    /// Compiles the listener's lists.
    pub fn new(config: &Config) -> PeerGuard {
        PeerGuard {
            hosts: Patterns::new(&config.allowed_hosts),
            origins: Patterns::new(&config.allowed_origins),
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

/// Host or origin patterns: `*` (any run within a label or port), `?` (one such character),
/// case-insensitive; `name:*` also matches a bare `name`.
#[derive(Debug, Default, Clone)]
pub struct Patterns {
    patterns: Vec<Pattern>,
    any: bool,
}

/// One pattern, lower case, and how it is matched (found once, when the config loads).
#[derive(Debug, Clone)]
struct Pattern {
    text: Vec<u8>,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// No wildcard: the whole value.
    Exact,
    /// One `*` at the end only (`host:*`): the part before it, then a run of non-separators.
    Prefix,
    /// Anything else: [`matches`].
    Glob,
}

impl Pattern {
    fn new(text: Vec<u8>) -> Pattern {
        let kind = match text.iter().position(|&c| c == b'*' || c == b'?') {
            None => Kind::Exact,
            Some(star) if star + 1 == text.len() && text[star] == b'*' => Kind::Prefix,
            Some(_) => Kind::Glob,
        };
        Pattern { text, kind }
    }

    /// [`matches`], without its byte-by-byte recursion for the usual patterns (checked on
    /// every request): a name without wildcards is compared whole, `name*` (the `host:*` of
    /// the default loopback list) as its prefix and a run of non-separators.
    fn is_match(&self, value: &[u8]) -> bool {
        let p = &self.text;
        match self.kind {
            Kind::Exact => value.eq_ignore_ascii_case(p),
            Kind::Prefix => {
                let star = p.len() - 1;
                value.len() >= star
                    && value[..star].eq_ignore_ascii_case(&p[..star])
                    && !value[star..].iter().any(|&c| separator(c))
            }
            Kind::Glob => matches(p, value),
        }
    }
}

impl Patterns {
    /// `None` for an empty list (anything goes).
    pub fn new(patterns: &[String]) -> Option<Patterns> {
        if patterns.is_empty() {
            return None;
        }
        let mut out = Patterns::default();
        for p in patterns {
            let p = p.trim().to_ascii_lowercase();
            if p == "*" {
                out.any = true;
            }
            if let Some(bare) = p.strip_suffix(":*") {
                out.patterns.push(Pattern::new(bare.as_bytes().to_vec()));
            }
            out.patterns.push(Pattern::new(p.into_bytes()));
        }
        Some(out)
    }

    /// Whether `value` matches one of the patterns.
    pub fn is_match(&self, value: &str) -> bool {
        // compared case-insensitively in place (patterns are lower case): no lowered copy
        self.any || self.patterns.iter().any(|p| p.is_match(value.as_bytes()))
    }
}

/// Characters a `*` or `?` never stands for: they separate labels, ports, schemes and users.
fn separator(c: u8) -> bool {
    matches!(
        c,
        b'.' | b':' | b'/' | b'@' | b'[' | b']' | b'?' | b'#' | b'\\'
    )
}

fn matches(pattern: &[u8], value: &[u8]) -> bool {
    match pattern.split_first() {
        None => value.is_empty(),
        Some((b'*', rest)) => {
            // the longest run of non-separators this star may take, tried shortest first
            let run = value.iter().take_while(|c| !separator(**c)).count();
            (0..=run).any(|n| matches(rest, &value[n..]))
        }
        Some((b'?', rest)) => match value.split_first() {
            Some((c, tail)) if !separator(*c) => matches(rest, tail),
            _ => false,
        },
        Some((p, rest)) => match value.split_first() {
            Some((c, tail)) if c.to_ascii_lowercase() == *p => matches(rest, tail),
            _ => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_fast_match_is_the_match(
            pattern in "[a-c1.:*?\\[\\]]{0,8}",
            value in "[a-cA-C1.:/\\[\\]]{0,10}",
        ) {
            let pattern = pattern.to_ascii_lowercase();
            prop_assert_eq!(
                Pattern::new(pattern.as_bytes().to_vec()).is_match(value.as_bytes()),
                matches(pattern.as_bytes(), value.as_bytes())
            );
        }
    }

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
    fn a_star_never_crosses_a_label_a_port_or_a_user() {
        let g = guard(&["localhost:*", "*.corp.example"], &["http://localhost:*"]);
        for bad in [
            "localhost:8080.evil.com",
            "localhost:1@evil.com",
            "evil.com.corp.example.net",
            "a.b.corp.example",
        ] {
            assert!(g.check(&req(Some(bad), None)).is_err(), "{bad}");
        }
        for bad in [
            "http://localhost:1@evil.com",
            "http://localhost:80.evil.com",
        ] {
            let e = g.check(&req(Some("localhost"), Some(bad))).unwrap_err();
            assert_eq!(e.kind.code(), -32008, "{bad}");
        }
        assert!(g
            .check(&req(Some("localhost:99"), Some("http://localhost:5173")))
            .is_ok());
    }

    #[test]
    fn a_lone_star_turns_the_guard_off() {
        let g = guard(&["*"], &["*"]);
        assert!(g
            .check(&req(
                Some("evil.example.com:1"),
                Some("http://evil.example.com")
            ))
            .is_ok());
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
