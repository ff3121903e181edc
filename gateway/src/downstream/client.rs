//! Where a gateway-driven request's answer goes: [`Client`], the client side a handler reads
//! the request from and writes the answer to. The client's own pingora session is one; a
//! virtual server's member exchange (`virtual_servers/member.rs`) is the other, so a member is
//! asked by calling the same handler with a client of its own, never by re-entering pingora's
//! pipeline. Only what the handlers use is here: the request head, its body, the answer's head
//! and body, whether an answer started, keep-alive, and noticing a client that went away.

use bytes::Bytes;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::prelude::*;
use std::future::Future;
use std::time::Duration;

/// The client side of a request the gateway drives itself.
pub trait Client: Send {
    /// The request head.
    fn req_header(&self) -> &RequestHeader;
    /// The request head, to adjust before it is forwarded.
    fn req_header_mut(&mut self) -> &mut RequestHeader;
    /// The next chunk of the request body; `None` at its end.
    fn read_request_body(&mut self) -> impl Future<Output = Result<Option<Bytes>>> + Send;
    /// Whether the whole request body was read.
    fn is_body_done(&mut self) -> bool;
    /// Request body bytes read so far.
    fn body_bytes_read(&self) -> usize;
    /// `100 Continue`, for a client that waits for it before its body.
    fn write_continue_response(&mut self) -> impl Future<Output = Result<()>> + Send;
    /// The longest silence allowed between reads of the body.
    fn get_read_timeout(&self) -> Option<Duration>;
    /// Writes the answer's head (`end`: it has no body).
    fn write_response_header(
        &mut self,
        head: Box<ResponseHeader>,
        end: bool,
    ) -> impl Future<Output = Result<()>> + Send;
    /// Writes a piece of the answer's body (`end`: the last).
    fn write_response_body(
        &mut self,
        body: Option<Bytes>,
        end: bool,
    ) -> impl Future<Output = Result<()>> + Send;
    /// The answer's head, once written.
    fn response_written(&self) -> Option<&ResponseHeader>;
    /// Keeps the connection for another request (`Some(idle seconds)`) or closes it after this
    /// one (`None`).
    fn set_keepalive(&mut self, seconds: Option<u64>);
    /// The client's IP address (the socket's, never a header's), if it has one.
    fn peer_ip(&self) -> Option<std::net::IpAddr>;
    /// Attaches `observer` to this request's answer (the seam, `downstream/seam.rs`): it sees
    /// the head and each piece of the body as the client gets them, whoever writes them.
    fn observe(&mut self, observer: Box<dyn super::seam::Observer>);
    /// Holds this request's answer behind `gate` (the seam, `downstream/seam.rs`): whoever
    /// writes the answer, the client gets what the gate lets through.
    fn gate(&mut self, gate: Box<dyn super::seam::Gate>);
    /// Returns only when the client went away (a held stream notices at once, not at its next
    /// write); pipelined bytes stay for the next request.
    fn gone(&mut self) -> impl Future<Output = Box<Error>> + Send;
}
