use super::*;

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
    map.forget(0);
    assert_eq!(map.resolve(Kind::Tool, "whoami"), Resolved::NeedLists);
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
fn a_name_too_long_once_prefixed_is_hidden() {
    let m = member("m", Prefix::Literal("m__".into()));
    let long = "x".repeat(MAX_NAME_CHARS - 2);
    assert_eq!(m.expose(Kind::Tool, &long), None);
    assert!(m
        .expose(Kind::Tool, &"x".repeat(MAX_NAME_CHARS - 3))
        .is_some());
    // resource URIs carry no prefix and no length rule
    assert!(m
        .expose(Kind::Resource, &format!("file:///{long}"))
        .is_some());
}

#[test]
fn resources_are_filtered_by_uri_and_never_prefixed() {
    let mut m = member("docs", Prefix::Literal("docs__".into()));
    m.resources.include.push(glob("file:///public/**"));
    assert_eq!(
        m.expose(Kind::Resource, "file:///public/a.md").as_deref(),
        Some("file:///public/a.md")
    );
    assert_eq!(m.expose(Kind::Resource, "file:///private/a.md"), None);
}

#[test]
fn static_collisions_name_the_members_and_the_names() {
    let mut a = member("a", Prefix::Literal("x.".into()));
    let b = member("b", Prefix::Literal("x.".into()));
    let c = member("c", Prefix::Literal("x.y.".into()));
    let mut d = member("d", Prefix::Never);
    let mut e = member("e", Prefix::Never);
    d.tools.rename.insert("one".into(), "same".into());
    e.tools.rename.insert("two".into(), "same".into());
    a.tools
        .rename
        .insert("t".into(), "z".repeat(MAX_NAME_CHARS));
    let found = static_collisions(&[a, b, c, d, e]);
    let all = found.join("\n");
    assert!(
        all.contains("members `a` and `b` have the same prefix `x.`"),
        "{all}"
    );
    assert!(
        all.contains("the prefix `x.` of member `a` starts the prefix `x.y.` of member `c`"),
        "{all}"
    );
    assert!(
        all.contains("tool `one` of member `d` and `two` of member `e` are both exposed as `same`"),
        "{all}"
    );
    assert!(all.contains("tool `t` of member `a` renamed to"), "{all}");
    assert_eq!(found.len(), 5, "{all}"); // a/b same, a/c and b/c overlap, the rename pair, the long one
}

#[test]
fn distinct_prefixes_and_renames_have_no_static_collision() {
    let map = hub();
    assert!(static_collisions(map.members()).is_empty());
}
