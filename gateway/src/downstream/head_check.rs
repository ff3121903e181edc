//! Whether a complete request head frames its body unambiguously (RFC 9112 §6.3): one
//! `Content-Length` line with one value of digits only and no leading zero (`+5`, `0181`, a list
//! `181, 181` or a second line are refused: RFC 9110 §8.6 lets a recipient either refuse such a
//! list or forward it normalized, and a proxy that forwarded it as sent would let the servers
//! behind it disagree on where the body ends; refusing is what most proxies do), a
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
            length = Some(content_length(h.value, length)?);
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

/// The one value of a `Content-Length` line (`seen`: a length given before on another line).
fn content_length(value: &[u8], seen: Option<u64>) -> Result<u64, GatewayError> {
    let text = std::str::from_utf8(value).unwrap_or("");
    let mut values = Vec::new();
    for v in text.split(',') {
        let v = v.trim_matches([' ', '\t']);
        // RFC 9112: `1*DIGIT`; Rust's parse would take `+5`
        let digits = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit());
        let n =
            v.parse::<u64>().ok().filter(|_| digits).ok_or_else(|| {
                GatewayError::bad_framing("a Content-Length that is not a number")
            })?;
        values.push((v, n));
    }
    let (text, first) = values[0];
    if values.iter().any(|&(_, n)| n != first) || seen.is_some_and(|l| l != first) {
        return Err(GatewayError::bad_framing("differing Content-Length values"));
    }
    if values.len() > 1 || seen.is_some() {
        return Err(GatewayError::bad_framing(
            "a Content-Length given more than once (a list, or a second line)",
        ));
    }
    if text.len() > 1 && text.starts_with('0') {
        return Err(GatewayError::bad_framing(
            "a Content-Length with a leading zero",
        ));
    }
    Ok(first)
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
        assert!(framing(&head(&["Content-Length: 0"])).is_ok());
        assert!(framing(&head(&["Content-Length:\t181 "])).is_ok());
        assert!(framing(&head(&["Transfer-Encoding: chunked"])).is_ok());
        assert!(framing(&head(&[])).is_ok());
    }

    #[test]
    fn ambiguous_framing_is_refused() {
        for lines in [
            &["Content-Length: 5", "Content-Length: 6"][..],
            &["Content-Length: 5, 6"],
            // the same value twice, as a list or on two lines, and leading zeros (issue 31)
            &["Content-Length: 181, 181"],
            &["Content-Length: 181,181"],
            &["Content-Length: 5", "Content-Length: 5"],
            &["Content-Length: 0181"],
            &["Content-Length: 00"],
            &["Content-Length: 5,"],
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
