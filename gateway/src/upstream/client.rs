//! Requests the gateway drives itself (stateful routes, body-routed requests, re-initialization)
//! over pingora's transport connector, so they share pooled upstream connections. Backends
//! speak HTTP/1.1 (no ALPN is offered), so HTTP/1 sessions are made directly: their futures are
//! a fraction of the size of the protocol-choosing connector's, and every request moves them.

use super::InflightGuard;
use bytes::{Bytes, BytesMut};
use pingora::connectors::TransportConnector;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::protocols::http::client::HttpSession;
use pingora::protocols::http::v1::client as v1;
use pingora::upstreams::peer::{HttpPeer, Peer};
use pingora::{Error, ErrorType};

/// Where an upstream request failed: this decides whether repeating it is safe.
#[derive(Debug)]
pub enum CallError {
    /// No connection: the request never reached the backend.
    Connect(Box<Error>),
    /// The connection broke after the request (or part of it) was written: the backend may
    /// have acted on it.
    Lost(Box<Error>),
    /// The request was not sent: the pool's credentials could not be had (its token endpoint
    /// failed). The answer for the client.
    Credentials(Box<crate::error::GatewayError>),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Connect(e) | CallError::Lost(e) => write!(f, "{e}"),
            CallError::Credentials(e) => write!(f, "{}", e.message),
        }
    }
}

/// Client for gateway-driven upstream requests: pingora's transport connector (its pool of
/// idle connections) with HTTP/1 sessions over it, as pingora's `http::v1::Connector` makes
/// them, and a release that needs no `await` (`reuse_now`, carried in vendor/pingora-core).
pub struct UpstreamClient {
    transport: TransportConnector,
}

impl Default for UpstreamClient {
    fn default() -> Self {
        UpstreamClient {
            transport: TransportConnector::new(None),
        }
    }
}

/// One request in progress on an upstream connection, its response head read. The session
/// and its peer are boxed: an exchange is moved through every caller's future (returned,
/// matched, stored), and inline they are about 1.2 KB each move copies.
pub struct Exchange {
    session: Box<HttpSession>,
    peer: Box<HttpPeer>,
    /// Body already read for inspection, handed out by `chunk` first.
    buffered: Option<Bytes>,
    /// Counts the request in flight on its backend while the exchange lives.
    _inflight: Option<InflightGuard>,
}

impl UpstreamClient {
    /// Connects (reusing a pooled connection when one is idle), sends the request head and
    /// body, and reads the response head. A pooled connection that turns out closed before any
    /// answer is replaced by a fresh one when `repeatable` (the request is safe to send twice:
    /// a close at that moment cannot tell "idle close" from "died while handling it").
    pub async fn send(
        &self,
        peer: Box<HttpPeer>,
        req: &RequestHeader,
        body: Bytes,
        repeatable: bool,
    ) -> Result<Exchange, CallError> {
        let (mut session, reused) = self.session(&peer).await?;
        size_body_buffer(&mut session, req);
        match write_and_read_head(&mut session, req, body.clone()).await {
            Ok(()) => Ok(Exchange::new(session, peer)),
            // A pooled connection the backend closed while idle: nothing reached it.
            Err((reached, _)) if reused && (!reached || repeatable) => {
                Box::pin(self.send_fresh(peer, req, body)).await
            }
            Err((_, e)) => Err(CallError::Lost(e)),
        }
    }

    /// An idle pooled connection (the common case, a small future), or a new one: connecting
    /// (TCP, TLS) is a large future, boxed so that a warm pool does not pay for moving it.
    async fn session(&self, peer: &HttpPeer) -> Result<(Box<HttpSession>, bool), CallError> {
        if let Some(stream) = self.transport.reused_stream(peer).await {
            return Ok((h1(stream, peer), true));
        }
        let stream = Box::pin(self.transport.new_stream(peer))
            .await
            .map_err(CallError::Connect)?;
        Ok((h1(stream, peer), false))
    }

    /// The request again, on a new connection (the pooled one was closed under it).
    async fn send_fresh(
        &self,
        peer: Box<HttpPeer>,
        req: &RequestHeader,
        body: Bytes,
    ) -> Result<Exchange, CallError> {
        let stream = Box::pin(self.transport.new_stream(&*peer))
            .await
            .map_err(CallError::Connect)?;
        let mut fresh = h1(stream, &peer);
        size_body_buffer(&mut fresh, req);
        write_and_read_head(&mut fresh, req, body)
            .await
            .map_err(|(_, e)| CallError::Lost(e))?;
        Ok(Exchange::new(fresh, peer))
    }

