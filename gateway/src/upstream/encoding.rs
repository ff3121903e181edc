//! Content codings of the upstream answers the gateway reads itself (an `initialize` answer it
//! opens a session from, a list it filters, a replayed `initialize`, a 404 it checks for "session
//! not found"): the client's `Accept-Encoding` is narrowed upstream to the codings read here
//! (gzip, deflate, identity), and an answer in one of them is decoded (bounded, so a small
//! compressed body cannot grow past the limit). Measured: Starlette's `GZipMiddleware` before a
//! 2.3.0 server gzips every JSON answer when the client (the real `mcp.Client`) sends
//! `Accept-Encoding: gzip, deflate`; it never compresses `text/event-stream`.

use bytes::Bytes;
use pingora::http::{RequestHeader, ResponseHeader};
use std::io::Read;

/// The codings the gateway reads.
const READABLE: &[&str] = &["gzip", "x-gzip", "deflate", "identity"];

/// An answer the gateway cannot read: a coding it does not decode (it never asks for one), a
/// corrupt body, or one that grows past the limit once decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undecodable(pub String);

/// Narrows the client's `Accept-Encoding` to the codings the gateway reads (q-values kept);
/// `identity` when none of them is left. No header stays no header.
pub fn narrow_accept_encoding(req: &mut RequestHeader) {
    let Some(value) = req.headers.get(http::header::ACCEPT_ENCODING) else {
        return;
    };
    let kept: Vec<String> = value
        .to_str()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|item| {
            let coding = item.split(';').next().unwrap_or("").trim();
            READABLE.iter().any(|r| coding.eq_ignore_ascii_case(r))
        })
        .map(str::to_owned)
        .collect();
    let narrowed = if kept.is_empty() {
        "identity".to_owned()
    } else {
        kept.join(", ")
    };
    let _ = req.insert_header(http::header::ACCEPT_ENCODING, narrowed);
}

/// The answer's coding, lowercased (`identity` when none is named).
fn coding(head: &ResponseHeader) -> Result<String, Undecodable> {
    let mut all = head.headers.get_all(http::header::CONTENT_ENCODING).iter();
    let Some(first) = all.next() else {
        return Ok("identity".into());
    };
    let value = first
        .to_str()
        .map_err(|_| Undecodable("an unreadable Content-Encoding".into()))?
        .trim()
        .to_ascii_lowercase();
    if all.next().is_some() || value.contains(',') {
        return Err(Undecodable(format!("several codings ({value}, ...)")));
    }
    Ok(value)
}

/// Whether the answer is compressed (so the body must go through [`decode`]).
pub fn is_encoded(head: &ResponseHeader) -> bool {
    !matches!(coding(head).as_deref(), Ok("identity") | Ok(""))
}

fn bounded(reader: impl Read, limit: usize) -> Result<Vec<u8>, Undecodable> {
    let mut out = Vec::new();
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| Undecodable(format!("a corrupt body: {e}")))?;
    if out.len() > limit {
        return Err(Undecodable(format!("over {limit} bytes once decoded")));
    }
    Ok(out)
}

/// The body decoded by the answer's `Content-Encoding` (at most `limit` bytes).
pub fn decode(head: &ResponseHeader, body: Bytes, limit: usize) -> Result<Bytes, Undecodable> {
    let decoded = match coding(head)?.as_str() {
        "identity" | "" => return Ok(body),
        "gzip" | "x-gzip" => bounded(flate2::read::MultiGzDecoder::new(&body[..]), limit)?,
        // RFC 9110 `deflate` is zlib-wrapped; some servers send it raw.
        "deflate" => bounded(flate2::read::ZlibDecoder::new(&body[..]), limit)
            .or_else(|_| bounded(flate2::read::DeflateDecoder::new(&body[..]), limit))?,
        other => return Err(Undecodable(format!("the coding `{other}`"))),
    };
    Ok(Bytes::from(decoded))
}

/// The head of an answer decoded to `len` bytes: no `Content-Encoding`, that length.
pub fn decoded_head(head: &mut ResponseHeader, len: usize) {
    head.remove_header(&http::header::CONTENT_ENCODING);
    head.remove_header(&http::header::TRANSFER_ENCODING);
    let _ = head.insert_header(http::header::CONTENT_LENGTH, len.to_string());
}

/// Decodes `body` for the gateway to read and fixes `head` to match; an answer that cannot
/// be decoded is left as it is (`Err` says why).
pub fn decode_in_place(
    head: &mut ResponseHeader,
    body: &mut Bytes,
    limit: usize,
) -> Result<(), Undecodable> {
    if !is_encoded(head) {
        return Ok(());
    }
    *body = decode(head, body.clone(), limit)?;
    decoded_head(head, body.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn head(coding: Option<&str>) -> ResponseHeader {
        let mut h = ResponseHeader::build(200, None).unwrap();
        if let Some(c) = coding {
            h.insert_header("content-encoding", c).unwrap();
        }
        h
    }

    fn gzip(data: &[u8]) -> Bytes {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        Bytes::from(e.finish().unwrap())
    }

    #[test]
    fn gzip_and_deflate_answers_are_decoded_within_the_limit() {
        let body = gzip(b"{\"result\":{}}");
        assert_eq!(
            decode(&head(Some("gzip")), body.clone(), 1024).unwrap(),
            &b"{\"result\":{}}"[..]
        );
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(b"abc").unwrap();
        let z = Bytes::from(z.finish().unwrap());
        assert_eq!(decode(&head(Some("deflate")), z, 16).unwrap(), &b"abc"[..]);
        let bomb = gzip(&vec![b'x'; 1 << 20]);
        assert!(decode(&head(Some("gzip")), bomb, 1024).is_err());
        assert!(decode(&head(Some("br")), Bytes::from_static(b"x"), 16).is_err());
        assert!(decode(&head(Some("gzip, gzip")), body, 16).is_err());
        assert_eq!(
            decode(&head(None), Bytes::from_static(b"plain"), 16).unwrap(),
            &b"plain"[..]
        );
    }

    #[test]
    fn accept_encoding_keeps_only_what_the_gateway_reads() {
        let mut req = RequestHeader::build("POST", b"/", None).unwrap();
        req.insert_header("accept-encoding", "gzip, deflate, br;q=0.9, zstd")
            .unwrap();
        narrow_accept_encoding(&mut req);
        assert_eq!(req.headers["accept-encoding"], "gzip, deflate");
        req.insert_header("accept-encoding", "br").unwrap();
        narrow_accept_encoding(&mut req);
        assert_eq!(req.headers["accept-encoding"], "identity");
        let mut bare = RequestHeader::build("POST", b"/", None).unwrap();
        narrow_accept_encoding(&mut bare);
        assert!(bare.headers.get("accept-encoding").is_none());
    }
}
