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
    match plain(head) {
        Some(verdict) => verdict,
        None => parsed(head),
    }
}

/// The framing of a head written in the plainest form, judged without a parser: a request
/// line of an upper-case method, a target of URI characters (RFC 3986: letters, digits and
/// `-._~!$&'()*+,;=:@/?%`) and `HTTP/1.1`; header names of letters, digits and `-`; values of
/// visible ASCII and space; every line ended by CRLF. httparse parses every such head to
/// the same lines (its grammar is wider). Anything else (`None`) goes to httparse, as every
/// head did before: most heads are plain, and this costs less than the parse. (HTTP/1.0 is
/// never plain here: its framing rules differ.)
fn plain(head: &[u8]) -> Option<Result<(), GatewayError>> {
    match plain_head(head, usize::MAX)? {
        (end, verdict) if end == head.len() => Some(verdict),
        _ => None,
    }
}

/// A [`plain`] head at the start of `head` (which may go on past it: a body, a next request)
/// of at most `max_lines` lines, its blank line counted: where it ends (just past its blank
/// line) and its framing's verdict. `None` when the head is not plain, not complete in `head`,
/// or longer. A plain head has no lone `\n` and no `\r\n\r\n` before its blank line, so it
/// ends where a search for the first blank line would say.
pub fn plain_head(head: &[u8], max_lines: usize) -> Option<(usize, Result<(), GatewayError>)> {
    // the request line
    let method = run(head, 0, |b| b.is_ascii_uppercase());
    let target = run(head, method + 1, |b| URI[b as usize]);
    let plain_line = method > 0
        && head.get(method) == Some(&b' ')
        && target > method + 1
        && head.get(target..target + 11)? == b" HTTP/1.1\r\n";
    if !plain_line {
        return None;
    }
    // the header lines, each checked and judged, up to the blank line that ends the head
    let mut framing = Framing::default();
    let mut verdict = Ok(());
    let mut at = target + 11;
    // the request line and the blank line
    let mut lines = 2;
    loop {
        if head.get(at..at + 2)? == b"\r\n" {
            return Some((at + 2, verdict.and_then(|()| framing.end(false))));
        }
        lines += 1;
        if lines > max_lines {
            return None;
        }
        let colon = run(head, at, |b| NAME[b as usize]);
        if colon == at || head.get(colon) != Some(&b':') {
            return None;
        }
        let end = colon + 1 + visible_run(&head[colon + 1..]);
        if head.get(end..end + 2)? != b"\r\n" {
            return None;
        }
        if verdict.is_ok() {
            // the first refusal is kept, and given only if the whole head is plain
            verdict = framing.line(&head[at..colon], &head[colon + 1..end]);
        }
        at = end + 2;
    }
}

/// Where the run of bytes from `from` that `class` takes ends.
fn run(head: &[u8], from: usize, class: impl Fn(u8) -> bool) -> usize {
    let rest = head.get(from..).unwrap_or_default();
    from + rest.iter().position(|&b| !class(b)).unwrap_or(rest.len())
}

/// How many bytes of `b` are visible ASCII or space (0x20 to 0x7E), eight at a time (header
/// values are most of a head): a byte's high bit is set in `w - 0x20…` below 0x20, in `w`
/// from 0x80, in `w + 0x01…` at 0x7F; no borrow or carry reaches a lower byte, so the lowest
/// flag is the first other byte.
fn visible_run(b: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut i = 0;
    while let Some(word) = b.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        let w = u64::from_le_bytes(*word);
        let other = (w.wrapping_sub(ONES * 0x20) | w | w.wrapping_add(ONES)) & HIGHS;
        if other != 0 {
            return i + (other.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + b[i..]
        .iter()
        .position(|&c| !(0x20..0x7f).contains(&c))
        .unwrap_or(b.len() - i)
}

/// The bytes of a header name in [`plain`]: letters, digits and `-` (a table: a name's bytes
/// are a third of a head's).
static NAME: [bool; 256] = {
    let mut map = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        map[b] = c.is_ascii_alphanumeric() || c == b'-';
        b += 1;
    }
    map
};

/// The bytes of a request target in [`plain`].
static URI: [bool; 256] = {
    let mut map = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        map[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'@'
                    | b'/'
                    | b'?'
                    | b'%'
            );
        b += 1;
    }
    map
};

