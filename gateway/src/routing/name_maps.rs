//! A virtual route's names maps: what its members' lists exposed, one map for every caller or,
//! where a member's pool exchanges the caller's token, one per caller (bounded).

use crate::federation::names::NameMap;
use crate::sync::lock;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, RwLock};

/// The most callers whose own names maps are kept; past it the oldest is forgotten (its names
/// are learnt again from its next lists).
const MAX_CALLER_MAPS: usize = 4096;

/// A virtual route's names maps. Where members list the same for everyone, one map serves
/// every caller. Where a member's pool exchanges the caller's token, what it lists depends on
/// the caller, so each caller has a map of its own: caller B's list never decides which member
/// runs caller A's call (issue 48).
#[derive(Debug)]
pub struct NameMaps {
    shared: Arc<RwLock<NameMap>>,
    /// `None`: one map for everyone.
    callers: Option<Mutex<CallerMaps>>,
}

#[derive(Debug, Default)]
struct CallerMaps {
    maps: HashMap<Arc<str>, Arc<RwLock<NameMap>>>,
    /// Callers in the order their maps were made: the oldest is forgotten first.
    order: VecDeque<Arc<str>>,
}

impl NameMaps {
    /// The maps of a route whose members are `empty` (nothing learnt yet).
    pub fn new(empty: NameMap, per_caller: bool) -> NameMaps {
        NameMaps {
            shared: Arc::new(RwLock::new(empty)),
            callers: per_caller.then(Default::default),
        }
    }

    /// Whether each caller has a map of its own (members list per caller).
    pub fn per_caller(&self) -> bool {
        self.callers.is_some()
    }

    /// The map `caller` (a principal's id; `""` for anonymous callers) reads and teaches.
    pub fn of(&self, caller: &str) -> Arc<RwLock<NameMap>> {
        let Some(callers) = &self.callers else {
            return self.shared.clone();
        };
        let mut callers = lock(callers);
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

    /// The map the admin API shows (the anonymous callers' where maps are per caller).
    pub fn shown(&self) -> Arc<RwLock<NameMap>> {
        self.of("")
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

    #[test]
    fn where_members_list_per_caller_each_caller_has_its_own_map() {
        use crate::federation::names::Resolved;
        let maps = NameMaps::new(bare(), true);
        crate::sync::write(&maps.of("i|bob")).learn(0, Kind::Tool, &["bobs_tool"]);
        let alice = maps.of("i|alice");
        assert_eq!(
            crate::sync::read(&alice).resolve(Kind::Tool, "bobs_tool"),
            Resolved::NeedLists,
            "bob's list says nothing about alice's call"
        );
        assert_eq!(
            crate::sync::read(&maps.of("i|bob")).resolve(Kind::Tool, "bobs_tool"),
            Resolved::Member(0, "bobs_tool".into())
        );
        // one map for everyone otherwise
        let one = NameMaps::new(bare(), false);
        crate::sync::write(&one.of("i|bob")).learn(0, Kind::Tool, &["t"]);
        assert_eq!(
            crate::sync::read(&one.of("i|alice")).resolve(Kind::Tool, "t"),
            Resolved::Member(0, "t".into())
        );
    }

    #[test]
    fn caller_maps_are_bounded() {
        let maps = NameMaps::new(bare(), true);
        for i in 0..MAX_CALLER_MAPS + 10 {
            let _ = maps.of(&format!("c{i}"));
        }
        let callers = lock(maps.callers.as_ref().unwrap());
        assert_eq!(callers.maps.len(), MAX_CALLER_MAPS);
        assert!(!callers.maps.contains_key("c0"), "the oldest went first");
    }
}
