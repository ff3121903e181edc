//! Who may watch the console's event stream, and what one stream may hold. With `admin-token`
//! set, `GET /console/events` needs the token: in `Authorization`, or (a browser's
//! `EventSource` sends no headers) as a ticket minted by `POST /admin/console/ticket` with it,
//! good for one stream within 60 s; without either it is 401 with a JSON-RPC error. A stream
//! whose client stops reading loses its slot after the write timeout, and the first frame is
//! bounded whatever the fleet's size. Raw HTTP: the heads and the pace are the point.

use mcp_gateway_tests::harness::ADMIN_TOKEN;
use mcp_gateway_tests::wire::{read_chunk, read_head};
use mcp_gateway_tests::{assert_eventually, Gateway, MockServer, Request};
use serde_json::Value;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

fn config(backend: &MockServer) -> String {
    format!(
        "pools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n",
        backend.addr
    )
}

fn bearer() -> String {
    format!("Bearer {ADMIN_TOKEN}")
}

/// A ticket minted with the token.
async fn ticket(admin: SocketAddr) -> String {
    let minted = Request::post("/admin/console/ticket", "")
        .header("Authorization", &bearer())
        .send(admin)
        .await;
    assert_eq!(minted.status(), 200, "{}", minted.text());
    let v = minted.json();
    assert_eq!(v["expiresInMs"], 60_000, "{v}");
    v["ticket"].as_str().expect("a ticket").to_owned()
}

/// The stream's answer to `req`: the status, and the body when it is not a stream.
async fn stream_status(req: Request, admin: SocketAddr) -> (u16, Value) {
    let (head, mut reader) = req.send_for_head(admin).await;
    if head.header("content-type") == Some("text/event-stream") {
        return (head.status, Value::Null);
    }
    let body = mcp_gateway_tests::wire::read_body(&mut reader, &head, false)
        .await
        .expect("a body");
    (
        head.status,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    )
}

fn assert_unauthorized(status: u16, body: &Value, reason: &str) {
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["error"]["code"], -32023, "{body}");
    assert_eq!(body["error"]["data"]["kind"], "unauthorized", "{body}");
    assert_eq!(body["error"]["data"]["reason"], reason, "{body}");
}

#[tokio::test]
async fn with_a_token_set_the_event_stream_needs_a_fresh_ticket_or_the_token() {
    let mock = MockServer::start("m").await;
    let gw = Gateway::start(&config(&mock)).await;
    let events = |path: &str| Request::bare("GET", path);
    let (status, body) = stream_status(events("/console/events"), gw.admin).await;
    assert_unauthorized(status, &body, "ticket-missing");
    let made_up = events("/console/events?ticket=0123456789abcdef0123456789abcdef");
    let (status, body) = stream_status(made_up, gw.admin).await;
    assert_unauthorized(status, &body, "ticket-invalid");
    // a ticket is minted only with the token
    let anonymous = Request::post("/admin/console/ticket", "")
        .send(gw.admin)
        .await;
    assert_eq!(anonymous.status(), 401, "{}", anonymous.text());
    assert_eq!(anonymous.json()["error"]["code"], -32023);
    let t = ticket(gw.admin).await;
    let with = format!("/console/events?ticket={t}");
    let (status, _) = stream_status(events(&with), gw.admin).await;
    assert_eq!(status, 200, "a fresh ticket opens the stream");
    // used once: a second stream with it is refused
    let (status, body) = stream_status(events(&with), gw.admin).await;
    assert_unauthorized(status, &body, "ticket-invalid");
    // the token itself, in the header, opens it too (curl, scripts)
    let header = events("/console/events").header("Authorization", &bearer());
    assert_eq!(stream_status(header, gw.admin).await.0, 200);
    let wrong = events("/console/events").header("Authorization", "Bearer not-the-token-at-all");
    let (status, body) = stream_status(wrong, gw.admin).await;
    assert_unauthorized(status, &body, "ticket-missing");
    // another site's page cannot mint one with the token either
    let cross = Request::post("/admin/console/ticket", "")
        .header("Authorization", &bearer())
        .header("Origin", "http://evil.example")
        .send(gw.admin)
        .await;
    assert_eq!(cross.status(), 403, "{}", cross.text());
}

#[tokio::test]
async fn without_a_token_set_the_event_stream_is_open_and_no_ticket_is_needed() {
    let mock = MockServer::start("m").await;
    // (a config that names admin-token, in a comment, gets none from the harness)
    let gw = Gateway::start(&format!("# no admin-token\n{}", config(&mock))).await;
    let minted = Request::post("/admin/console/ticket", "")
        .send(gw.admin)
        .await;
    assert_eq!(minted.status(), 200, "{}", minted.text());
    assert_eq!(minted.json()["ticket"], Value::Null, "none needed");
    let (status, _) = stream_status(Request::bare("GET", "/console/events"), gw.admin).await;
    assert_eq!(status, 200);
}

