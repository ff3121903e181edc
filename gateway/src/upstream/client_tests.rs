//! The client's pool: a connection goes back to it only when its answer was read whole and
//! exactly, and the backend keeps it alive (`UpstreamClient::release`, `reuse_now`).

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A backend on loopback answering every request with `answer`; counts its connections.
async fn backend(answer: &'static [u8]) -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                loop {
                    // requests here have no body: a head is one request
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..end + 4);
                        if conn.write_all(answer).await.is_err() {
                            return;
                        }
                    }
                    match conn.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    (addr, accepted)
}

fn request() -> RequestHeader {
    let mut req = RequestHeader::build("GET", b"/", None).unwrap();
    req.insert_header("Host", "127.0.0.1").unwrap();
    req
}

/// Sends two requests one after the other, reading each answer whole (or not, `read`) and
/// releasing it; the connections the backend saw.
async fn two_calls(answer: &'static [u8], read: bool) -> usize {
    let (addr, accepted) = backend(answer).await;
    let client = UpstreamClient::default();
    for _ in 0..2 {
        let peer = Box::new(HttpPeer::new(addr, false, String::new()));
        let mut ex = client
            .send(peer, &request(), Bytes::new(), true)
            .await
            .unwrap();
        assert_eq!(ex.header().status, 200);
        if read {
            ex.read_all(1024).await.unwrap();
        }
        client.release(ex);
    }
    accepted.load(Ordering::SeqCst)
}

#[tokio::test]
async fn a_connection_whose_answer_was_read_whole_is_reused() {
    let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    assert_eq!(two_calls(answer, true).await, 1);
}

#[tokio::test]
async fn a_connection_with_bytes_past_its_answer_is_not_reused() {
    // the bytes after the body would be read as the next request's answer
    let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n\r\n";
    assert_eq!(two_calls(answer, true).await, 2);
    let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\nextra";
    assert_eq!(two_calls(chunked, true).await, 2);
}

#[tokio::test]
async fn a_connection_the_backend_closes_is_not_reused() {
    let answer = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok";
    assert_eq!(two_calls(answer, true).await, 2);
}

#[tokio::test]
async fn a_connection_whose_answer_was_not_read_is_not_reused() {
    let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    assert_eq!(two_calls(answer, false).await, 2);
}
