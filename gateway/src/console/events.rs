//! The console's event stream (`GET /console/events`): one server-sent event a second per
//! open page, each a frame of `snapshot.rs` (the first with the samples and the events held,
//! bounded whatever the fleet, later ones with only what is new). Streams are bounded
//! ([`MAX_STREAMS`]; one more is answered 503 -32018); a frame is built only while a stream is
//! open, so a console nobody watches costs the sampler alone. A client that takes none of the
//! bytes sent to it for [`WRITE_TIMEOUT`] loses its stream, and its slot: the kernel's count of
//! the bytes it acknowledged is read each second (a stream that does not read fills its
//! buffers, then stops acknowledging), and a write that cannot finish in that time fails.
//! Who may open one is `admin_auth.rs`.

use super::snapshot::{frame, Cursor, Sources};
use crate::error::{ErrorKind, GatewayError};
use bytes::Bytes;
use pingora::http::ResponseHeader;
use pingora::protocols::http::ServerSession;
use pingora::server::ShutdownWatch;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Pages that may watch at once (each costs a frame a second).
pub const MAX_STREAMS: usize = 16;

/// How long a stream's client may take nothing of what was sent to it.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a frame is sent.
const EVERY: Duration = Duration::from_secs(1);

/// Serves one event stream on `session` until its page goes away, stops reading or the
/// gateway stops; 503 when [`MAX_STREAMS`] are open already.
pub async fn serve(
    session: &mut ServerSession,
    src: &Sources,
    slots: &Arc<Semaphore>,
    shutdown: &ShutdownWatch,
) {
    session.set_keepalive(None);
    let Ok(_slot) = slots.clone().try_acquire_owned() else {
        let error = GatewayError::new(
            ErrorKind::Overloaded,
            format!(
                "{MAX_STREAMS} console streams are open already: close a page or try again later"
            ),
        )
        .with("scope", "console")
        .with("reason", "console-streams")
        .with("limit", MAX_STREAMS);
        let (parts, body) = super::assets::error(&error).into_parts();
        if session
            .write_response_header(Box::new(parts.into()))
            .await
            .is_ok()
        {
            let _ = session.write_response_body(body.into(), true).await;
        }
        return;
    };
    session.set_write_timeout(Some(WRITE_TIMEOUT));
    if session
        .write_response_header(Box::new(head()))
        .await
        .is_err()
    {
        return;
    }
    let mut shutdown = shutdown.clone();
    let mut cursor = Cursor::default();
    let mut taken = Taken::new();
    // the page reconnects after this long if the stream breaks
    let mut first = Some(Bytes::from_static(b"retry: 2000\n\n"));
    loop {
        let (value, next) = frame(src, cursor).await;
        cursor = next;
        let mut out = first.take().map(|b| b.to_vec()).unwrap_or_default();
        out.extend_from_slice(b"event: snapshot\ndata: ");
        // `{}` writes JSON on one line: a frame is one `data:` line
        out.extend_from_slice(value.to_string().as_bytes());
        out.extend_from_slice(b"\n\n");
        if session
            .write_response_body(out.into(), false)
            .await
            .is_err()
        {
            return; // the page went away, or took nothing for the write timeout
        }
        tokio::select! {
            _ = tokio::time::sleep(EVERY) => {}
            _ = shutdown.changed() => return,
        }
        if taken.stalled(session, Instant::now()) {
            tracing::debug!("a console stream whose client takes nothing ended");
            return;
        }
    }
}

/// Whether a stream's client takes what is sent: the bytes it acknowledged, and since when
/// that count has not moved while bytes waited for it.
struct Taken {
    acked: u64,
    since: Instant,
}

impl Taken {
    fn new() -> Taken {
        Taken {
            acked: 0,
            since: Instant::now(),
        }
    }

    /// Whether bytes have waited for the client, none of them taken, for [`WRITE_TIMEOUT`]
    /// (never, where the kernel does not say).
    fn stalled(&mut self, session: &ServerSession, now: Instant) -> bool {
        let info = session
            .stream()
            .and_then(|s| s.get_socket_digest())
            .and_then(|d| d.tcp_info());
        let Some(info) = info else {
            return false;
        };
        let waiting = info.tcpi_notsent_bytes > 0 || info.tcpi_unacked > 0;
        if !waiting || info.tcpi_bytes_acked != self.acked {
            self.acked = info.tcpi_bytes_acked;
            self.since = now;
            return false;
        }
        now.saturating_duration_since(self.since) >= WRITE_TIMEOUT
    }
}

/// The stream's head: an event stream, chunked, with the console's headers.
fn head() -> ResponseHeader {
    let mut answer = http::Response::new(());
    let headers = answer.headers_mut();
    super::assets::secure(headers);
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        http::header::TRANSFER_ENCODING,
        http::HeaderValue::from_static("chunked"),
    );
    let (parts, ()) = answer.into_parts();
    parts.into()
}