/// A stream opened with the token on a connection whose receive buffer is small: its head is
/// read (200: it holds a slot), nothing after it, so its frames pile up in the gateway's send
/// queue.
async fn unread_stream(admin: SocketAddr) -> BufReader<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("a small buffer");
    let mut stream = socket.connect(admin).await.expect("connect");
    let req = Request::bare("GET", "/console/events").header("Authorization", &bearer());
    stream
        .write_all(&req.head_bytes(admin))
        .await
        .expect("write");
    // a small buffer: the head, and hardly anything of the frames after it
    let mut reader = BufReader::with_capacity(64, stream);
    let head = read_head(&mut reader, false)
        .await
        .expect("read head")
        .expect("a head");
    assert_eq!(head.status, 200, "a slot");
    reader
}

#[tokio::test]
async fn a_stream_whose_client_stops_reading_loses_its_slot_after_the_write_timeout() {
    let mock = MockServer::start("m").await;
    let gw = Gateway::start(&config(&mock)).await;
    let mut unread = Vec::new();
    for _ in 0..16 {
        unread.push(unread_stream(gw.admin).await);
    }
    let events = Request::bare("GET", "/console/events").header("Authorization", &bearer());
    assert_eq!(
        events.send_for_head(gw.admin).await.0.status,
        503,
        "the 16 unread streams hold every slot"
    );
    // frames a second fill the small buffers within seconds; then no byte is taken for the
    // write timeout (10 s) and each unread stream is dropped: a reader gets a slot again
    assert_eventually!(
        Duration::from_secs(90),
        events.send_for_head(gw.admin).await.0.status == 200,
        "a slot freed from a client that does not read"
    );
    drop(unread);
}

/// The first `snapshot` frame of a stream, and its size in bytes.
async fn first_frame(admin: SocketAddr) -> (Value, usize) {
    let req = Request::bare("GET", "/console/events").header("Authorization", &bearer());
    let (head, mut reader): (_, BufReader<TcpStream>) = req.send_for_head(admin).await;
    assert_eq!(head.status, 200);
    let mut body = Vec::new();
    let marker = b"event: snapshot\ndata: ";
    loop {
        let chunk = read_chunk(&mut reader).await.expect("read").expect("more");
        body.extend_from_slice(&chunk);
        let text = String::from_utf8_lossy(&body);
        if let Some(at) = text.find("event: snapshot\ndata: ") {
            if let Some(end) = text[at..].find("\n\n") {
                let data = &text[at + marker.len()..at + end];
                return (serde_json::from_str(data).expect("a frame"), data.len());
            }
        }
    }
}

#[tokio::test]
async fn the_first_frame_is_bounded_whatever_the_number_of_backends() {
    let mock = MockServer::start("m").await;
    // 300 backends nobody listens on (and the mock)
    let mut backends: Vec<String> = (0..300)
        .map(|i| format!("127.0.0.3:{}", 20_000 + i))
        .collect();
    backends.push(mock.addr.to_string());
    let gw = Gateway::start(&format!(
        "pools: {{ p: {{ backends: [{}], health: {{ interval-ms: 60000 }} }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n",
        backends.join(", ")
    ))
    .await;
    // some seconds of samples; one look a second (a stream left holds its slot until the
    // gateway's next write to it fails, a second later)
    let deadline = Instant::now() + Duration::from_secs(30);
    let (frame, size) = loop {
        let (frame, size) = first_frame(gw.admin).await;
        if frame["samples"].as_array().map_or(0, Vec::len) >= 5 {
            break (frame, size);
        }
        assert!(Instant::now() < deadline, "five samples not taken in 30 s");
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let samples = frame["samples"].as_array().expect("samples");
    eprintln!(
        "first frame: {size} bytes, {} samples, 301 backends",
        samples.len()
    );
    for s in samples {
        let rows = s["b"].as_array().expect("backends of a sample").len();
        assert!(rows <= 64, "a sample carries {rows} backends");
    }
    let pool = &frame["pools"][0];
    let listed = pool["backends"].as_array().expect("backends").len();
    assert!(listed <= 64, "the pool lists {listed} backends");
    assert_eq!(pool["backendCount"], 301, "the count is whole");
    assert!(size < 256 * 1024, "first frame of {size} bytes");
}
