//! Where a call on a virtual route goes: `tools/call` and `prompts/get` by the exposed name,
//! `resources/read` by URI, `completion/complete` by its `ref`. The names map answers from
//! what the lists said and from the members' prefixes; a bare name (`prefix: never`) it has
//! not seen, or a URI no list named, is looked up in the members' lists first, and a URI
//! still unknown is matched against their resource templates (RFC 6570 level 1 and 2: an
//! expression matches a run of the URI; `{+x}` and `{#x}` may hold `/`).

use super::request::Virtual;
use crate::config::Kind;
use crate::error::GatewayError;
use crate::federation::merge::List;
use crate::federation::names::Resolved;
use mcp_wire::param_headers::mirrored;
use serde_json::{Map, Value};

/// The methods routed to one member by what they name.
pub(super) const ROUTED: [&str; 4] = [
    "tools/call",
    "prompts/get",
    "resources/read",
    "completion/complete",
];

/// What a call names: its kind, the exposed name, and the `ref` type of a completion.
pub(super) struct Named {
    pub(super) kind: Kind,
    pub(super) exposed: String,
    pub(super) ref_type: Option<String>,
}

impl Named {
    /// What a request of `method` names, from what the body check read (`params.name`, or
    /// `params.uri`), without parsing the body again; a completion's `ref` is read from
    /// `body`. `None` when it names nothing a member owns.
    pub(super) fn read(method: &str, name: Option<&str>, body: &[u8]) -> Option<Named> {
        let kind = match method {
            "tools/call" => Kind::Tool,
            "prompts/get" => Kind::Prompt,
            "resources/read" => Kind::Resource,
            "completion/complete" => {
                let msg: Value = serde_json::from_slice(body).ok()?;
                return Named::of(method, &msg);
            }
            _ => return None,
        };
        Some(Named {
            kind,
            exposed: name?.to_owned(),
            ref_type: None,
        })
    }

    /// What `msg` (of `method`) names; `None` when it names nothing a member owns.
    fn of(method: &str, msg: &Value) -> Option<Named> {
        let params = msg.get("params")?;
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let (kind, exposed, ref_type) = match method {
            "tools/call" => (Kind::Tool, text(params.get("name"))?, None),
            "prompts/get" => (Kind::Prompt, text(params.get("name"))?, None),
            "resources/read" => (Kind::Resource, text(params.get("uri"))?, None),
            "completion/complete" => {
                let r = params.get("ref")?;
                let ref_type = text(r.get("type"))?;
                match ref_type.as_str() {
                    "ref/prompt" => (Kind::Prompt, text(r.get("name"))?, Some(ref_type)),
                    "ref/resource" => (Kind::Resource, text(r.get("uri"))?, Some(ref_type)),
                    _ => return None,
                }
            }
            _ => return None,
        };
        Some(Named {
            kind,
            exposed,
            ref_type,
        })
    }

    /// The word for its kind in messages.
    pub(super) fn kind_word(&self) -> &'static str {
        match self.kind {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::Resource => "resource",
        }
    }
}

impl Virtual<'_> {
    /// The member a call naming `named` goes to and its own name there, counted as routed; a
    /// name no member owns is counted and is the virtual server's "unknown name".
    pub(super) async fn member_for(
        &self,
        named: &Named,
        body: &[u8],
    ) -> Result<(usize, String), GatewayError> {
        let Some((member, own)) = self.resolve(named, body).await else {
            self.count("-", "unknown-name");
            let server = &self.members.server.name;
            return Err(GatewayError::unknown_name(
                server,
                named.kind_word(),
                &named.exposed,
            ));
        };
        self.count(self.member_name(member), "routed");
        Ok((member, own))
    }

    /// The member and its own name behind `named`, looking in the members' lists when the
    /// map cannot tell. A resource URI goes to a member only when its filters admit every
    /// form the member may read the URI as (`resources::uri_admitted`).
    pub(super) async fn resolve(&self, named: &Named, body: &[u8]) -> Option<(usize, String)> {
        let found = self.resolve_any(named, body).await?;
        let member = &self.members.server.members[found.0].names;
        (named.kind != Kind::Resource || super::resources::uri_admitted(member, &named.exposed))
            .then_some(found)
    }

    async fn resolve_any(&self, named: &Named, body: &[u8]) -> Option<(usize, String)> {
        let map = self.names();
        let resolve = || crate::sync::read(&map).resolve(named.kind, &named.exposed);
        match resolve() {
            Resolved::Member(i, own) => return Some((i, own)),
            Resolved::Unknown if named.kind != Kind::Resource => return None,
            Resolved::Unknown | Resolved::NeedLists => {}
        }
        // every list was read lately and did not name it: unknown, without asking again
        let looked_up = crate::sync::read(&map).looked_up_lately(named.kind);
        if looked_up && named.kind != Kind::Resource {
            return None;
        }
        // the lookups carry the request's `_meta` (its era's envelope): read only now
        let msg: Value = serde_json::from_slice(body).ok()?;
        let msg = &msg;
        let list = match named.kind {
            Kind::Tool => List::Tools,
            Kind::Prompt => List::Prompts,
            Kind::Resource => List::Resources,
        };
        if !looked_up {
            self.learn(list, msg).await;
        }
        if let Resolved::Member(i, own) = resolve() {
            return Some((i, own));
        }
        if named.kind != Kind::Resource {
            return None;
        }
        // a URI no list named: the first member (config order) with a matching template whose
        // filters admit the URI itself (a template is no way around an excluded or renamed URI)
        let templates = self.templates(msg).await;
        self.template_owner(&templates, &named.exposed, template_matches)
    }
}

