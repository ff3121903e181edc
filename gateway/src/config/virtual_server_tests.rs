use super::*;
use crate::config::Kind;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Keys {
    server_info: Option<FileServerInfo>,
    separator: Option<String>,
    instructions: Option<String>,
    #[serde(default)]
    members: Vec<FileMember>,
}

fn validate(yaml: &str) -> (VirtualServer, Vec<String>) {
    let keys: Keys = serde_saphyr::from_str(yaml).unwrap();
    let pools: BTreeMap<&str, usize> = [("conf", 0), ("fast", 1), ("search", 2)].into();
    let mut p = Problems::default();
    let server = virtual_server(
        &mut p,
        "routes[0]",
        VirtualKeys {
            server_info: keys.server_info.as_ref(),
            separator: keys.separator.as_deref(),
            instructions: keys.instructions.as_deref(),
            members: &keys.members,
        },
        &pools,
    );
    (server, p.0.iter().map(ToString::to_string).collect())
}

/// The issue's example, as users will write it.
const HUB: &str = r#"
server-info: { name: hub, version: 1.0.0 }
separator: "__"
members:
  - { name: conf, pool: conf, mode: stateful, prefix: never, upstream-path: /mcp }
  - { name: fast, pool: fast, mode: stateful, upstream-path: /mcp }
  - name: search
    pool: search
    prefix: "s."
    tools: { exclude: ["admin_*"], rename: { q: query } }
"#;

#[test]
fn the_documented_example_validates_to_its_members() {
    let (server, problems) = validate(HUB);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        (server.name.as_str(), server.version.as_str()),
        ("hub", "1.0.0")
    );
    let [conf, fast, search] = &server.members[..] else {
        panic!("three members");
    };
    assert_eq!(conf.names.prefix, Prefix::Never);
    assert_eq!(conf.mode, Mode::Stateful);
    assert_eq!(fast.names.prefix, Prefix::Literal("fast__".into()));
    assert_eq!(fast.upstream_path.as_deref(), Some("/mcp"));
    assert_eq!((search.pool, search.mode), (2, Mode::Auto));
    assert_eq!(
        search.names.expose(Kind::Tool, "q").as_deref(),
        Some("s.query")
    );
    assert_eq!(search.names.expose(Kind::Tool, "admin_drop"), None);
}

#[test]
fn defaults_are_the_gateways_server_info_and_the_double_underscore() {
    let (server, problems) = validate("members: [{ name: fast, pool: fast }]");
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(server.name, "mcp-gateway");
    assert_eq!(server.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(
        server.members[0].names.prefix,
        Prefix::Literal("fast__".into())
    );
    assert_eq!(server.instructions, None);
}

#[test]
fn every_problem_of_the_members_is_listed_with_its_key() {
    let (_, problems) = validate(
        r#"
separator: "/"
server-info: { name: hub, colour: blue }
members:
  - { name: "bad name", pool: nowhere, mode: virtual, upstream-path: mcp, typo: 1 }
  - { pool: fast, prefix: "a b" }
  - { name: fast, pool: fast, tools: { include: ["[oops"], rename: { x: "" } } }
  - { name: fast, pool: fast }
"#,
    );
    let all = problems.join("\n");
    for expected in [
        "routes[0].separator: `/` must be",
        "routes[0].server-info.colour: unknown key",
        "routes[0].members[0].typo: unknown key",
        "routes[0].members[0].name: `bad name` must be",
        "routes[0].members[0].pool: no pool `nowhere`",
        "routes[0].members[0].mode: unknown `virtual`",
        "routes[0].members[0].upstream-path: `mcp` must start with /",
        "routes[0].members[1].name: `` must be",
        "routes[0].members[1].prefix: `a b` must be",
        "routes[0].members[2].tools.include[0]: bad glob `[oops`",
        "routes[0].members[2].tools.rename.x: `` must be",
        "routes[0].members[3].name: `fast` names another member too",
        "routes[0].members: members `fast` and `fast` have the same prefix",
    ] {
        assert!(all.contains(expected), "missing {expected:?} in\n{all}");
    }
}

#[test]
fn names_two_members_would_both_expose_are_refused_naming_both() {
    let (_, problems) = validate(
        r#"
members:
  - { name: a, pool: conf, prefix: never, tools: { rename: { search: find } } }
  - { name: b, pool: fast, prefix: never, tools: { rename: { lookup: find } } }
  - { name: c, pool: search, prefix: "x" }
  - { name: d, pool: search, prefix: "x.y" }
"#,
    );
    let all = problems.join("\n");
    assert!(
        all.contains(
            "tool `search` of member `a` and `lookup` of member `b` are both exposed as `find`"
        ),
        "{all}"
    );
    assert!(
        all.contains("the prefix `x` of member `c` starts the prefix `x.y` of member `d`"),
        "{all}"
    );
}

#[test]
fn a_virtual_route_needs_members() {
    let (_, problems) = validate("server-info: { name: hub }");
    assert_eq!(
        problems,
        ["routes[0].members: a virtual route needs at least one member"]
    );
}