    /// Returns a finished exchange's connection to the pool: kept when its answer was read
    /// whole, exactly, and the backend keeps the connection alive; closed otherwise.
    pub fn release(&self, exchange: Exchange) {
        let Exchange {
            mut session, peer, ..
        } = exchange;
        if !session.response_done() {
            return;
        }
        if let HttpSession::H1(mut h1) = *session {
            h1.respect_keepalive();
            if let Some(stream) = h1.reuse_now() {
                let idle = peer.options.idle_timeout;
                self.transport
                    .release_stream(stream, peer.reuse_hash(), idle);
            }
        }
    }
}

/// The buffer a GET's answer, and any answer that is an event stream, is read into (the
/// latter on every path: `Pool::peer` sets it in the peer's options): a GET through this
/// client is a session's event stream (held for the session's life, or a client's), whose
/// events are small; pingora's default of 64 KiB per body was half of a held stream's memory
/// (docs/benchmarks.md, "Held GET streams"). One page, as nginx's `proxy_buffer_size`: an
/// event larger than that (a large result sent as an event) is read in several reads, a
/// system call per 4 KiB (issue 52: 8 KiB until then). Other answers keep the default.
pub(crate) const STREAM_BODY_BUFFER: usize = 4 * 1024;

fn size_body_buffer(session: &mut HttpSession, req: &RequestHeader) {
    if let (HttpSession::H1(h1), &http::Method::GET) = (session, &req.method) {
        h1.set_body_buf_size(STREAM_BODY_BUFFER);
    }
}

/// An HTTP/1 session over `stream`, with `peer`'s options (as `http::v1::Connector` makes it).
fn h1(stream: pingora::protocols::Stream, peer: &HttpPeer) -> Box<HttpSession> {
    Box::new(HttpSession::H1(v1::HttpSession::new_with_options(
        stream, peer,
    )))
}

/// Writes the request and reads the answer's head; on error, says whether the backend may
/// have received the whole request.
async fn write_and_read_head(
    session: &mut HttpSession,
    req: &RequestHeader,
    body: Bytes,
) -> Result<(), (bool, Box<Error>)> {
    session
        .write_request_header(Box::new(req.clone()))
        .await
        .map_err(|e| (false, e))?;
    if !body.is_empty() {
        session
            .write_request_body(body, true)
            .await
            .map_err(|e| (true, e))?;
    }
    session.finish_request_body().await.map_err(|e| (true, e))?;
    // A close before any response byte may be the keep-alive race or a crash mid-request:
    // the request may have been processed.
    session
        .read_response_header()
        .await
        .map_err(|e| (true, e))?;
    // `Exchange::header` reads it from the session from now on
    match session.response_header() {
        Some(_) => Ok(()),
        None => Err((
            true,
            Error::explain(
                ErrorType::InvalidHTTPHeader,
                "no response head after reading it",
            ),
        )),
    }
}

impl Exchange {
    fn new(session: Box<HttpSession>, peer: Box<HttpPeer>) -> Exchange {
        Exchange {
            session,
            peer,
            buffered: None,
            _inflight: None,
        }
    }

    /// The exchange, counted in flight on its backend until it is dropped or released.
    pub fn counted(mut self, inflight: InflightGuard) -> Exchange {
        self._inflight = Some(inflight);
        self
    }

    /// The response head, as the session holds it (read before an exchange exists, so no copy
    /// is kept; an empty 502 head stands in only if pingora had dropped it).
    pub fn header(&self) -> &ResponseHeader {
        static NONE: std::sync::LazyLock<ResponseHeader> = std::sync::LazyLock::new(|| {
            let mut bare = http::Response::new(());
            *bare.status_mut() = http::StatusCode::BAD_GATEWAY;
            ResponseHeader::from(bare.into_parts().0)
        });
        self.session.response_header().unwrap_or(&NONE)
    }

    /// Whether the whole response body was read (and handed out).
    pub fn done(&mut self) -> bool {
        self.buffered.is_none() && self.session.response_done()
    }

    /// Puts a body read by [`Exchange::read_all`] back, to be relayed after all.
    pub fn with_buffered(mut self, body: Bytes) -> Exchange {
        self.buffered = (!body.is_empty()).then_some(body);
        self
    }

    /// Puts body bytes read with [`Exchange::chunk`] back, to be handed out first again.
    pub fn unread(&mut self, body: Bytes) {
        self.buffered = (!body.is_empty()).then_some(body);
    }

    /// Next body chunk; `None` at the end.
    pub async fn chunk(&mut self) -> pingora::Result<Option<Bytes>> {
        if let Some(body) = self.buffered.take() {
            return Ok(Some(body));
        }
        if self.session.response_done() {
            return Ok(None);
        }
        self.session.read_response_body().await
    }

    /// The whole body, failing past `limit` bytes.
    pub async fn read_all(&mut self, limit: usize) -> pingora::Result<Bytes> {
        let mut body = BytesMut::new();
        while let Some(chunk) = self.chunk().await? {
            if body.len() + chunk.len() > limit {
                return Err(Error::explain(
                    ErrorType::InvalidHTTPHeader,
                    "upstream answer too large",
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body.freeze())
    }
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
