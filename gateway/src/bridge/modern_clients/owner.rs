//! Whose share a pooled session or a parked call counts in (`Owner`): the principal, or an
//! anonymous caller's peer address (IPv4, or the /64 of IPv6).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// Whose share a pooled session or a parked call counts in: the authenticated principal, or
/// for an anonymous caller its peer address (the socket's, never a header; IPv4, or the /64 of
/// IPv6, which one host gets: what a client cannot change cheaply).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Owner {
    /// A principal (`auth`).
    Principal(Arc<str>),
    /// An anonymous caller's peer address.
    Peer(IpAddr),
}

impl Owner {
    /// The owner of a request by `principal` from `peer`.
    pub(crate) fn of(
        principal: Option<&Arc<crate::auth::Principal>>,
        peer: Option<IpAddr>,
    ) -> Owner {
        match principal {
            Some(p) => Owner::Principal(p.id.clone()),
            None => Owner::Peer(peer.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), prefix)),
        }
    }
}

/// An address as shares count it: IPv4 (an IPv4-mapped IPv6 one as IPv4), IPv6 by its /64.
fn prefix(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::{prefix, Owner};
    use std::net::IpAddr;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn anonymous_shares_count_ipv4_per_address_and_ipv6_per_64() {
        assert_eq!(prefix(ip("192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(prefix(ip("::ffff:192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(prefix(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(
            Owner::of(None, Some(ip("2001:db8:1:2::5"))),
            Owner::of(None, Some(ip("2001:db8:1:2:ffff::9"))),
            "one host's /64 is one share"
        );
        assert_ne!(
            Owner::of(None, Some(ip("2001:db8:1:2::5"))),
            Owner::of(None, Some(ip("2001:db8:1:3::5")))
        );
    }
}
