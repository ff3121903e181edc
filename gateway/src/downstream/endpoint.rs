//! The client listener's endpoint: its address, TLS, and the per-connection buffers pingora
//! allocates when it accepts a connection.
//!
//! pingora gives every accepted connection a 64 KiB read buffer (`BufReader`, allocated and
//! zeroed at accept) in front of its own HTTP/1 reader, which reads the request head into a
//! 4 KiB buffer of its own and the body into buffers of its own. For the gateway that buffer
//! only adds a copy, and it was most of what an idle or half-open connection cost (issue 26:
//! 4,000 half-open connections held about 360 MB; the figures with and without it are in
//! docs/benchmarks.md, "Half-open connections", from `scripts/bench-half-open`). The gateway
//! reads the socket without it; the write buffer keeps pingora's default (one TCP segment).

use pingora::listeners::tls::TlsSettings;
use pingora::listeners::{L4BufferSettings, ListenerConfig};

/// The read buffer of a client connection, in bytes: none (pingora's default is 64 KiB).
pub const CLIENT_READ_BUFFER: usize = 0;

/// The client listener at `addr`, with TLS when `tls` is given.
pub fn client_endpoint(addr: &str, tls: Option<TlsSettings>) -> ListenerConfig {
    let buffers = L4BufferSettings::default().read(CLIENT_READ_BUFFER);
    let endpoint = ListenerConfig::tcp(addr).l4_buffer(buffers);
    match tls {
        Some(tls) => endpoint.tls(tls),
        None => endpoint,
    }
}
