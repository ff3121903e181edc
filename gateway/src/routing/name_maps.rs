//! A virtual route's names maps: what its members' lists exposed, one map for every caller or,
//! where what a member lists may depend on who asks (its pool exchanges the caller's token,
//! sends identity headers, or gets the client's own `Authorization`), one per caller
//! (bounded).

use crate::federation::names::NameMap;
use crate::sync::lock;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, RwLock};

/// The most callers whose own names maps are kept; past it the oldest is forgotten (its names
/// are learnt again from its next lists).
const MAX_CALLER_MAPS: usize = 4096;

/// The most conflicts between members [`NameMaps::first_warning`] remembers having warned
/// about; past it they are no longer logged.
const MAX_WARNED: usize = 1024;

/// What a virtual route's members' lists may depend on besides the config: who asks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Listing {
    /// A member's pool sends something derived from the caller's principal: its exchanged
    /// token (`upstream-auth.token-exchange`) or identity headers (`identity-headers`).
    pub principal: bool,
    /// A member's pool gets the client's own `Authorization` (a gateway without `auth`, a
    /// pool that sets no `Authorization` of its own).
    pub authorization: bool,
}

/// A virtual route's names maps. Where members list the same for everyone, one map serves
/// every caller. Where what a member lists may depend on the caller ([`Listing`]), each
/// caller has a map of its own: caller B's list never adds to or removes from caller A's
/// names, nor decides which member runs caller A's call (issues 48 and 59).
#[derive(Debug)]
pub struct NameMaps {
    /// The map of callers who present nothing a member could tell them apart by.
    shared: Arc<RwLock<NameMap>>,
    listing: Listing,
    callers: Mutex<CallerMaps>,
    /// Conflicts between members already logged (every caller's maps together).
    warned: Mutex<std::collections::HashSet<String>>,
}

#[derive(Debug, Default)]
struct CallerMaps {
    maps: HashMap<Arc<str>, Arc<RwLock<NameMap>>>,
    /// Callers in the order their maps were made: the oldest is forgotten first.
    order: VecDeque<Arc<str>>,
}

impl NameMaps {
    /// The maps of a route whose members are `empty` (nothing learnt yet) and list as
    /// `listing` says.
    pub fn new(empty: NameMap, listing: Listing) -> NameMaps {
        NameMaps {
            shared: Arc::new(RwLock::new(empty)),
            listing,
            callers: Mutex::default(),
            warned: Mutex::default(),
        }
    }

    /// Whether the lists of `caller` ([`NameMaps::caller`]) may differ from another caller's:
    /// its merged lists are then never `public`.
    pub fn private_to(&self, caller: Option<&str>) -> bool {
        self.listing.principal || caller.is_some()
    }

    /// Whose names map a request reads and teaches: its principal's where a member's pool
    /// sends something derived from it; the digest of the `Authorization` among `headers`
    /// (what the auth step left of the client's head) where a member gets the client's own;
    /// `None` (the shared map) for a caller who presents neither.
    pub fn caller(&self, principal: Option<&str>, headers: &http::HeaderMap) -> Option<Arc<str>> {
        if let Some(id) = principal.filter(|_| self.listing.principal) {
            return Some(format!("principal|{id}").into());
        }
        let authorization = headers
            .get(http::header::AUTHORIZATION)
            .filter(|_| self.listing.authorization)?;
        let digest = Sha256::digest(authorization.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        Some(format!("authorization|{hex}").into())
    }

    /// The map `caller` ([`NameMaps::caller`]) reads and teaches.
    pub fn of(&self, caller: Option<&str>) -> Arc<RwLock<NameMap>> {
        let Some(caller) = caller else {
            return self.shared.clone();
        };
        let mut callers = lock(&self.callers);
        if let Some(map) = callers.maps.get(caller) {
            return map.clone();
        }
        let fresh = NameMap::new(crate::sync::read(&self.shared).members().to_vec());
        let map = Arc::new(RwLock::new(fresh));
        if callers.maps.len() >= MAX_CALLER_MAPS {
            if let Some(oldest) = callers.order.pop_front() {
                callers.maps.remove(&oldest);
            }
        }
        let key: Arc<str> = caller.into();
        callers.order.push_back(key.clone());
        callers.maps.insert(key, map.clone());
        map
    }

    /// Whether `conflict` (a run-time conflict between members, as text) is seen for the first
    /// time: it is logged once, not on every request (at most [`MAX_WARNED`] of them).
    pub fn first_warning(&self, conflict: String) -> bool {
        let mut warned = lock(&self.warned);
        warned.len() < MAX_WARNED && warned.insert(conflict)
    }

    /// The map the admin API shows: the shared one (callers who present nothing a member
    /// could tell them apart by).
    pub fn shown(&self) -> Arc<RwLock<NameMap>> {
        self.shared.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Filter, Kind, Member, Prefix};

    fn bare() -> NameMap {
        NameMap::new(vec![Member {
            name: "a".into(),
            prefix: Prefix::Never,
            tools: Filter::default(),
            prompts: Filter::default(),
            resources: Filter::default(),
        }])
    }

    const BY_PRINCIPAL: Listing = Listing {
        principal: true,
        authorization: false,
    };

    fn headers(authorization: Option<&str>) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        if let Some(a) = authorization {
            h.insert(http::header::AUTHORIZATION, a.parse().unwrap());
        }
        h
    }

