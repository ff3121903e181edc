//! One pool's pins: what is approved, what waits, and what each list said ([`Book`]). Pure:
//! no I/O, no clock but the one handed in; the store and the filter call it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// An approved definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// `sha256:<hex>` of its canonical form.
    pub fingerprint: String,
    /// Its canonical definition, when the gateway saw it (a pins file gives fingerprints only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
    /// Who pinned it: `first-use`, `pins-file`, `new-tools-allowed` or `admin`.
    pub by: String,
    /// When, in Unix seconds.
    pub at: u64,
}

/// A definition that differs from the pin (or a tool without one), waiting for an operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// `sha256:<hex>` of its canonical form.
    pub fingerprint: String,
    /// Its canonical definition.
    pub definition: String,
    /// `new` (no pin) or `changed`.
    pub kind: String,
    /// Rejected by an operator: it stays quarantined, and is not recorded again.
    #[serde(default)]
    pub rejected: bool,
    /// When it was first seen, in Unix seconds.
    pub at: u64,
}

/// One tool of a pool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The approved definition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<Pin>,
    /// The definition waiting for an operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Pending>,
    /// The fingerprint the last list showed (what a call would run now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<String>,
    /// The fingerprint the pins file said when it was last applied (a pin changed in the file
    /// replaces the tool's pin; one the file still says leaves an approval made since alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
}

impl Entry {
    /// Whether the tool may be listed and called: pinned, and the last list showed the pin.
    pub fn serves(&self) -> bool {
        match (&self.pin, &self.last) {
            (Some(pin), Some(last)) => pin.fingerprint == *last,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }
}

/// What a list's definition of a tool was, for the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// The pin: served.
    Pinned,
    /// Pinned now (first use, or the pool allows new tools): served. `new`: counted as new.
    PinnedNow {
        /// A new tool of a pool that allows them (recorded), not a first use.
        new: bool,
    },
    /// The pin again after a change was seen: served, the flap recorded.
    Reverted,
    /// A definition that waits (first seen now: recorded).
    Quarantined {
        /// Seen for the first time (recorded and counted).
        fresh: bool,
        /// `new` or `changed`.
        kind: &'static str,
    },
    /// Not pinned: too many tools, or a definition too large.
    Refused(&'static str),
}

/// One pool's pins.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Book {
    /// Whether the pool's first whole list was seen (trust on first use is over), or a pins
    /// file gave its pins.
    #[serde(default)]
    pub initialized: bool,
    /// Its tools, by name.
    #[serde(default)]
    pub tools: BTreeMap<String, Entry>,
}

/// The bounds and policy a book is kept under.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// A new tool is pinned as it comes.
    pub allow_new: bool,
    /// Most tools.
    pub max_tools: usize,
    /// Largest canonical definition.
    pub max_definition_bytes: usize,
}

impl Book {
    /// Notes that a list showed `name` as `canonical` (of fingerprint `fp`) at `now`.
    pub fn see(&mut self, policy: Policy, name: &str, canonical: &str, fp: &str, now: u64) -> Seen {
        if canonical.len() > policy.max_definition_bytes {
            return Seen::Refused("definition-too-large");
        }
        if !self.tools.contains_key(name) && self.tools.len() >= policy.max_tools {
            return Seen::Refused("too-many-tools");
        }
        let first_use = !self.initialized;
        let entry = self.tools.entry(name.to_owned()).or_default();
        let was = entry.last.replace(fp.to_owned());
        let Some(pin) = &entry.pin else {
            if first_use || policy.allow_new {
                entry.pin = Some(Pin {
                    fingerprint: fp.to_owned(),
                    definition: Some(canonical.to_owned()),
                    by: if first_use {
                        "first-use"
                    } else {
                        "new-tools-allowed"
                    }
                    .into(),
                    at: now,
                });
                entry.pending = None;
                return Seen::PinnedNow { new: !first_use };
            }
            return wait(entry, "new", canonical, fp, now);
        };
        if pin.fingerprint == fp {
            if pin.definition.is_none() {
                // a pins file's pin: now its definition is known, for a later diff
                if let Some(pin) = entry.pin.as_mut() {
                    pin.definition = Some(canonical.to_owned());
                }
            }
            let flapped = was.is_some_and(|w| w != fp) && entry.pending.is_some();
            return if flapped {
                Seen::Reverted
            } else {
                Seen::Pinned
            };
        }
        wait(entry, "changed", canonical, fp, now)
    }

