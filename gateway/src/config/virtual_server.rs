//! A virtual server's part of a route (`mode: virtual`): the file structs of its members and
//! their validation into [`VirtualServer`]. Every problem is listed (unknown keys, pools that do
//! not exist, names a client could not call, names two members would both expose).

use super::member_names::{static_collisions, Filter, Member, Prefix};
use super::mode::Mode;
use super::problems::{Problems, Unknown};
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::BTreeMap;

/// `server-info`: the `serverInfo` a virtual server answers `initialize` and
/// `server/discover` with.
#[derive(Debug, Deserialize, JsonSchema, Default, Clone)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileServerInfo {
    /// `serverInfo.name`.
    pub name: Option<String>,
    /// `serverInfo.version`.
    pub version: Option<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// Which of a member's tools, prompts or resources are exposed, and renamed.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileNames {
    /// Globs on the member's own names (URIs for resources): only matching items are exposed.
    #[serde(default)]
    pub include: Vec<String>,
    /// Globs on the member's own names (URIs for resources): matching items are not exposed.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// The member's own name → the name exposed (before the prefix).
    #[serde(default)]
    pub rename: BTreeMap<String, String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// One member of a virtual server.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileMember {
    /// The member's name: unique in its virtual server, the default prefix, the `member` label.
    pub name: Option<String>,
    /// The pool that serves it.
    pub pool: Option<String>,
    /// stateless, stateful or auto (the default), as on a plain route.
    #[schemars(extend("enum" = ["stateless", "stateful", "auto", null]))]
    pub mode: Option<String>,
    /// `never` (bare names) or a literal prefix. Default: the member's name and the separator.
    pub prefix: Option<String>,
    /// Path sent upstream. Default: the request path.
    pub upstream_path: Option<String>,
    /// Which tools are exposed, and renamed.
    #[serde(default)]
    pub tools: FileNames,
    /// Which prompts are exposed, and renamed.
    #[serde(default)]
    pub prompts: FileNames,
    /// Which resources are exposed (globs on URIs); `rename` maps URI to URI.
    #[serde(default)]
    pub resources: FileNames,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// A validated virtual server.
#[derive(Debug, Clone, PartialEq)]
pub struct VirtualServer {
    /// `serverInfo.name`. Default `mcp-gateway`.
    pub name: String,
    /// `serverInfo.version`. Default: the gateway's version.
    pub version: String,
    /// `instructions`; `None`: the members' own, joined under headings.
    pub instructions: Option<String>,
    /// The members, in config order (earlier members win names two of them expose).
    pub members: Vec<MemberConfig>,
}

/// A validated member.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberConfig {
    /// Its name and how it exposes names.
    pub names: Member,
    /// Index into `Config::pools`.
    pub pool: usize,
    /// Session handling toward its pool.
    pub mode: Mode,
    /// Path sent upstream.
    pub upstream_path: Option<String>,
}

/// The separator of default prefixes.
pub const DEFAULT_SEPARATOR: &str = "__";

/// Whether `s` uses only the characters the spec allows in a tool name (`A-Z a-z 0-9 _ - .`).
fn name_chars(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// What a route's virtual-server keys say, validated.
pub(super) struct VirtualKeys<'a> {
    pub server_info: Option<&'a FileServerInfo>,
    pub separator: Option<&'a str>,
    pub instructions: Option<&'a str>,
    pub members: &'a [FileMember],
}

pub(super) fn virtual_server(
    p: &mut Problems,
    at: &str,
    keys: VirtualKeys<'_>,
    pools: &BTreeMap<&str, usize>,
) -> VirtualServer {
    let separator = keys.separator.unwrap_or(DEFAULT_SEPARATOR);
    if separator.is_empty() || !name_chars(separator) {
        p.add(
            format!("{at}.separator"),
            format!(
                "`{separator}` must be one or more of A-Z a-z 0-9 _ - . (a tool name's characters)"
            ),
        );
    }
    let info = keys.server_info.cloned().unwrap_or_default();
    p.unknown(&format!("{at}.server-info"), &info.unknown, "name, version");
    if keys.members.is_empty() {
        p.add(
            format!("{at}.members"),
            "a virtual route needs at least one member",
        );
    }
    let members: Vec<MemberConfig> = keys
        .members
        .iter()
        .enumerate()
        .map(|(j, m)| member(p, &format!("{at}.members[{j}]"), m, separator, pools))
        .collect();
    for (j, m) in members.iter().enumerate() {
        if members[..j].iter().any(|o| o.names.name == m.names.name) {
            p.add(
                format!("{at}.members[{j}].name"),
                format!("`{}` names another member too", m.names.name),
            );
        }
    }
    let names: Vec<Member> = members.iter().map(|m| m.names.clone()).collect();
    for collision in static_collisions(&names) {
        p.add(format!("{at}.members"), collision);
    }
    VirtualServer {
        name: info.name.unwrap_or_else(|| "mcp-gateway".into()),
        version: info
            .version
            .unwrap_or_else(|| env!("CARGO_PKG_VERSION").into()),
        instructions: keys.instructions.map(str::to_owned),
        members,
    }
}

