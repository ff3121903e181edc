//! Which member a resource URI is: a member's resource filters decide on every form the
//! member may read a URI as (`auth::resource_uri::forms`, as `authz` does), on calls and on
//! its `resources/list`; a URI no list names goes to the first member with a template that
//! expands to it, and a later member's template expanding to it too is a conflict logged once.

use super::request::Virtual;
use crate::config::{Kind, Member};
use crate::federation::merge::List;
use serde_json::{Map, Value};

impl Virtual<'_> {
    /// The member a URI no list names goes to, and its own URI there: the first (config
    /// order) with one of `templates` that expands to the URI and whose filters admit the URI
    /// itself. A later member with a template expanding to it too is refused the URI: that
    /// conflict (a catch-all template such as `{+uri}` listed first takes every URI of the
    /// members after it) is logged at warn, once per pair of templates. `expands(template,
    /// uri)` says whether a template expands to a URI (`calls.rs`'s matcher).
    pub(super) fn template_owner(
        &self,
        templates: &[(usize, String)],
        uri: &str,
        expands: fn(&str, &str) -> bool,
    ) -> Option<(usize, String)> {
        let members = &self.members.server.members;
        let mut expanding = templates.iter().filter_map(|(i, t)| {
            let own = members[*i].names.own(Kind::Resource, uri)?;
            expands(t, &own).then_some((*i, t, own))
        });
        let (owner, template, own) = expanding.next()?;
        for (other, theirs, _) in expanding.filter(|(i, _, _)| *i != owner) {
            let conflict = format!("{owner} {template} {other} {theirs}");
            if self.members.names.first_warning(conflict) {
                tracing::warn!(
                    route = %self.route.label,
                    member = self.member_name(owner),
                    template = %template,
                    other = self.member_name(other),
                    other_template = %theirs,
                    uri,
                    "a virtual server's member listed first takes resource URIs a later member's template expands to too (resource URIs are not prefixed; give the first member `resources.include`)"
                );
            }
        }
        Some((owner, own))
    }
}

/// Whether `member`'s resource filters admit `uri` under every form a backend may read it as
/// (`auth::resource_uri::forms`, what `authz` decides on: as sent, WHATWG-parsed, each
/// percent-decoded once): `note://privat%65` is `note://private` to an mcp 2.3.0 template,
/// which unquotes its parameters, so an `exclude: ["note://private"]` (or a rename of it)
/// refuses it too. A URI that cannot be decided (a control character, a decoding that is not
/// UTF-8, too long) is admitted by no member.
pub(super) fn uri_admitted(member: &Member, uri: &str) -> bool {
    crate::auth::resource_uri::forms(uri).is_ok_and(|forms| {
        forms
            .iter()
            .all(|f| member.own(Kind::Resource, f).is_some())
    })
}

/// Whether `member`'s resource filters admit its own listed URI `own` under every form a
/// backend may read it as ([`uri_admitted`], for a URI as the member lists it): each form kept
/// by `include` and `exclude`, and none but `own` itself renamed away.
fn own_uri_admitted(member: &Member, own: &str) -> bool {
    let filter = member.filter(Kind::Resource);
    crate::auth::resource_uri::forms(own).is_ok_and(|forms| {
        forms
            .iter()
            .all(|f| filter.keeps(f) && (f == own || !filter.rename.contains_key(f.as_ref())))
    })
}

/// `result` of `member`'s `resources/list` without the URIs its filters do not admit
/// in every form ([`own_uri_admitted`]); any other list as it is.
pub(super) fn admitted(
    list: List,
    member: &Member,
    mut result: Map<String, Value>,
) -> Map<String, Value> {
    if list != List::Resources {
        return result;
    }
    if let Some(Value::Array(items)) = result.get_mut(list.key()) {
        items.retain(|item| {
            let uri = item.get("uri").and_then(Value::as_str);
            uri.is_none_or(|uri| own_uri_admitted(member, uri))
        });
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Filter, Pattern, Prefix};

    /// A member whose resources exclude `note://private` and rename `note://ada` to
    /// `note://lovelace`.
    fn notes() -> Member {
        Member {
            name: "n".into(),
            prefix: Prefix::Never,
            tools: Filter::default(),
            prompts: Filter::default(),
            resources: Filter {
                exclude: vec![Pattern::new("note://private").unwrap()],
                rename: [("note://ada".to_owned(), "note://lovelace".to_owned())].into(),
                ..Filter::default()
            },
        }
    }

    #[test]
    fn a_uri_is_admitted_only_when_every_form_of_it_is() {
        let m = notes();
        for refused in [
            "note://private",
            "note://privat%65",
            "note://%70rivate",
            "note://%70%72%69%76%61%74%65",
            "note://ada",
            "note://%61da",
            "note://x%0a",
            "note://%ff",
        ] {
            assert!(!uri_admitted(&m, refused), "{refused}");
        }
        for admitted in ["note://public", "note://publi%63", "note://lovelace"] {
            assert!(uri_admitted(&m, admitted), "{admitted}");
        }
    }

    #[test]
    fn a_listed_uri_whose_decoded_form_is_excluded_or_renamed_away_is_left_out() {
        let m = notes();
        let result = serde_json::json!({"resources": [
            {"uri": "note://public"},
            {"uri": "note://privat%65"},
            {"uri": "note://%61da"},
            {"uri": "note://ada"},
        ]});
        let Value::Object(result) = result else {
            unreachable!()
        };
        let kept = admitted(List::Resources, &m, result);
        let uris: Vec<&str> = kept["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["uri"].as_str())
            .collect();
        // `note://ada` itself is the member's own URI, exposed renamed
        assert_eq!(uris, ["note://public", "note://ada"]);
    }
}
