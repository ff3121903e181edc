//! A route's `Mcp-Method`/`Mcp-Name` rules, and the first of them that takes a request.
//!
//! A few rules are tried one after another, as written. Past [`INDEXED_FROM`] rules, trying
//! each glob in turn costs about 800 instructions per rule per request (docs/benchmarks.md,
//! "Routing rules per route"), so the rules are indexed once: one `GlobSet` over the distinct
//! method globs and one over the distinct name globs, each name glob listing its rules in
//! order. A request then costs one pass of each set over its method and name, and the first
//! rule is the smallest position both sets agree on. Both ways give the same rule (a property
//! test holds them to it).

use crate::config::{fold, Pattern};
use globset::{GlobSet, GlobSetBuilder};
use std::borrow::Cow;
use std::cell::RefCell;

/// From this many rules on, a route's rules are indexed.
const INDEXED_FROM: usize = 8;

/// One rule: a method glob, a name glob (either may be absent: any), and its pool.
#[derive(Debug)]
pub(super) struct Rule {
    pub method: Option<Pattern>,
    pub name: Option<Pattern>,
    pub pool: usize,
}

impl Rule {
    /// Whether the rule takes a request of `method` whose name reads as any of `names` (one
    /// name, or every form of a resource URI).
    fn matches(&self, method: Option<&str>, names: &[Cow<'_, str>]) -> bool {
        let method_matches = match &self.method {
            None => true,
            Some(g) => method.is_some_and(|m| g.is_match(m)),
        };
        method_matches
            && match &self.name {
                None => true,
                Some(g) => names.iter().any(|n| g.is_match(n)),
            }
    }
}

/// A route's rules in order, indexed when there are many.
#[derive(Debug)]
pub(super) struct Rules {
    rules: Vec<Rule>,
    index: Option<Index>,
}

/// The rules' globs in two sets.
#[derive(Debug)]
struct Index {
    /// The distinct method globs.
    methods: GlobSet,
    /// Per rule, its method glob's position in `methods` (`None`: any method).
    method_of: Vec<Option<usize>>,
    /// The distinct name globs.
    names: GlobSet,
    /// Per name glob in `names`, the rules naming it, in order.
    rules_of_name: Vec<Vec<usize>>,
    /// The rules without a name glob (any name, or none), in order.
    nameless: Vec<usize>,
    /// Whether the name globs are folded (`name-match: folded`): names are folded before the set.
    folded: bool,
}

thread_local! {
    /// The sets' matches for one request, kept so that matching allocates nothing.
    static HITS: RefCell<(Vec<usize>, Vec<usize>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

impl Rules {
    /// The pools the rules name, in rule order.
    pub fn pools(&self) -> impl Iterator<Item = usize> + '_ {
        self.rules.iter().map(|r| r.pool)
    }

    /// The rules, indexed when there are at least [`INDEXED_FROM`] of them (and their globs
    /// fit in a set; otherwise they are tried in turn).
    pub fn new(rules: Vec<Rule>) -> Rules {
        let index = (rules.len() >= INDEXED_FROM)
            .then(|| Index::new(&rules))
            .flatten();
        Rules { rules, index }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The first rule taking a request of `method` whose name reads as any of `names`.
    pub fn first(&self, method: Option<&str>, names: &[Cow<'_, str>]) -> Option<&Rule> {
        match &self.index {
            Some(index) => index.first(method, names).map(|i| &self.rules[i]),
            None => self.rules.iter().find(|r| r.matches(method, names)),
        }
    }

    /// The same, trying each rule in turn (what the index must agree with).
    #[cfg(test)]
    fn first_in_turn(&self, method: Option<&str>, names: &[Cow<'_, str>]) -> Option<usize> {
        self.rules.iter().position(|r| r.matches(method, names))
    }
}

impl Index {
    fn new(rules: &[Rule]) -> Option<Index> {
        let mut methods = Distinct::default();
        let mut names = Distinct::default();
        let mut method_of = Vec::with_capacity(rules.len());
        let mut rules_of_name: Vec<Vec<usize>> = Vec::new();
        let mut nameless = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            method_of.push(rule.method.as_ref().map(|p| methods.position(p)));
            match &rule.name {
                None => nameless.push(i),
                Some(p) => {
                    let n = names.position(p);
                    if n == rules_of_name.len() {
                        rules_of_name.push(Vec::new());
                    }
                    rules_of_name[n].push(i);
                }
            }
        }
        let folded = names.patterns.first().is_some_and(|p| p.is_folded());
        // one route folds all its name globs or none; a mix is tried in turn
        if names.patterns.iter().any(|p| p.is_folded() != folded)
            || methods.patterns.iter().any(|p| p.is_folded())
        {
            return None;
        }
        Some(Index {
            methods: methods.set()?,
            method_of,
            names: names.set()?,
            rules_of_name,
            nameless,
            folded,
        })
    }

    fn first(&self, method: Option<&str>, names: &[Cow<'_, str>]) -> Option<usize> {
        HITS.with_borrow_mut(|(method_hits, name_hits)| {
            method_hits.clear();
            if let Some(m) = method {
                self.methods.matches_into(m, method_hits);
            }
            // (matches come sorted: a binary search tells whether a method glob matched)
            let method_ok = |rule: &usize| {
                self.method_of[*rule].is_none_or(|m| method_hits.binary_search(&m).is_ok())
            };
            let mut first = self.nameless.iter().copied().find(method_ok);
            for name in names {
                let name: Cow<'_, str> = if self.folded {
                    fold(name).into()
                } else {
                    Cow::Borrowed(name)
                };
                self.names.matches_into(name.as_ref(), name_hits);
                for &glob in name_hits.iter() {
                    let earlier = self.rules_of_name[glob]
                        .iter()
                        .copied()
                        .take_while(|&r| first.is_none_or(|f| r < f))
                        .find(method_ok);
                    first = earlier.or(first);
                }
            }
            first
        })
    }
}

/// Distinct patterns in the order first seen.
#[derive(Default)]
struct Distinct<'a> {
    patterns: Vec<&'a Pattern>,
    positions: std::collections::HashMap<(&'a str, bool), usize>,
}

impl<'a> Distinct<'a> {
    /// Where `p` is among the distinct patterns (added when new).
    fn position(&mut self, p: &'a Pattern) -> usize {
        let next = self.patterns.len();
        *self
            .positions
            .entry((p.as_str(), p.is_folded()))
            .or_insert_with(|| {
                self.patterns.push(p);
                next
            })
    }

    /// One set of them all, in that order.
    fn set(&self) -> Option<GlobSet> {
        let mut set = GlobSetBuilder::new();
        for p in &self.patterns {
            set.add(p.glob().clone());
        }
        set.build().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rule(method: Option<&str>, name: Option<&str>, folded: bool, pool: usize) -> Rule {
        let name = name.map(|n| Pattern::new(n).unwrap());
        Rule {
            method: method.map(|m| Pattern::new(m).unwrap()),
            name: if folded {
                name.map(|n| n.folded())
            } else {
                name
            },
            pool,
        }
    }

    fn one(name: &str) -> Vec<Cow<'_, str>> {
        vec![Cow::Borrowed(name)]
    }

    #[test]
    fn many_rules_are_indexed_and_the_first_match_wins() {
        let mut rules: Vec<Rule> = (0..1000)
            .map(|i| rule(Some("tools/call"), Some(&format!("tool_{i}_*")), false, i))
            .collect();
        rules.push(rule(Some("tools/call"), Some("whoami"), false, 1000));
        rules.push(rule(Some("tools/*"), Some("who*"), false, 1001));
        rules.push(rule(Some("resources/*"), None, false, 1002));
        rules.push(rule(None, None, false, 1003));
        let rules = Rules::new(rules);
        assert!(rules.index.is_some());
        let pool = |m: Option<&str>, n: &[Cow<'_, str>]| rules.first(m, n).map(|r| r.pool);
        assert_eq!(pool(Some("tools/call"), &one("whoami")), Some(1000));
        assert_eq!(pool(Some("tools/call"), &one("tool_7_x")), Some(7));
        assert_eq!(pool(Some("tools/call"), &one("tool_999_")), Some(999));
        assert_eq!(pool(Some("tools/list"), &one("whoever")), Some(1001));
        assert_eq!(pool(Some("resources/read"), &one("file:///a")), Some(1002));
        assert_eq!(pool(Some("resources/list"), &[]), Some(1002));
        assert_eq!(pool(Some("ping"), &[]), Some(1003));
        assert_eq!(pool(None, &[]), Some(1003));
    }

    #[test]
    fn a_few_rules_are_tried_in_turn() {
        let rules = Rules::new(vec![rule(Some("tools/call"), Some("a*"), false, 1)]);
        assert!(rules.index.is_none());
        assert_eq!(rules.first(Some("tools/call"), &one("ab")).unwrap().pool, 1);
        assert!(rules.first(Some("tools/call"), &one("b")).is_none());
    }

    #[test]
    fn folded_names_are_folded_once_for_the_set() {
        let rules = Rules::new(
            (0..10)
                .map(|i| rule(Some("tools/call"), Some(&format!("Admin_{i}*")), true, i))
                .collect(),
        );
        assert!(rules.index.as_ref().is_some_and(|i| i.folded));
        let fullwidth = "\u{ff21}\u{ff24}\u{ff2d}\u{ff29}\u{ff2e}_3x";
        assert_eq!(
            rules
                .first(Some("tools/call"), &one(fullwidth))
                .unwrap()
                .pool,
            3
        );
        assert_eq!(
            rules
                .first(Some("tools/call"), &one("ADMIN_9"))
                .unwrap()
                .pool,
            9
        );
        // methods never fold
        assert!(rules.first(Some("TOOLS/CALL"), &one("admin_1")).is_none());
    }

    fn glob() -> impl Strategy<Value = String> {
        prop_oneof![
            "[ab]{1,3}",
            "[ab]{0,2}\\*",
            "\\*[ab]{0,2}",
            "[ab]\\?[ab]?",
            "[ab]{0,2}\\*[ab]",
            Just("*".to_owned()),
            "[aB]{1,3}",
        ]
    }

    /// Rules as written (method and name globs), and whether the route folds names.
    type Written = (Vec<(Option<String>, Option<String>)>, bool);

    fn rules_strategy() -> impl Strategy<Value = Written> {
        (
            proptest::collection::vec(
                (proptest::option::of(glob()), proptest::option::of(glob())),
                INDEXED_FROM..24,
            ),
            any::<bool>(),
        )
    }

    proptest! {
        /// The index finds the rule that trying each in turn finds, for any rules and request.
        #[test]
        fn the_index_agrees_with_trying_each_rule_in_turn(
            (written, folded) in rules_strategy(),
            method in proptest::option::of("[abAB]{0,3}"),
            names in proptest::collection::vec("[abAB]{0,4}", 0..3),
        ) {
            let rules = Rules::new(
                written
                    .iter()
                    .enumerate()
                    .map(|(i, (m, n))| rule(m.as_deref(), n.as_deref(), folded, i))
                    .collect(),
            );
            prop_assert!(rules.index.is_some());
            let names: Vec<Cow<'_, str>> = names.iter().map(|n| Cow::Borrowed(n.as_str())).collect();
            let indexed = rules.first(method.as_deref(), &names).map(|r| r.pool);
            prop_assert_eq!(indexed, rules.first_in_turn(method.as_deref(), &names));
        }
    }
}