fn member(
    p: &mut Problems,
    at: &str,
    m: &FileMember,
    separator: &str,
    pools: &BTreeMap<&str, usize>,
) -> MemberConfig {
    p.unknown(
        at,
        &m.unknown,
        "name, pool, mode, prefix, upstream-path, tools, prompts, resources",
    );
    let name = m.name.clone().unwrap_or_default();
    if name.is_empty() || !name_chars(&name) {
        p.add(
            format!("{at}.name"),
            format!("`{name}` must be one or more of A-Z a-z 0-9 _ - . (it prefixes tool names)"),
        );
    }
    let pool = match m.pool.as_deref() {
        Some(pool) => pools.get(pool).copied().unwrap_or_else(|| {
            p.add(format!("{at}.pool"), format!("no pool `{pool}`"));
            0
        }),
        None => {
            p.add(format!("{at}.pool"), "a member needs a pool");
            0
        }
    };
    let mode = match m.mode.as_deref().unwrap_or("auto") {
        "stateless" => Mode::Stateless,
        "stateful" => Mode::Stateful,
        "auto" => Mode::Auto,
        other => {
            p.add(
                format!("{at}.mode"),
                format!("unknown `{other}` (stateless, stateful, auto)"),
            );
            Mode::Auto
        }
    };
    let prefix = match m.prefix.as_deref() {
        Some("never") => Prefix::Never,
        Some(literal) => {
            if literal.is_empty() || !name_chars(literal) {
                p.add(
                    format!("{at}.prefix"),
                    format!("`{literal}` must be `never` or one or more of A-Z a-z 0-9 _ - ."),
                );
            }
            Prefix::Literal(literal.to_owned())
        }
        None => Prefix::Literal(format!("{name}{separator}")),
    };
    if let Some(up) = &m.upstream_path {
        if !up.starts_with('/') {
            p.add(
                format!("{at}.upstream-path"),
                format!("`{up}` must start with /"),
            );
        }
    }
    MemberConfig {
        names: Member {
            name,
            prefix,
            tools: filter(p, &format!("{at}.tools"), &m.tools, true),
            prompts: filter(p, &format!("{at}.prompts"), &m.prompts, true),
            resources: filter(p, &format!("{at}.resources"), &m.resources, false),
        },
        pool,
        mode,
        upstream_path: m.upstream_path.clone(),
    }
}

fn filter(p: &mut Problems, at: &str, f: &FileNames, names: bool) -> Filter {
    p.unknown(at, &f.unknown, "include, exclude, rename");
    let globs = |p: &mut Problems, key: &str, list: &[String]| {
        list.iter()
            .enumerate()
            .filter_map(|(k, g)| p.pattern(format!("{at}.{key}[{k}]"), g))
            .collect()
    };
    let include = globs(p, "include", &f.include);
    let exclude = globs(p, "exclude", &f.exclude);
    for (from, to) in &f.rename {
        let legal = !to.is_empty() && (!names || name_chars(to));
        if !legal {
            p.add(
                format!("{at}.rename.{from}"),
                if names {
                    format!("`{to}` must be one or more of A-Z a-z 0-9 _ - .")
                } else {
                    "a resource's new URI must not be empty".to_owned()
                },
            );
        }
    }
    Filter {
        include,
        exclude,
        rename: f.rename.clone().into_iter().collect(),
        folded: false,
    }
}

#[cfg(test)]
#[path = "virtual_server_tests.rs"]
mod tests;
