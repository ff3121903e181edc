//! The bounds on client connections: each open connection holds buffers and a task whether or
//! not it sends anything (4,000 half-open ones cost about 360 MB), so past a bound a new
//! connection is answered at once with 503 -32018 (`Retry-After`), written before its request
//! is read, and closed. Connections are counted from accept to close, keep-alive included.
//! - `limits.max-connections`: the gateway-wide bound (`data.reason: "connections"`,
//!   `scope: "gateway"`);
//! - `limits.max-connections-per-client`: one client's share (`scope: "client"`), so one
//!   client cannot hold every connection and lock the others out. At the listener nothing but
//!   the peer address is known (no principal, no `client-id-header`): a client is its IP
//!   address, an IPv6 one its /64 (one host is given a whole /64), so clients behind one NAT or
//!   proxy share one share. Default: [`DEFAULT_PER_CLIENT`], and never more than half of
//!   `max-connections` when that is set (so at least half of it is left for the others).

use crate::error::GatewayError;
use mcp_wire::RequestId;
use pingora::protocols::Stream;
use pingora_prometheus::prometheus::IntGauge;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// One client's share of connections when neither bound is set: far above what one
/// well-behaved client opens (a browser 6 per host, an SDK's pool tens), and at most about
/// 90 MB of connection state and 1,024 descriptors for one address.
pub const DEFAULT_PER_CLIENT: usize = 1024;

/// The per-client share in force: the one set, or the default (at most half of
/// `max-connections`, at least 1).
pub fn per_client_share(max_connections: Option<usize>, per_client: Option<usize>) -> usize {
    per_client.unwrap_or_else(|| match max_connections {
        Some(max) => (max / 2).clamp(1, DEFAULT_PER_CLIENT),
        None => DEFAULT_PER_CLIENT,
    })
}

/// Connections open per client address.
type Clients = Arc<Mutex<HashMap<IpAddr, usize>>>;

/// The connections open now, in all and per client address.
#[derive(Debug, Default)]
pub struct Open {
    all: Arc<AtomicUsize>,
    clients: Clients,
    /// `mcpgw_client_connections`: the connections admitted and open now.
    gauge: Option<IntGauge>,
}

/// One counted connection; uncounted on drop.
pub struct Held {
    all: Arc<AtomicUsize>,
    client: Option<(IpAddr, Clients)>,
    gauge: Option<IntGauge>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.all.fetch_sub(1, Ordering::Relaxed);
        if let Some(g) = self.gauge.take() {
            g.dec();
        }
        if let Some((ip, clients)) = self.client.take() {
            let mut clients = crate::sync::lock(&clients);
            if let Some(n) = clients.get_mut(&ip) {
                *n -= 1;
                if *n == 0 {
                    clients.remove(&ip);
                }
            }
        }
    }
}

/// Which bound refused a connection, and its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// `limits.max-connections`.
    Gateway(usize),
    /// `limits.max-connections-per-client`.
    Client(usize),
}

/// The client a connection from `peer` counts against: its IP address (IPv4-mapped IPv6 as
/// IPv4), an IPv6 address by its /64.
pub fn client_of(peer: IpAddr) -> IpAddr {
    match peer.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
        v4 => v4,
    }
}

impl Open {
    /// Counts a new connection from `peer`, unless `limit` connections are open already or
    /// `peer`'s client holds `per_client` of them.
    pub fn admit(
        &self,
        limit: Option<usize>,
        per_client: usize,
        peer: Option<IpAddr>,
    ) -> Result<Held, Refused> {
        let now = self.all.fetch_add(1, Ordering::Relaxed);
        let mut held = Held {
            all: self.all.clone(),
            client: None,
            gauge: None,
        };
        if let Some(max) = limit.filter(|max| now >= *max) {
            return Err(Refused::Gateway(max));
        }
        if let Some(ip) = peer.map(client_of) {
            let mut clients = crate::sync::lock(&self.clients);
            let n = clients.entry(ip).or_default();
            if *n >= per_client {
                if *n == 0 {
                    clients.remove(&ip);
                }
                return Err(Refused::Client(per_client));
            }
            *n += 1;
            held.client = Some((ip, self.clients.clone()));
        }
        if let Some(g) = &self.gauge {
            g.inc();
            held.gauge = Some(g.clone());
        }
        Ok(held)
    }

    /// No connection open yet; the admitted ones shown in `gauge`.
    pub fn counted_in(gauge: IntGauge) -> Open {
        Open {
            gauge: Some(gauge),
            ..Open::default()
        }
    }

    /// How many are open.
    #[cfg(test)]
    pub fn count(&self) -> usize {
        self.all.load(Ordering::Relaxed)
    }

