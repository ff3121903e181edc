//! Server-sent events as MCP uses them: the one SSE line reader (lines end in LF, CRLF or CR,
//! as the SSE spec allows and servers use all three) and the field split every SSE reader of
//! the gateway goes through (the buffered-body reader here, the event splitter, the resume
//! frames, capture); finding the JSON-RPC answer in a buffered JSON or SSE body; framing a
//! gateway-generated message as an SSE event.

use bytes::Bytes;

/// Whether a content type is an SSE stream.
pub fn is_event_stream(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|c| c.trim_start().starts_with("text/event-stream"))
}

/// Where the line starting at `buf[start]` ends: `(end of its text, start of the next line)`;
/// `None` when its end has not arrived yet (no LF or CR, or a CR that is the last byte and may
/// be the first half of a CRLF).
fn line_end(buf: &[u8], start: usize) -> Option<(usize, usize)> {
    let at = start + memchr::memchr2(b'\n', b'\r', &buf[start..])?;
    match (buf[at], buf.get(at + 1)) {
        (b'\n', _) => Some((at, at + 1)),
        (_, Some(b'\n')) => Some((at, at + 2)),
        (_, Some(_)) => Some((at, at + 1)),
        (_, None) => None,
    }
}

/// The lines of a whole SSE body, each without its line end; a last line without an end (or
/// with a final CR) is a line too.
pub fn lines(body: &[u8]) -> Lines<'_> {
    Lines { body, at: 0 }
}

/// Iterator of [`lines`].
#[derive(Debug, Clone)]
pub struct Lines<'a> {
    body: &'a [u8],
    at: usize,
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.at >= self.body.len() {
            return None;
        }
        let start = self.at;
        match line_end(self.body, start) {
            Some((end, next)) => {
                self.at = next;
                Some(&self.body[start..end])
            }
            None => {
                self.at = self.body.len();
                let rest = &self.body[start..];
                Some(rest.strip_suffix(b"\r").unwrap_or(rest))
            }
        }
    }
}

/// A line as `(field, value)`: the value after the colon without its one leading space; a
/// line without a colon is a field with an empty value; a comment has an empty field.
pub fn field(line: &[u8]) -> (&[u8], &[u8]) {
    let (field, value) = match memchr::memchr(b':', line) {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => (line, &b""[..]),
    };
    (field, value.strip_prefix(b" ").unwrap_or(value))
}

/// Adds a `data` line's value to an event's data: lines joined with `\n`.
pub fn push_data(data: &mut Option<Vec<u8>>, value: &[u8]) {
    match data {
        Some(d) => {
            d.push(b'\n');
            d.extend_from_slice(value);
        }
        None => *data = Some(value.to_vec()),
    }
}

/// The JSON-RPC messages in a buffered body: the body itself for JSON, the `data` of each
/// event for SSE (multi-line data joined with `\n`, empty priming events skipped).
pub fn messages(content_type: Option<&str>, body: &[u8]) -> Vec<Vec<u8>> {
    if !is_event_stream(content_type) {
        return vec![body.to_vec()];
    }
    let mut out = Vec::new();
    let mut data: Option<Vec<u8>> = None;
    for line in lines(body) {
        if line.is_empty() {
            out.extend(data.take().filter(|d| !d.is_empty()));
            continue;
        }
        if let (b"data", value) = field(line) {
            push_data(&mut data, value);
        }
    }
    out.extend(data.filter(|d| !d.is_empty()));
    out
}

/// The JSON-RPC response (a message with `result` or `error`) in a buffered body, parsed.
pub fn response(content_type: Option<&str>, body: &[u8]) -> Option<serde_json::Value> {
    messages(content_type, body)
        .into_iter()
        .filter_map(|m| serde_json::from_slice::<serde_json::Value>(&m).ok())
        .find(|v| v.get("result").is_some() || v.get("error").is_some())
}

/// One SSE `message` event carrying `json`, with CRLF framing as the SDK servers send.
pub fn event(json: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(json.len() + 32);
    out.extend_from_slice(b"event: message\r\ndata: ");
    out.extend_from_slice(json);
    out.extend_from_slice(b"\r\n\r\n");
    Bytes::from(out)
}

/// Cuts a byte stream into whole SSE events (each ending with its blank line), so events can
/// be queued and handed to whichever client reads the stream next without ever splitting one.
/// Lines may end in LF, CRLF or CR (servers use all three).
#[derive(Debug, Default)]
pub struct EventSplitter {
    pending: bytes::BytesMut,
}

/// Where the first event in `buf` ends (just past its blank line).
fn event_end(buf: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
        let (end, next) = line_end(buf, at)?;
        if end == at {
            return Some(next);
        }
        at = next;
    }
}

impl EventSplitter {
    /// Adds a chunk; returns the events it completed, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Bytes> {
        self.pending.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = event_end(&self.pending) {
            events.push(self.pending.split_to(end).freeze());
        }
        events
    }
}