    /// A whole list was seen (its last page): trust on first use is over.
    pub fn list_ended(&mut self) -> bool {
        !std::mem::replace(&mut self.initialized, true)
    }

    /// Applies the pins file's pins: a pin the file changed (or a tool it names first)
    /// replaces the tool's pin; one it says as before leaves what was approved since.
    pub fn seed(&mut self, pins: &[crate::config::FilePin], now: u64) -> bool {
        let mut changed = !self.initialized;
        self.initialized = true;
        for p in pins {
            let entry = self.tools.entry(p.name.clone()).or_default();
            if entry.seed.as_deref() == Some(p.fingerprint.as_str()) {
                continue;
            }
            changed = true;
            entry.seed = Some(p.fingerprint.clone());
            if entry.pin.as_ref().map(|pin| pin.fingerprint.as_str()) != Some(&p.fingerprint) {
                entry.pin = Some(Pin {
                    fingerprint: p.fingerprint.clone(),
                    definition: None,
                    by: "pins-file".into(),
                    at: now,
                });
            }
            if entry
                .pending
                .as_ref()
                .is_some_and(|w| w.fingerprint == p.fingerprint)
            {
                entry.pending = None;
            }
        }
        changed
    }

    /// Approves `name`'s pending definition of fingerprint `fp`: it becomes the pin.
    pub fn approve(&mut self, name: &str, fp: &str, now: u64) -> Result<Pending, &'static str> {
        let entry = self.tools.get_mut(name).ok_or("no such tool")?;
        let pending = entry.pending.take().ok_or("nothing pending")?;
        if pending.fingerprint != fp {
            entry.pending = Some(pending);
            return Err("the pending definition has another fingerprint");
        }
        entry.pin = Some(Pin {
            fingerprint: pending.fingerprint.clone(),
            definition: Some(pending.definition.clone()),
            by: "admin".into(),
            at: now,
        });
        Ok(pending)
    }

    /// Rejects `name`'s pending definition of fingerprint `fp`: it stays quarantined, kept as
    /// rejected (and not recorded again while the server keeps sending it).
    pub fn reject(&mut self, name: &str, fp: &str) -> Result<Pending, &'static str> {
        let entry = self.tools.get_mut(name).ok_or("no such tool")?;
        let pending = entry.pending.as_mut().ok_or("nothing pending")?;
        if pending.fingerprint != fp {
            return Err("the pending definition has another fingerprint");
        }
        pending.rejected = true;
        Ok(pending.clone())
    }
}

/// Keeps `canonical` waiting on `entry` (unless it already does).
fn wait(entry: &mut Entry, kind: &'static str, canonical: &str, fp: &str, now: u64) -> Seen {
    if entry.pending.as_ref().is_some_and(|w| w.fingerprint == fp) {
        return Seen::Quarantined { fresh: false, kind };
    }
    entry.pending = Some(Pending {
        fingerprint: fp.to_owned(),
        definition: canonical.to_owned(),
        kind: kind.to_owned(),
        rejected: false,
        at: now,
    });
    Seen::Quarantined { fresh: true, kind }
}

