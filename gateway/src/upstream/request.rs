//! The one builder of upstream request heads: a client's request re-addressed to a backend,
//! and the requests the gateway sends on its own (replayed `initialize`, notifications,
//! backend-session DELETE). Backend session ids are set here and only here.

use crate::auth::Caller;
use crate::error::GatewayError;
use mcp_wire::headers::{MCP_PROTOCOL_VERSION, MCP_SESSION_ID};
use pingora::http::RequestHeader;

/// Where an upstream request goes.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// Upstream path (the route's `upstream-path`, or the client's path).
    pub path: &'a str,
    /// `Host` header for the backend.
    pub host: &'a http::HeaderValue,
}

fn invalid(what: &str) -> GatewayError {
    GatewayError::internal(format!("cannot build the upstream request: {what}"))
}

/// Points `req` at `target` (keeping `query`) with the backend's `Host`. The URI is replaced
/// only when the path changes, so the pass-through path allocates nothing.
pub fn readdress(
    req: &mut RequestHeader,
    target: Target<'_>,
    query: Option<&str>,
) -> Result<(), GatewayError> {
    req.insert_header(http::header::HOST, target.host.clone())
        .map_err(|_| invalid("host"))?;
    if req.uri.path() != target.path || req.uri.query() != query {
        let uri = match query {
            Some(q) => format!("{}?{q}", target.path),
            None => target.path.to_owned(),
        };
        req.set_uri(uri.parse().map_err(|_| invalid("path"))?);
    }
    Ok(())
}

/// Hop-by-hop headers (RFC 9110 §7.6.1) and credentials meant for a proxy: they concern the
/// client's connection to the gateway, never the gateway's to a backend.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
];

/// What [`forwarded`] sets itself, so the client's values need no removal first (setting
/// replaces them).
#[derive(Clone, Copy)]
struct Replaced {
    length: bool,
    session: bool,
}

/// Whether a client's `Connection` may name `name` away: not the headers the gateway decides
/// on or sets (the MCP headers it checked against the body, the body's type and framing, the
/// target, the credentials it chose). `Connection: close, mcp-method` must not let a backend
/// see a request other than the one the gateway checked.
fn nameable(name: &str) -> bool {
    !(name.starts_with("mcp-")
        || matches!(
            name,
            "host"
                | "content-length"
                | "content-type"
                | "transfer-encoding"
                | "accept"
                | "authorization"
                | "last-event-id"
        ))
}

/// Whether a header is dropped on the way to a backend: hop-by-hop, named by the client's
/// `Connection` (unless the gateway decides on it: [`nameable`]), `Expect`,
/// `Transfer-Encoding`, and the length and the session id unless they are replaced.
fn dropped(name: &http::HeaderName, named: &[String], replaced: Replaced) -> bool {
    use http::header::{CONTENT_LENGTH, EXPECT, TRANSFER_ENCODING};
    let n = name.as_str();
    HOP_BY_HOP.contains(&n)
        || *name == EXPECT
        || *name == TRANSFER_ENCODING
        || (*name == CONTENT_LENGTH && !replaced.length)
        || (n == MCP_SESSION_ID && !replaced.session)
        || (nameable(n) && named.iter().any(|h| h == n))
}

