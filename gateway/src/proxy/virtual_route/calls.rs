//! Where a call on a virtual route goes: `tools/call` and `prompts/get` by the exposed name,
//! `resources/read` by URI, `completion/complete` by its `ref`. The names map answers from
//! what the lists said and from the members' prefixes; a bare name (`prefix: never`) it has
//! not seen, or a URI no list named, is looked up in the members' lists first, and a URI
//! still unknown is matched against their resource templates (RFC 6570 level 1 and 2: an
//! expression matches a run of the URI; `{+x}` and `{#x}` may hold `/`).

use super::Virtual;
use crate::config::Kind;
use crate::federation::merge::List;
use crate::federation::names::Resolved;
use crate::sync::lock;
use serde_json::Value;

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
    /// The member and its own name behind `named`, looking in the members' lists when the
    /// map cannot tell.
    pub(super) async fn resolve(&self, named: &Named, body: &[u8]) -> Option<(usize, String)> {
        let resolve = || lock(&self.members.names).resolve(named.kind, &named.exposed);
        match resolve() {
            Resolved::Member(i, own) => return Some((i, own)),
            Resolved::Unknown if named.kind != Kind::Resource => return None,
            Resolved::Unknown | Resolved::NeedLists => {}
        }
        // the lookups carry the request's `_meta` (its era's envelope): read only now
        let msg: Value = serde_json::from_slice(body).ok()?;
        let msg = &msg;
        let list = match named.kind {
            Kind::Tool => List::Tools,
            Kind::Prompt => List::Prompts,
            Kind::Resource => List::Resources,
        };
        self.learn(list, msg).await;
        if let Resolved::Member(i, own) = resolve() {
            return Some((i, own));
        }
        if named.kind != Kind::Resource {
            return None;
        }
        // a URI no list named: the first member (config order) with a matching template
        let templates = self.templates(msg).await;
        templates
            .into_iter()
            .find(|(_, t)| template_matches(t, &named.exposed))
            .map(|(i, _)| (i, named.exposed.clone()))
    }
}

/// Whether `uri` is an expansion of `template` (RFC 6570 levels 1 and 2): literal parts
/// match exactly, `{x}` a non-empty run without `/`, `?` or `#`, `{+x}` and `{#x}` any run.
pub(super) fn template_matches(template: &str, uri: &str) -> bool {
    enum Piece<'a> {
        Literal(&'a str),
        Var { reserved: bool },
    }
    let mut pieces = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            return false;
        };
        if open > 0 {
            pieces.push(Piece::Literal(&rest[..open]));
        }
        let expr = &rest[open + 1..open + close];
        pieces.push(Piece::Var {
            reserved: expr.starts_with('+') || expr.starts_with('#'),
        });
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Literal(rest));
    }
    fn go(pieces: &[Piece<'_>], uri: &str) -> bool {
        match pieces.split_first() {
            None => uri.is_empty(),
            Some((Piece::Literal(l), more)) => uri.strip_prefix(l).is_some_and(|u| go(more, u)),
            Some((Piece::Var { reserved }, more)) => {
                let stops = |c: char| !reserved && matches!(c, '/' | '?' | '#');
                let limit = uri.find(stops).unwrap_or(uri.len());
                (1..=limit)
                    .rev()
                    .any(|n| uri.is_char_boundary(n) && go(more, &uri[n..]))
            }
        }
    }
    go(&pieces, uri)
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
    }
}
