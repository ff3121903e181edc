//! Authorization per route: `routes[].authz` rules on the MCP method and name (globs), the first
//! matching rule decides (a scope present, or a claim holding one of some values); a request no
//! rule matches is allowed. The name decided on is always the one the backend will execute (the
//! body's, or a header the body was checked against), never a header alone.
//!
//! A resource URI is decided under every form a backend may look it up by (`resource_uri.rs`:
//! case, whitespace, dot segments, percent-encoding); it passes only when every form does, and
//! one that cannot be decided is refused.
//!
//! `tools/list`, `prompts/list`, `resources/list` and `resources/templates/list` answers are
//! filtered to what the principal may use (`tools/call`, `prompts/get`, `resources/read` of
//! each entry; a template is hidden when one of its expansions could be refused): the one
//! place where the gateway rewrites an answer body, and only on routes with rules.

use super::principal::Principal;
use super::resource_uri::{self, Undecidable};
use crate::config::{AuthzRule, Pattern, Require, RouteAuth, RouteConfig};
use bytes::Bytes;
use serde_json::Value;

/// A route's authentication requirement and rules, compiled.
#[derive(Debug)]
pub struct RouteGuard {
    /// A caller is required.
    pub required: bool,
    rules: Vec<Rule>,
}

#[derive(Debug)]
struct Rule {
    method: Option<Pattern>,
    name: Option<Pattern>,
    require: Require,
}

/// A denial: the scope the rule wanted (for `WWW-Authenticate: ... scope=`), if it wanted one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    /// The missing scope, when the rule required a scope.
    pub scope: Option<String>,
    /// Set when the resource URI could not be decided at all (then no rule was tried).
    pub undecidable: Option<Undecidable>,
}

fn one(g: &Option<Pattern>, v: Option<&str>) -> bool {
    match g {
        None => true,
        Some(g) => v.is_some_and(|v| g.is_match(v)),
    }
}

/// Whether the principal meets a rule's requirement.
fn holds(principal: Option<&Principal>, require: &Require) -> bool {
    principal.is_some_and(|p| match require {
        Require::Scope(s) => p.has_scope(s),
        Require::Claim { name, any_of } => p
            .claim_values(name)
            .iter()
            .any(|v| any_of.iter().any(|a| a == v)),
    })
}

impl RouteGuard {
    /// A route's `auth` and `authz` (their globs compiled by validation).
    pub fn new(rc: &RouteConfig) -> RouteGuard {
        let mut guard = RouteGuard::from_rules(rc.auth == RouteAuth::Required, &rc.authz);
        if rc.name_match == crate::config::NameMatch::Folded {
            // compiled folded once here; an exact route never folds a name
            for rule in &mut guard.rules {
                rule.name = rule.name.as_ref().map(Pattern::folded);
            }
        }
        guard
    }

    /// From rules.
    pub fn from_rules(required: bool, rules: &[AuthzRule]) -> RouteGuard {
        RouteGuard {
            required,
            rules: rules
                .iter()
                .map(|r| Rule {
                    method: r.method.clone(),
                    name: r.name.clone(),
                    require: r.require.clone(),
                })
                .collect(),
        }
    }

    /// Whether any rule exists (then names matter, and lists are filtered).
    pub fn has_rules(&self) -> bool {
        !self.rules.is_empty()
    }

    /// Whether `principal` may call `method` on `name`. A resource URI is decided under each
    /// of its forms (every one must pass).
    pub fn decide(
        &self,
        principal: Option<&Principal>,
        method: Option<&str>,
        name: Option<&str>,
    ) -> Result<(), Denied> {
        match (method, name) {
            (Some(m), Some(uri)) if resource_uri::names_a_uri(m) => {
                if !self.rules.iter().any(|r| one(&r.method, method)) {
                    return Ok(());
                }
                let forms = resource_uri::forms(uri).map_err(|why| Denied {
                    scope: None,
                    undecidable: Some(why),
                })?;
                forms
                    .iter()
                    .try_for_each(|form| self.decide_one(principal, method, Some(form)))
            }
            _ => self.decide_one(principal, method, name),
        }
    }

