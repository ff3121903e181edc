use super::*;
use crate::config::{Filter, Member, Prefix};
use crate::federation::names::Resolved;
use serde_json::json;

fn member(name: &str, prefix: Prefix) -> Member {
    Member {
        name: name.into(),
        prefix,
        tools: Filter::default(),
        prompts: Filter::default(),
        resources: Filter::default(),
    }
}

fn map() -> NameMap {
    NameMap::new(vec![
        member("conf", Prefix::Never),
        member("fast", Prefix::Literal("fast__".into())),
        member("other", Prefix::Never),
    ])
}

fn listed(v: Value) -> Part {
    Part::Listed(v.as_object().unwrap().clone())
}

fn names(m: &Merged) -> Vec<&str> {
    m.items
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect()
}

#[test]
fn tools_of_every_member_are_merged_in_config_order_under_their_exposed_names() {
    let mut map = map();
    let m = merge(
        &mut map,
        List::Tools,
        &Position::default(),
        vec![
            (
                1,
                listed(json!({"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]})),
            ),
            (
                0,
                listed(json!({"tools": [{"name": "echo", "annotations": {"readOnlyHint": true}}]})),
            ),
        ],
    );
    assert_eq!(names(&m), ["echo", "fast__whoami"]);
    // everything but the name passes through
    assert_eq!(m.items[0]["annotations"]["readOnlyHint"], true);
    assert_eq!(m.items[1]["inputSchema"]["type"], "object");
    assert!(m.position.finished());
    assert_eq!(
        map.resolve(Kind::Tool, "echo"),
        Resolved::Member(0, "echo".into())
    );
}

#[test]
fn a_member_that_pages_keeps_its_cursor_and_the_others_are_done() {
    let mut map = map();
    let first = merge(
        &mut map,
        List::Tools,
        &Position::default(),
        vec![
            (
                0,
                listed(json!({"tools": [{"name": "a"}], "nextCursor": "conf-2"})),
            ),
            (1, listed(json!({"tools": [{"name": "b"}]}))),
        ],
    );
    assert!(!first.position.finished());
    assert_eq!(first.position.next_of("conf"), Some("conf-2"));
    assert_eq!(first.position.next_of("fast"), None);
    let second = merge(
        &mut map,
        List::Tools,
        &first.position,
        vec![(0, listed(json!({"tools": [{"name": "c"}]})))],
    );
    assert_eq!(names(&second), ["c"]);
    assert!(second.position.finished());
}

#[test]
fn a_failed_member_is_left_out_named_and_asked_again_with_the_same_cursor() {
    let mut map = map();
    let mut before = Position::default();
    before
        .members
        .insert("conf".into(), Page::Next("conf-2".into()));
    before
        .members
        .insert("fast".into(), Page::Next("fast-2".into()));
    let m = merge(
        &mut map,
        List::Tools,
        &before,
        vec![
            (0, Part::Failed("deadline")),
            (1, listed(json!({"tools": [{"name": "b"}]}))),
        ],
    );
    assert_eq!(names(&m), ["fast__b"]);
    assert_eq!(m.left_out, vec![(0, "deadline")]);
    assert_eq!(m.position.next_of("conf"), Some("conf-2"));
    assert_eq!(m.position.next_of("fast"), None);
}

#[test]
fn a_name_two_members_expose_is_kept_by_the_first_and_the_collision_reported() {
    let mut map = map();
    let m = merge(
        &mut map,
        List::Tools,
        &Position::default(),
        vec![
            (
                2,
                listed(
                    json!({"tools": [{"name": "echo", "description": "other's"}, {"name": "x"}]}),
                ),
            ),
            (
                0,
                listed(json!({"tools": [{"name": "echo", "description": "conf's"}]})),
            ),
        ],
    );
    assert_eq!(names(&m), ["echo", "x"]);
    assert_eq!(m.items[0]["description"], "conf's");
    assert_eq!(
        m.collisions,
        vec![Collision {
            exposed: "echo".into(),
            kept: 0,
            left_out: 2
        }]
    );
    assert_eq!(
        map.resolve(Kind::Tool, "echo"),
        Resolved::Member(0, "echo".into())
    );
}

#[test]
fn resources_keep_their_uris_and_templates_are_filtered_by_uri_template() {
    let mut map = NameMap::new({
        let mut docs = member("docs", Prefix::Literal("docs__".into()));
        docs.resources
            .exclude
            .push(crate::config::Pattern::new("secret://**").unwrap());
        vec![docs]
    });
    let m = merge(
        &mut map,
        List::Resources,
        &Position::default(),
        vec![(
            0,
            listed(json!({"resources": [
                {"uri": "file:///a.md", "name": "a"},
                {"uri": "secret://key", "name": "key"}
            ]})),
        )],
    );
    assert_eq!(m.items, vec![json!({"uri": "file:///a.md", "name": "a"})]);
    let t = merge(
        &mut map,
        List::Templates,
        &Position::default(),
        vec![(
            0,
            listed(json!({"resourceTemplates": [
                {"uriTemplate": "file:///{path}", "name": "files"},
                {"uriTemplate": "secret://{name}", "name": "secrets"}
            ]})),
        )],
    );
    assert_eq!(t.items.len(), 1);
    assert_eq!(t.items[0]["uriTemplate"], "file:///{path}");
}

#[test]
fn items_without_a_name_and_malformed_results_expose_nothing() {
    let mut map = map();
    let m = merge(
        &mut map,
        List::Tools,
        &Position::default(),
        vec![
            (
                0,
                listed(json!({"tools": [{"description": "no name"}, {"name": 7}]})),
            ),
            (1, listed(json!({"tools": "not a list"}))),
        ],
    );
    assert!(m.items.is_empty());
    assert!(m.position.finished());
}

#[test]
fn list_methods_are_known_by_name() {
    assert_eq!(List::of_method("tools/list"), Some(List::Tools));
    assert_eq!(
        List::of_method("resources/templates/list"),
        Some(List::Templates)
    );
    assert_eq!(List::of_method("tools/call"), None);
}
