//! Whether a complete request head frames its body unambiguously (RFC 9112 §6.3): one
//! `Content-Length` value of digits only (repeats must agree; `+5` is no length), a
//! `Transfer-Encoding` that is `chunked` and names nothing else, never both (RFC 9112 §6.1 lets
//! a server refuse that, and pingora would otherwise guess: it drops the length and reads an
//! oddly spelled coding as none), no `Transfer-Encoding` on HTTP/1.0. Anything else is refused,
//! as a proxy in front of other servers must (request smuggling).

use crate::error::GatewayError;

/// Most lines (request line and headers) in a request head.
pub const MAX_HEAD_LINES: usize = 100;

/// Checks the head `head` (request line, headers, blank line).
pub fn framing(head: &[u8]) -> Result<(), GatewayError> {
    // uninitialised: filling 101 empty headers first would cost more than the parse
    let mut headers =
        [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEAD_LINES + 1];
    let mut req = httparse::Request::new(&mut []);
    match req.parse_with_uninit_headers(head, &mut headers) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(GatewayError::bad_framing("incomplete head")),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(GatewayError::head_too_large("100 header lines"))
        }
        Err(e) => return Err(GatewayError::bad_framing(&format!("unparsable head: {e}"))),
    }
    let mut length: Option<u64> = None;
    let mut codings: Vec<String> = Vec::new();
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            for v in h.value.split(|b| *b == b',') {
                let v = std::str::from_utf8(v).unwrap_or("").trim();
                // RFC 9112: `1*DIGIT`; Rust's parse would take `+5`
                let digits = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit());
                let n: u64 = v.parse().ok().filter(|_| digits).ok_or_else(|| {
                    GatewayError::bad_framing("a Content-Length that is not a number")
                })?;
                if length.is_some_and(|l| l != n) {
                    return Err(GatewayError::bad_framing("differing Content-Length values"));
                }
                length = Some(n);
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            let v = String::from_utf8_lossy(h.value).to_ascii_lowercase();
            codings.extend(
                v.split(',')
                    .map(|c| c.trim().to_owned())
                    .filter(|c| !c.is_empty()),
            );
        }
    }
    if codings.is_empty() {
        return Ok(());
    }
    if length.is_some() {
        return Err(GatewayError::bad_framing(
            "both Transfer-Encoding and Content-Length",
        ));
    }
    if req.version == Some(0) {
        return Err(GatewayError::bad_framing(
            "Transfer-Encoding on an HTTP/1.0 request",
        ));
    }
    if codings.iter().any(|c| c != "chunked") || codings.len() > 1 {
        return Err(GatewayError::bad_framing(
            "a Transfer-Encoding other than chunked",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::framing;

    fn head(lines: &[&str]) -> Vec<u8> {
        let mut s = String::from("POST /mcp HTTP/1.1\r\nHost: x\r\n");
        for l in lines {
            s.push_str(l);
            s.push_str("\r\n");
        }
        s.push_str("\r\n");
        s.into_bytes()
    }

    #[test]
    fn plain_and_chunked_heads_pass() {
        assert!(framing(&head(&["Content-Length: 5"])).is_ok());
        assert!(framing(&head(&["Content-Length: 5", "Content-Length: 5"])).is_ok());
        assert!(framing(&head(&["Transfer-Encoding: chunked"])).is_ok());
        assert!(framing(&head(&[])).is_ok());
    }

    #[test]
    fn ambiguous_framing_is_refused() {
        for lines in [
            &["Content-Length: 5", "Content-Length: 6"][..],
            &["Content-Length: 5, 6"],
            &["Content-Length: -1"],
            &["Transfer-Encoding: xchunked"],
            &["Transfer-Encoding: gzip, chunked"],
            &["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"],
            &["Content-Length: +5"],
            &["Content-Length: 0x5"],
            &["Content-Length: "],
            &["Transfer-Encoding: chunked", "Content-Length: 5"],
            &["Transfer-Encoding:  Chunked", "Content-Length: 5"],
            &["Transfer-Encoding: chunked\t", "Content-Length: 5"],
        ] {
            let e = framing(&head(lines)).unwrap_err();
            assert_eq!(e.kind.code(), -32026, "{lines:?}");
        }
        let e = framing(b"POST /mcp HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap_err();
        assert_eq!(e.kind.code(), -32026);
    }
}
