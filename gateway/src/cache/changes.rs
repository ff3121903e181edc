//! Hearing what says cached results changed on a stream the gateway passes through untouched
//! (a `subscriptions/listen` stream, a POST answered with an event stream): the stream's events
//! are read with the one SSE reader (`mcp_wire::sse::EventReader`, bounded: an event larger
//! than [`MAX_EVENT`] is skipped, as no change notification is that large), and an event is a
//! change only when its data is a top-level JSON-RPC notification (a `method`, no `id`) whose
//! method, read as JSON (so `notifications\/tools\/list_changed` and `list\u005fchanged` are
//! heard), is one of [`CHANGES`]. Text inside a result (a tool that echoes a method name) is
//! never a change.
//!
//! A stream in a content coding is decoded for the reading (gzip and deflate, the codings the
//! gateway asks backends for), into the reader as it decodes, so nothing is held but the
//! reader's bounded buffer; the work is bounded by deflate's ratio to the bytes received. A
//! stream the gateway cannot decode (another coding, a corrupt one) is heard as a change of its
//! scope at each chunk: what it says cannot be read, and dropping is never wrong, only slower.

use flate2::write::{GzDecoder, ZlibDecoder};
use mcp_wire::sse::EventReader;
use serde::{Deserialize, Deserializer};
use std::borrow::Cow;
use std::io::Write;

/// The notifications that say cached results changed.
pub const CHANGES: [&str; 4] = [
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
];

/// The largest event read for a change (a change notification is far smaller).
pub const MAX_EVENT: usize = 16 * 1024;

/// Whether `method` says cached results changed.
pub fn is_change(method: &str) -> bool {
    CHANGES.contains(&method)
}

/// What a stream said so far, for the reading.
pub struct Changes {
    decoding: Decoding,
}

/// How the stream's bytes reach the reader.
enum Decoding {
    Plain(Scan),
    Gzip(Box<GzDecoder<Scan>>),
    Deflate(Box<ZlibDecoder<Scan>>),
    /// A coding the gateway does not read, or a corrupt stream.
    Unreadable,
}

/// The reader, and whether the chunk being read completed a change.
struct Scan {
    reader: EventReader,
    heard: bool,
}

impl Write for Scan {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let heard = &mut self.heard;
        self.reader.push(buf, |data| *heard |= says_change(data));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Changes {
    /// The reading of a stream whose `Content-Encoding` is `coding` (`None`: not coded).
    pub fn new(coding: Option<&str>) -> Changes {
        let scan = Scan {
            reader: EventReader::new(MAX_EVENT),
            heard: false,
        };
        let coding = coding.map(|c| c.trim().to_ascii_lowercase());
        let decoding = match coding.as_deref() {
            None | Some("identity") | Some("") => Decoding::Plain(scan),
            Some("gzip") | Some("x-gzip") => Decoding::Gzip(Box::new(GzDecoder::new(scan))),
            Some("deflate") => Decoding::Deflate(Box::new(ZlibDecoder::new(scan))),
            Some(_) => Decoding::Unreadable,
        };
        Changes { decoding }
    }

    /// The reading of a stream with the head `headers`.
    pub fn of(headers: &http::HeaderMap) -> Changes {
        let coding = headers.get(http::header::CONTENT_ENCODING);
        let coding = coding.map(|v| v.to_str().unwrap_or("unreadable"));
        Changes::new(coding)
    }

    /// Whether `chunk` holds (or completes) a change notification.
    pub fn scan(&mut self, chunk: &[u8]) -> bool {
        let read = match &mut self.decoding {
            Decoding::Plain(scan) => scan.write_all(chunk).map(|()| scan),
            // flushed: what the chunk decodes to is read now, not with the next chunk
            Decoding::Gzip(d) => d
                .write_all(chunk)
                .and_then(|()| d.flush())
                .map(|()| d.get_mut()),
            Decoding::Deflate(d) => {
                (d.write_all(chunk).and_then(|()| d.flush())).map(|()| d.get_mut())
            }
            Decoding::Unreadable => return true,
        };
        match read {
            Ok(scan) => std::mem::take(&mut scan.heard),
            Err(_) => {
                self.decoding = Decoding::Unreadable;
                true
            }
        }
    }
}

/// A message as the reading sees it: its method (escapes read) and whether it has an id.
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "present")]
    id: bool,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