/// The headers a client's `Connection` names.
fn connection_named(req: &RequestHeader) -> Vec<String> {
    req.headers
        .get_all(http::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .collect()
}

/// The pass-through path's cleaning of the head pingora cloned from `client` (pingora has
/// already removed the standard hop-by-hop fields, `Connection` and `Upgrade` among them, and
/// refused to forward an upgrade: `super::REQUEST_POLICY`): the fields the client's
/// `Connection` names go too, but for those the gateway decides on ([`nameable`]), with any
/// hop-by-hop field still there. A client that names nothing (the common case) costs one look
/// at its `Connection` values: the standard hop-by-hop fields are then the policy's alone
/// (`tests/tests/it/no_tunnel.rs` holds it to that).
pub fn drop_hop_by_hop(req: &mut RequestHeader, client: &RequestHeader) {
    let named = connection_named(client);
    if named.is_empty() {
        return;
    }
    let drops = |k: &http::HeaderName| {
        HOP_BY_HOP.contains(&k.as_str())
            || (nameable(k.as_str()) && named.iter().any(|h| h == k.as_str()))
    };
    let present: Vec<http::HeaderName> = req.headers.keys().filter(|k| drops(k)).cloned().collect();
    for name in present {
        req.remove_header(&name);
    }
}

/// Removes the headers [`dropped`] names. Most requests carry none of them but the length and
/// the session id, so the head is looked over once and only what is there is removed: each
/// removal parses and hashes its name in both of pingora's maps (values and spellings).
fn drop_headers(req: &mut RequestHeader, replaced: Replaced) {
    let named = connection_named(req);
    let present: Vec<http::HeaderName> = req
        .headers
        .keys()
        .filter(|k| dropped(k, &named, replaced))
        .cloned()
        .collect();
    for name in present {
        req.remove_header(&name);
    }
}

/// A client's request for a backend: same method and end-to-end headers (hop-by-hop ones
/// dropped), re-addressed, with the backend's session id (or none: gateway ids never go
/// upstream) and an exact length for a buffered body (`None`: no body).
pub fn forwarded(
    client: &RequestHeader,
    target: Target<'_>,
    backend_session: Option<&str>,
    body_len: Option<usize>,
) -> Result<RequestHeader, GatewayError> {
    let mut req = client.clone();
    // The gateway holds the whole body and sends it with the head: a backend asked to say
    // `100 Continue` first would answer twice (uvicorn does), and pingora's client would read
    // that 100 as the answer (then panic reading its body). `Transfer-Encoding` goes too.
    // Dropped first, so that a `Connection` naming a header the gateway sets (`Host`) cannot
    // remove it.
    let replaced = Replaced {
        length: body_len.is_some(),
        session: backend_session.is_some(),
    };
    drop_headers(&mut req, replaced);
    readdress(&mut req, target, client.uri.query())?;
    super::encoding::narrow_accept_encoding(&mut req);
    if let Some(len) = body_len {
        req.insert_header(http::header::CONTENT_LENGTH, http::HeaderValue::from(len))
            .map_err(|_| invalid("content-length"))?;
    }
    if let Some(id) = backend_session {
        req.insert_header(MCP_SESSION_ID, id)
            .map_err(|_| invalid("session id"))?;
    }
    crate::telemetry::inject_current(&mut req);
    Ok(req)
}

/// Sets what a request to one of `pool`'s backends carries from the gateway alone: the pool's
/// credentials (`upstream-auth`) and its identity headers, each after removing whatever the
/// client sent under those names in any spelling a backend framework maps onto them.
pub fn identify(req: &mut RequestHeader, pool: &super::Pool) {
    pool.credentials.apply(req);
    identity_headers(req, &pool.identity);
}

/// Sets a pool's identity headers from the caller (the principal the auth step put into the
/// client's request head), after removing whatever the client sent under those names in any
/// spelling a backend framework maps onto them (`auth/identity.rs`: any case, `_` for `-`).
/// The auth step has refused a principal these headers cannot carry.
fn identity_headers(req: &mut RequestHeader, identity: &crate::config::IdentityHeaders) {
    use crate::auth::identity;
    let wanted: Vec<String> = identity.names().map(identity::canonical).collect();
    if wanted.is_empty() {
        return;
    }
    let spoofed: Vec<http::HeaderName> = req
        .headers
        .keys()
        .filter(|k| wanted.contains(&identity::canonical(k.as_str())))
        .cloned()
        .collect();
    for name in spoofed {
        req.remove_header(&name);
    }
    let Some(principal) = req
        .extensions
        .get::<std::sync::Arc<crate::auth::Principal>>()
        .cloned()
    else {
        return;
    };
    let Ok(values) = identity::render(&principal, identity) else {
        return;
    };
    for (name, value) in values {
        if let Ok(v) = http::HeaderValue::from_str(&value) {
            let _ = req.insert_header(name, v);
        }
    }
}

/// Makes `params` (name, wire value: `mcp_wire::param_headers::mirrored`) the request's only
/// `Mcp-Param-*` headers: every one it carried (a client's, which may not say what the body
/// the gateway sends says: a legacy client's, unchecked, or one of a body the gateway
/// rewrote) is removed first.
pub fn param_headers(
    req: &mut RequestHeader,
    params: &[(String, String)],
) -> Result<(), GatewayError> {
    let present: Vec<http::HeaderName> = req
        .headers
        .keys()
        .filter(|k| mcp_wire::param_headers::is_param_header(k.as_str()))
        .cloned()
        .collect();
    for name in present {
        req.remove_header(&name);
    }
    for (name, value) in params {
        let name = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid(name))?;
        let value = http::HeaderValue::from_str(value).map_err(|_| invalid("Mcp-Param value"))?;
        req.append_header(name, value)
            .map_err(|_| invalid("Mcp-Param"))?;
    }
    Ok(())
}

