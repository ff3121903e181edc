//! `Watch`: the client's stream as pingora reads it, watched while a request head arrives.
//! Between requests it waits at most the idle timeout for a first byte; from the first byte
//! the whole head must arrive within the header timeout, stay within the size and line
//! limits and frame its body unambiguously. A head that does not is never handed to pingora:
//! the watch writes the JSON-RPC error itself and then reads as closed.
//!
//! Every request's head is judged, not only a connection's first: the connection loop says
//! where each request starts ([`begin`]), with the bytes of it already read past the previous
//! request (a pipelined prefix, which pingora parses first and never reads from the stream
//! again). The head is what pingora parses from there: the blank lines it skips before a
//! request line are part of it (they count in its bytes, lines and time), and reads after its
//! end (its body) are not judged.

use crate::config::ClientTimeouts;
use crate::error::GatewayError;
use mcp_wire::RequestId;
use pingora::protocols::raw_connect::ProxyDigest;
use pingora::protocols::{
    GetProxyDigest, GetSocketDigest, GetTimingDigest, Peek, Shutdown, SocketDigest, Ssl, Stream,
    TimingDigest, UniqueID, UniqueIDType,
};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Largest request head accepted.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
pub use super::head_check::MAX_HEAD_LINES;

/// Where the connection is between requests.
#[derive(Debug)]
enum Stage {
    /// Waiting for the first byte of a request (`first`: of the connection).
    Idle { first: bool },
    /// A head is arriving: its bytes so far, and how many lines they hold.
    Head { bytes: Vec<u8>, lines: usize },
    /// The head was handed on; pingora's own timeouts apply until the next request.
    Open,
}

/// The watch's state, shared with the connection loop that re-arms it per request.
#[derive(Debug)]
pub struct Phase {
    stage: Stage,
    since: Instant,
    timeouts: ClientTimeouts,
}

impl Phase {
    /// A new connection: waiting for its first request.
    pub fn new(timeouts: ClientTimeouts) -> Phase {
        Phase {
            stage: Stage::Idle { first: true },
            since: Instant::now(),
            timeouts,
        }
    }

    fn deadline(&self) -> Option<Instant> {
        match self.stage {
            Stage::Idle { first: true } | Stage::Head { .. } => {
                Some(self.since + self.timeouts.header)
            }
            Stage::Idle { first: false } => Some(self.since + self.timeouts.idle),
            Stage::Open => None,
        }
    }
}

/// The previous request is done and the next one starts: `prefix` is what of it was already
/// read (a pipelined prefix; empty when none), judged as its head's start. Without a prefix
/// the watch waits (the idle timeout) for the next request's first byte.
pub fn begin(phase: &Mutex<Phase>, prefix: &[u8]) -> Verdict {
    let Ok(mut p) = phase.lock() else {
        return Verdict::Pass;
    };
    p.stage = Stage::Idle { first: false };
    p.since = Instant::now();
    if prefix.is_empty() {
        return Verdict::Pass;
    }
    judge(&mut p, prefix)
}

/// Writes `answer` (a refusal) and closes the connection, within a second: a client that does
/// not read is not waited for.
pub async fn answer_and_close(mut stream: Stream, answer: Vec<u8>) {
    use tokio::io::AsyncWriteExt;
    let write = async {
        let _ = stream.write_all(&answer).await;
        let _ = stream.flush().await;
        let _ = stream.shutdown().await;
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), write).await;
}

/// The client's stream, watched.
#[derive(Debug)]
pub struct Watch {
    inner: Stream,
    phase: Arc<Mutex<Phase>>,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    /// An answer being written instead of reading on; then the stream reads as closed.
    refusal: Option<(Vec<u8>, usize)>,
}

impl Watch {
    /// Watches `inner` under `phase`.
    pub fn new(inner: Stream, phase: Arc<Mutex<Phase>>) -> Watch {
        Watch {
            inner,
            phase,
            timer: None,
            refusal: None,
        }
    }

    fn refuse(&mut self, error: &GatewayError) {
        tracing::debug!(kind = error.kind.as_str(), "request head refused");
        self.refusal = Some((refusal(error), 0));
    }

