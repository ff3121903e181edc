//! Property tests (proptest) for the listener's head checks (`head.rs` `judge`, `head_check.rs`
//! `framing`), which read a client's untrusted bytes before pingora does: fed arbitrary and
//! generated heads, whole or cut into arbitrary reads, none panics and the verdict does not
//! depend on how the head was cut; a head the checks accept is one httparse parses whole with
//! one unambiguous framing; and every head refused for its framing is answered with a
//! well-formed HTTP 400 whose body is the JSON-RPC error -32026, then the connection closes.
//!
//! `cargo test` runs 64 cases a property (or `PROPTEST_CASES`).

use super::head::{begin, find_end, judge, refusal, Phase, Verdict, MAX_HEAD_LINES};
use super::head_check::{framing, parsed, plain_head};
use crate::config::ClientTimeouts;
use crate::error::{ErrorKind, GatewayError};
use proptest::prelude::*;
use std::sync::Mutex;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(64);
    ProptestConfig::with_cases(cases)
}

/// Feeds `bytes` to a new connection's watch in the reads `cuts` make: the first refusal, or
/// `None` when every read passed.
fn judged(bytes: &[u8], cuts: &[usize]) -> Option<GatewayError> {
    let mut phase = Phase::new(ClientTimeouts::default());
    judged_in(&mut phase, bytes, cuts)
}

/// Feeds `bytes` to `phase` in the reads `cuts` make: the first refusal, if any.
fn judged_in(phase: &mut Phase, bytes: &[u8], cuts: &[usize]) -> Option<GatewayError> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.push(bytes.len());
    points.sort();
    let mut at = 0;
    for p in points {
        if p > at {
            if let Verdict::Refuse(e) = judge(phase, &bytes[at..p]) {
                return Some(e);
            }
            at = p;
        }
    }
    None
}

/// Feeds `bytes` as the next request of a kept-alive connection whose first request passed:
/// its first `prefix` bytes already read with the previous request (a pipelined prefix, where
/// the connection loop says the request starts), the rest in the reads `cuts` make.
fn judged_next(bytes: &[u8], prefix: usize, cuts: &[usize]) -> Option<GatewayError> {
    let phase = Mutex::new(Phase::new(ClientTimeouts::default()));
    let mut p = phase.lock().unwrap();
    let first = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
    assert!(matches!(judge(&mut p, first), Verdict::Pass));
    drop(p);
    let prefix = prefix % (bytes.len() + 1);
    if let Verdict::Refuse(e) = begin(&phase, &bytes[..prefix]) {
        return Some(e);
    }
    let mut p = phase.lock().unwrap();
    judged_in(&mut p, &bytes[prefix..], cuts)
}

/// A header line a client might send: framing headers in right and wrong spellings, and others.
fn header_line() -> impl Strategy<Value = String> {
    let length = prop_oneof![
        "[0-9]{1,6}",
        "0[0-9]{1,3}",
        "[0-9]{1,3}, ?[0-9]{1,3}",
        "[+-]?[0-9a-f]{0,4}",
        Just(String::new()),
    ];
    let coding = prop::sample::select(vec![
        "chunked",
        "Chunked",
        " chunked",
        "chunked\t",
        "gzip, chunked",
        "xchunked",
        "identity",
    ]);
    prop_oneof![
        length.prop_map(|v| format!("Content-Length: {v}")),
        coding.prop_map(|v| format!("Transfer-Encoding: {v}")),
        "[A-Za-z-]{1,12}: [ -~]{0,20}",
        "[ -~]{0,24}",
    ]
}

fn head(lines: &[String], http10: bool) -> Vec<u8> {
    let version = if http10 { "1.0" } else { "1.1" };
    let mut s = format!("POST /mcp HTTP/{version}\r\nHost: x\r\n");
    for l in lines {
        s.push_str(l);
        s.push_str("\r\n");
    }
    s.push_str("\r\n");
    s.into_bytes()
}

