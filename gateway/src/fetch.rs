//! The gateway's own small HTTP(S) fetches (a JWKS document): one GET over a fresh pingora
//! connection, the whole answer read up to a limit. A leaf below `auth/` and `upstream/`: no
//! pools, no retries, no sessions.

use bytes::{Bytes, BytesMut};
use pingora::connectors::http::Connector;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::upstreams::peer::HttpPeer;

/// Sends `req` (no body) to `peer` and reads the answer's head and whole body, failing past
/// `limit` bytes. Errors are for a person (logs).
pub async fn get(
    peer: &HttpPeer,
    req: &RequestHeader,
    limit: usize,
) -> Result<(ResponseHeader, Bytes), String> {
    let connector = Connector::new(None);
    let (mut session, _) = connector
        .get_http_session(peer)
        .await
        .map_err(|e| e.to_string())?;
    session
        .write_request_header(Box::new(req.clone()))
        .await
        .map_err(|e| e.to_string())?;
    session
        .finish_request_body()
        .await
        .map_err(|e| e.to_string())?;
    session
        .read_response_header()
        .await
        .map_err(|e| e.to_string())?;
    let head = session
        .response_header()
        .cloned()
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
    Ok((head, body.freeze()))
}
