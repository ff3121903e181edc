//! Server-sent events as MCP uses them: finding the JSON-RPC answer in a buffered JSON or SSE
//! body, and framing a gateway-generated message as an SSE event.

use bytes::Bytes;

/// Whether a content type is an SSE stream.
pub fn is_event_stream(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|c| c.trim_start().starts_with("text/event-stream"))
}

/// The JSON-RPC messages in a buffered body: the body itself for JSON, the `data` of each
/// event for SSE (multi-line data joined with `\n`, empty priming events skipped).
pub fn messages(content_type: Option<&str>, body: &[u8]) -> Vec<Vec<u8>> {
    if !is_event_stream(content_type) {
        return vec![body.to_vec()];
    }
    let mut out = Vec::new();
    let mut data: Vec<u8> = Vec::new();
    let mut has_data = false;
    for line in body.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            if has_data && !data.is_empty() {
                out.push(std::mem::take(&mut data));
            }
            data.clear();
            has_data = false;
        } else if let Some(rest) = line.strip_prefix(b"data:") {
            let rest = rest.strip_prefix(b" ").unwrap_or(rest);
            if has_data {
                data.push(b'\n');
            }
            data.extend_from_slice(rest);
            has_data = true;
        }
    }
    if has_data && !data.is_empty() {
        out.push(data);
    }
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
    let mut i = 0;
    let mut line_start = true;
    while i < buf.len() {
        let eol = match buf[i] {
            b'\n' => 1,
            b'\r' if buf.get(i + 1) == Some(&b'\n') => 2,
            b'\r' if i + 1 < buf.len() => 1,
            // a CR at the end may be the first half of a CRLF still to come
            b'\r' => return None,
            _ => {
                i += 1;
                line_start = false;
                continue;
            }
        };
        if line_start {
            return Some(i + eol);
        }
        i += eol;
        line_start = true;
    }
    None
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
}
