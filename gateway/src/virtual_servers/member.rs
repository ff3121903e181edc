//! The client side of a member request ([`MemberClient`]): what the plain route's handler
//! reads the request from and writes the answer to when a virtual server asks a member. The
//! request is the client's head ([`Parent`]: body headers and `Expect` left out) with the
//! member's body; the answer goes to the asker as pingora's own `HttpTask`s through a bounded
//! channel, and a task handle in it is learnt as the client's own session learns it.

use crate::downstream::client::Client;
use crate::downstream::seam::{Gate, Observer, Seam, Write};
use bytes::Bytes;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::prelude::*;
use pingora::protocols::http::HttpTask;
use std::time::Duration;
use tokio::sync::mpsc;

/// What a member request takes from its parent, the client's request: its head (body headers
/// and `Expect` left out: a member's body is its own; its extensions kept: the caller the auth
/// step found, whom the member's requests are made for) and the client's address.
pub(crate) struct Parent {
    head: RequestHeader,
    peer: Option<std::net::IpAddr>,
}

impl Parent {
    /// The parent `client`'s.
    pub(crate) fn of(client: &impl Client) -> Parent {
        let mut head = client.req_header().clone();
        for name in [
            http::header::CONTENT_LENGTH,
            http::header::TRANSFER_ENCODING,
            http::header::EXPECT,
        ] {
            head.remove_header(&name);
        }
        Parent {
            head,
            peer: client.peer_ip(),
        }
    }

    /// The path the client asked for (a member route's upstream path is made from it).
    pub(crate) fn path(&self) -> &str {
        self.head.uri.path()
    }
}

/// The client side of a member request: the parent's head and the member's body; what the
/// handler writes goes to the asker as pingora's own `HttpTask`s, through a bounded channel
/// (a full channel holds the member's handler back: no answer is buffered here).
pub(crate) struct MemberClient {
    head: RequestHeader,
    body: Option<Bytes>,
    body_read: usize,
    peer: Option<std::net::IpAddr>,
    pub(super) written: Option<ResponseHeader>,
    out: mpsc::Sender<HttpTask>,
    /// What watches the member's answer (a task handle's watch, the cache's hearing), as the
    /// client's own session's seam watches the parent's.
    seam: Seam,
    /// What holds the member's answer back until it is checked (the seam's gate), if anything.
    gate: Option<Box<dyn Gate>>,
}

impl MemberClient {
    pub(super) fn new(parent: &Parent, body: Bytes, out: mpsc::Sender<HttpTask>) -> MemberClient {
        MemberClient {
            head: parent.head.clone(),
            body: Some(body),
            body_read: 0,
            peer: parent.peer,
            written: None,
            out,
            seam: Seam::default(),
            gate: None,
        }
    }

    /// The answer's head, past the gate: watched, then sent.
    async fn head_out(&mut self, head: Box<ResponseHeader>, end: bool) -> Result<()> {
        if !self.seam.is_empty() {
            self.seam
                .head(&head, crate::downstream::seam::Body::of(&head));
        }
        if end {
            self.seam.chunk(&[], true);
        }
        self.written = Some((*head).clone());
        self.send(HttpTask::Header(head, end)).await
    }

    /// A piece of the answer's body, past the gate: watched, then sent.
    async fn body_out(&mut self, body: Option<Bytes>, end: bool) -> Result<()> {
        self.seam.chunk(body.as_deref().unwrap_or_default(), end);
        self.send(HttpTask::Body(body, end)).await
    }

    async fn send(&mut self, task: HttpTask) -> Result<()> {
        self.out.send(task).await.map_err(|_| {
            Error::explain(
                ErrorType::ConnectionClosed,
                "the virtual route's request ended",
            )
        })
    }
}

impl Client for MemberClient {
    fn req_header(&self) -> &RequestHeader {
        &self.head
    }

    fn req_header_mut(&mut self) -> &mut RequestHeader {
        &mut self.head
    }

    async fn read_request_body(&mut self) -> Result<Option<Bytes>> {
        let body = self.body.take().filter(|b| !b.is_empty());
        self.body_read += body.as_ref().map_or(0, Bytes::len);
        Ok(body)
    }

    fn is_body_done(&mut self) -> bool {
        self.body.is_none()
    }

    fn body_bytes_read(&self) -> usize {
        self.body_read
    }

    async fn write_continue_response(&mut self) -> Result<()> {
        Ok(())
    }

    fn get_read_timeout(&self) -> Option<Duration> {
        None
    }

    async fn write_response_header(&mut self, head: Box<ResponseHeader>, end: bool) -> Result<()> {
        let now = match self.gate.as_mut() {
            Some(gate) => gate.head(head, end),
            None => Some((head, end)),
        };
        match now {
            Some((head, end)) => self.head_out(head, end).await,
            None => Ok(()),
        }
    }

    async fn write_response_body(&mut self, body: Option<Bytes>, end: bool) -> Result<()> {
        let Some(mut gate) = self.gate.take() else {
            return self.body_out(body, end).await;
        };
        let writes = gate.chunk(body, end).await;
        self.gate = Some(gate);
        for write in writes {
            match write {
                Write::Head(head, end) => self.head_out(head, end).await?,
                Write::Body(body, end) => self.body_out(body, end).await?,
            }
        }
        Ok(())
    }

    fn response_written(&self) -> Option<&ResponseHeader> {
        self.written.as_ref()
    }

    fn set_keepalive(&mut self, _seconds: Option<u64>) {}

    fn peer_ip(&self) -> Option<std::net::IpAddr> {
        self.peer
    }

    fn observe(&mut self, observer: Box<dyn Observer>) {
        self.seam.attach(observer);
    }

    fn gate(&mut self, gate: Box<dyn Gate>) {
        self.gate = Some(gate);
    }

    async fn gone(&mut self) -> Box<Error> {
        self.out.closed().await;
        Error::explain(
            ErrorType::ConnectionClosed,
            "the virtual route's request ended",
        )
    }
}