/// Reads the `data` of each event of a stream that arrives in chunks of any size, holding at
/// most `max` bytes of a line and of an event's data: a line or an event past them is skipped
/// whole (its event is not handed on), so a stream of any length costs a bounded buffer. Lines
/// end in LF, CRLF or CR, as [`lines`] reads them.
#[derive(Debug)]
pub struct EventReader {
    max: usize,
    line: Vec<u8>,
    /// The line in `line` went past `max`: its event is skipped.
    overlong: bool,
    /// The last byte seen was a CR: an LF next ends no other line.
    after_cr: bool,
    data: Option<Vec<u8>>,
    /// The current event went past a bound.
    skip: bool,
}

impl EventReader {
    /// A reader that holds at most `max` bytes of a line and of an event's data.
    pub fn new(max: usize) -> EventReader {
        EventReader {
            max,
            line: Vec::new(),
            overlong: false,
            after_cr: false,
            data: None,
            skip: false,
        }
    }

    /// Reads `chunk`: `each` is called with the data of every event it completes, in order
    /// (events without data, and skipped ones, are not handed on).
    pub fn push(&mut self, chunk: &[u8], mut each: impl FnMut(&[u8])) {
        let mut rest = chunk;
        while !rest.is_empty() {
            if std::mem::take(&mut self.after_cr) && rest[0] == b'\n' {
                rest = &rest[1..];
                continue;
            }
            let Some(at) = memchr::memchr2(b'\n', b'\r', rest) else {
                self.extend(rest);
                return;
            };
            self.extend(&rest[..at]);
            self.after_cr = rest[at] == b'\r';
            rest = &rest[at + 1..];
            self.end_line(&mut each);
        }
    }

    fn extend(&mut self, bytes: &[u8]) {
        if self.overlong || self.line.len() + bytes.len() > self.max {
            self.overlong = true;
        } else {
            self.line.extend_from_slice(bytes);
        }
    }

    fn end_line(&mut self, each: &mut impl FnMut(&[u8])) {
        if self.overlong {
            self.skip = true;
        } else if self.line.is_empty() {
            let data = self.data.take();
            if !std::mem::take(&mut self.skip) {
                if let Some(data) = data.filter(|d| !d.is_empty()) {
                    each(&data);
                }
            }
        } else if let (b"data", value) = field(&self.line) {
            let held = self.data.as_ref().map_or(0, |d| d.len() + 1);
            if held + value.len() > self.max {
                self.skip = true;
                self.data = None;
            } else if !self.skip {
                push_data(&mut self.data, value);
            }
        }
        self.line.clear();
        self.overlong = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_response_after_progress_and_priming_events() {
        let body = b"id: 1\r\nretry: 1000\r\ndata: \r\n\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\n\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-11-25\"}}\r\n\r\n";
        let v = response(Some("text/event-stream"), body).unwrap();
        assert_eq!(v["result"]["protocolVersion"], "2025-11-25");
    }

    #[test]
    fn json_bodies_are_one_message() {
        let v = response(
            Some("application/json"),
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600}}"#,
        )
        .unwrap();
        assert_eq!(v["error"]["code"], -32600);
    }

    #[test]
    fn events_round_trip() {
        let e = event(br#"{"a":1}"#);
        assert_eq!(
            messages(Some("text/event-stream"), &e),
            vec![br#"{"a":1}"#.to_vec()]
        );
    }

    #[test]
    fn events_are_cut_whole_whatever_the_chunks_and_line_endings() {
        let stream = b"event: message\r\ndata: {\"a\":1}\r\n\r\n: ping\n\nid: 7\ndata: x\n\ndata: y\r\rdata: z\n\n";
        for size in 1..stream.len() {
            let mut splitter = EventSplitter::default();
            let events: Vec<Bytes> = stream.chunks(size).flat_map(|c| splitter.push(c)).collect();
            assert_eq!(events.len(), 5, "chunks of {size}");
            assert_eq!(&events[0][..], b"event: message\r\ndata: {\"a\":1}\r\n\r\n");
            assert_eq!(&events[1][..], b": ping\n\n");
            assert_eq!(events.concat(), stream.to_vec());
        }
    }
    #[test]
    fn the_event_reader_reads_data_whatever_the_chunks_and_skips_what_is_too_large() {
        let stream = b"event: message\r\ndata: {\"a\":1}\r\n\r\n: ping\n\nid: 7\ndata: x\ndata: y\r\rdata: z\n\n";
        for size in 1..stream.len() {
            let mut reader = EventReader::new(64);
            let mut seen = Vec::new();
            for c in stream.chunks(size) {
                reader.push(c, |d| seen.push(d.to_vec()));
            }
            assert_eq!(
                seen,
                [b"{\"a\":1}".to_vec(), b"x\ny".to_vec(), b"z".to_vec()],
                "chunks of {size}"
            );
        }
        let mut reader = EventReader::new(8);
        let mut seen = Vec::new();
        let long = b"data: 0123456789\n\ndata: a\ndata: bcdefgh\n\ndata: ok\n\n";
        reader.push(long, |d| seen.push(d.to_vec()));
        assert_eq!(
            seen,
            [b"ok".to_vec()],
            "a long line and long data are skipped"
        );
    }
}
