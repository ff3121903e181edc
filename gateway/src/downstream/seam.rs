//! The seam every answer passes through on its way to the client, on every path: pingora's
//! fast path (its phases write through pingora's downstream modules, where `proxy/verdict.rs`
//! calls the seam), every gateway-driven answer (written by `downstream/answer.rs` through the
//! client's pingora session, so through the same module), and a virtual server's member answer
//! (its [`Client`](super::client::Client) applies a seam of its own before the parent reads
//! it). A concern that must see answers attaches an [`Observer`] to the request's answer with
//! `Client::observe` (or, in a pingora phase, `proxy/verdict.rs` `observe`); it sees the head
//! and every chunk as the client gets them, once, whichever path wrote them. What the cache
//! hears of changes (`cache/heard.rs`) is one; the answer's verdict and the task watch run in
//! the same module. The next observers (an audit record, interceptors) attach here, written
//! once.

use pingora::http::ResponseHeader;

/// What an answer's body is, as the seam read its head once for every observer: a `200` JSON
/// body or event stream in no content coding (the bodies the gateway reads), or another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// `application/json`.
    Json,
    /// `text/event-stream`.
    Events,
    /// Another status, media type or a content coding: not read.
    Other,
}

impl Body {
    /// What `head` says of its body (for a client that has no reading of its own at hand; the
    /// client's session reads it once in `proxy/verdict.rs`).
    pub fn of(head: &ResponseHeader) -> Body {
        if head.status == 200 {
            Body::read(&head.headers).0
        } else {
            Body::Other
        }
    }

    /// What the headers of a `200` answer say of its body, and its `Content-Length`: the
    /// three headers in one pass over the answer's few (three hashed lookups cost more); the
    /// first of each counts, as a lookup finds it.
    pub fn read(headers: &http::HeaderMap) -> (Body, Option<usize>) {
        let (mut encoding, mut content_type, mut length) = (None, None, None);
        for (name, value) in headers {
            let slot = if name == http::header::CONTENT_TYPE {
                &mut content_type
            } else if name == http::header::CONTENT_LENGTH {
                &mut length
            } else if name == http::header::CONTENT_ENCODING {
                &mut encoding
            } else {
                continue;
            };
            slot.get_or_insert(value);
        }
        if encoding.is_some_and(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity")) {
            return (Body::Other, None);
        }
        let content_type = content_type.and_then(|v| v.to_str().ok());
        let body = if mcp_wire::sse::is_event_stream(content_type) {
            Body::Events
        } else if content_type.is_some_and(|c| c.trim_start().starts_with("application/json")) {
            Body::Json
        } else {
            return (Body::Other, None);
        };
        let length = length.and_then(|v| std::str::from_utf8(v.as_bytes()).ok()?.parse().ok());
        (body, length)
    }
}

/// What watches one answer as it passes to the client. Both methods are called in the order
/// the client gets the bytes; neither may block (a hand-off to a queue is fine).
pub trait Observer: Send + Sync {
    /// The answer's head, and what its body is.
    fn head(&mut self, head: &ResponseHeader, body: Body);
    /// A piece of the answer's body. `whole`: the answer's response message has passed whole
    /// (the body ended, or, on an event stream the seam reads, its response event passed),
    /// so what was seen so far is all that says how the request went; it stays `true` for
    /// any later piece.
    fn chunk(&mut self, chunk: &[u8], whole: bool);
}

/// The observers attached to one answer (the first held in place: most answers have none or
/// one, and then cost no list).
#[derive(Default)]
pub struct Seam {
    first: Option<Box<dyn Observer>>,
    more: Vec<Box<dyn Observer>>,
}

impl Seam {
    /// Attaches `observer` to the answer.
    pub fn attach(&mut self, observer: Box<dyn Observer>) {
        match self.first {
            None => self.first = Some(observer),
            Some(_) => self.more.push(observer),
        }
    }

    /// Whether no observer is attached.
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// The answer's head passes (`body`: what it says of its body).
    pub fn head(&mut self, head: &ResponseHeader, body: Body) {
        for o in self.first.iter_mut().chain(&mut self.more) {
            o.head(head, body);
        }
    }

    /// A piece of the answer's body passes (`whole`: see [`Observer::chunk`]).
    pub fn chunk(&mut self, chunk: &[u8], whole: bool) {
        for o in self.first.iter_mut().chain(&mut self.more) {
            o.chunk(chunk, whole);
        }
    }
}

/// What a [`Gate`] makes of the answer so far: the writes to make, in order.
pub enum Write {
    /// A response head (`end`: the answer has no body).
    Head(Box<ResponseHeader>, bool),
    /// A piece of the body (`end`: the last).
    Body(Option<bytes::Bytes>, bool),
}

/// What holds an answer back until an asynchronous check has passed it (a route's
/// interceptor chain, `forward/intercept.rs`), unlike an [`Observer`], which only watches: the
/// client's writer hands it each head and piece of the body and writes what it returns. At
/// most one per answer; whatever it holds is bounded by the gate itself.
#[async_trait::async_trait]
pub trait Gate: Send + Sync {
    /// The answer's head: `Some` to write now, `None` while it is held (it comes back in a
    /// [`Write::Head`] later).
    fn head(&mut self, head: Box<ResponseHeader>, end: bool)
        -> Option<(Box<ResponseHeader>, bool)>;
    /// A piece of the answer's body (`end`: the last): what to write now.
    async fn chunk(&mut self, body: Option<bytes::Bytes>, end: bool) -> Vec<Write>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    struct Seen(Arc<Mutex<Vec<String>>>);

    impl Observer for Seen {
        fn head(&mut self, head: &ResponseHeader, _body: Body) {
            self.0
                .lock()
                .unwrap()
                .push(format!("head {}", head.status.as_u16()));
        }
        fn chunk(&mut self, chunk: &[u8], whole: bool) {
            let text = String::from_utf8_lossy(chunk);
            self.0.lock().unwrap().push(format!("chunk {text} {whole}"));
        }
    }

    #[test]
    fn every_observer_sees_the_head_and_each_chunk_in_order() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut seam = Seam::default();
        seam.attach(Box::new(Seen(seen.clone())));
        seam.attach(Box::new(Seen(seen.clone())));
        seam.head(&ResponseHeader::build(200, None).unwrap(), Body::Other);
        seam.chunk(b"a", false);
        seam.chunk(b"", true);
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            [
                "head 200",
                "head 200",
                "chunk a false",
                "chunk a false",
                "chunk  true",
                "chunk  true"
            ]
        );
    }
}