/// How httparse's parse of an accepted head frames the body: `Some(n)` bytes, `None` chunked
/// or no body, checked to be the only reading the head allows.
fn framing_by_httparse(bytes: &[u8]) -> Result<Option<u64>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(bytes) {
        Ok(httparse::Status::Complete(_)) => {}
        other => return Err(format!("httparse: {other:?}")),
    }
    let lengths: Vec<&[u8]> = req
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("content-length"))
        .map(|h| h.value)
        .collect();
    let codings = req
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("transfer-encoding"))
        .count();
    match (lengths.as_slice(), codings) {
        ([], _) => Ok(None),
        ([one], 0) => {
            let v = std::str::from_utf8(one).map_err(|e| e.to_string())?;
            let ok = !v.is_empty()
                && v.bytes().all(|b| b.is_ascii_digit())
                && (v.len() == 1 || !v.starts_with('0'));
            ok.then(|| v.parse().ok())
                .flatten()
                .map(Some)
                .ok_or(format!("an accepted length {v:?}"))
        }
        _ => Err("several lengths, or a length and a coding".into()),
    }
}

/// The refusal written for `error` is a whole HTTP answer with the JSON-RPC error in its body.
fn check_refusal(error: &GatewayError) -> Result<(), TestCaseError> {
    let bytes = refusal(error);
    let mut headers = [httparse::EMPTY_HEADER; 16];
    let mut resp = httparse::Response::new(&mut headers);
    let Ok(httparse::Status::Complete(n)) = resp.parse(&bytes) else {
        return Err(TestCaseError::fail("the refusal is no HTTP answer"));
    };
    let status = resp.code.unwrap_or(0);
    let close = resp.headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case("connection") && h.value.eq_ignore_ascii_case(b"close")
    });
    prop_assert!(close, "the connection closes after a refusal");
    let body: serde_json::Value = serde_json::from_slice(&bytes[n..])
        .map_err(|e| TestCaseError::fail(format!("not JSON: {e}")))?;
    prop_assert_eq!(&body["jsonrpc"], "2.0");
    prop_assert!(body["id"].is_null());
    prop_assert_eq!(
        body["error"]["code"].as_i64(),
        Some(error.kind.code() as i64)
    );
    prop_assert!(body["error"]["data"]["kind"].is_string());
    if error.kind == ErrorKind::BadFraming {
        prop_assert_eq!(status, 400);
        prop_assert_eq!(error.kind.code(), -32026);
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_never_panic_and_the_verdict_does_not_depend_on_the_reads(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let whole = judged(&bytes, &[]).map(|e| e.kind);
        let cut = judged(&bytes, &cuts).map(|e| e.kind);
        prop_assert_eq!(whole, cut);
        let _ = framing(&bytes);
    }

    #[test]
    fn generated_heads_are_judged_alike_however_they_arrive_and_accepted_ones_parse_alike(
        lines in prop::collection::vec(header_line(), 0..6),
        http10 in any::<bool>(),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
        body in prop::collection::vec(any::<u8>(), 0..32),
    ) {
        let h = head(&lines, http10);
        let checked = framing(&h);
        let mut sent = h.clone();
        sent.extend_from_slice(&body);
        let whole = judged(&sent, &[]);
        let cut = judged(&sent, &cuts);
        prop_assert_eq!(whole.as_ref().map(|e| e.kind), checked.as_ref().err().map(|e| e.kind));
        prop_assert_eq!(cut.map(|e| e.kind), checked.as_ref().err().map(|e| e.kind));
        match checked {
            Ok(()) => {
                let framed = framing_by_httparse(&h);
                prop_assert!(framed.is_ok(), "accepted {:?}: {:?}", String::from_utf8_lossy(&h), framed);
            }
            Err(e) => check_refusal(&e)?,
        }
    }

    /// A kept-alive connection's next request is judged as a first one, whatever blank lines
    /// come before it (httparse skips them), wherever the part of it read with the previous
    /// request (a pipelined prefix) ends and however the rest arrives.
    #[test]
    fn a_next_request_is_judged_as_a_first_one_however_it_arrives(
        lines in prop::collection::vec(header_line(), 0..6),
        blank in prop::sample::select(vec!["", "\r\n", "\n", "\r\n\r\n\n"]),
        prefix in any::<usize>(),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
        body in prop::collection::vec(any::<u8>(), 0..32),
    ) {
        let h = head(&lines, false);
        let checked = framing(&h).err().map(|e| e.kind);
        let mut sent = blank.as_bytes().to_vec();
        sent.extend_from_slice(&h);
        sent.extend_from_slice(&body);
        let first = judged(&sent, &[]).map(|e| e.kind);
        let next = judged_next(&sent, prefix, &cuts).map(|e| e.kind);
        prop_assert_eq!(first, checked, "{:?}", String::from_utf8_lossy(&sent));
        prop_assert_eq!(next, checked, "{:?}", String::from_utf8_lossy(&sent));
    }

    /// The plain heads' reading without a parser (`head_check::plain`) judges every head as
    /// httparse's reading does: the same verdict, the same words.
    #[test]
    fn heads_judged_without_the_parser_are_judged_as_httparse_judges_them(
        lines in prop::collection::vec(header_line(), 0..6),
        http10 in any::<bool>(),
        line in prop::sample::select(vec![
            "POST /mcp HTTP/1.1", "GET /mcp?x=1&y=%20 HTTP/1.1", "POST /a|b HTTP/1.1",
            "POST  /mcp HTTP/1.1", "post /mcp HTTP/1.1", "POST /mcp HTTP/1.1 ", "POST /mcp",
            "OPTIONS * HTTP/1.1", "POST /m\"cp HTTP/1.1", "POST /mcp HTTP/2.0",
        ]),
        bare_lf in any::<bool>(),
        noise in prop::collection::vec(any::<u8>(), 0..3),
        at in any::<usize>(),
    ) {
        let mut h = head(&lines, http10);
        let first = h.iter().position(|&b| b == b'\n').unwrap() + 1;
        h.splice(..first, format!("{line}\r\n").into_bytes());
        if bare_lf {
            // one CRLF made a bare LF
            let crs: Vec<usize> = h.iter().enumerate().filter(|(_, &b)| b == b'\r').map(|(i, _)| i).collect();
            h.remove(crs[at % crs.len()]);
        }
        if !noise.is_empty() {
            // a few arbitrary bytes somewhere in the head (before its blank line)
            let spot = at % (h.len() - 2);
            h.splice(spot..spot, noise);
        }
        let plain = framing(&h).map_err(|e| (e.kind, e.message));
        let slow = parsed(&h).map_err(|e| (e.kind, e.message));
        prop_assert_eq!(plain, slow, "{:?}", String::from_utf8_lossy(&h));
    }

    /// A head read whole in one read is found and judged in one pass (`plain_head`) when it
    /// is plain: it ends where the search for the blank line says, whatever follows it, and is
    /// judged as when it arrives in pieces (the search and the judge of the whole head), up to
    /// and past the line limit.
    #[test]
    fn a_plain_head_read_at_once_ends_and_is_judged_as_the_search_finds_it(
        lines in prop::collection::vec(header_line(), 0..6),
        many in prop::sample::select(vec![0usize, 90, 96, 97, 98, 99, 120]),
        after in prop::collection::vec(any::<u8>(), 0..48),
    ) {
        let mut lines = lines;
        lines.extend((0..many).map(|i| format!("X-{i}: y")));
        let h = head(&lines, false);
        let mut sent = h.clone();
        sent.extend_from_slice(&after);
        if let Some((end, _)) = plain_head(&sent, MAX_HEAD_LINES) {
            prop_assert_eq!(Some(end), find_end(&sent));
        }
        let at_once = judged(&sent, &[]).map(|e| (e.kind, e.message));
        let in_pieces = judged(&sent, &[1]).map(|e| (e.kind, e.message));
        prop_assert_eq!(at_once, in_pieces, "{:?}", String::from_utf8_lossy(&h));
    }

    #[test]
    fn every_refusal_is_a_json_rpc_answer(which in 0usize..3, detail in "[ -~]{0,40}") {
        let error = match which {
            0 => GatewayError::bad_framing(&detail),
            1 => GatewayError::head_too_large(&detail),
            _ => GatewayError::client_timeout(std::time::Duration::from_secs(1)),
        };
        check_refusal(&error)?;
    }
}

/// A next request's head is held to the limits however it starts: over 100 lines of blank
/// lines alone, a head past 64 KiB that never ends, and one in a pipelined prefix.
#[test]
fn a_next_requests_head_is_held_to_the_limits() {
    let blank = "\r\n".repeat(101);
    let e = judged_next(blank.as_bytes(), 0, &[7, 50]).expect("101 blank lines refused");
    assert_eq!(e.kind, ErrorKind::HeadTooLarge);
    let big = format!("\r\nPOST /mcp HTTP/1.1\r\nX: {}", "a".repeat(70_000));
    for prefix in [0, 1, 30, 40_000, big.len()] {
        let e = judged_next(big.as_bytes(), prefix, &[9_000]).expect("over 64 KiB refused");
        assert_eq!(e.kind, ErrorKind::HeadTooLarge, "prefix {prefix}");
    }
}