    /// Which rule [`RouteGuard::decide`] decides by, for the audit trail (it changes no
    /// decision): the index of the first rule matching `method` and `name` (a resource URI:
    /// the rule that refuses one of its forms, else the one matching its first form); `None`
    /// when no rule matches (allowed) or the URI cannot be decided.
    pub fn deciding_rule(
        &self,
        principal: Option<&Principal>,
        method: Option<&str>,
        name: Option<&str>,
    ) -> Option<usize> {
        let first = |name: Option<&str>| {
            self.rules
                .iter()
                .position(|r| one(&r.method, method) && one(&r.name, name))
        };
        match (method, name) {
            (Some(m), Some(uri)) if resource_uri::names_a_uri(m) => {
                let forms = resource_uri::forms(uri).ok()?;
                let refuses = |i: &usize| {
                    self.rules
                        .get(*i)
                        .is_some_and(|r| !holds(principal, &r.require))
                };
                let refusing = forms
                    .iter()
                    .find_map(|form| first(Some(form)).filter(refuses));
                refusing.or_else(|| forms.first().and_then(|form| first(Some(form))))
            }
            _ => first(name),
        }
    }

    /// Rule `i` as the config wrote it, e.g. `method: tools/call, name: delete_*, scope: admin`.
    pub fn rule_text(&self, i: usize) -> Option<String> {
        let rule = self.rules.get(i)?;
        let mut parts = Vec::new();
        if let Some(m) = &rule.method {
            parts.push(format!("method: {}", m.as_str()));
        }
        if let Some(n) = &rule.name {
            parts.push(format!("name: {}", n.as_str()));
        }
        parts.push(match &rule.require {
            Require::Scope(s) => format!("scope: {s}"),
            Require::Claim { name, any_of } => format!("claim: {name} in [{}]", any_of.join(", ")),
        });
        Some(parts.join(", "))
    }

    fn decide_one(
        &self,
        principal: Option<&Principal>,
        method: Option<&str>,
        name: Option<&str>,
    ) -> Result<(), Denied> {
        let Some(rule) = self
            .rules
            .iter()
            .find(|r| one(&r.method, method) && one(&r.name, name))
        else {
            return Ok(());
        };
        if holds(principal, &rule.require) {
            return Ok(());
        }
        Err(Denied {
            scope: match &rule.require {
                Require::Scope(s) => Some(s.clone()),
                Require::Claim { .. } => None,
            },
            undecidable: None,
        })
    }

    /// Whether every URI the template could expand to may be read by `principal`: no rule on
    /// `resources/read` that it fails could match one of them (rules an earlier one shadows
    /// are counted too, so a template is hidden rather than shown wrongly).
    fn template_readable(&self, principal: Option<&Principal>, template: Option<&str>) -> bool {
        let Some(template) = template else {
            return self
                .decide_one(principal, Some("resources/read"), None)
                .is_ok();
        };
        !self.rules.iter().any(|r| {
            one(&r.method, Some("resources/read"))
                && !holds(principal, &r.require)
                && r.name
                    .as_ref()
                    .is_none_or(|g| resource_uri::may_overlap(g.as_str(), template))
        })
    }

    /// Whether the answer to `method` is a list this route filters.
    pub fn filters(&self, method: Option<&str>) -> bool {
        self.has_rules() && list_kind(method).is_some()
    }

    /// Whether a request of `method` is read whole before it goes out: a list this route
    /// filters, or a `subscriptions/listen` whose filter [`RouteGuard::decide_listen`] decides.
    pub fn reads_body(&self, method: Option<&str>) -> bool {
        self.filters(method) || (self.has_rules() && method == Some("subscriptions/listen"))
    }

    /// Whether `principal` may listen to every resource URI of a `subscriptions/listen` filter
    /// (`params.notifications.resourceSubscriptions`): each is decided as a
    /// `resources/subscribe` of it (every form of it, as [`RouteGuard::decide`] does), the
    /// act a listen URI is in the 2026-07-28 era; the first one denied is the answer. Entries
    /// that are not strings name no URI. `Err` carries the denied URI's position.
    pub fn decide_listen(
        &self,
        principal: Option<&Principal>,
        listen: &Value,
    ) -> Result<(), (usize, Denied)> {
        if !self.has_rules() {
            return Ok(());
        }
        let uris = listen
            .pointer("/params/notifications/resourceSubscriptions")
            .and_then(Value::as_array);
        for (i, uri) in uris.into_iter().flatten().enumerate() {
            let Some(uri) = uri.as_str() else { continue };
            self.decide(principal, Some("resources/subscribe"), Some(uri))
                .map_err(|denied| (i, denied))?;
        }
        Ok(())
    }