/// A request the gateway sends on its own for `caller`'s request: `POST` with a JSON body of
/// `body_len` bytes, `GET` or `DELETE` (no body), in the backend session `session` at protocol
/// `version`.
pub fn own(
    method: http::Method,
    target: Target<'_>,
    session: Option<&str>,
    version: Option<&str>,
    body_len: usize,
    caller: &Caller,
) -> Result<RequestHeader, GatewayError> {
    let mut req = RequestHeader::build(method.clone(), target.path.as_bytes(), Some(6))
        .map_err(|_| invalid("path"))?;
    caller.mark(req.extensions_mut());
    req.insert_header(http::header::HOST, target.host.clone())
        .map_err(|_| invalid("host"))?;
    let mut set = |name: &'static str, value: &str| {
        req.insert_header(name, value)
            .map_err(|_| invalid(name))
            .map(|_| ())
    };
    if method == http::Method::POST {
        set("content-type", "application/json")?;
        set("accept", "application/json, text/event-stream")?;
        set("content-length", &body_len.to_string())?;
    }
    if let Some(s) = session {
        set(MCP_SESSION_ID, s)?;
    }
    if let Some(v) = version {
        set(MCP_PROTOCOL_VERSION, v)?;
    }
    crate::telemetry::inject_current(&mut req);
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::*;

    static HOST: http::HeaderValue = http::HeaderValue::from_static("backend:80");
    static TARGET: Target<'static> = Target {
        path: "/up",
        host: &HOST,
    };

    #[test]
    fn forwarded_requests_carry_only_the_backend_session_and_an_exact_length() {
        let mut client = RequestHeader::build("POST", b"/mcp?x=1", None).unwrap();
        client.insert_header(MCP_SESSION_ID, "gateway-id").unwrap();
        client
            .insert_header("transfer-encoding", "chunked")
            .unwrap();
        client.insert_header("x-other", "kept").unwrap();
        client
            .insert_header("connection", "keep-alive, x-secret")
            .unwrap();
        client
            .insert_header("x-secret", "for the gateway only")
            .unwrap();
        client.insert_header("upgrade", "websocket").unwrap();
        client
            .insert_header("proxy-authorization", "Basic Zm9v")
            .unwrap();
        client.insert_header("te", "trailers").unwrap();
        let req = forwarded(&client, TARGET, Some("backend-id"), Some(12)).unwrap();
        assert_eq!(req.uri.to_string(), "/up?x=1");
        assert_eq!(req.headers[MCP_SESSION_ID], "backend-id");
        assert_eq!(req.headers["content-length"], "12");
        assert_eq!(req.headers["host"], "backend:80");
        assert_eq!(req.headers["x-other"], "kept");
        assert!(req.headers.get("transfer-encoding").is_none());
        for hop in [
            "connection",
            "x-secret",
            "upgrade",
            "proxy-authorization",
            "te",
        ] {
            assert!(req.headers.get(hop).is_none(), "{hop} went upstream");
        }
        let get = forwarded(&client, TARGET, None, None).unwrap();
        assert!(get.headers.get(MCP_SESSION_ID).is_none());
        assert!(get.headers.get("content-length").is_none());
    }

    #[test]
    fn a_connection_header_cannot_drop_what_the_gateway_sets() {
        let mut client = RequestHeader::build("POST", b"/mcp", None).unwrap();
        client.insert_header("host", "gateway:8080").unwrap();
        client.insert_header(MCP_SESSION_ID, "gateway-id").unwrap();
        client
            .insert_header("connection", "host, content-length, mcp-session-id")
            .unwrap();
        let req = forwarded(&client, TARGET, Some("backend-id"), Some(3)).unwrap();
        assert_eq!(req.headers["host"], "backend:80");
        assert_eq!(req.headers["content-length"], "3");
        assert_eq!(req.headers[MCP_SESSION_ID], "backend-id");
        assert!(req.headers.get("connection").is_none());
    }

    #[test]
    fn a_connection_header_cannot_drop_what_the_gateway_checked() {
        let mut client = RequestHeader::build("POST", b"/mcp", None).unwrap();
        client.insert_header("mcp-method", "tools/call").unwrap();
        client.insert_header("mcp-name", "whoami").unwrap();
        client
            .insert_header("content-type", "application/json")
            .unwrap();
        client.insert_header("x-hop", "1").unwrap();
        client
            .insert_header(
                "connection",
                "close, mcp-method, mcp-name, content-type, x-hop",
            )
            .unwrap();
        let req = forwarded(&client, TARGET, None, Some(3)).unwrap();
        assert_eq!(req.headers["mcp-method"], "tools/call");
        assert_eq!(req.headers["mcp-name"], "whoami");
        assert_eq!(req.headers["content-type"], "application/json");
        assert!(req.headers.get("x-hop").is_none());
        let mut native = client.clone();
        drop_hop_by_hop(&mut native, &client);
        assert_eq!(native.headers["mcp-method"], "tools/call");
        assert_eq!(native.headers["mcp-name"], "whoami");
        assert!(native.headers.get("x-hop").is_none());
        assert!(native.headers.get("connection").is_none());
    }

    #[test]
    fn the_pass_through_path_sends_no_upgrade_and_keeps_the_bodys_framing() {
        let mut client = RequestHeader::build("GET", b"/mcp", None).unwrap();
        client.insert_header("connection", "Upgrade").unwrap();
        client.insert_header("upgrade", "websocket").unwrap();
        client
            .insert_header("sec-websocket-key", "dGhlIHNhbXBsZQ==")
            .unwrap();
        client
            .insert_header("transfer-encoding", "chunked")
            .unwrap();
        client.insert_header("keep-alive", "timeout=5").unwrap();
        let sent = client.clone();
        drop_hop_by_hop(&mut client, &sent);
        for gone in ["connection", "upgrade", "keep-alive"] {
            assert!(client.headers.get(gone).is_none(), "{gone} went upstream");
        }
        // the body streams with the client's framing on this path
        assert_eq!(client.headers["transfer-encoding"], "chunked");
        // a plain head is left as it is
        let mut plain = RequestHeader::build("POST", b"/mcp", None).unwrap();
        plain.insert_header("content-length", "2").unwrap();
        let before = format!("{:?}", plain.headers);
        let sent = plain.clone();
        drop_hop_by_hop(&mut plain, &sent);
        assert_eq!(format!("{:?}", plain.headers), before);
    }

    #[test]
    fn param_headers_replace_every_one_the_client_sent() {
        let mut req = RequestHeader::build("POST", b"/mcp", None).unwrap();
        req.insert_header("mcp-param-region", "client-said")
            .unwrap();
        req.insert_header("Mcp-Param-Other", "stale").unwrap();
        req.insert_header("x-kept", "1").unwrap();
        let mirrored = [("Mcp-Param-Region".to_owned(), "us-west1".to_owned())];
        param_headers(&mut req, &mirrored).unwrap();
        assert_eq!(req.headers["mcp-param-region"], "us-west1");
        assert_eq!(req.headers.get_all("mcp-param-region").iter().count(), 1);
        assert!(req.headers.get("mcp-param-other").is_none());
        assert_eq!(req.headers["x-kept"], "1");
        param_headers(&mut req, &[]).unwrap();
        assert!(req.headers.get("mcp-param-region").is_none());
    }

    #[test]
    fn own_requests_are_complete_posts_or_bodyless_deletes() {
        let post = own(
            http::Method::POST,
            TARGET,
            Some("s"),
            Some("2025-11-25"),
            7,
            &Caller::default(),
        )
        .unwrap();
        assert_eq!(post.method, http::Method::POST);
        assert_eq!(post.headers["content-length"], "7");
        assert_eq!(post.headers[MCP_PROTOCOL_VERSION], "2025-11-25");
        let delete = own(
            http::Method::DELETE,
            TARGET,
            Some("s"),
            None,
            0,
            &Caller::default(),
        )
        .unwrap();
        assert!(delete.headers.get("content-length").is_none());
        assert_eq!(delete.headers[MCP_SESSION_ID], "s");
    }
}
