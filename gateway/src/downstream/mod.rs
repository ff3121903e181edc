//! The downstream side: each client connection around pingora's HTTP proxy, before pingora
//! parses it. Per connection, the client timeouts pingora lacks and the request heads it would
//! answer with a bare 400.
//! - an idle kept-alive connection closes after `client-timeouts.idle-s` (pingora waits
//!   forever once a client sent `Connection: keep-alive` or nothing);
//! - every request head, a kept-alive connection's next ones and pipelined ones included,
//!   must be complete within `client-timeouts.header-s` of its first byte (pingora's read
//!   timeout restarts at every byte, so a header byte every few seconds kept a connection open
//!   for ever): 408 / -32028;
//! - a head over 64 KiB or 100 lines is refused (431 / -32027), and framing the gateway will
//!   not guess at (differing `Content-Length`s, a `Transfer-Encoding` other than `chunked`) gets
//!   400 / -32026, each a JSON-RPC error, and the connection closes;
//! - HTTP/1.1 pipelining is on: requests sent back to back are answered in order;
//! - past `limits.max-connections` open connections, or past its client's share
//!   (`limits.max-connections-per-client`, by peer address), a new one is answered 503 -32018
//!   and closed (`cap.rs`);
//! - a connection gets no 64 KiB read buffer in front of pingora's own (`endpoint.rs`);
//! - `listen-tls`: TLS on the client endpoint, its certificate reloaded when its files change,
//!   its handshake made once the connection is admitted and within `client-timeouts.header-s`
//!   (`tls.rs`);
//! - the Host/Origin policy every request passes (`guard.rs`).
//!
//! The request body's own timeout (silence between reads) is pingora's read timeout, set per
//! request from `client-timeouts.body-s` in the proxy.

pub mod answer;
pub(crate) mod cap;
pub mod client;
mod endpoint;
pub mod guard;
mod head;
mod head_check;
#[cfg(test)]
mod head_properties;
#[cfg(test)]
mod idle_size_tests;
pub mod seam;
pub mod tls;

pub use endpoint::client_endpoint;

use crate::config::ClientTimeouts;
use async_trait::async_trait;
use bytes::BytesMut;
use head::{Phase, Verdict, Watch};
use pingora::apps::{HttpPersistentSettings, HttpServerApp, ServerApp};
use pingora::listeners::tls::{Acceptor, TlsSettings};
use pingora::protocols::http::ServerSession;
use pingora::protocols::Stream;
use pingora::server::ShutdownWatch;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use tokio::io::{AsyncRead, ReadBuf};

/// The client timeouts in force (the running state implements it, so the listener never
/// reads the whole `State`).
pub trait CurrentTimeouts: Send + Sync {
    /// `client-timeouts` as of now.
    fn client_timeouts(&self) -> ClientTimeouts;

    /// `limits.max-connections` as of now (unlimited by default).
    fn max_connections(&self) -> Option<usize> {
        None
    }

    /// `limits.max-connections-per-client` as of now (`None`: the default share).
    fn max_connections_per_client(&self) -> Option<usize> {
        None
    }

    /// A connection was refused for `max-connections` (`per_client`: for its client's share;
    /// counted by the implementor).
    fn connection_refused(&self, _per_client: bool) {}
}

/// pingora's proxy app wrapped in the per-connection guard.
pub struct Guarded<A> {
    inner: Arc<A>,
    timeouts: Arc<dyn CurrentTimeouts>,
    open: cap::Open,
    /// `listen-tls`: the handshake, made once a connection is admitted.
    tls: Option<Acceptor>,
}

impl<A> Guarded<A> {
    /// Guards `inner`'s connections with the timeouts of the running config, counting the
    /// connections open in `connections` (`mcpgw_client_connections`).
    pub fn new(
        inner: A,
        timeouts: Arc<dyn CurrentTimeouts>,
        connections: pingora_prometheus::prometheus::IntGauge,
    ) -> Guarded<A> {
        Guarded {
            inner: Arc::new(inner),
            timeouts,
            open: cap::Open::counted_in(connections),
            tls: None,
        }
    }

    /// TLS on every connection (`listen-tls`), its handshake made once the connection is
    /// admitted and bounded by `client-timeouts.header-s` (the listener stays plain TCP).
    pub fn with_tls(mut self, settings: TlsSettings) -> Guarded<A> {
        self.tls = Some(settings.build());
        self
    }

    /// Counts a new connection against `limits.max-connections` and its client's share, then
    /// makes its TLS handshake (`listen-tls`) within `client-timeouts.header-s`: the connection
    /// and its slot, held until it closes; `None` when it was refused (answered 503 -32018 and
    /// closed) or its handshake failed.
    async fn admit(&self, stream: Stream) -> Option<(cap::Held, Stream)> {
        let limit = self.timeouts.max_connections();
        let share = cap::per_client_share(limit, self.timeouts.max_connections_per_client());
        let peer = stream
            .get_socket_digest()
            .and_then(|d| d.peer_addr().and_then(|a| a.as_inet()).map(|a| a.ip()));
        let held = match self.open.admit(limit, share, peer) {
            Ok(held) => held,
            Err(refused) => {
                let per_client = matches!(refused, cap::Refused::Client(_));
                self.timeouts.connection_refused(per_client);
                // before a TLS handshake an answer would be unreadable, and the handshake is
                // what the bound spares: the connection is closed
                if self.tls.is_none() {
                    cap::refuse(stream, refused).await;
                }
                return None;
            }
        };
        let stream = match &self.tls {
            // boxed: the handshake's state is only held while it runs
            Some(acceptor) => {
                let within = self.timeouts.client_timeouts().header;
                Box::pin(tls::handshake(acceptor, stream, within)).await?
            }
            None => stream,
        };
        Some((held, stream))
    }
}