/// A member's list `result`, or why there is none.
pub(super) type MemberResult = Result<Map<String, Value>, &'static str>;

impl Virtual<'_> {
    /// The tools of member `i` as its lists' pool and upstream path know them
    /// (`upstream::tool_headers`): where its `tools/list` goes, which is where its lists
    /// teach them.
    fn member_tools(
        &self,
        i: usize,
    ) -> Option<std::sync::Arc<crate::upstream::tool_headers::PathTools>> {
        let route = self.members.routes.get(i)?;
        let pool = self
            .state
            .pool(route.pool_for(Some("tools/list"), None))
            .ok()?;
        let path = route.upstream_path(self.parent.path());
        Some(pool.tool_headers.at(&path))
    }

    /// Learns the tools of the members' `tools/list` answers (`answers`: each member asked
    /// and its result), under their own names.
    pub(super) fn learn_tool_headers(&self, answers: &[(usize, MemberResult)]) {
        for (i, answer) in answers {
            let (Ok(result), Some(tools)) = (answer, self.member_tools(*i)) else {
                continue;
            };
            if let Some(listed) = result.get("tools") {
                tools.learn(listed);
            }
        }
    }

    /// The `Mcp-Param-*` headers (name, wire value) of a call (`body`, of `method`) routed to
    /// member `i` as its tool `own`: the arguments the member's schema marks, mirrored from
    /// the call's (a rename changes the name, never the arguments); none but for a
    /// `tools/call` with arguments. A tool the member's path is not known to list is looked
    /// up in the members' lists first (at most once per `tool_headers::RELIST`).
    pub(super) async fn param_headers(
        &self,
        i: usize,
        own: &str,
        method: &str,
        body: &[u8],
    ) -> Vec<(String, String)> {
        if method != "tools/call" {
            return Vec::new();
        }
        let Ok(msg) = serde_json::from_slice::<Value>(body) else {
            return Vec::new();
        };
        let arguments = msg.pointer("/params/arguments");
        let has_arguments = arguments
            .and_then(Value::as_object)
            .is_some_and(|a| !a.is_empty());
        let Some(tools) = self.member_tools(i).filter(|_| has_arguments) else {
            return Vec::new();
        };
        let list = || async {
            // what the lookup teaches, it teaches through `learn_tool_headers`; the calls
            // waiting for it wait no longer than the member deadline
            let lookup = self.learn(List::Tools, &msg);
            let _ = tokio::time::timeout(self.deadline, lookup).await;
            None
        };
        let known = tools.resolve(own, list).await;
        mirrored(&known, arguments)
    }
}

