//! What a connection between requests holds: the connection loop's own future, allocated once
//! per connection, while it waits for the next request's first bytes (no session, no request
//! buffer, no request future: issue 52). 1,760 bytes in a debug build on 2026-12-06; pingora's
//! request future it no longer holds while idle was over 13 KB. And what the wait hands on.

use super::*;
use pingora::apps::{HttpServerApp, ReusedHttpStream};
use pingora::protocols::http::ServerSession;

struct Nothing;

#[async_trait]
impl HttpServerApp for Nothing {
    async fn process_new_http(
        self: &Arc<Self>,
        _session: ServerSession,
        _shutdown: &ShutdownWatch,
    ) -> Option<ReusedHttpStream> {
        None
    }
}

struct Defaults;

impl CurrentTimeouts for Defaults {
    fn client_timeouts(&self) -> ClientTimeouts {
        ClientTimeouts::default()
    }
}

/// A client connection and the gateway's end of it, as the listener hands it on.
async fn connected() -> (tokio::net::TcpStream, Stream) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap());
    let (client, accepted) = tokio::join!(client, listener.accept());
    let stream = pingora::protocols::l4::stream::Stream::from(accepted.unwrap().0);
    (client.unwrap(), Box::new(stream))
}

#[tokio::test]
async fn a_connection_waiting_for_its_next_request_holds_a_small_future() {
    let (_client, stream) = connected().await;
    let gauge = pingora_prometheus::prometheus::IntGauge::new("t", "t").unwrap();
    let guarded = Arc::new(Guarded::new(Nothing, Arc::new(Defaults), gauge));
    let (_tx, shutdown) = tokio::sync::watch::channel(false);
    let future = guarded.process_new(stream, &shutdown);
    let bytes = std::mem::size_of_val(&*future);
    println!("Guarded::process_new: {bytes} bytes");
    assert!(
        bytes <= 2048,
        "the idle connection's future grew: {bytes} bytes"
    );
}

/// The bytes of the next request that came are handed to pingora in a buffer of their size:
/// its header values point into that buffer, kept for the request's life (a held stream's
/// hours), so a 4 KiB read buffer there would cost every held stream 4 KiB.
#[tokio::test]
async fn the_next_requests_first_bytes_are_kept_in_a_buffer_of_their_size() {
    use tokio::io::AsyncWriteExt;
    let (mut client, stream) = connected().await;
    let phase = Arc::new(Mutex::new(Phase::new(ClientTimeouts::default())));
    let mut watched: Stream = Box::new(Watch::new(stream, phase));
    let head = b"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}";
    client.write_all(head).await.unwrap();
    let (_tx, shutdown) = tokio::sync::watch::channel(false);
    let mut shutdown = shutdown;
    let first = next_request(&mut watched, &mut shutdown).await.unwrap();
    assert_eq!(&first[..], &head[..]);
    assert_eq!(first.capacity(), head.len());
    // the client closes: no request, the connection is done
    drop(client);
    assert!(next_request(&mut watched, &mut shutdown).await.is_none());
}

/// A connection waiting for its next request ends when the server shuts down.
#[tokio::test]
async fn a_connection_waiting_for_its_next_request_ends_at_shutdown() {
    let (_client, mut stream) = connected().await;
    let (tx, shutdown) = tokio::sync::watch::channel(false);
    let mut shutdown = shutdown;
    let waiting = next_request(&mut stream, &mut shutdown);
    let stop = async {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        tx.send(true).unwrap();
    };
    let (ended, ()) = tokio::join!(waiting, stop);
    assert!(ended.is_none());
}
