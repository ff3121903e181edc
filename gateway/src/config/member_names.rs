//! How a virtual server's member exposes its names, as the config says: a member's tool,
//! prompt or resource is kept or hidden by its include/exclude globs (read on the member's own
//! name), renamed by its rename map, then prefixed (`<member><separator>`, a literal prefix, or
//! never); and the way back from an exposed name to the member's own. The collisions the config
//! alone shows are found here, so `validate` refuses them; what members list at run time is
//! `federation/names.rs`.

use super::Pattern;
use std::collections::HashMap;

/// The longest name the spec wants a tool to have (2026-07-28 `server/tools.mdx`: 1 to 128).
pub const MAX_NAME_CHARS: usize = 128;

/// What kind of item a name names: lists and calls of each kind are mapped alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `tools/list`, `tools/call`.
    Tool,
    /// `prompts/list`, `prompts/get`.
    Prompt,
    /// `resources/list`, `resources/templates/list`, `resources/read`: filtered by URI.
    Resource,
}

/// How a member's names are prefixed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prefix {
    /// Bare names (`prefix: never`): MCP Apps call tools by the names their server gave them.
    Never,
    /// This text before every name (the default is the member's name and the separator).
    Literal(String),
}

/// Which of a member's items of one kind are exposed, and under which names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Globs on the member's own names: when not empty, only matching items are exposed.
    pub include: Vec<Pattern>,
    /// Globs on the member's own names: matching items are never exposed.
    pub exclude: Vec<Pattern>,
    /// The member's own name → the name exposed before the prefix.
    pub rename: HashMap<String, String>,
    /// `name-match: folded` on the virtual route: globs match folded names and a renamed
    /// name is found in any spelling that folds to it (a backend that normalizes names would
    /// run `ADMIN_reset` as `admin_reset`).
    pub folded: bool,
}

impl Filter {
    /// Whether the member's item called `own` is exposed at all.
    pub fn keeps(&self, own: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|p| p.is_match(own)))
            && !self.exclude.iter().any(|p| p.is_match(own))
    }

    /// The member's own name of a renamed or bare exposed name (before the prefix), if it
    /// exposes one: a name renamed away is no longer reachable by its own name (in any
    /// spelling that folds to it, when folded).
    pub fn own_name<'a>(&'a self, renamed: &'a str) -> Option<&'a str> {
        let folded = self.folded.then(|| super::pattern::fold(renamed));
        let same = |name: &str| match &folded {
            Some(f) => super::pattern::fold(name) == *f,
            None => name == renamed,
        };
        if let Some((own, _)) = self.rename.iter().find(|(_, to)| same(to)) {
            return Some(own);
        }
        if self.rename.keys().any(|from| same(from)) {
            return None;
        }
        Some(renamed)
    }

    /// The same filter for a route with `name-match: folded`: its globs compiled folded.
    pub fn folded(&self) -> Filter {
        let fold = |list: &[Pattern]| list.iter().map(Pattern::folded).collect();
        Filter {
            include: fold(&self.include),
            exclude: fold(&self.exclude),
            rename: self.rename.clone(),
            folded: true,
        }
    }
}

/// One member as the name map sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// The member's configured name (unique in its virtual server).
    pub name: String,
    /// How its names are prefixed.
    pub prefix: Prefix,
    /// Tools kept and renamed.
    pub tools: Filter,
    /// Prompts kept and renamed.
    pub prompts: Filter,
    /// Resources kept (by URI) and renamed (URI → URI, only when configured).
    pub resources: Filter,
}

impl Member {
    /// The same member on a route with `name-match: folded` ([`Filter::folded`]).
    pub fn folded(&self) -> Member {
        Member {
            tools: self.tools.folded(),
            prompts: self.prompts.folded(),
            resources: self.resources.folded(),
            ..self.clone()
        }
    }

    /// The filter of one kind.
    pub fn filter(&self, kind: Kind) -> &Filter {
        match kind {
            Kind::Tool => &self.tools,
            Kind::Prompt => &self.prompts,
            Kind::Resource => &self.resources,
        }
    }