/// The definition a pin or pending entry holds, as JSON (for the admin API's diff).
pub fn parsed(canonical: Option<&str>) -> Value {
    canonical
        .and_then(|c| serde_json::from_str(c).ok())
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: Policy = Policy {
        allow_new: false,
        max_tools: 3,
        max_definition_bytes: 100,
    };

    #[test]
    fn the_first_whole_list_is_trusted_and_a_change_after_it_waits() {
        let mut b = Book::default();
        assert_eq!(
            b.see(POLICY, "a", "{1}", "A", 1),
            Seen::PinnedNow { new: false }
        );
        assert!(b.list_ended());
        assert_eq!(b.see(POLICY, "a", "{1}", "A", 2), Seen::Pinned);
        let changed = Seen::Quarantined {
            fresh: true,
            kind: "changed",
        };
        assert_eq!(b.see(POLICY, "a", "{2}", "B", 3), changed);
        assert!(!b.tools["a"].serves());
        let again = Seen::Quarantined {
            fresh: false,
            kind: "changed",
        };
        assert_eq!(b.see(POLICY, "a", "{2}", "B", 4), again);
        assert_eq!(
            b.see(POLICY, "b", "{3}", "C", 5),
            Seen::Quarantined {
                fresh: true,
                kind: "new"
            }
        );
        assert!(!b.tools["b"].serves());
    }

    #[test]
    fn a_definition_that_flaps_back_is_served_and_the_flap_is_seen() {
        let mut b = Book::default();
        b.see(POLICY, "a", "{1}", "A", 1);
        b.list_ended();
        b.see(POLICY, "a", "{2}", "B", 2);
        assert_eq!(b.see(POLICY, "a", "{1}", "A", 3), Seen::Reverted);
        assert!(b.tools["a"].serves());
        assert_eq!(b.see(POLICY, "a", "{1}", "A", 4), Seen::Pinned);
        // and the change again is the same pending definition, not recorded anew
        let again = Seen::Quarantined {
            fresh: false,
            kind: "changed",
        };
        assert_eq!(b.see(POLICY, "a", "{2}", "B", 5), again);
        assert!(!b.tools["a"].serves());
    }

    #[test]
    fn an_approval_needs_the_pending_fingerprint_and_makes_it_the_pin() {
        let mut b = Book::default();
        b.see(POLICY, "a", "{1}", "A", 1);
        b.list_ended();
        b.see(POLICY, "a", "{2}", "B", 2);
        assert!(b.approve("a", "A", 3).is_err());
        assert!(b.reject("a", "B").unwrap().rejected);
        assert!(!b.tools["a"].serves());
        b.approve("a", "B", 4).unwrap();
        assert!(b.tools["a"].serves());
        assert_eq!(b.see(POLICY, "a", "{2}", "B", 5), Seen::Pinned);
        assert!(b.approve("a", "B", 6).is_err());
    }

    #[test]
    fn the_bounds_refuse_more_tools_and_larger_definitions() {
        let mut b = Book::default();
        for (i, n) in ["a", "b", "c"].iter().enumerate() {
            let fp = i.to_string();
            assert_eq!(
                b.see(POLICY, n, "{}", &fp, 1),
                Seen::PinnedNow { new: false }
            );
        }
        assert_eq!(
            b.see(POLICY, "d", "{}", "D", 1),
            Seen::Refused("too-many-tools")
        );
        let big = "x".repeat(101);
        assert_eq!(
            b.see(POLICY, "a", &big, "E", 1),
            Seen::Refused("definition-too-large")
        );
        assert_eq!(b.tools.len(), 3);
    }

    #[test]
    fn a_pins_file_pin_is_applied_once_and_an_approval_since_stays() {
        let fp = |s: &str| crate::config::FilePin {
            name: "a".into(),
            fingerprint: s.into(),
        };
        let mut b = Book::default();
        assert!(b.seed(&[fp("A")], 1));
        assert!(b.initialized);
        assert_eq!(
            b.see(POLICY, "a", "{2}", "B", 2),
            Seen::Quarantined {
                fresh: true,
                kind: "changed"
            }
        );
        b.approve("a", "B", 3).unwrap();
        assert!(!b.seed(&[fp("A")], 4));
        assert_eq!(b.tools["a"].pin.as_ref().unwrap().fingerprint, "B");
        assert!(b.seed(&[fp("C")], 5));
        assert_eq!(b.tools["a"].pin.as_ref().unwrap().fingerprint, "C");
    }

    #[test]
    fn a_new_tool_of_a_pool_that_allows_them_is_pinned_as_it_comes() {
        let policy = Policy {
            allow_new: true,
            ..POLICY
        };
        let mut b = Book::default();
        b.list_ended();
        assert_eq!(
            b.see(policy, "n", "{}", "N", 1),
            Seen::PinnedNow { new: true }
        );
        assert!(b.tools["n"].serves());
    }
}