    /// Ready once `deadline` has passed. The timer is lazy: one per connection, moved only
    /// when it would fire too late. Every request moves the deadline later; re-registering
    /// the timer each time would cost a timer-wheel update a request, and a wake of tokio's
    /// driver (an eventfd write) whenever the new timer is its earliest. Instead a timer that
    /// fires before the deadline (set for an earlier request) is moved on to it then.
    fn wait(&mut self, cx: &mut Context<'_>, deadline: Instant) -> Poll<()> {
        let deadline = tokio::time::Instant::from_std(deadline);
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if timer.deadline() > deadline {
            timer.as_mut().reset(deadline);
        }
        loop {
            if timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            if tokio::time::Instant::now() >= deadline {
                return Poll::Ready(());
            }
            // fired for an earlier request's deadline: on to this one
            timer.as_mut().reset(deadline);
        }
    }

    /// Writes the refusal; ready once it is out (or the client is gone).
    fn poll_refusal(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        while let Some((bytes, done)) = self.refusal.as_mut() {
            if *done >= bytes.len() {
                let _ = Pin::new(&mut self.inner).poll_flush(cx);
                return Poll::Ready(());
            }
            match Pin::new(&mut self.inner).poll_write(cx, &bytes[*done..]) {
                Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => {
                    *done = bytes.len();
                }
                Poll::Ready(Ok(n)) => *done += n,
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(())
    }
}

/// The answer written for a refused head: the JSON-RPC error, then the connection closes.
pub(super) fn refusal(error: &GatewayError) -> Vec<u8> {
    error.to_raw_http(&RequestId::null())
}

/// What the bytes just read mean for the head in progress.
pub(super) enum Verdict {
    /// Still arriving, or handed on whole.
    Pass,
    /// Refuse with this error.
    Refuse(GatewayError),
}

/// Appends `new` to the head in progress and judges it. Bytes read while waiting for a
/// request (`Idle`) are that request's head's start, whatever they are.
pub(super) fn judge(phase: &mut Phase, new: &[u8]) -> Verdict {
    if matches!(phase.stage, Stage::Idle { .. }) {
        phase.since = Instant::now();
        // the common case, a whole plain head in one read: found and judged in one pass
        if let Some((end, framing)) = super::head_check::plain_head(new, MAX_HEAD_LINES) {
            if end <= MAX_HEAD_BYTES {
                phase.stage = Stage::Open;
                return match framing {
                    Ok(()) => Verdict::Pass,
                    Err(e) => Verdict::Refuse(e),
                };
            }
        }
        if let Some(end) = head_end(new, 0) {
            // a whole head in one read: judged where it lies, not copied
            phase.stage = Stage::Open;
            return judge_head(&new[..end]);
        }
        phase.stage = Stage::Head {
            bytes: Vec::new(),
            lines: 0,
        };
    }
    let Stage::Head { bytes: head, lines } = &mut phase.stage else {
        return Verdict::Pass;
    };
    let searched = head.len();
    head.extend_from_slice(new);
    let Some(end) = head_end(head, searched) else {
        *lines += memchr::memchr_iter(b'\n', new).count();
        if *lines > MAX_HEAD_LINES {
            return Verdict::Refuse(GatewayError::head_too_large("100 header lines"));
        }
        if head.len() > MAX_HEAD_BYTES {
            return Verdict::Refuse(GatewayError::head_too_large("64 KiB"));
        }
        return Verdict::Pass;
    };
    let verdict = judge_head(&head[..end]);
    phase.stage = Stage::Open;
    verdict
}

/// Judges a whole head (through its blank line): its size, its lines, its framing.
fn judge_head(head: &[u8]) -> Verdict {
    if memchr::memchr_iter(b'\n', head).count() > MAX_HEAD_LINES {
        return Verdict::Refuse(GatewayError::head_too_large("100 header lines"));
    }
    if head.len() > MAX_HEAD_BYTES {
        return Verdict::Refuse(GatewayError::head_too_large("64 KiB"));
    }
    match super::head_check::framing(head) {
        Ok(()) => Verdict::Pass,
        Err(e) => Verdict::Refuse(e),
    }
}

/// The index just past the blank line ending the head at the start of `bytes`, of which the
/// first `searched` were searched before (a head arriving read by read). httparse, and so
/// pingora, skips blank lines (`\r\n` or `\n`) before a request line: the end is searched
/// for after them (`\r\n\r\n\r\nPOST …` does not end at 4), and they are part of the head.
pub(super) fn head_end(bytes: &[u8], searched: usize) -> Option<usize> {
    let lead = blank_lines(bytes)?;
    // a blank line found now may have begun in the bytes searched before
    let from = lead.max(searched.saturating_sub(3));
    find_end(&bytes[from..]).map(|end| from + end)
}

/// How many bytes of blank lines (`\r\n` or `\n`, as httparse skips them) `bytes` starts
/// with; `None` when it is nothing else (yet). A `\r` not followed by `\n` ends the run
/// (httparse refuses it, and so does the judge). At most one line per two bytes is skipped,
/// and a head over [`MAX_HEAD_LINES`] lines is refused, so this reads few bytes.
fn blank_lines(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
        match bytes.get(at..)? {
            [b'\r', b'\n', ..] => at += 2,
            [b'\n', ..] | [b'\r'] => at += 1,
            [] => return None,
            _ => return Some(at),
        }
    }
}

/// The index just past the blank line ending a head (`\r\n\r\n` or `\n\n`, whichever comes
/// first; the search for the second stops where the first was found).
/// The searchers are built once: `memmem::find` builds one per call, which cost more than the
/// search of a whole head.
pub(super) fn find_end(bytes: &[u8]) -> Option<usize> {
    use memchr::memmem::Finder;
    use std::sync::LazyLock;
    static CRLF: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\r\n\r\n"));
    static LF: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\n\n"));
    let crlf = CRLF.find(bytes).map(|i| i + 4);
    let lf = LF
        .find(&bytes[..crlf.unwrap_or(bytes.len())])
        .map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl AsyncRead for Watch {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.refusal.is_some() {
            // the answer goes out, then the stream reads as closed
            return this.poll_refusal(cx).map(|()| Ok(()));
        }
        let before = buf.filled().len();
        let deadline = match this.phase.lock() {
            Ok(p) => p.deadline(),
            Err(_) => None,
        };
        let Some(deadline) = deadline else {
            // the timer stays registered (see `wait`): dropping it here and making a new one
            // for the next request would cost a timer registration a request
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        };
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let verdict = match this.phase.lock() {
                    Ok(mut p) if buf.filled().len() > before => {
                        judge(&mut p, &buf.filled()[before..])
                    }
                    _ => Verdict::Pass,
                };
                match verdict {
                    Verdict::Pass => Poll::Ready(Ok(())),
                    Verdict::Refuse(e) => {
                        buf.set_filled(before);
                        this.refuse(&e);
                        this.poll_refusal(cx).map(|()| Ok(()))
                    }
                }
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                if this.wait(cx, deadline).is_pending() {
                    return Poll::Pending;
                }
                let (idle, header) = match this.phase.lock() {
                    Ok(p) => (matches!(p.stage, Stage::Idle { .. }), p.timeouts.header),
                    Err(_) => (true, Default::default()),
                };
                if idle {
                    // nothing of a request was sent: close quietly
                    tracing::debug!("idle client connection closed");
                    return Poll::Ready(Ok(()));
                }
                this.refuse(&GatewayError::client_timeout(header));
                this.poll_refusal(cx).map(|()| Ok(()))
            }
        }
    }
}

