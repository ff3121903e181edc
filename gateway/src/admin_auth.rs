//! Who may use the admin listener. No other site's page may drive it (a cross-site form POST,
//! a page on a rebound DNS name), and changing anything needs the operator's token:
//! - `Host`: an IP literal, `localhost`, or a name in the listener's `allowed-hosts`
//!   (a rebound name is none of these): otherwise 421;
//! - `Origin`: absent (not a browser), a loopback origin, or the listener's own (the console's
//!   page, whose origin is the `Host` it was loaded from): otherwise 403;
//! - `Sec-Fetch-Site` (sent by browsers): on anything but GET and HEAD, `same-origin` or
//!   `none` (typed by the operator) only: otherwise 403;
//! - `/admin/*`: with `admin-token` set, every call needs `Authorization: Bearer TOKEN` (401
//!   otherwise: backend addresses and session ids are for operators only); without it, reads
//!   are served and mutating calls (drain, undrain) are refused with 403.
//! - `/healthz`, `/readyz` and `/metrics` need no token (probes and scrapers), nor does the
//!   console (`/`, `/console/*`), which is read-only: its drain buttons call `/admin/*` with
//!   the token in `Authorization` (a header no other origin's page can make a browser send
//!   here), never with a cookie.

use crate::config::{Config, LOOPBACK_ORIGINS};
use crate::downstream::guard::Patterns;
use http::header::{AUTHORIZATION, HOST, ORIGIN};
use http::HeaderName;
use pingora::http::RequestHeader;
use std::net::IpAddr;

/// Why an admin request is refused: the HTTP status and a message for the operator.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    /// HTTP status: 401, 403 or 421.
    pub status: http::StatusCode,
    /// What to do about it.
    pub message: String,
}

fn refuse(status: http::StatusCode, message: impl Into<String>) -> Result<(), Refusal> {
    Err(Refusal {
        status,
        message: message.into(),
    })
}

/// Whether `req` may be served by the admin listener under `config`.
pub fn check(req: &RequestHeader, config: &Config) -> Result<(), Refusal> {
    let host = req
        .headers
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let listener_hosts = Patterns::new(&config.allowed_hosts);
    if !(is_ip_or_localhost(host) || listener_hosts.is_some_and(|p| p.is_match(host))) {
        return refuse(
            http::StatusCode::MISDIRECTED_REQUEST,
            format!("Host `{host}` is not served here: use an IP address or localhost"),
        );
    }
    if let Some(origin) = req.headers.get(ORIGIN) {
        let origin = String::from_utf8_lossy(origin.as_bytes());
        let loopback: Vec<String> = LOOPBACK_ORIGINS.iter().map(|s| (*s).to_owned()).collect();
        let own = ["http://", "https://"].map(|scheme| format!("{scheme}{host}"));
        if !(own.contains(&origin.to_string())
            || Patterns::new(&loopback).is_some_and(|p| p.is_match(&origin)))
        {
            return refuse(
                http::StatusCode::FORBIDDEN,
                format!("browser Origin `{origin}` may not use the admin API"),
            );
        }
    }
    let site = req.headers.get(HeaderName::from_static("sec-fetch-site"));
    let reads = req.method == http::Method::GET || req.method == http::Method::HEAD;
    if let Some(site) = site.filter(|s| !reads && !matches!(s.as_bytes(), b"same-origin" | b"none"))
    {
        let site = String::from_utf8_lossy(site.as_bytes());
        return refuse(
            http::StatusCode::FORBIDDEN,
            format!("a request from another site (Sec-Fetch-Site: {site}) may not change anything"),
        );
    }
    if !req.uri.path().starts_with("/admin/") {
        return Ok(());
    }
    match &config.admin_token {
        Some(token) => {
            let presented = req
                .headers
                .get(AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::trim);
            match presented {
                Some(p) if token.matches(p) => Ok(()),
                _ => refuse(
                    http::StatusCode::UNAUTHORIZED,
                    "give the admin token: Authorization: Bearer TOKEN",
                ),
            }
        }
        None if req.method == http::Method::GET || req.method == http::Method::HEAD => Ok(()),
        None => refuse(
            http::StatusCode::FORBIDDEN,
            "changing anything through the admin API needs `admin-token` in the config",
        ),
    }
}