/// Whether `uri` is an expansion of `template` (RFC 6570 levels 1 and 2): literal parts
/// match exactly, `{x}` a non-empty run without `/`, `?` or `#`, `{+x}` and `{#x}` any
/// non-empty run.
///
/// Linear in the URI: the template is read as a small automaton (one state a literal
/// character or an expression) and the URI is run through it once, every state the prefix
/// read so far can be in kept in one set, so no input makes it try split after split (a
/// backtracking matcher took seconds on a 300-byte URI and a five-expression template). The
/// work is at most the URI's characters times the template's.
pub(super) fn template_matches(template: &str, uri: &str) -> bool {
    #[derive(Clone, Copy)]
    enum Step {
        Char(char),
        Var { reserved: bool },
    }
    let mut steps = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            return false;
        };
        steps.extend(rest[..open].chars().map(Step::Char));
        let expr = &rest[open + 1..open + close];
        steps.push(Step::Var {
            reserved: expr.starts_with('+') || expr.starts_with('#'),
        });
        rest = &rest[open + close + 1..];
    }
    steps.extend(rest.chars().map(Step::Char));
    let n = steps.len();
    // at[i]: the URI read so far can stop just before step i; inside[i]: it can stop inside
    // expression i, having given it at least one character
    let mut at = vec![false; n + 1];
    let mut inside = vec![false; n];
    let mut next_at = vec![false; n + 1];
    let mut next_inside = vec![false; n];
    at[0] = true;
    for c in uri.chars() {
        next_at.fill(false);
        next_inside.fill(false);
        let mut any = false;
        for (i, step) in steps.iter().enumerate() {
            let here = at[i] || (i > 0 && inside[i - 1]);
            match *step {
                Step::Char(l) => {
                    if here && l == c {
                        next_at[i + 1] = true;
                        any = true;
                    }
                }
                Step::Var { reserved } => {
                    let fits = reserved || !matches!(c, '/' | '?' | '#');
                    if fits && (here || inside[i]) {
                        next_inside[i] = true;
                        any = true;
                    }
                }
            }
        }
        if !any {
            return false;
        }
        std::mem::swap(&mut at, &mut next_at);
        std::mem::swap(&mut inside, &mut next_inside);
    }
    at[n] || (n > 0 && inside[n - 1])
}

#[cfg(test)]
mod tests {
    use super::template_matches;

    #[test]
    fn uris_match_the_templates_they_expand() {
        assert!(template_matches(
            "file:///docs/{name}",
            "file:///docs/readme"
        ));
        assert!(!template_matches("file:///docs/{name}", "file:///docs/a/b"));
        assert!(template_matches("file:///docs/{+path}", "file:///docs/a/b"));
        assert!(template_matches(
            "users://{id}/profile",
            "users://42/profile"
        ));
        assert!(!template_matches(
            "users://{id}/profile",
            "users:///profile"
        ));
        assert!(!template_matches(
            "users://{id}/profile",
            "users://42/avatar"
        ));
        assert!(template_matches("note://greeting", "note://greeting"));
        assert!(!template_matches("note://{x", "note://a"));
        assert!(template_matches("{a}{b}", "xy"));
        assert!(!template_matches("{a}{b}", "x"));
        assert!(template_matches("a{+x}b{y}c", "a/q/bbzc"));
        assert!(template_matches("", ""));
        assert!(!template_matches("", "x"));
    }

    /// The backtracking matcher it replaced, as the oracle.
    fn by_splits(template: &str, uri: &str) -> bool {
        let Some(open) = template.find('{') else {
            return template == uri;
        };
        let Some(close) = template[open..].find('}') else {
            return false;
        };
        let Some(u) = uri.strip_prefix(&template[..open]) else {
            return false;
        };
        let expr = &template[open + 1..open + close];
        let reserved = expr.starts_with('+') || expr.starts_with('#');
        let more = &template[open + close + 1..];
        let limit = u
            .find(|c: char| !reserved && matches!(c, '/' | '?' | '#'))
            .unwrap_or(u.len());
        (1..=limit).any(|n| u.is_char_boundary(n) && by_splits(more, &u[n..]))
    }

    proptest::proptest! {
        #[test]
        fn it_agrees_with_trying_every_split(
            template in "([ab/]|\\{[+]?x\\}){0,6}",
            uri in "[ab/é]{0,10}",
        ) {
            proptest::prop_assert_eq!(template_matches(&template, &uri), by_splits(&template, &uri));
        }
    }

    #[test]
    fn a_long_uri_against_many_expressions_is_answered_at_once() {
        // took seconds with the matcher that tried every split
        let template = "file:///{+a}/{+b}/{+c}/{+d}/{+e}.md";
        let uri = format!("file:///{}", "x/".repeat(64 * 1024));
        let start = std::time::Instant::now();
        assert!(!template_matches(template, &uri));
        assert!(!template_matches("{a}{b}{c}{d}{e}!", &"y".repeat(300)));
        // a generous bound (a debug build on a loaded machine): the old matcher took minutes
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
    }
}
