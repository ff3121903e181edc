//! The gateway's own small HTTP(S) fetches (a JWKS document, a token): an http(s) URL parsed, its
//! host resolved, one GET (or a form POST) over a fresh pingora connection, the whole answer read up to a limit. A
//! leaf below `auth/` and `upstream/`: no pools, no retries, no sessions. The pingora types of
//! such an exchange stay here, so that `auth/` has none.

use bytes::{Bytes, BytesMut};
use pingora::connectors::http::Connector;
use pingora::http::RequestHeader;
use pingora::upstreams::peer::HttpPeer;
use std::time::Duration;

/// How long the connection (TCP, and TLS for https) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one read of the answer may wait.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// What a GET was answered.
pub struct Answer {
    /// The HTTP status.
    pub status: http::StatusCode,
    /// The whole body.
    pub body: Bytes,
}

/// GETs `url` (http or https) with `Accept: accept` and reads the whole answer, failing past
/// `limit` bytes of body. Errors are for a person (logs); past the URL and the address, they
/// start with "fetching `url`".
pub async fn get(url: &str, accept: &str, limit: usize) -> Result<Answer, String> {
    let (peer, authority, path_and_query) = peer_of(url).await?;
    let mut req = RequestHeader::build("GET", path_and_query.as_bytes(), Some(3))
        .map_err(|e| e.to_string())?;
    req.insert_header("host", authority.as_str())
        .map_err(|e| e.to_string())?;
    req.insert_header("accept", accept)
        .map_err(|e| e.to_string())?;
    exchange(&peer, req, None, limit)
        .await
        .map_err(|e| format!("fetching {url}: {e}"))
}

/// POSTs the form `body` (`application/x-www-form-urlencoded`) to `url` with the extra
/// `headers` (an `Authorization` among them is sent, never written in an error) and reads the
/// whole answer (JSON accepted), failing past `limit` bytes. Errors are for a person and name
/// the URL, never a header's value or the form.
pub async fn post_form(
    url: &str,
    headers: &[(http::HeaderName, http::HeaderValue)],
    body: String,
    limit: usize,
) -> Result<Answer, String> {
    let (peer, authority, path_and_query) = peer_of(url).await?;
    let mut req = RequestHeader::build("POST", path_and_query.as_bytes(), Some(5))
        .map_err(|e| e.to_string())?;
    let built = (|| {
        req.insert_header("host", authority.as_str())?;
        req.insert_header("accept", "application/json")?;
        req.insert_header("content-type", "application/x-www-form-urlencoded")?;
        req.insert_header("content-length", body.len())?;
        for (name, value) in headers {
            req.insert_header(name.clone(), value.clone())?;
        }
        Ok::<_, Box<pingora::Error>>(())
    })();
    built.map_err(|_| "the request head could not be built".to_owned())?;
    exchange(&peer, req, Some(Bytes::from(body)), limit)
        .await
        .map_err(|e| format!("posting to {url}: {e}"))
}

/// The peer `url` names (its host resolved, the timeouts set), the `Host` header and the
/// request target.
async fn peer_of(url: &str) -> Result<(HttpPeer, String, String), String> {
    let Target {
        tls,
        connect,
        authority,
        sni,
        path_and_query,
    } = target(url)?;
    let addr = tokio::net::lookup_host(connect.as_str())
        .await
        .map_err(|e| format!("resolving {authority}: {e}"))?
        .next()
        .ok_or_else(|| format!("{authority} has no address"))?;
    let mut peer = HttpPeer::new(addr, tls, sni);
    peer.options.connection_timeout = Some(CONNECT_TIMEOUT);
    peer.options.read_timeout = Some(READ_TIMEOUT);
    Ok((peer, authority, path_and_query))
}

