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

/// What watches one answer as it passes to the client. Both methods are called in the order
/// the client gets the bytes; neither may block (a hand-off to a queue is fine).
pub trait Observer: Send + Sync {
    /// The answer's head.
    fn head(&mut self, head: &ResponseHeader);
    /// A piece of the answer's body. `whole`: the answer's response message has passed whole
    /// (the body ended, or, on an event stream the seam reads, its response event passed),
    /// so what was seen so far is all that says how the request went; it stays `true` for
    /// any later piece.
    fn chunk(&mut self, chunk: &[u8], whole: bool);
}

/// The observers attached to one answer.
#[derive(Default)]
pub struct Seam {
    observers: Vec<Box<dyn Observer>>,
}

impl Seam {
    /// Attaches `observer` to the answer.
    pub fn attach(&mut self, observer: Box<dyn Observer>) {
        self.observers.push(observer);
    }

    /// The answer's head passes.
    pub fn head(&mut self, head: &ResponseHeader) {
        for o in &mut self.observers {
            o.head(head);
        }
    }

    /// A piece of the answer's body passes (`whole`: see [`Observer::chunk`]).
    pub fn chunk(&mut self, chunk: &[u8], whole: bool) {
        for o in &mut self.observers {
            o.chunk(chunk, whole);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    struct Seen(Arc<Mutex<Vec<String>>>);

    impl Observer for Seen {
        fn head(&mut self, head: &ResponseHeader) {
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
        seam.head(&ResponseHeader::build(200, None).unwrap());
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