    /// How many `peer`'s client holds.
    #[cfg(test)]
    pub fn count_of(&self, peer: IpAddr) -> usize {
        let clients = crate::sync::lock(&self.clients);
        clients.get(&client_of(peer)).copied().unwrap_or(0)
    }
}

/// The answer to a connection over a bound: the whole HTTP response, then the close.
pub fn refusal(refused: Refused) -> Vec<u8> {
    let error = match refused {
        Refused::Gateway(limit) => GatewayError::overloaded("gateway", "connections", limit),
        Refused::Client(limit) => GatewayError::client_connections(limit),
    };
    error.to_raw_http(&RequestId::null())
}

/// Writes the refusal (within a second: a client that does not read is not waited for) and
/// closes the connection.
pub async fn refuse(stream: Stream, refused: Refused) {
    super::head::answer_and_close(stream, refusal(refused)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn connections_over_the_bound_are_refused_and_slots_come_back() {
        let open = Open::default();
        let a = open.admit(Some(2), 10, ip("127.0.0.1")).expect("first");
        let _b = open.admit(Some(2), 10, ip("127.0.0.2")).expect("second");
        let third = open.admit(Some(2), 10, ip("127.0.0.3"));
        assert_eq!(third.err(), Some(Refused::Gateway(2)), "third refused");
        assert_eq!(open.count(), 2, "a refused one is not counted");
        assert_eq!(open.count_of("127.0.0.3".parse().unwrap()), 0);
        drop(a);
        assert!(open.admit(Some(2), 10, ip("127.0.0.1")).is_ok());
        assert!(open.admit(None, 10, None).is_ok(), "no limit");
    }

    #[test]
    fn one_client_holds_its_share_and_the_others_still_connect() {
        let open = Open::default();
        let held: Vec<Held> = (0..3)
            .map(|_| {
                open.admit(None, 3, ip("127.0.0.2"))
                    .expect("within the share")
            })
            .collect();
        let over = open.admit(None, 3, ip("127.0.0.2"));
        assert_eq!(over.err(), Some(Refused::Client(3)));
        assert!(
            open.admit(None, 3, ip("127.0.0.1")).is_ok(),
            "another client"
        );
        assert_eq!(open.count_of("127.0.0.2".parse().unwrap()), 3);
        drop(held);
        assert_eq!(open.count_of("127.0.0.2".parse().unwrap()), 0, "forgotten");
        assert!(
            crate::sync::lock(&open.clients).is_empty(),
            "no entry left behind"
        );
        // one IPv6 host is given a /64: its addresses share one share
        let _a = open
            .admit(None, 1, ip("2001:db8::1"))
            .expect("first of the /64");
        let b = open.admit(None, 1, ip("2001:db8::ffff:1"));
        assert_eq!(b.err(), Some(Refused::Client(1)));
        assert!(
            open.admit(None, 1, ip("2001:db8:0:1::1")).is_ok(),
            "another /64"
        );
        // an IPv4-mapped address is its IPv4 one
        let _v4 = open.admit(None, 1, ip("10.0.0.9")).unwrap();
        let mapped = open.admit(None, 1, ip("::ffff:10.0.0.9"));
        assert_eq!(mapped.err(), Some(Refused::Client(1)));
    }

    #[test]
    fn the_default_share_is_at_most_half_of_the_gateway_wide_bound() {
        assert_eq!(per_client_share(None, None), DEFAULT_PER_CLIENT);
        assert_eq!(per_client_share(Some(160), None), 80);
        assert_eq!(per_client_share(Some(100_000), None), DEFAULT_PER_CLIENT);
        assert_eq!(per_client_share(Some(1), None), 1);
        assert_eq!(per_client_share(Some(160), Some(160)), 160, "set: as set");
    }

    #[test]
    fn the_refusal_is_a_json_rpc_error_with_its_length() {
        for (refused, scope) in [
            (Refused::Gateway(7), "gateway"),
            (Refused::Client(7), "client"),
        ] {
            let text = String::from_utf8(refusal(refused)).unwrap();
            let (head, body) = text.split_once("\r\n\r\n").unwrap();
            assert!(head.starts_with("HTTP/1.1 503 "));
            assert!(head.contains("connection: close"));
            assert!(head.to_ascii_lowercase().contains("retry-after"));
            assert!(head.contains(&format!("content-length: {}", body.len())));
            let v: serde_json::Value = serde_json::from_str(body).unwrap();
            assert_eq!(v["error"]["code"], -32018);
            assert_eq!(v["error"]["data"]["reason"], "connections");
            assert_eq!(v["error"]["data"]["scope"], scope);
            assert_eq!(v["error"]["data"]["limit"], 7);
            assert_eq!(v["id"], serde_json::Value::Null);
        }
    }
}
