//! The client listener's endpoint: its address and the per-connection buffers pingora
//! allocates when it accepts a connection. It is always plain TCP: `listen-tls`'s handshake is
//! the connection loop's, after the connection is admitted (`tls.rs`).
//!
//! pingora gives every accepted connection a 64 KiB read buffer (`BufReader`, allocated and
//! zeroed at accept) in front of its own HTTP/1 reader, which reads the request head into a
//! 4 KiB buffer of its own and the body into buffers of its own. For the gateway that buffer
//! only adds a copy, and it was most of what an idle or half-open connection cost (issue 26:
//! 4,000 half-open connections held about 360 MB; the figures with and without it are in
//! docs/benchmarks.md, "Half-open connections", from `scripts/bench-half-open`). The gateway
//! reads the socket without it; the write buffer keeps pingora's default (one TCP segment).

use pingora::listeners::{L4BufferSettings, ListenerConfig};

/// The read buffer of a client connection, in bytes: none (pingora's default is 64 KiB).
pub const CLIENT_READ_BUFFER: usize = 0;

/// The client listener at `addr` (TCP; TLS, when set, is the connection loop's).
pub fn client_endpoint(addr: &str) -> ListenerConfig {
    let buffers = L4BufferSettings::default().read(CLIENT_READ_BUFFER);
    ListenerConfig::tcp(addr).l4_buffer(buffers)
}