    /// The name a client sees for this member's item `own`, or `None` when the item is hidden
    /// (filtered out, or too long once prefixed). Resource URIs get no prefix.
    pub fn expose(&self, kind: Kind, own: &str) -> Option<String> {
        let filter = self.filter(kind);
        if !filter.keeps(own) {
            return None;
        }
        let renamed = filter.rename.get(own).map_or(own, String::as_str);
        let exposed = match (&self.prefix, kind) {
            (Prefix::Literal(p), Kind::Tool | Kind::Prompt) => format!("{p}{renamed}"),
            _ => renamed.to_owned(),
        };
        (kind == Kind::Resource || exposed.chars().count() <= MAX_NAME_CHARS).then_some(exposed)
    }

    /// This member's own name for an exposed name, if the exposed name can be this member's.
    pub fn own(&self, kind: Kind, exposed: &str) -> Option<String> {
        let bare = match (&self.prefix, kind) {
            (Prefix::Literal(p), Kind::Tool | Kind::Prompt) => exposed.strip_prefix(p.as_str())?,
            _ => exposed,
        };
        let filter = self.filter(kind);
        let own = filter.own_name(bare)?;
        filter.keeps(own).then(|| own.to_owned())
    }
}

/// Collisions visible in the config alone, each a sentence naming the members and names:
/// equal prefixes, a prefix that starts another's (names could be read both ways), and renames
/// that expose two items under one name (in one member, or across members whose prefixes agree).
pub fn static_collisions(members: &[Member]) -> Vec<String> {
    let mut found = Vec::new();
    let prefix = |m: &Member| match &m.prefix {
        Prefix::Literal(p) => p.clone(),
        Prefix::Never => String::new(),
    };
    for (i, a) in members.iter().enumerate() {
        for b in &members[i + 1..] {
            let (pa, pb) = (prefix(a), prefix(b));
            if let (Prefix::Literal(_), Prefix::Literal(_)) = (&a.prefix, &b.prefix) {
                if pa == pb {
                    found.push(format!(
                        "members `{}` and `{}` have the same prefix `{pa}`: their names would collide",
                        a.name, b.name
                    ));
                } else if pb.starts_with(&pa) || pa.starts_with(&pb) {
                    let (short, long) = if pa.len() < pb.len() { (a, b) } else { (b, a) };
                    found.push(format!(
                        "the prefix `{}` of member `{}` starts the prefix `{}` of member `{}`: a name like `{}tool` could belong to either",
                        prefix(short), short.name, prefix(long), long.name, prefix(long)
                    ));
                }
            }
        }
    }
    for kind in [Kind::Tool, Kind::Prompt, Kind::Resource] {
        // every rename target, exposed, with who renamed what to it
        let mut targets: HashMap<String, (usize, &str)> = HashMap::new();
        for (i, m) in members.iter().enumerate() {
            let mut sorted: Vec<_> = m.filter(kind).rename.iter().collect();
            sorted.sort();
            for (own, _) in sorted {
                let Some(exposed) = m.expose(kind, own) else {
                    continue;
                };
                if let Some((j, other)) = targets.get(&exposed) {
                    found.push(format!(
                        "{} `{other}` of member `{}` and `{own}` of member `{}` are both exposed as `{exposed}`",
                        kind_word(kind),
                        members[*j].name,
                        m.name
                    ));
                } else {
                    targets.insert(exposed, (i, own.as_str()));
                }
            }
        }
        for (i, m) in members.iter().enumerate() {
            for (own, to) in &m.filter(kind).rename {
                if m.expose(kind, own).is_none() && m.filter(kind).keeps(own) {
                    found.push(format!(
                        "{} `{own}` of member `{}` renamed to `{to}` would be longer than {MAX_NAME_CHARS} characters once prefixed",
                        kind_word(kind),
                        members[i].name
                    ));
                }
            }
        }
    }
    found
}

fn kind_word(kind: Kind) -> &'static str {
    match kind {
        Kind::Tool => "tool",
        Kind::Prompt => "prompt",
        Kind::Resource => "resource",
    }
}

#[cfg(test)]
#[path = "member_names_tests.rs"]
mod tests;
