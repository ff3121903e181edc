//! `mcp-wire` stays pure: it depends only on a closed list of crates, and nothing under it
//! pulls in a runtime, a clock, the store or pingora (its `Cargo.toml` and `Cargo.lock`, read
//! against the list here and against docs/architecture.md's crate table).

use super::{architecture, doc, read, repo};
use std::collections::BTreeMap;

/// What `mcp-wire` may depend on (`[dependencies]`, `[build-dependencies]` and per-target
/// ones). A new dependency of the pure crate is added here on purpose, or not at all.
const MCP_WIRE_DEPENDENCIES: &[&str] = &[
    "base64",
    "bytes",
    "chacha20poly1305",
    "http",
    "memchr",
    "serde",
    "serde_json",
    "sha2",
];

/// What `mcp-wire`'s own tests may depend on.
const MCP_WIRE_DEV_DEPENDENCIES: &[&str] = &["proptest"];

/// Crates that would make `mcp-wire` impure (a runtime, I/O, a clock, the store, pingora), at
/// any depth of its dependency tree; a name ending in `-` stands for every crate it starts.
const NEVER_UNDER_MCP_WIRE: &[&str] = &[
    "pingora",
    "pingora-",
    "tokio",
    "tokio-",
    "mio",
    "async-std",
    "hyper",
    "chrono",
    "time",
    "redis",
];

/// The dependency names of a `Cargo.toml`, by kind: `normal` (`[dependencies]`, with the
/// build and per-target tables) and `dev`; both `name = ...` keys and `[dependencies.name]`
/// tables are read.
fn dependencies(manifest: &str) -> BTreeMap<&'static str, Vec<String>> {
    let kind_of = |table: &str| match table {
        "dependencies" | "build-dependencies" => Some("normal"),
        "dev-dependencies" => Some("dev"),
        _ => None,
    };
    let mut out: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut keys_are_dependencies = None;
    for line in manifest
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
    {
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let parts: Vec<&str> = header.split('.').collect();
            keys_are_dependencies = kind_of(parts[parts.len() - 1]);
            if let (None, [.., table, name]) = (keys_are_dependencies, parts.as_slice()) {
                if let Some(kind) = kind_of(table) {
                    out.entry(kind)
                        .or_default()
                        .push(name.trim_matches('"').to_owned());
                }
            }
        } else if let (Some(kind), Some((key, _))) = (keys_are_dependencies, line.split_once('=')) {
            let name = key.trim().split('.').next().unwrap().trim_matches('"');
            out.entry(kind).or_default().push(name.to_owned());
        }
    }
    out
}

#[test]
fn mcp_wire_depends_only_on_the_crates_listed_here() {
    let manifest = read(&repo().join("mcp-wire/Cargo.toml"));
    let deps = dependencies(&manifest);
    for (kind, allowed) in [
        ("normal", MCP_WIRE_DEPENDENCIES),
        ("dev", MCP_WIRE_DEV_DEPENDENCIES),
    ] {
        let unlisted: Vec<&String> = deps
            .get(kind)
            .into_iter()
            .flatten()
            .filter(|d| !allowed.contains(&d.as_str()))
            .collect();
        assert!(
            unlisted.is_empty(),
            "mcp-wire/Cargo.toml: {unlisted:?} not in the closed list of {kind} dependencies of \
             the pure crate (gateway/tests/it/shape.rs); add one there only on purpose"
        );
    }
    assert!(deps
        .get("normal")
        .is_some_and(|d| d.contains(&"serde_json".to_owned())));
    // and docs/architecture.md's crate table says the same
    let doc = architecture();
    let said = doc::crates(&doc)
        .into_iter()
        .find(|(c, _)| *c == "mcp-wire/")
        .map(|(_, deps)| deps)
        .expect("docs/architecture.md's crate table has no `mcp-wire/` row");
    let mut said: Vec<&str> = said
        .split(',')
        .map(|d| d.trim().trim_matches('`'))
        .collect();
    let mut listed = MCP_WIRE_DEPENDENCIES.to_vec();
    said.sort();
    listed.sort();
    assert_eq!(
        said, listed,
        "docs/architecture.md's crate table and the closed list of mcp-wire's dependencies differ"
    );
    for allowed in MCP_WIRE_DEPENDENCIES
        .iter()
        .chain(MCP_WIRE_DEV_DEPENDENCIES)
    {
        assert!(!never(allowed), "`{allowed}` may not be on mcp-wire's list");
    }
}

fn never(name: &str) -> bool {
    NEVER_UNDER_MCP_WIRE
        .iter()
        .any(|n| name == *n || (n.ends_with('-') && name.starts_with(n)))
}

#[test]
fn nothing_mcp_wire_depends_on_pulls_in_a_runtime_a_clock_or_pingora() {
    // Cargo.lock's packages and what each depends on (registry packages: normal and build
    // dependencies only; a workspace member's list also has its dev-dependencies, which is why
    // the walk starts from mcp-wire's own normal dependencies)
    let lock = read(&repo().join("Cargo.lock"));
    let mut packages: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for block in lock.split("[[package]]").skip(1) {
        let name = block
            .lines()
            .find_map(|l| l.strip_prefix("name = "))
            .unwrap()
            .trim_matches('"')
            .to_owned();
        let deps = block
            .split_once("dependencies = [")
            .map(|(_, rest)| rest.split(']').next().unwrap())
            .unwrap_or("");
        let deps = deps
            .split(',')
            .filter_map(|d| d.trim().trim_matches('"').split(' ').next())
            .filter(|d| !d.is_empty())
            .map(str::to_owned);
        packages.entry(name).or_default().extend(deps);
    }
    let manifest = read(&repo().join("mcp-wire/Cargo.toml"));
    let mut todo: Vec<(String, String)> = dependencies(&manifest)
        .remove("normal")
        .unwrap_or_default()
        .into_iter()
        .map(|d| (d.clone(), format!("mcp-wire -> {d}")))
        .collect();
    let mut seen = Vec::new();
    while let Some((name, via)) = todo.pop() {
        assert!(
            !never(&name),
            "mcp-wire must stay pure, but it depends on `{name}`: {via}"
        );
        if seen.contains(&name) {
            continue;
        }
        for dep in packages.get(&name).into_iter().flatten() {
            todo.push((dep.clone(), format!("{via} -> {dep}")));
        }
        seen.push(name);
    }
    assert!(
        seen.len() > MCP_WIRE_DEPENDENCIES.len() / 2,
        "Cargo.lock has no mcp-wire tree"
    );
}
