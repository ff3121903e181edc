//! A pool's members as one snapshot: in order, as balancing walks them, and by address, as a
//! session's backend is looked up on every request of the session. A short list is searched
//! (cheaper than hashing an address); past [`INDEXED_FROM`] members an index answers in one
//! lookup, so a request's cost does not grow with the pool (docs/benchmarks.md, "Backends
//! per pool").

use super::Backend;
use std::net::SocketAddr;
use std::sync::Arc;

/// From this many members on, addresses are indexed.
const INDEXED_FROM: usize = 16;

/// The members of a pool at one moment; derefs to them in order.
#[derive(Debug, Default)]
pub struct Membership {
    list: Vec<Arc<Backend>>,
    /// Position by address, for pools of [`INDEXED_FROM`] members or more.
    by_addr: Option<foldhash::HashMap<SocketAddr, usize>>,
}

impl Membership {
    /// The members, in order.
    pub fn new(list: Vec<Arc<Backend>>) -> Membership {
        let by_addr = (list.len() >= INDEXED_FROM)
            .then(|| list.iter().enumerate().map(|(i, b)| (b.addr, i)).collect());
        Membership { list, by_addr }
    }

    /// The member at `addr`.
    pub fn get(&self, addr: SocketAddr) -> Option<&Arc<Backend>> {
        self.position(addr).map(|i| &self.list[i])
    }

    /// Where the member at `addr` is in the list.
    pub fn position(&self, addr: SocketAddr) -> Option<usize> {
        match &self.by_addr {
            Some(index) => index.get(&addr).copied(),
            None => self.list.iter().position(|b| b.addr == addr),
        }
    }

    /// Whether `addr` is a member.
    pub fn contains(&self, addr: SocketAddr) -> bool {
        self.get(addr).is_some()
    }
}

impl std::ops::Deref for Membership {
    type Target = Vec<Arc<Backend>>;

    fn deref(&self) -> &Vec<Arc<Backend>> {
        &self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EraSetting;

    fn members(n: u16) -> Membership {
        Membership::new(
            (0..n)
                .map(|i| {
                    let addr = SocketAddr::from(([127, 0, 0, 1], 10_000 + i));
                    Arc::new(Backend::new(addr, None, EraSetting::Detect))
                })
                .collect(),
        )
    }

    #[test]
    fn members_are_found_by_address_in_short_and_long_pools() {
        for n in [1, INDEXED_FROM as u16 - 1, INDEXED_FROM as u16, 1000] {
            let m = members(n);
            assert_eq!(m.by_addr.is_some(), usize::from(n) >= INDEXED_FROM);
            for (i, b) in m.iter().enumerate() {
                assert!(Arc::ptr_eq(m.get(b.addr).unwrap(), &m[i]));
                assert_eq!(m.position(b.addr), Some(i));
            }
            assert!(!m.contains(SocketAddr::from(([127, 0, 0, 2], 10_000))));
            assert!(!m.contains(SocketAddr::from(([127, 0, 0, 1], 10_000 + n))));
        }
    }
}
