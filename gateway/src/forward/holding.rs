//! [`Holding`]: the client side of a request whose answer the gateway itself makes whole and may
//! keep (the reverse bridge's answer to a cacheable request: `forward/cached.rs`). A 200 JSON
//! answer is held back until it ends, up to a limit, so that the cache can read it and say in
//! its head how it answered; an event stream, any other answer, or one past the limit goes to
//! the client as it comes (what was held first). Everything else is the client's own.

use crate::downstream::client::Client;
use crate::downstream::seam::Observer;
use bytes::{Bytes, BytesMut};
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::prelude::*;
use std::time::Duration;

/// The client, with a whole JSON answer held back.
pub(crate) struct Holding<'a, C: Client> {
    inner: &'a mut C,
    limit: usize,
    held: Option<Held>,
}

struct Held {
    head: Box<ResponseHeader>,
    body: BytesMut,
    ended: bool,
}

/// What a [`Holding`] ended with.
pub(crate) enum Ended {
    /// A whole 200 JSON answer, not written yet: the caller writes it.
    Whole(Box<ResponseHeader>, Bytes),
    /// The answer went to the client (or none was made).
    Written,
}

impl<'a, C: Client> Holding<'a, C> {
    /// `inner`, holding back a JSON answer of up to `limit` bytes.
    pub(crate) fn new(inner: &'a mut C, limit: usize) -> Self {
        Holding {
            inner,
            limit,
            held: None,
        }
    }

    /// The whole answer held, or the rest of an unfinished one written out.
    pub(crate) async fn end(mut self) -> Result<Ended> {
        match self.held.take() {
            Some(held) if held.ended => Ok(Ended::Whole(held.head, held.body.freeze())),
            Some(held) => {
                self.release(held).await?;
                Ok(Ended::Written)
            }
            None => Ok(Ended::Written),
        }
    }

    /// Writes out what was held, as it was to be (the answer goes on as it comes).
    async fn release(&mut self, mut held: Held) -> Result<()> {
        let _ = held.head.insert_header(super::kept::CACHE_HEADER, "bypass");
        self.inner.write_response_header(held.head, false).await?;
        let body = held.body.freeze();
        self.inner.write_response_body(Some(body), held.ended).await
    }
}

impl<C: Client> Client for Holding<'_, C> {
    fn req_header(&self) -> &RequestHeader {
        self.inner.req_header()
    }

    fn req_header_mut(&mut self) -> &mut RequestHeader {
        self.inner.req_header_mut()
    }

    async fn read_request_body(&mut self) -> Result<Option<Bytes>> {
        self.inner.read_request_body().await
    }

    fn is_body_done(&mut self) -> bool {
        self.inner.is_body_done()
    }

    fn body_bytes_read(&self) -> usize {
        self.inner.body_bytes_read()
    }

    async fn write_continue_response(&mut self) -> Result<()> {
        self.inner.write_continue_response().await
    }

    fn get_read_timeout(&self) -> Option<Duration> {
        self.inner.get_read_timeout()
    }

    async fn write_response_header(
        &mut self,
        mut head: Box<ResponseHeader>,
        end: bool,
    ) -> Result<()> {
        let json = head
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("application/json"));
        if head.status == 200 && json && !end {
            let body = BytesMut::new();
            self.held = Some(Held {
                head,
                body,
                ended: false,
            });
            return Ok(());
        }
        let _ = head.insert_header(super::kept::CACHE_HEADER, "bypass");
        self.inner.write_response_header(head, end).await
    }

    async fn write_response_body(&mut self, body: Option<Bytes>, end: bool) -> Result<()> {
        let Some(held) = &mut self.held else {
            return self.inner.write_response_body(body, end).await;
        };
        if let Some(chunk) = &body {
            held.body.extend_from_slice(chunk);
        }
        held.ended |= end;
        if held.body.len() > self.limit {
            // too large to keep: what was held goes first, then the rest as it comes
            let held = self.held.take();
            if let Some(held) = held {
                self.release(held).await?;
            }
        }
        Ok(())
    }

    fn response_written(&self) -> Option<&ResponseHeader> {
        match &self.held {
            Some(held) => Some(&held.head),
            None => self.inner.response_written(),
        }
    }

    fn set_keepalive(&mut self, seconds: Option<u64>) {
        self.inner.set_keepalive(seconds)
    }

    fn peer_ip(&self) -> Option<std::net::IpAddr> {
        self.inner.peer_ip()
    }

    fn observe(&mut self, observer: Box<dyn Observer>) {
        self.inner.observe(observer)
    }

    fn gate(&mut self, gate: Box<dyn crate::downstream::seam::Gate>) {
        self.inner.gate(gate)
    }

    async fn gone(&mut self) -> Box<Error> {
        self.inner.gone().await
    }
}
