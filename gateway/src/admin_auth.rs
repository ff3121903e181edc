//! Who may use the admin listener. No other site's page may drive it (a cross-site form POST,
//! a page on a rebound DNS name), and changing anything needs the operator's token:
//! - `Host`: an IP literal, `localhost`, or a name in the listener's `allowed-hosts`
//!   (a rebound name is none of these): otherwise 421 (-32009);
//! - `Origin`: absent (not a browser), a loopback origin, or the listener's own (the console's
//!   page, whose origin is the `Host` it was loaded from): otherwise 403 (-32008);
//! - `Sec-Fetch-Site` (sent by browsers): on anything but GET and HEAD, `same-origin` or
//!   `none` (typed by the operator) only: otherwise 403 (-32008);
//! - `/admin/*`: with `admin-token` set, every call needs `Authorization: Bearer TOKEN` (401,
//!   -32023, otherwise: backend addresses and session ids are for operators only); without
//!   it, reads are served and mutating calls (drain, undrain) are refused with 403 (-32024);
//!   `POST /admin/console/ticket` is served then too (it answers that no ticket is needed);
//! - the console's event stream (`/console/events`, what `/admin/*` shows and more): with
//!   `admin-token` set, the token in `Authorization` or a ticket minted with it
//!   (`?ticket=`, one use, 60 s: `console/tickets.rs`), else 401 (-32023,
//!   `data.reason`: `ticket-missing`, `ticket-invalid`) ([`stream_access`]);
//! - `/healthz`, `/readyz` and `/metrics` need no token (probes and scrapers), nor do the
//!   console's page and files (`/`, `/console/*`), which hold no data: the page asks for the
//!   token and sends it in `Authorization` (a header no other origin's page can make a browser
//!   send here), never with a cookie.
//!
//! Each refusal is a JSON-RPC error ([`Refusal::error`]).
//!
//! Each connection is held to the client listener's bounds ([`guarded`], `downstream/`): a
//! request head must come whole within `client-timeouts.header-s` of its first byte (408,
//! -32028) and stay within 64 KiB and 100 lines (431, -32027), an idle connection closes after
//! `client-timeouts.idle-s`, and at most [`MAX_CONNECTIONS`] are open, half of them from one
//! client address (503, -32018).

use crate::config::{Config, LOOPBACK_ORIGINS};
use crate::downstream::guard::Patterns;
use crate::error::{ErrorKind, GatewayError};
use crate::state::State;
use arc_swap::ArcSwap;
use http::header::{AUTHORIZATION, HOST, ORIGIN};
use http::HeaderName;
use pingora::http::RequestHeader;
use std::net::IpAddr;
use std::sync::Arc;

/// The path that mints a ticket for the console's event stream.
pub const TICKET_PATH: &str = "/admin/console/ticket";

/// Why an admin request is refused: the HTTP status, the error's kind, why, and a message for
/// the operator.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    /// HTTP status: 401, 403 or 421.
    pub status: http::StatusCode,
    /// The JSON-RPC error's kind.
    pub kind: ErrorKind,
    /// `data.reason`.
    pub reason: &'static str,
    /// What to do about it.
    pub message: String,
}

impl Refusal {
    /// The refusal as the JSON-RPC error answered (id `null`: no JSON-RPC request was made).
    pub fn error(&self) -> GatewayError {
        let mut e = GatewayError::new(self.kind, self.message.clone()).with("reason", self.reason);
        e.status = Some(self.status.as_u16());
        e
    }
}

fn refuse(
    status: http::StatusCode,
    (kind, reason): (ErrorKind, &'static str),
    message: impl Into<String>,
) -> Result<(), Refusal> {
    Err(Refusal {
        status,
        kind,
        reason,
        message: message.into(),
    })
}

/// Whether `req` carries `Authorization: Bearer` with the configured admin token.
fn bearer_matches(req: &RequestHeader, token: &crate::config::AdminToken) -> bool {
    req.headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .is_some_and(|p| token.matches(p))
}

/// Whether the console's event stream may be opened by `req` (which passed [`check`]): with
/// `admin-token` set, the token in `Authorization`, or a `ticket` in the query that `redeem`
/// accepts (and uses up).
pub fn stream_access(
    req: &RequestHeader,
    config: &Config,
    redeem: impl FnOnce(&str) -> bool,
) -> Result<(), Refusal> {
    let Some(token) = &config.admin_token else {
        return Ok(());
    };
    if bearer_matches(req, token) {
        return Ok(());
    }
    let ticket = req
        .uri
        .query()
        .unwrap_or("")
        .split('&')
        .find_map(|kv| kv.strip_prefix("ticket="));
    let unauthorized = http::StatusCode::UNAUTHORIZED;
    match ticket {
        Some(t) if redeem(t) => Ok(()),
        Some(_) => refuse(
            unauthorized,
            (ErrorKind::Unauthorized, "ticket-invalid"),
            "this console ticket is unknown, used or expired: mint another with POST /admin/console/ticket",
        ),
        None => refuse(
            unauthorized,
            (ErrorKind::Unauthorized, "ticket-missing"),
            "the console's event stream needs the admin token: a ticket from POST /admin/console/ticket (?ticket=) or Authorization: Bearer TOKEN",
        ),
    }
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
            (ErrorKind::HostNotAllowed, "host"),
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
                (ErrorKind::OriginNotAllowed, "origin"),
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
            (ErrorKind::OriginNotAllowed, "cross-site"),
            format!("a request from another site (Sec-Fetch-Site: {site}) may not change anything"),
        );
    }
    if !req.uri.path().starts_with("/admin/") {
        return Ok(());
    }
    match &config.admin_token {
        Some(token) if bearer_matches(req, token) => Ok(()),
        Some(_) => refuse(
            http::StatusCode::UNAUTHORIZED,
            (ErrorKind::Unauthorized, "admin-token"),
            "give the admin token: Authorization: Bearer TOKEN",
        ),
        None if req.method == http::Method::GET || req.method == http::Method::HEAD => Ok(()),
        // nothing to guard: it answers that the stream needs no ticket
        None if req.uri.path() == TICKET_PATH => Ok(()),
        None => refuse(
            http::StatusCode::FORBIDDEN,
            (ErrorKind::Forbidden, "no-admin-token"),
            "changing anything through the admin API needs `admin-token` in the config",
        ),
    }
}