    /// The answer body with the entries `principal` may not use removed (JSON, or SSE whose
    /// events are re-framed); `None` when nothing needed removing.
    pub fn filter_answer(
        &self,
        principal: Option<&Principal>,
        method: Option<&str>,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Option<Bytes> {
        let (field, call, key) = list_kind(method)?;
        let sse = mcp_wire::sse::is_event_stream(content_type);
        let mut changed = false;
        let mut out: Vec<u8> = Vec::with_capacity(body.len());
        for message in mcp_wire::sse::messages(content_type, body) {
            let mut json = message;
            if let Ok(mut v) = serde_json::from_slice::<Value>(&json) {
                if let Some(Value::Array(items)) =
                    v.get_mut("result").and_then(|r| r.get_mut(field))
                {
                    let before = items.len();
                    items.retain(|item| {
                        let name = item.get(key).and_then(Value::as_str);
                        if method == Some("resources/templates/list") {
                            return self.template_readable(principal, name);
                        }
                        self.decide(principal, Some(call), name).is_ok()
                    });
                    if items.len() != before {
                        changed = true;
                        json = serde_json::to_vec(&v).ok()?;
                    }
                }
            }
            if sse {
                out.extend_from_slice(&mcp_wire::sse::event(&json));
            } else {
                out = json;
            }
        }
        changed.then(|| Bytes::from(out))
    }
}

/// For a list method: the result field, the method that uses an entry, and the entry's key.
fn list_kind(method: Option<&str>) -> Option<(&'static str, &'static str, &'static str)> {
    match method? {
        "tools/list" => Some(("tools", "tools/call", "name")),
        "prompts/list" => Some(("prompts", "prompts/get", "name")),
        "resources/list" => Some(("resources", "resources/read", "uri")),
        "resources/templates/list" => Some(("resourceTemplates", "resources/read", "uriTemplate")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(scopes: &[&str], groups: &[&str]) -> Principal {
        let mut claims = serde_json::Map::new();
        claims.insert("groups".into(), serde_json::json!(groups));
        Principal {
            id: "idp|u".into(),
            subject: "u".into(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            claims,
        }
    }

    fn guard() -> RouteGuard {
        RouteGuard::from_rules(
            true,
            &[
                AuthzRule {
                    method: Pattern::new("tools/call").ok(),
                    name: Pattern::new("admin_*").ok(),
                    require: Require::Scope("admin".into()),
                },
                AuthzRule {
                    method: Pattern::new("prompts/get").ok(),
                    name: None,
                    require: Require::Claim {
                        name: "groups".into(),
                        any_of: vec!["writers".into(), "editors".into()],
                    },
                },
            ],
        )
    }

    #[test]
    fn the_first_matching_rule_decides_and_unmatched_calls_are_allowed() {
        let g = guard();
        let user = principal(&["tools"], &["readers"]);
        let admin = principal(&["tools", "admin"], &["editors"]);
        let denied = g.decide(Some(&user), Some("tools/call"), Some("admin_reset"));
        assert_eq!(denied.unwrap_err().scope.as_deref(), Some("admin"));
        assert!(g
            .decide(Some(&admin), Some("tools/call"), Some("admin_reset"))
            .is_ok());
        assert!(g
            .decide(Some(&user), Some("tools/call"), Some("echo"))
            .is_ok());
        assert!(g
            .decide(Some(&user), Some("prompts/get"), Some("p"))
            .is_err());
        assert!(g
            .decide(Some(&admin), Some("prompts/get"), Some("p"))
            .is_ok());
    }

    #[test]
    fn the_deciding_rule_is_the_one_decide_applies_with_its_text() {
        let g = guard();
        let user = principal(&["tools"], &["readers"]);
        let admin = principal(&["tools", "admin"], &["editors"]);
        for who in [&user, &admin] {
            let call = (Some("tools/call"), Some("admin_reset"));
            assert_eq!(g.deciding_rule(Some(who), call.0, call.1), Some(0));
            assert_eq!(
                g.deciding_rule(Some(who), Some("prompts/get"), Some("p")),
                Some(1)
            );
            assert_eq!(
                g.deciding_rule(Some(who), Some("tools/call"), Some("echo")),
                None
            );
        }
        assert_eq!(
            g.rule_text(0).as_deref(),
            Some("method: tools/call, name: admin_*, scope: admin")
        );
        assert_eq!(
            g.rule_text(1).as_deref(),
            Some("method: prompts/get, claim: groups in [writers, editors]")
        );
        assert_eq!(g.rule_text(2), None);
    }

    #[test]
    fn list_answers_lose_what_the_principal_may_not_use_in_json_and_sse() {
        let g = guard();
        let user = principal(&["tools"], &[]);
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo"},{"name":"admin_reset"}]}}"#;
        let out = g
            .filter_answer(
                Some(&user),
                Some("tools/list"),
                Some("application/json"),
                body,
            )
            .unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["result"]["tools"].as_array().unwrap().len(), 1);
        assert_eq!(v["id"], 1);
        let sse = format!(
            "event: message\r\ndata: {}\r\n\r\n",
            std::str::from_utf8(body).unwrap()
        );
        let out = g
            .filter_answer(
                Some(&user),
                Some("tools/list"),
                Some("text/event-stream"),
                sse.as_bytes(),
            )
            .unwrap();
        let text = std::str::from_utf8(&out).unwrap();
        assert!(
            text.contains("echo") && !text.contains("admin_reset"),
            "{text}"
        );
        let admin = principal(&["admin"], &[]);
        assert!(g
            .filter_answer(
                Some(&admin),
                Some("tools/list"),
                Some("application/json"),
                body
            )
            .is_none());
    }

    #[test]
    fn a_listen_filters_uris_are_decided_as_subscriptions_in_every_form() {
        let g = RouteGuard::from_rules(
            true,
            &[AuthzRule {
                method: Pattern::new("resources/*").ok(),
                name: Pattern::new("admin://*").ok(),
                require: Require::Scope("admin".into()),
            }],
        );
        let (user, admin) = (principal(&["tools"], &[]), principal(&["admin"], &[]));
        let listen = |uris: Value| {
            serde_json::json!({"method": "subscriptions/listen",
                "params": {"notifications": {"resourceSubscriptions": uris, "toolsListChanged": true}}})
        };
        let denied = g.decide_listen(
            Some(&user),
            &listen(serde_json::json!(["public://a", "ADMIN://x"])),
        );
        assert_eq!(denied.unwrap_err().0, 1);
        assert!(g
            .decide_listen(Some(&user), &listen(serde_json::json!(["public://a", 7])))
            .is_ok());
        assert!(g
            .decide_listen(Some(&admin), &listen(serde_json::json!(["admin://x"])))
            .is_ok());
        assert!(g.reads_body(Some("subscriptions/listen")));
        assert!(!RouteGuard::from_rules(true, &[]).reads_body(Some("subscriptions/listen")));
    }

    #[test]
    fn a_resource_uri_is_decided_under_every_form_and_templates_by_their_expansions() {
        let g = RouteGuard::from_rules(
            true,
            &[AuthzRule {
                method: Pattern::new("resources/*").ok(),
                name: Pattern::new("admin://*").ok(),
                require: Require::Scope("admin".into()),
            }],
        );
        let user = principal(&["tools"], &[]);
        for method in [
            "resources/read",
            "resources/subscribe",
            "resources/unsubscribe",
        ] {
            for uri in ["admin://x", "ADMIN://x", " admin://x", "%61dmin://x"] {
                let denied = g.decide(Some(&user), Some(method), Some(uri));
                assert!(denied.is_err(), "{method} {uri:?}");
            }
            let undecidable = g.decide(Some(&user), Some(method), Some("\tadmin://x"));
            assert_eq!(
                undecidable.unwrap_err().undecidable,
                Some(Undecidable::ControlCharacter)
            );
            assert!(g
                .decide(Some(&user), Some(method), Some("public://x"))
                .is_ok());
        }
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{"resourceTemplates":[{"uriTemplate":"admin://u/{id}"},{"uriTemplate":"public://{p}"}]}}"#;
        let out = g
            .filter_answer(
                Some(&user),
                Some("resources/templates/list"),
                Some("application/json"),
                body,
            )
            .unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v["result"]["resourceTemplates"].as_array().unwrap().len(),
            1
        );
        assert_eq!(
            v["result"]["resourceTemplates"][0]["uriTemplate"],
            "public://{p}"
        );
    }
}
