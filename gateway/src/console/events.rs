//! The console's event stream (`GET /console/events`): one server-sent event a second per
//! open page, each a frame of `snapshot.rs` (the first with the 15 minutes of samples and the
//! events held, later ones with only what is new). Streams are bounded ([`MAX_STREAMS`]; one
//! more is answered 503 in JSON); a frame is built only while a stream is open, so a console
//! nobody watches costs the sampler alone.

use super::snapshot::{frame, Cursor, Sources};
use bytes::Bytes;
use http::StatusCode;
use pingora::http::ResponseHeader;
use pingora::protocols::http::ServerSession;
use pingora::server::ShutdownWatch;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// Pages that may watch at once (each costs a frame a second).
pub const MAX_STREAMS: usize = 16;

/// How often a frame is sent.
const EVERY: Duration = Duration::from_secs(1);

/// Serves one event stream on `session` until its page goes away or the gateway stops; 503
/// when [`MAX_STREAMS`] are open already.
pub async fn serve(
    session: &mut ServerSession,
    src: &Sources,
    slots: &Arc<Semaphore>,
    shutdown: &ShutdownWatch,
) {
    session.set_keepalive(None);
    let Ok(_slot) = slots.clone().try_acquire_owned() else {
        let body = format!(
            "{{\"error\":\"{MAX_STREAMS} console streams are open already: close a page or try again later\"}}\n"
        );
        let answer = super::assets::response(
            StatusCode::SERVICE_UNAVAILABLE,
            "application/json",
            body.into_bytes(),
        );
        let (parts, body) = answer.into_parts();
        if session
            .write_response_header(Box::new(parts.into()))
            .await
            .is_ok()
        {
            let _ = session.write_response_body(body.into(), true).await;
        }
        return;
    };
    if session
        .write_response_header(Box::new(head()))
        .await
        .is_err()
    {
        return;
    }
    let mut shutdown = shutdown.clone();
    let mut cursor = Cursor::default();
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
            return; // the page went away
        }
        tokio::select! {
            _ = tokio::time::sleep(EVERY) => {}
            _ = shutdown.changed() => return,
        }
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