/// An IP literal (`127.0.0.1`, `[::1]`, with or without a port) or `localhost`: names a
/// rebinding attack cannot use.
fn is_ip_or_localhost(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                h
            } else {
                host
            }
        }),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<IpAddr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AdminToken;

    fn config(token: bool) -> Config {
        let mut c = crate::config::parse(
            "pools: {p: {backends: ['127.0.0.1:1']}}\nroutes: [{path: /mcp, pool: p}]\n",
        )
        .expect("valid config");
        c.admin_token = token.then(|| AdminToken::new("test", "s3cret-admin-token"));
        c
    }

    fn req(method: &str, path: &str, headers: &[(&str, &str)]) -> RequestHeader {
        let mut r = RequestHeader::build(method, path.as_bytes(), None).unwrap();
        r.insert_header("host", "127.0.0.1:9090").unwrap();
        for (k, v) in headers {
            r.insert_header(k.to_string(), *v).unwrap();
        }
        r
    }

    fn status(r: Result<(), Refusal>) -> u16 {
        r.map_or_else(|e| e.status.as_u16(), |()| 200)
    }

    #[test]
    fn a_cross_site_post_is_refused_even_with_the_token() {
        let bearer = ("authorization", "Bearer s3cret-admin-token");
        let evil = ("origin", "http://evil.example");
        let drain = "/admin/backends/drain?pool=p&backend=127.0.0.1:1";
        assert_eq!(
            status(check(&req("POST", drain, &[evil, bearer]), &config(true))),
            403
        );
        assert_eq!(
            status(check(&req("POST", drain, &[bearer]), &config(true))),
            200
        );
    }

    #[test]
    fn mutating_calls_need_a_configured_token_and_reads_need_it_once_set() {
        let drain = "/admin/backends/drain?pool=p&backend=127.0.0.1:1";
        assert_eq!(status(check(&req("POST", drain, &[]), &config(false))), 403);
        assert_eq!(status(check(&req("POST", drain, &[]), &config(true))), 401);
        let wrong = ("authorization", "Bearer s3cret-admin-tokeX");
        assert_eq!(
            status(check(&req("POST", drain, &[wrong]), &config(true))),
            401
        );
        assert_eq!(
            status(check(&req("GET", "/admin/backends", &[]), &config(false))),
            200
        );
        assert_eq!(
            status(check(&req("GET", "/admin/backends", &[]), &config(true))),
            401
        );
        for open in ["/metrics", "/healthz", "/readyz"] {
            assert_eq!(
                status(check(&req("GET", open, &[]), &config(true))),
                200,
                "{open}"
            );
        }
    }

    #[test]
    fn the_consoles_own_origin_may_post_with_the_token_and_another_site_may_not() {
        let bearer = ("authorization", "Bearer s3cret-admin-token");
        let drain = "/admin/backends/drain?pool=p&backend=127.0.0.1:1";
        let mut own = req("POST", drain, &[bearer, ("origin", "http://10.1.2.3:9090")]);
        own.insert_header("host", "10.1.2.3:9090").unwrap();
        assert_eq!(status(check(&own, &config(true))), 200);
        own.insert_header("sec-fetch-site", "same-origin").unwrap();
        assert_eq!(status(check(&own, &config(true))), 200);
        own.insert_header("sec-fetch-site", "cross-site").unwrap();
        assert_eq!(status(check(&own, &config(true))), 403);
        let other = req("POST", drain, &[bearer, ("origin", "http://10.9.9.9:9090")]);
        assert_eq!(status(check(&other, &config(true))), 403);
        // the page itself is read-only and needs no token; a link from elsewhere may open it
        let page = req("GET", "/console", &[("sec-fetch-site", "cross-site")]);
        assert_eq!(status(check(&page, &config(true))), 200);
        let events = req("GET", "/console/events", &[]);
        assert_eq!(status(check(&events, &config(true))), 200);
    }

    #[test]
    fn a_rebound_host_name_is_refused_and_ip_literals_pass() {
        let mut r = req("GET", "/metrics", &[]);
        for (host, want) in [
            ("evil.example:9090", 421),
            ("localhost:9090", 200),
            ("10.1.2.3:9090", 200),
            ("[::1]:9090", 200),
            ("127.0.0.1", 200),
        ] {
            r.insert_header("host", host).unwrap();
            assert_eq!(status(check(&r, &config(false))), want, "{host}");
        }
        let local = ("origin", "http://localhost:3000");
        assert_eq!(
            status(check(&req("GET", "/metrics", &[local]), &config(false))),
            200
        );
    }
}