/// How much of the next request one read takes (a stack buffer, live only within a poll): the
/// size of the buffer pingora reads a request head into, so a head that came whole is parsed
/// without another read.
const FIRST_READ: usize = 4096;

/// Waits for the connection's next request and reads what of it has come (through
/// `head::Watch`, under its idle or header deadline, judged as the head's start), so that a
/// connection between requests holds no session, no request buffer and no request future: they
/// are made when a request starts, and pingora parses the bytes read here as the request's
/// prefix (no second read). The bytes land in a buffer on the stack, live only
/// within one poll, and are copied into a buffer of their size once they are here. `None`
/// when the connection is done: closed, idle past its deadline, its head refused, or the server
/// shutting down.
async fn next_request(stream: &mut Stream, shutdown: &mut ShutdownWatch) -> Option<BytesMut> {
    if *shutdown.borrow() {
        return None;
    }
    let first = std::future::poll_fn(|cx| {
        let mut landing = [MaybeUninit::<u8>::uninit(); FIRST_READ];
        let mut read = ReadBuf::uninit(&mut landing);
        match Pin::new(&mut *stream).poll_read(cx, &mut read) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(())) if !read.filled().is_empty() => {
                // as large as what came: a head read whole is kept (pingora's header values
                // point into it) for the request's life, a held stream's too
                Poll::Ready(Some(BytesMut::from(read.filled())))
            }
            Poll::Ready(_) => Poll::Ready(None),
        }
    });
    tokio::select! {
        biased;
        first = first => first,
        _ = shutdown.changed() => None,
    }
}

/// The next request starts: what of it was read past the previous one (a pipelined prefix, in
/// `settings`) is its head's start, judged as such (`head::begin`). The answer to write when
/// that start is refused. (Not inline in the connection loop: what it holds would be held
/// across the loop's awaits.)
fn next_head_refused(
    phase: &Mutex<Phase>,
    settings: Option<&HttpPersistentSettings>,
) -> Option<Vec<u8>> {
    let prefix = settings.and_then(|s| s.pipelined_prefix());
    match head::begin(phase, prefix.unwrap_or_default()) {
        Verdict::Pass => None,
        Verdict::Refuse(e) => {
            tracing::debug!(kind = e.kind.as_str(), "request head refused");
            Some(head::refusal(&e))
        }
    }
}

#[async_trait]
impl<A> ServerApp for Guarded<A>
where
    A: HttpServerApp + Send + Sync + 'static,
{
    async fn process_new(
        self: &Arc<Self>,
        stream: Stream,
        shutdown: &ShutdownWatch,
    ) -> Option<Stream> {
        let (_counted, stream) = self.admit(stream).await?;
        let timeouts: ClientTimeouts = self.timeouts.client_timeouts();
        let phase = Arc::new(Mutex::new(Phase::new(timeouts)));
        let mut watched: Stream = Box::new(Watch::new(stream, phase.clone()));
        // the connection's own receiver (`changed` needs one), made once
        let mut stopping = shutdown.clone();
        let first = next_request(&mut watched, &mut stopping).await?;
        let mut session = ServerSession::new_http1(watched);
        session.set_pipelined_prefix(first);
        if *shutdown.borrow() {
            session.set_keepalive(None);
        } else {
            session.set_keepalive(Some(timeouts.idle.as_secs()));
        }
        session.set_pipelining_enabled(true);
        // one header map per request, not two: header names go upstream as the titled
        // standard names and lowercase others, not in the client's case (RFC 9110 §5.1)
        session.set_keep_header_case(false);
        let mut result = self.inner.process_new_http(session, shutdown).await;
        while let Some((mut stream, settings)) = result.map(|r| r.consume()) {
            let pipelined = settings
                .as_ref()
                .is_some_and(|s| s.pipelined_prefix().is_some());
            if let Some(answer) = next_head_refused(&phase, settings.as_ref()) {
                // boxed: a rare path, kept out of the connection future's size
                Box::pin(head::answer_and_close(stream, answer)).await;
                return None;
            }
            let first = if pipelined {
                None
            } else {
                Some(next_request(&mut stream, &mut stopping).await?)
            };
            let mut session = ServerSession::new_http1(stream);
            match (settings, first) {
                (Some(mut settings), Some(first)) => {
                    settings.set_pipelined_prefix(first);
                    settings.apply_to_session(&mut session);
                }
                (Some(settings), None) => settings.apply_to_session(&mut session),
                (None, Some(first)) => session.set_pipelined_prefix(first),
                (None, None) => {}
            }
            session.set_keep_header_case(false);
            result = self.inner.process_new_http(session, shutdown).await;
        }
        None
    }

    async fn cleanup(&self) {
        self.inner.http_cleanup().await;
    }
}
