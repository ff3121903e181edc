//! What a virtual server's members listed, and where an exposed name leads: to one member and
//! its own name, or to none. How a member exposes its names is the config's
//! (`config/member_names.rs`); this map adds what the lists said.
//!
//! - Names of `never` members are known only from their lists: [`NameMap::resolve`] says
//!   [`Resolved::NeedLists`] when it cannot decide without them.
//! - A name exposed by two members at run time goes to the member listed first in the config
//!   (the rule is [`first_member_wins`]); the later one's item is left out and counted.

use crate::config::{Kind, Member, Prefix};
use std::collections::HashMap;

/// Two members exposing one name at run time: who kept it, who was left out (config indices).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    /// The name both expose.
    pub exposed: String,
    /// The member that keeps it (listed first in the config).
    pub kept: usize,
    /// The member whose item is left out of the lists.
    pub left_out: usize,
}

/// Where an exposed name leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// To this member (its index in the config) and its own name.
    Member(usize, String),
    /// To no member that can be known without the `never` members' lists.
    NeedLists,
    /// To no member.
    Unknown,
}

/// The members of one virtual server, in config order, and what their lists exposed last.
#[derive(Debug, Clone, Default)]
pub struct NameMap {
    members: Vec<Member>,
    /// Exposed name → (member, own name), from the members' last lists, per kind.
    listed: HashMap<(Kind, String), (usize, String)>,
    /// Bare names dropped for carrying another member's prefix, each warned about once
    /// (bounded: past [`MAX_WARNED`] names they are dropped without a word).
    warned: std::collections::HashSet<(usize, String)>,
    /// When every member's list of a kind was last read whole for a name lookup: until
    /// [`LOOKUP_FRESH`] after it, a name still unknown is unknown without reading them again.
    looked_up: HashMap<Kind, std::time::Instant>,
    /// The members' resource templates as last read (config order), and when.
    templates: Option<(std::time::Instant, Vec<(usize, String)>)>,
}

/// How long a lookup through every member's lists answers for the names it did not find: an
/// unknown name called again and again (10 calls made 200 upstream list requests) reads the
/// lists once per this time.
pub const LOOKUP_FRESH: std::time::Duration = std::time::Duration::from_secs(5);

/// The most names [`NameMap::expose`] remembers having warned about.
const MAX_WARNED: usize = 1024;

impl NameMap {
    /// A map of these members (config order: earlier members win run-time collisions).
    pub fn new(members: Vec<Member>) -> NameMap {
        NameMap {
            members,
            listed: HashMap::new(),
            warned: Default::default(),
            looked_up: HashMap::new(),
            templates: None,
        }
    }

    /// Whether every member's list of `kind` was read for a lookup less than
    /// [`LOOKUP_FRESH`] ago.
    pub fn looked_up_lately(&self, kind: Kind) -> bool {
        self.looked_up
            .get(&kind)
            .is_some_and(|at| at.elapsed() < LOOKUP_FRESH)
    }

    /// Notes that every member's list of `kind` was just read for a lookup.
    pub fn looked_up(&mut self, kind: Kind) {
        self.looked_up.insert(kind, std::time::Instant::now());
    }

    /// The members' resource templates read less than [`LOOKUP_FRESH`] ago, if any.
    pub fn templates(&self) -> Option<&[(usize, String)]> {
        self.templates
            .as_ref()
            .filter(|(at, _)| at.elapsed() < LOOKUP_FRESH)
            .map(|(_, t)| t.as_slice())
    }

    /// Keeps the members' resource templates just read.
    pub fn keep_templates(&mut self, templates: Vec<(usize, String)>) {
        self.templates = Some((std::time::Instant::now(), templates));
    }

    /// The members, in config order.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The name a client sees for member `index`'s item `own` ([`Member::expose`]), or
    /// `None` when it is hidden. A prefix belongs to its member: a bare name (`prefix: never`)
    /// that carries another member's prefix is never exposed (nor routed), so a bare member
    /// cannot take `fast__whoami` from the member `fast__` names; it is warned about once.
    pub fn expose(&mut self, index: usize, kind: Kind, own: &str) -> Option<String> {
        let exposed = self.members[index].expose(kind, own)?;
        let Some(owner) = self.foreign_prefix(index, kind, &exposed) else {
            return Some(exposed);
        };
        if self.warned.len() < MAX_WARNED && self.warned.insert((index, exposed.clone())) {
            tracing::warn!(
                member = %self.members[index].name,
                name = %exposed,
                prefixed_by = %self.members[owner].name,
                "a bare-named member lists a name carrying another member's prefix: left out, never routed to it"
            );
        }
        None
    }