/// Sends `req` and `body` to `peer` and reads the answer's head and whole body, failing past
/// `limit` bytes.
async fn exchange(
    peer: &HttpPeer,
    req: RequestHeader,
    body: Option<Bytes>,
    limit: usize,
) -> Result<Answer, String> {
    let connector = Connector::new(None);
    let (mut session, _) = connector
        .get_http_session(peer)
        .await
        .map_err(|e| e.to_string())?;
    session
        .write_request_header(Box::new(req))
        .await
        .map_err(|e| e.to_string())?;
    if let Some(body) = body {
        session
            .write_request_body(body, false)
            .await
            .map_err(|e| e.to_string())?;
    }
    session
        .finish_request_body()
        .await
        .map_err(|e| e.to_string())?;
    session
        .read_response_header()
        .await
        .map_err(|e| e.to_string())?;
    let status = session
        .response_header()
        .map(|head| head.status)
        .ok_or_else(|| "no response head".to_owned())?;
    let mut body = BytesMut::new();
    while !session.response_done() {
        match session
            .read_response_body()
            .await
            .map_err(|e| e.to_string())?
        {
            Some(chunk) if body.len() + chunk.len() > limit => {
                return Err(format!("answer larger than {limit} bytes"));
            }
            Some(chunk) => body.extend_from_slice(&chunk),
            None => break,
        }
    }
    Ok(Answer {
        status,
        body: body.freeze(),
    })
}

/// Where an URL points: parsed by the WHATWG parser (`url`), so a query is kept, a
/// port or an IPv6 literal read right, and userinfo refused (a credential in a URL would be
/// written in every log line that names it; config validation refuses a key set URL with one too).
#[derive(Debug, PartialEq, Eq)]
struct Target {
    tls: bool,
    /// `host:port` to resolve (an IPv6 literal in brackets).
    connect: String,
    /// The `Host` header: the host, and the port when the URL names one.
    authority: String,
    /// The TLS server name: the host without brackets.
    sni: String,
    /// The request target: the path and the query, if any (never the fragment).
    path_and_query: String,
}

fn target(url: &str) -> Result<Target, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("`{url}` is not an URL: {e}"))?;
    let tls = match parsed.scheme() {
        "https" => true,
        "http" => false,
        _ => return Err(format!("`{url}` is not an http(s) URL")),
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("a key set URL must not carry userinfo (user:password@)".into());
    }
    let host = parsed
        .host_str()
        .ok_or_else(|| format!("`{url}` names no host"))?;
    let port = parsed
        .port_or_known_default()
        .unwrap_or(if tls { 443 } else { 80 });
    let authority = match parsed.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_owned(),
    };
    let path_and_query = match parsed.query() {
        Some(q) => format!("{}?{q}", parsed.path()),
        None => parsed.path().to_owned(),
    };
    Ok(Target {
        tls,
        connect: format!("{host}:{port}"),
        authority,
        sni: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned(),
        path_and_query,
    })
}

#[cfg(test)]
mod tests {
    use super::{target, Target};

    #[test]
    fn a_query_and_a_port_are_kept() {
        assert_eq!(
            target("https://idp.example:8443/keys?tenant=a&v=2").unwrap(),
            Target {
                tls: true,
                connect: "idp.example:8443".into(),
                authority: "idp.example:8443".into(),
                sni: "idp.example".into(),
                path_and_query: "/keys?tenant=a&v=2".into(),
            }
        );
    }

    #[test]
    fn a_query_without_a_path_and_the_default_port() {
        let t = target("http://127.0.0.1?k=1#frag").unwrap();
        assert_eq!(t.connect, "127.0.0.1:80");
        assert_eq!(t.authority, "127.0.0.1");
        assert_eq!(t.path_and_query, "/?k=1");
    }

    #[test]
    fn an_ipv6_literal_keeps_its_brackets_except_in_the_server_name() {
        let t = target("https://[::1]:9443/jwks").unwrap();
        assert_eq!(t.connect, "[::1]:9443");
        assert_eq!(t.authority, "[::1]:9443");
        assert_eq!(t.sni, "::1");
    }

    #[test]
    fn userinfo_is_refused_and_the_error_does_not_repeat_it() {
        let err = target("https://user:s3cret@idp.example/keys").unwrap_err();
        assert!(err.contains("userinfo"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
        assert!(target("ftp://idp.example/keys").is_err());
    }
}
