//! The client's own pingora session as the [`Client`] every gateway-driven handler answers.

use crate::downstream::client::Client;
use crate::downstream::seam::{Gate, Observer, Write};
use bytes::Bytes;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::prelude::*;
use std::time::Duration;

impl Client for pingora::proxy::Session {
    fn req_header(&self) -> &RequestHeader {
        self.as_downstream().req_header()
    }

    fn req_header_mut(&mut self) -> &mut RequestHeader {
        self.as_downstream_mut().req_header_mut()
    }

    async fn read_request_body(&mut self) -> Result<Option<Bytes>> {
        self.as_downstream_mut().read_request_body().await
    }

    fn is_body_done(&mut self) -> bool {
        self.as_downstream_mut().is_body_done()
    }

    fn body_bytes_read(&self) -> usize {
        self.as_downstream().body_bytes_read()
    }

    async fn write_continue_response(&mut self) -> Result<()> {
        self.as_downstream_mut().write_continue_response().await
    }

    fn get_read_timeout(&self) -> Option<Duration> {
        self.as_downstream().get_read_timeout()
    }

    async fn write_response_header(&mut self, head: Box<ResponseHeader>, end: bool) -> Result<()> {
        let Some(mut gate) = super::verdict::take_gate(self) else {
            return pingora::proxy::Session::write_response_header(self, head, end).await;
        };
        let now = gate.head(head, end);
        super::verdict::gate(self, gate);
        match now {
            Some((head, end)) => {
                pingora::proxy::Session::write_response_header(self, head, end).await
            }
            None => Ok(()),
        }
    }

    async fn write_response_body(&mut self, body: Option<Bytes>, end: bool) -> Result<()> {
        let Some(mut gate) = super::verdict::take_gate(self) else {
            return pingora::proxy::Session::write_response_body(self, body, end).await;
        };
        let writes = gate.chunk(body, end).await;
        super::verdict::gate(self, gate);
        for write in writes {
            match write {
                Write::Head(head, end) => {
                    pingora::proxy::Session::write_response_header(self, head, end).await?
                }
                Write::Body(body, end) => {
                    pingora::proxy::Session::write_response_body(self, body, end).await?
                }
            }
        }
        Ok(())
    }

    fn response_written(&self) -> Option<&ResponseHeader> {
        self.as_downstream().response_written()
    }

    fn set_keepalive(&mut self, seconds: Option<u64>) {
        self.as_downstream_mut().set_keepalive(seconds)
    }

    fn peer_ip(&self) -> Option<std::net::IpAddr> {
        let addr = self.as_downstream().client_addr()?;
        addr.as_inet().map(|a| a.ip())
    }

    fn observe(&mut self, observer: Box<dyn Observer>) {
        super::verdict::observe(self, observer);
    }

    fn gate(&mut self, gate: Box<dyn Gate>) {
        super::verdict::gate(self, gate);
    }

    async fn gone(&mut self) -> Box<Error> {
        let read = self.downstream_session.read_body_or_idle(true).await;
        read.err()
            .unwrap_or_else(|| Error::explain(ErrorType::ConnectionClosed, "the client went away"))
    }
}
