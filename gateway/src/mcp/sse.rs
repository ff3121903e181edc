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
}