/// A head that is not [`plain`], parsed by httparse.
pub(super) fn parsed(head: &[u8]) -> Result<(), GatewayError> {
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
    let mut framing = Framing::default();
    for h in req.headers.iter() {
        framing.line(h.name.as_bytes(), h.value)?;
    }
    framing.end(req.version == Some(0))
}

/// What a head's header lines say of its framing, line by line.
#[derive(Default)]
struct Framing {
    length: Option<u64>,
    codings: Vec<String>,
}

impl Framing {
    /// One header line.
    fn line(&mut self, name: &[u8], value: &[u8]) -> Result<(), GatewayError> {
        // the lengths first: most names are neither
        if !matches!(name.len(), 14 | 17) {
            return Ok(());
        }
        if name.eq_ignore_ascii_case(b"content-length") {
            self.length = Some(content_length(value, self.length)?);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            let v = String::from_utf8_lossy(value).to_ascii_lowercase();
            self.codings.extend(
                v.split(',')
                    .map(|c| c.trim().to_owned())
                    .filter(|c| !c.is_empty()),
            );
        }
        Ok(())
    }

    /// The verdict once every line was read (`http10`: an HTTP/1.0 request).
    fn end(self, http10: bool) -> Result<(), GatewayError> {
        let Framing { length, codings } = self;
        if codings.is_empty() {
            return Ok(());
        }
        if length.is_some() {
            return Err(GatewayError::bad_framing(
                "both Transfer-Encoding and Content-Length",
            ));
        }
        if http10 {
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
}

/// The one value of a `Content-Length` line (`seen`: a length given before on another line).
fn content_length(value: &[u8], seen: Option<u64>) -> Result<u64, GatewayError> {
    let text = std::str::from_utf8(value).unwrap_or("");
    // the common case, one length of at most 19 digits (a u64) without a leading zero
    let one = text.trim_matches([' ', '\t']);
    let plain = seen.is_none()
        && (1..=19).contains(&one.len())
        && one.bytes().all(|b| b.is_ascii_digit())
        && (one.len() == 1 || !one.starts_with('0'));
    if let Some(n) = plain.then(|| one.parse::<u64>().ok()).flatten() {
        return Ok(n);
    }
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
    fn the_visible_run_ends_at_the_first_other_byte() {
        for at in 0..20 {
            for c in 0..=255u8 {
                let mut b = vec![b'a'; 20];
                b[at] = c;
                let slow = b
                    .iter()
                    .position(|&c| !(0x20..0x7f).contains(&c))
                    .unwrap_or(20);
                assert_eq!(super::visible_run(&b), slow, "byte {c:#x} at {at}");
            }
        }
    }

    #[test]
    fn a_usual_client_head_is_read_without_the_parser_and_odd_ones_are_parsed() {
        let usual = b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:8080\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: whoami\r\ncontent-length: 281\r\n\r\n";
        assert!(matches!(super::plain(usual), Some(Ok(()))));
        for odd in [
            &b"POST /mcp HTTP/1.0\r\nContent-Length: 5\r\n\r\n"[..],
            b"POST /mcp HTTP/1.1\nContent-Length: 5\r\n\r\n",
            b"POST /mcp HTTP/1.1\r\nX-Odd_Name: 1\r\n\r\n",
            b"POST /mcp HTTP/1.1\r\nX: caf\xc3\xa9\r\n\r\n",
            b"POST /mcp HTTP/1.1\r\n folded: 1\r\n\r\n",
            b"POST /{x} HTTP/1.1\r\n\r\n",
            b"POST /mcp HTTP/1.1\r\nX: a\tb\r\n\r\n",
            b"POST /mcp HTTP/1.1\r\nX: a\r\r\n\r\n",
            b"POST /mcp HTTP/1.1\r\nX: a\x7f\r\n\r\n",
        ] {
            assert!(
                super::plain(odd).is_none(),
                "{}",
                String::from_utf8_lossy(odd)
            );
        }
        // the first refusal, as the parsed reading gives it
        let two = head(&[
            "Content-Length: 5",
            "Transfer-Encoding: chunked",
            "Content-Length: 6",
        ]);
        let plain = super::plain(&two).unwrap().unwrap_err();
        assert_eq!(plain.message, super::parsed(&two).unwrap_err().message);
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