    /// The member (other than `index`, which has no prefix) whose prefix `exposed` carries.
    fn foreign_prefix(&self, index: usize, kind: Kind, exposed: &str) -> Option<usize> {
        if kind == Kind::Resource || self.members[index].prefix != Prefix::Never {
            return None;
        }
        self.members.iter().position(
            |m| matches!(&m.prefix, Prefix::Literal(p) if exposed.starts_with(p.as_str())),
        )
    }

    /// Records what member `index` listed of `kind` (its own names), replacing what it listed
    /// before. Returns the collisions: names two members expose, and which one kept it.
    pub fn learn(&mut self, index: usize, kind: Kind, own_names: &[&str]) -> Vec<Collision> {
        self.listed
            .retain(|(k, _), (member, _)| !(*k == kind && *member == index));
        self.learn_more(index, kind, own_names)
    }

    /// Records a later page of what member `index` lists of `kind`, adding to its earlier
    /// pages. Returns the collisions, as [`NameMap::learn`].
    pub fn learn_more(&mut self, index: usize, kind: Kind, own_names: &[&str]) -> Vec<Collision> {
        let mut collisions = Vec::new();
        for own in own_names {
            let Some(exposed) = self.expose(index, kind, own) else {
                continue;
            };
            let key = (kind, exposed);
            let holder = self.listed.get(&key).map(|(holder, _)| *holder);
            if let Some(holder) = holder.filter(|h| *h != index) {
                let (kept, left_out) = if first_member_wins(index, holder) {
                    (index, holder)
                } else {
                    (holder, index)
                };
                collisions.push(Collision {
                    exposed: key.1.clone(),
                    kept,
                    left_out,
                });
                if kept != index {
                    continue;
                }
            }
            self.listed.insert(key, (index, (*own).to_owned()));
        }
        collisions
    }

    /// The first `max` names of `kind` member `index` exposes (sorted), as its lists said
    /// last: what an operator sees of a member without the map's size leaking into a page.
    pub fn exposed(&self, index: usize, kind: Kind, max: usize) -> Vec<String> {
        let mut names: Vec<&String> = (self.listed.iter())
            .filter(|((k, _), (member, _))| *k == kind && *member == index)
            .map(|((_, exposed), _)| exposed)
            .collect();
        names.sort_unstable();
        names.into_iter().take(max).cloned().collect()
    }

    /// How many names of `kind` member `index` exposes, as its lists said last.
    pub fn count(&self, index: usize, kind: Kind) -> usize {
        self.listed
            .iter()
            .filter(|((k, _), (member, _))| *k == kind && *member == index)
            .count()
    }

    /// The member and own name behind an exposed name. What the lists say wins; otherwise a
    /// prefixed member whose prefix and filters admit the name; otherwise, when a `never`
    /// member could own it, the lists are needed.
    pub fn resolve(&self, kind: Kind, exposed: &str) -> Resolved {
        if let Some((member, own)) = self.listed.get(&(kind, exposed.to_owned())) {
            return Resolved::Member(*member, own.clone());
        }
        let prefixed =
            |m: &Member| matches!(m.prefix, Prefix::Literal(_)) && kind != Kind::Resource;
        for (i, m) in self.members.iter().enumerate().filter(|(_, m)| prefixed(m)) {
            if let Some(own) = m.own(kind, exposed) {
                return Resolved::Member(i, own);
            }
        }
        let bare_owner = |(i, m): (usize, &Member)| {
            !prefixed(m)
                && m.own(kind, exposed).is_some()
                && self.foreign_prefix(i, kind, exposed).is_none()
        };
        if self.members.iter().enumerate().any(bare_owner) {
            Resolved::NeedLists
        } else {
            Resolved::Unknown
        }
    }
}

/// The run-time collision rule: of two members exposing the same name, the one listed first in
/// the config keeps it. `true` when `challenger` takes the name from `holder`.
pub fn first_member_wins(challenger: usize, holder: usize) -> bool {
    challenger < holder
}

#[cfg(test)]
#[path = "names_tests.rs"]
mod tests;
