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
