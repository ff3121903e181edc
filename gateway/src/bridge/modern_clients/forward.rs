//! A retry of an `input_required` call that reached a replica which does not hold the parked
//! call, forwarded to the one that does. The holder's address travels inside the sealed
//! `requestState` (`bridge.advertise-url` of the replica that parked the call): the state is
//! authenticated, so only a replica with the shared key can name a holder, and finding it costs
//! no session-store round trip (the key must be shared by the replicas anyway for the retry to
//! open on another one).
//!
//! The client's request goes on as it came: its head (with the credential the authentication
//! step removed put back, so the holder authenticates the client itself and no trust between
//! replicas is needed) and its body, marked with the `mcpgw-forwarded` hop header (a marked
//! request is never forwarded again), and the holder's answer is streamed back as it arrives.
//! No connection to the holder → -32004 `holder-unreachable` (HTTP 503, the call stays parked
//! there); the connection lost after the retry was sent → -32013 (its outcome is unknown).
//! Counted as `forwarded` or `forward-failed` in `mcpgw_mrtr_events_total`.

use super::serve::One;
use crate::auth::Credentials;
use crate::bridge::client::end_with_error;
use crate::bridge::Served;
use crate::config::Advertise;
use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::error::{Fail, GatewayError};
use crate::upstream::client::{CallError, Exchange};
use mcp_wire::headers::MCPGW_FORWARDED;
use pingora::prelude::*;
use pingora::upstreams::peer::HttpPeer;
use std::time::Duration;

/// How long connecting to the holder may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Headers of one connection, not of the request or answer.
const HOP_BY_HOP: [&str; 7] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "upgrade",
    "proxy-connection",
    "trailer",
];

/// Whether this request was forwarded by another replica already.
pub(super) fn was_forwarded(session: &impl Client) -> bool {
    session.req_header().headers.contains_key(MCPGW_FORWARDED)
}

impl One<'_> {
    /// Forwards the retry to `holder` (a sealed state's `advertise-url`) and streams its
    /// answer to the client.
    pub(super) async fn forward(
        &self,
        session: &mut impl Client,
        holder: &str,
    ) -> Result<Served, Fail> {
        let pool = &self.to.pool.name;
        let mut exchange = self.send_to_holder(session, holder).await?;
        self.count_forwarding("forwarded");
        let mut head = exchange.header().clone();
        for h in HOP_BY_HOP {
            head.remove_header(h);
        }
        let sse = mcp_wire::sse::is_event_stream(
            head.headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
        );
        if !head.headers.contains_key(http::header::CONTENT_LENGTH) {
            head.insert_header(http::header::TRANSFER_ENCODING, "chunked")?;
        }
        let done = exchange.done();
        answer::head(session, head, done).await?;
        if done {
            return Ok(Served::default());
        }
        loop {
            match exchange.chunk().await {
                Ok(Some(chunk)) => answer::chunk(session, Some(chunk), false).await?,
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(holder, error = %e, "the holder's answer broke off");
                    if sse {
                        let lost = GatewayError::backend_lost(pool, "the replica holding the call");
                        end_with_error(session, &lost, self.id).await?;
                    }
                    return Ok(Served::default());
                }
            }
        }
        answer::end(session).await?;
        Ok(Served::default())
    }

    /// The retry sent to `holder`, its answer's head read: a holder that cannot be resolved
    /// or reached is -32004, a connection lost after the retry went -32013.
    async fn send_to_holder(&self, session: &impl Client, holder: &str) -> Result<Exchange, Fail> {
        let pool = &self.to.pool.name;
        let Some(to) = Advertise::parse(holder) else {
            self.forward_failed(holder, "the holder's address does not parse");
            return Err(GatewayError::holder_unreachable("its address does not parse").into());
        };
        let peer = match peer(&to).await {
            Ok(p) => p,
            Err(e) => {
                self.forward_failed(holder, &e);
                return Err(GatewayError::holder_unreachable(&e).into());
            }
        };
        let head = self.forwarded_head(session)?;
        let client = &self.bridge.parking.forwarder;
        let sent = client
            .send(Box::new(peer), &head, self.body.clone(), false)
            .await;
        match sent {
            Ok(ex) => Ok(ex),
            Err(CallError::Credentials(e)) => Err((*e).into()),
            Err(CallError::Connect(e)) => {
                self.forward_failed(holder, &e.to_string());
                let detail = "no connection to the replica holding the call";
                Err(GatewayError::holder_unreachable(detail).into())
            }
            Err(CallError::Lost(e)) => {
                self.forward_failed(holder, &e.to_string());
                Err(GatewayError::backend_lost(pool, "the replica holding the call").into())
            }
        }
    }

    /// Counts a forwarding `event` in `mcpgw_mrtr_events_total`.
    fn count_forwarding(&self, event: &str) {
        self.metrics()
            .mrtr_events
            .with_label_values(&[&self.to.pool.name, event])
            .inc();
    }

    /// A retry that could not be forwarded to `holder`, as `detail` says: counted
    /// (`forward-failed`), not logged above DEBUG: a replica gone takes its parked calls with
    /// it, and each retry of theirs would say so again.
    fn forward_failed(&self, holder: &str, detail: &str) {
        self.count_forwarding("forward-failed");
        tracing::debug!(
            holder,
            detail,
            "a retry of a parked call could not be forwarded to its replica"
        );
    }

    /// The client's request head as it came, its credential back, marked as forwarded.
    fn forwarded_head(&self, session: &impl Client) -> Result<pingora::http::RequestHeader, Fail> {
        let mut head = session.req_header().clone();
        let credentials = head.extensions.get::<Credentials>().cloned();
        for h in HOP_BY_HOP {
            head.remove_header(h);
        }
        for (name, value) in credentials.map(|c| c.0).unwrap_or_default() {
            head.insert_header(name, value)?;
        }
        head.insert_header(http::header::CONTENT_LENGTH, self.body.len())?;
        head.insert_header(MCPGW_FORWARDED, "1")?;
        Ok(head)
    }
}

/// A peer for the holder, its name resolved now (a DNS name may point elsewhere later).
async fn peer(to: &Advertise) -> Result<HttpPeer, String> {
    let addr = tokio::net::lookup_host((to.host.as_str(), to.port))
        .await
        .map_err(|e| format!("resolving its address failed: {e}"))?
        .next()
        .ok_or_else(|| "its name resolves to no address".to_owned())?;
    let mut peer = HttpPeer::new(addr, to.tls, to.host.clone());
    peer.options.connection_timeout = Some(CONNECT_TIMEOUT);
    peer.options.total_connection_timeout = Some(CONNECT_TIMEOUT * 2);
    Ok(peer)
}
