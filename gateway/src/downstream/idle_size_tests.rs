//! What a connection between requests holds: the connection loop's own future, allocated once
//! per connection, while it waits for the next request's first byte (no session, no request
//! future: issue 52). 1,744 bytes in a debug build on 2026-12-06; pingora's request future it
//! no longer holds while idle is over 13 KB.

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

#[tokio::test]
async fn a_connection_waiting_for_its_next_request_holds_a_small_future() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap());
    let (client, accepted) = tokio::join!(client, listener.accept());
    let _client = client.unwrap();
    let stream: Stream = Box::new(pingora::protocols::l4::stream::Stream::from(
        accepted.unwrap().0,
    ));
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