/// Connections the admin listener holds open at once (probes, scrapes, a few consoles of 16
/// streams at most and the operator's calls need far fewer). One client address may hold half
/// of them, so a port-forward or a scraper cannot shut the kubelet's probes out.
pub const MAX_CONNECTIONS: usize = 64;

/// What bounds the admin listener's connections: the client listener's timeouts, and
/// [`MAX_CONNECTIONS`].
struct AdminBounds(Arc<ArcSwap<State>>);

impl crate::downstream::CurrentTimeouts for AdminBounds {
    fn client_timeouts(&self) -> crate::config::ClientTimeouts {
        self.0.load().config.client_timeouts
    }

    fn max_connections(&self) -> Option<usize> {
        Some(MAX_CONNECTIONS)
    }

    fn connection_refused(&self, per_client: bool) {
        tracing::debug!(per_client, "an admin connection over the bound refused");
    }
}

/// `app` behind the client listener's per-connection guard (`downstream/`), with the admin
/// listener's bounds: a head's deadline (`client-timeouts.header-s`), size (64 KiB) and lines
/// (100), the idle timeout, and [`MAX_CONNECTIONS`]; refusals are JSON-RPC errors.
pub fn guarded<A>(app: A, state: Arc<ArcSwap<State>>) -> crate::downstream::Guarded<A> {
    // counted apart from the client listener's `mcpgw_client_connections`, and not exported
    let apart = pingora_prometheus::prometheus::Registry::new();
    let gauge = crate::metrics::Registrar::new(&apart)
        .gauge("mcpgw_admin_connections", "admin connections open", &[])
        .with_label_values::<&str>(&[]);
    crate::downstream::Guarded::new(app, Arc::new(AdminBounds(state)), gauge)
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
    fn a_token_of_another_length_or_another_last_byte_is_refused() {
        let token = AdminToken::new("test", "s3cret-admin-token");
        let get = |bearer: &str| {
            let header = format!("Bearer {bearer}");
            req("GET", "/admin/backends", &[("authorization", &header)])
        };
        assert!(bearer_matches(&get("s3cret-admin-token"), &token));
        for wrong in [
            "s3cret-admin-tokeX",
            "s3cret-admin-toke",
            "s3cret-admin-tokenn",
            "s3cret-admin-token-and-more",
            "S3cret-admin-token",
            "x",
        ] {
            assert!(!token.matches(wrong), "{wrong}");
            assert!(!bearer_matches(&get(wrong), &token), "{wrong}");
        }
        assert!(!token.matches(""));
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

    #[test]
    fn the_event_stream_needs_the_token_or_a_ticket_once_a_token_is_set() {
        let reason = |r: Result<(), Refusal>| r.err().map(|e| e.reason);
        let bare = req("GET", "/console/events", &[]);
        let missing = stream_access(&bare, &config(true), |_| true);
        assert_eq!(reason(missing), Some("ticket-missing"));
        assert_eq!(
            reason(stream_access(&bare, &config(false), |_| false)),
            None
        );
        let with = req("GET", "/console/events?ticket=abc", &[]);
        let good = stream_access(&with, &config(true), |t| t == "abc");
        assert_eq!(reason(good), None);
        let used = stream_access(&with, &config(true), |_| false);
        assert_eq!(reason(used), Some("ticket-invalid"));
        let bearer = ("authorization", "Bearer s3cret-admin-token");
        let header = req("GET", "/console/events", &[bearer]);
        assert_eq!(
            reason(stream_access(&header, &config(true), |_| false)),
            None
        );
        let e = stream_access(&bare, &config(true), |_| false)
            .unwrap_err()
            .error();
        assert_eq!(e.kind.code(), -32023);
        assert_eq!(e.status, Some(401));
        // without a token set, the page may ask for a ticket (and hears none is needed)
        let mint = req("POST", TICKET_PATH, &[]);
        assert_eq!(status(check(&mint, &config(false))), 200);
        assert_eq!(status(check(&mint, &config(true))), 401);
    }
}
