use super::*;
use crate::config::{static_collisions, Filter, Pattern};

fn glob(s: &str) -> Pattern {
    Pattern::new(s).unwrap()
}

fn member(name: &str, prefix: Prefix) -> Member {
    Member {
        name: name.into(),
        prefix,
        tools: Filter::default(),
        prompts: Filter::default(),
        resources: Filter::default(),
    }
}

fn hub() -> NameMap {
    let conf = member("conf", Prefix::Never);
    let fast = member("fast", Prefix::Literal("fast__".into()));
    let mut search = member("search", Prefix::Literal("s.".into()));
    search.tools.exclude.push(glob("admin_*"));
    search.tools.rename.insert("q".into(), "query".into());
    NameMap::new(vec![conf, fast, search])
}

#[test]
fn prefixed_names_lead_back_to_their_member_and_own_name() {
    let map = hub();
    assert_eq!(
        map.members()[1].expose(Kind::Tool, "whoami").as_deref(),
        Some("fast__whoami")
    );
    assert_eq!(
        map.resolve(Kind::Tool, "fast__whoami"),
        Resolved::Member(1, "whoami".into())
    );
}

#[test]
fn a_rename_is_exposed_and_the_own_name_it_replaced_is_not_reachable() {
    let map = hub();
    assert_eq!(
        map.members()[2].expose(Kind::Tool, "q").as_deref(),
        Some("s.query")
    );
    assert_eq!(
        map.resolve(Kind::Tool, "s.query"),
        Resolved::Member(2, "q".into())
    );
    // `s.q` would be the renamed tool under its old name: not exposed, so it leads nowhere
    // (and a bare member never owns a name carrying `s.`: the prefix is `search`'s)
    assert_eq!(map.resolve(Kind::Tool, "s.q"), Resolved::Unknown);
}

#[test]
fn excluded_items_are_neither_listed_nor_callable() {
    let mut map = hub();
    assert_eq!(map.members()[2].expose(Kind::Tool, "admin_reset"), None);
    map.learn(0, Kind::Tool, &["whoami"]);
    // the bare `conf` cannot own it either: `s.` is `search`'s prefix
    assert_eq!(map.resolve(Kind::Tool, "s.admin_reset"), Resolved::Unknown);
    map.members = vec![map.members[2].clone()];
    map.listed.clear();
    assert_eq!(map.resolve(Kind::Tool, "s.admin_reset"), Resolved::Unknown);
}

#[test]
fn bare_names_need_the_lists_then_resolve_from_them() {
    let mut map = hub();
    assert_eq!(map.resolve(Kind::Tool, "whoami"), Resolved::NeedLists);
    assert!(map.learn(0, Kind::Tool, &["whoami", "echo"]).is_empty());
    assert_eq!(
        map.resolve(Kind::Tool, "whoami"),
        Resolved::Member(0, "whoami".into())
    );
    // a member that lists nothing more is forgotten
    map.learn(0, Kind::Tool, &[]);
    assert_eq!(map.resolve(Kind::Tool, "whoami"), Resolved::NeedLists);
    // a later page adds to the earlier ones
    map.learn(0, Kind::Tool, &["whoami"]);
    map.learn_more(0, Kind::Tool, &["echo"]);
    assert_eq!(
        map.resolve(Kind::Tool, "whoami"),
        Resolved::Member(0, "whoami".into())
    );
}

#[test]
fn a_run_time_collision_goes_to_the_member_listed_first_whatever_the_order_learnt() {
    // two `never` members both list `echo`
    let members = vec![member("a", Prefix::Never), member("b", Prefix::Never)];
    for order in [[0, 1], [1, 0]] {
        let mut map = NameMap::new(members.clone());
        let mut collisions = Vec::new();
        for i in order {
            collisions.extend(map.learn(i, Kind::Tool, &["echo"]));
        }
        assert_eq!(
            map.resolve(Kind::Tool, "echo"),
            Resolved::Member(0, "echo".into())
        );
        assert_eq!(
            collisions,
            vec![Collision {
                exposed: "echo".into(),
                kept: 0,
                left_out: 1
            }]
        );
    }
}

#[test]
fn distinct_prefixes_and_renames_have_no_static_collision() {
    let map = hub();
    assert!(static_collisions(map.members()).is_empty());
}

#[test]
fn a_bare_member_never_takes_a_name_carrying_another_members_prefix() {
    // `conf` (bare, listed first) lists `fast__whoami` and `s.query`: they are `fast`'s and
    // `search`'s names; before, `conf` took them and got their calls with their arguments
    let mut map = hub();
    assert_eq!(map.expose(0, Kind::Tool, "fast__whoami"), None);
    assert!(map
        .learn(0, Kind::Tool, &["fast__whoami", "s.query", "plain"])
        .is_empty());
    assert_eq!(
        map.resolve(Kind::Tool, "fast__whoami"),
        Resolved::Member(1, "whoami".into())
    );
    assert_eq!(
        map.resolve(Kind::Tool, "s.query"),
        Resolved::Member(2, "q".into())
    );
    assert_eq!(
        map.resolve(Kind::Tool, "plain"),
        Resolved::Member(0, "plain".into())
    );
    // a name that only a bare member could own, with another's prefix: no one's
    assert_eq!(map.resolve(Kind::Tool, "s.admin_x"), Resolved::Unknown);
    // resource URIs carry no prefix: a bare member keeps them
    assert_eq!(
        map.expose(0, Kind::Resource, "fast__x").as_deref(),
        Some("fast__x")
    );
}

#[test]
fn folded_filters_catch_every_spelling_of_an_excluded_or_renamed_name() {
    let mut m = member("a", Prefix::Literal("a__".into()));
    m.tools.exclude.push(glob("admin_*"));
    m.tools.rename.insert("secret".into(), "public".into());
    let exact = m.clone();
    let folded = m.folded();
    for spelled in [
        "a__ADMIN_reset",
        "a__\u{ff21}\u{ff24}\u{ff2d}\u{ff29}\u{ff2e}_reset",
    ] {
        assert!(exact.own(Kind::Tool, spelled).is_some(), "{spelled}: exact");
        assert_eq!(folded.own(Kind::Tool, spelled), None, "{spelled}: folded");
    }
    assert_eq!(folded.own(Kind::Tool, "a__SECRET"), None, "renamed away");
    assert_eq!(
        folded.own(Kind::Tool, "a__PUBLIC").as_deref(),
        Some("secret")
    );
    assert_eq!(
        folded.own(Kind::Tool, "a__whoami").as_deref(),
        Some("whoami")
    );
}

#[test]
fn exposed_names_are_listed_sorted_and_bounded() {
    let mut map = hub();
    map.learn(1, Kind::Tool, &["zeta", "alpha", "mid"]);
    map.learn(0, Kind::Tool, &["bare"]);
    assert_eq!(
        map.exposed(1, Kind::Tool, 2),
        vec!["fast__alpha".to_owned(), "fast__mid".to_owned()]
    );
    assert_eq!(map.exposed(0, Kind::Tool, 10), vec!["bare".to_owned()]);
    assert!(map.exposed(1, Kind::Prompt, 10).is_empty());
}
