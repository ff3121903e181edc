//! Property tests (proptest) for the SSE frame reader and splitter (`src/sse.rs`), which read a
//! backend's bytes as they come: arbitrary bytes never panic any reader; a stream split at any
//! byte boundary (every one, and several at once) yields the same events as the stream read
//! whole; and LF, CRLF and CR line ends (mixed within one stream too) give the same messages.
//! (`properties.rs` holds the first, narrower SSE properties.)
//!
//! `cargo test` runs 64 cases per property (or `PROPTEST_CASES`).

use crate::generate::config;
use mcp_wire::sse::{self, EventSplitter};
use proptest::prelude::*;

/// Bytes heavy in what SSE framing reads (CR, LF, `:`, field names), with anything else mixed in.
fn sse_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"\r".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"data:".to_vec()),
        Just(b"data: ".to_vec()),
        Just(b"event: message".to_vec()),
        Just(b"id: 7".to_vec()),
        Just(b": ping".to_vec()),
        Just(b"retry: 10".to_vec()),
        Just(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}".to_vec()),
        prop::collection::vec(any::<u8>(), 0..6),
    ];
    prop::collection::vec(piece, 0..max).prop_map(|p| p.concat())
}

/// Every event `bytes` splits into when pushed in the given pieces.
fn split(bytes: &[u8], points: &[usize]) -> Vec<Vec<u8>> {
    let mut splitter = EventSplitter::default();
    let mut events = Vec::new();
    let mut at = 0;
    for &p in points.iter().chain([&bytes.len()]) {
        let p = p.clamp(at, bytes.len());
        events.extend(splitter.push(&bytes[at..p]).into_iter().map(|e| e.to_vec()));
        at = p;
    }
    events
}

/// The lines, each ended by the next of `eols` in turn. (A CR ending a line, then an empty line
/// ended by LF, is one CRLF to any reader: that empty line gets a CR of its own.)
fn with_line_ends(lines: &[Vec<u8>], eols: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let mut eol = eols[i % eols.len()];
        if line.is_empty() && out.ends_with(b"\r") && eol.starts_with('\n') {
            eol = "\r";
        }
        out.extend_from_slice(line);
        out.extend_from_slice(eol.as_bytes());
    }
    out
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn no_reader_panics_on_arbitrary_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        framed in sse_bytes(40),
    ) {
        for body in [&bytes, &framed] {
            let _ = sse::messages(Some("text/event-stream"), body);
            let _ = sse::response(Some("text/event-stream"), body);
            for line in sse::lines(body) {
                let _ = sse::field(line);
            }
            let mut splitter = EventSplitter::default();
            let events = splitter.push(body);
            // the events are the stream's own bytes, in order, from its start
            let joined: Vec<u8> = events.concat();
            prop_assert!(body.starts_with(&joined));
        }
    }

    #[test]
    fn a_stream_split_at_any_one_byte_boundary_gives_the_same_events(stream in sse_bytes(30)) {
        let whole = split(&stream, &[]);
        for cut in 0..=stream.len() {
            prop_assert_eq!(&split(&stream, &[cut]), &whole, "cut at {}", cut);
        }
    }

    #[test]
    fn a_stream_cut_into_any_pieces_gives_the_same_events_and_messages(
        stream in sse_bytes(40),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let whole = split(&stream, &[]);
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
        points.sort_unstable();
        let pieces = split(&stream, &points);
        prop_assert_eq!(&pieces, &whole);
        // byte by byte too
        let every: Vec<usize> = (0..stream.len()).collect();
        prop_assert_eq!(&split(&stream, &every), &whole);
        // the messages of the events are the messages of the whole events read at once
        let from_events: Vec<Vec<u8>> = pieces
            .iter()
            .flat_map(|e| sse::messages(Some("text/event-stream"), e))
            .collect();
        let joined = whole.concat();
        prop_assert_eq!(from_events, sse::messages(Some("text/event-stream"), &joined));
    }

    #[test]
    fn lf_crlf_and_cr_line_ends_give_the_same_messages_and_events(
        events in prop::collection::vec(
            (
                prop::option::of("[a-z0-9]{1,6}"),
                prop::collection::vec("[ -~]{0,12}", 1..4),
            ),
            0..6,
        ),
        mixed in prop::collection::vec(prop::sample::select(vec!["\n", "\r\n", "\r"]), 1..5),
    ) {
        // each event: an optional id, a comment, then its data lines, then the blank line
        let mut lines: Vec<Vec<u8>> = Vec::new();
        for (id, data) in &events {
            if let Some(id) = id {
                lines.push(format!("id: {id}").into_bytes());
            }
            lines.push(b": keep-alive".to_vec());
            for d in data {
                lines.push(format!("data:{d}").into_bytes());
            }
            lines.push(Vec::new());
        }
        let lf = with_line_ends(&lines, &["\n"]);
        let expected = sse::messages(Some("text/event-stream"), &lf);
        let lf_events = split(&lf, &[])
            .iter()
            .filter(|e| !sse::lines(e).all(|l| l.is_empty()))
            .count();
        for eols in [vec!["\r\n"], vec!["\r"], mixed.clone()] {
            let stream = with_line_ends(&lines, &eols);
            prop_assert_eq!(&sse::messages(Some("text/event-stream"), &stream), &expected, "{:?}", eols);
            // a final CR may be half a CRLF: the splitter waits for one more byte
            let mut splitter = EventSplitter::default();
            let mut got = splitter.push(&stream);
            got.extend(splitter.push(b"\n"));
            let read: Vec<Vec<u8>> = got
                .iter()
                .flat_map(|e| sse::messages(Some("text/event-stream"), e))
                .collect();
            prop_assert_eq!(&read, &expected, "{:?}", eols);
            // and every event but a trailing blank line is one of the LF stream's
            let framed = got.iter().filter(|e| !sse::lines(e).all(|l| l.is_empty())).count();
            prop_assert_eq!(framed, lf_events, "{:?}", eols);
        }
    }
}