use std::future::Future;

impl AsyncWrite for Watch {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[async_trait::async_trait]
impl Shutdown for Watch {
    async fn shutdown(&mut self) {
        self.inner.shutdown().await
    }
}

impl UniqueID for Watch {
    fn id(&self) -> UniqueIDType {
        self.inner.id()
    }
}

/// TLS facts come from the stream underneath (a `listen-tls` listener's).
impl Ssl for Watch {
    fn get_ssl(&self) -> Option<&pingora::protocols::tls::TlsRef> {
        self.inner.get_ssl()
    }

    fn get_ssl_digest(&self) -> Option<Arc<pingora::protocols::tls::SslDigest>> {
        self.inner.get_ssl_digest()
    }

    fn selected_alpn_proto(&self) -> Option<pingora::protocols::ALPN> {
        self.inner.selected_alpn_proto()
    }
}

impl GetTimingDigest for Watch {
    fn get_timing_digest(&self) -> Vec<Option<TimingDigest>> {
        self.inner.get_timing_digest()
    }
}

impl GetProxyDigest for Watch {
    fn get_proxy_digest(&self) -> Option<Arc<ProxyDigest>> {
        self.inner.get_proxy_digest()
    }
}

impl GetSocketDigest for Watch {
    fn get_socket_digest(&self) -> Option<Arc<SocketDigest>> {
        self.inner.get_socket_digest()
    }
}

/// Peeking is not passed through: the connection loop reads the next request's first bytes
/// itself (`downstream::next_request`), through [`Watch`]'s read.
impl Peek for Watch {}
