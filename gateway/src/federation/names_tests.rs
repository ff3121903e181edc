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
    // that a prefixed member could own; the bare `never` member might still own `s.q`
    assert_eq!(map.resolve(Kind::Tool, "s.q"), Resolved::NeedLists);
}

#[test]
fn excluded_items_are_neither_listed_nor_callable() {
    let mut map = hub();
    assert_eq!(map.members()[2].expose(Kind::Tool, "admin_reset"), None);
    map.learn(0, Kind::Tool, &["whoami"]);
    assert_eq!(
        map.resolve(Kind::Tool, "s.admin_reset"),
        Resolved::NeedLists
    );
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