impl Message<'_> {
    fn is_change(&self) -> bool {
        !self.id && self.method.as_deref().is_some_and(is_change)
    }
}

/// Whether an event's `data` is a change notification (or a batch holding one).
pub fn says_change(data: &[u8]) -> bool {
    match data.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => serde_json::from_slice::<Message<'_>>(data).is_ok_and(|m| m.is_change()),
        Some(b'[') => serde_json::from_slice::<Vec<Message<'_>>>(data)
            .is_ok_and(|batch| batch.iter().any(Message::is_change)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: &[u8] =
        b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n";

    fn heard(stream: &[u8]) -> bool {
        Changes::new(None).scan(stream)
    }

    #[test]
    fn a_change_is_heard_whole_and_split_anywhere() {
        assert!(heard(EVENT));
        for at in 1..EVENT.len() {
            let mut c = Changes::new(None);
            let first = c.scan(&EVENT[..at]);
            let second = c.scan(&EVENT[at..]);
            assert!(first || second, "split at {at}");
        }
        let mut c = Changes::new(None);
        let times = EVENT.iter().filter(|b| c.scan(&[**b])).count();
        assert_eq!(times, 1, "byte by byte");
    }

    #[test]
    fn a_method_name_inside_a_result_or_a_request_is_no_change() {
        let echo = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\\\"notifications/tools/list_changed\\\"\"}],\"method\":\"notifications/tools/list_changed\"}}\n\n";
        assert!(!heard(echo));
        let request = b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"notifications/tools/list_changed\"}\n\n";
        assert!(!heard(request), "a request (with an id) is no notification");
        let nested = b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":{\"method\":\"notifications/tools/list_changed\"}}}\n\n";
        assert!(!heard(nested));
        let comment = b": {\"method\":\"notifications/tools/list_changed\"}\n\n";
        assert!(!heard(comment));
    }

    #[test]
    fn escaped_names_are_heard() {
        for escaped in [
            r#"notifications\/tools\/list_changed"#,
            r#"notifications/tools/list\u005fchanged"#,
            r#"notifications/resources/\u0075pdated"#,
        ] {
            let event = format!("data: {{\"jsonrpc\":\"2.0\",\"method\":\"{escaped}\"}}\n\n");
            assert!(heard(event.as_bytes()), "{escaped}");
        }
        let progress = b"data: {\"method\":\"notifications/progress\",\"params\":{}}\n\n";
        assert!(!heard(progress));
        let batch = b"data: [{\"method\":\"notifications/progress\"},{\"method\":\"notifications/prompts/list_changed\"}]\n\n";
        assert!(heard(batch));
    }

    #[test]
    fn a_gzip_or_deflate_stream_is_decoded_for_the_reading() {
        use flate2::write::{GzEncoder, ZlibEncoder};
        use flate2::Compression;
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(EVENT).unwrap();
        let gz = gz.finish().unwrap();
        let mut zl = ZlibEncoder::new(Vec::new(), Compression::default());
        zl.write_all(EVENT).unwrap();
        let zl = zl.finish().unwrap();
        for (coding, bytes) in [("gzip", &gz), ("deflate", &zl)] {
            let mut c = Changes::new(Some(coding));
            let times = bytes.chunks(3).filter(|chunk| c.scan(chunk)).count();
            assert_eq!(times, 1, "{coding}");
            assert!(
                Changes::new(Some(coding)).scan(bytes),
                "{coding} in one chunk"
            );
        }
        let mut plain = Changes::new(Some("gzip"));
        assert!(
            plain.scan(b"not gzip at all"),
            "a corrupt stream is a change"
        );
        assert!(
            Changes::new(Some("br")).scan(b"\x0b"),
            "an unread coding is a change"
        );
    }
}