    #[test]
    fn where_members_list_per_caller_each_caller_has_its_own_map() {
        use crate::federation::names::Resolved;
        let maps = NameMaps::new(bare(), BY_PRINCIPAL);
        let none = headers(None);
        let bob = maps.caller(Some("i|bob"), &none);
        crate::sync::write(&maps.of(bob.as_deref())).learn(0, Kind::Tool, &["bobs_tool"]);
        let alice = maps.of(maps.caller(Some("i|alice"), &none).as_deref());
        assert_eq!(
            crate::sync::read(&alice).resolve(Kind::Tool, "bobs_tool"),
            Resolved::NeedLists,
            "bob's list says nothing about alice's call"
        );
        assert_eq!(
            crate::sync::read(&maps.of(bob.as_deref())).resolve(Kind::Tool, "bobs_tool"),
            Resolved::Member(0, "bobs_tool".into())
        );
        // one map for everyone otherwise
        let one = NameMaps::new(bare(), Listing::default());
        let caller = |id| one.caller(Some(id), &headers(Some("Bearer x")));
        assert_eq!(caller("i|bob"), None);
        crate::sync::write(&one.of(caller("i|bob").as_deref())).learn(0, Kind::Tool, &["t"]);
        assert_eq!(
            crate::sync::read(&one.of(caller("i|alice").as_deref())).resolve(Kind::Tool, "t"),
            Resolved::Member(0, "t".into())
        );
    }

    #[test]
    fn where_members_get_the_clients_authorization_each_one_has_its_own_map() {
        let maps = NameMaps::new(
            bare(),
            Listing {
                principal: false,
                authorization: true,
            },
        );
        let (alice, bob) = (headers(Some("Bearer alice")), headers(Some("Bearer bob")));
        let (a, b) = (maps.caller(None, &alice), maps.caller(None, &bob));
        assert!(a.is_some() && b.is_some() && a != b, "{a:?} {b:?}");
        assert_eq!(
            a,
            maps.caller(None, &alice),
            "the same credential, the same map"
        );
        assert!(!a.as_deref().unwrap_or("").contains("alice"), "a digest");
        assert_eq!(
            maps.caller(None, &headers(None)),
            None,
            "no credential: shared"
        );
        assert!(maps.private_to(a.as_deref()));
        assert!(!maps.private_to(None));
        crate::sync::write(&maps.of(b.as_deref())).learn(0, Kind::Tool, &["bobs_tool"]);
        assert_eq!(
            crate::sync::read(&maps.of(a.as_deref())).count(0, Kind::Tool),
            0
        );
        assert_eq!(crate::sync::read(&maps.shown()).count(0, Kind::Tool), 0);
    }

    #[test]
    fn caller_maps_are_bounded() {
        let maps = NameMaps::new(bare(), BY_PRINCIPAL);
        for i in 0..MAX_CALLER_MAPS + 10 {
            let _ = maps.of(Some(&format!("c{i}")));
        }
        let callers = lock(&maps.callers);
        assert_eq!(callers.maps.len(), MAX_CALLER_MAPS);
        assert!(!callers.maps.contains_key("c0"), "the oldest went first");
    }
}
