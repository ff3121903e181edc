//! Validation of `routes[i].auth` and `routes[i].authz` (the types are `auth.rs`'s): the
//! route's requirement, each rule's globs compiled, every problem listed with its key path.

use super::auth::{AuthzRule, FileAuthzRule, FileRequire, Require, RouteAuth};
use super::problems::Problems;

/// Validates `routes[i].auth` and `routes[i].authz`.
pub(super) fn route_auth(
    p: &mut Problems,
    at: &str,
    (auth, authz): (Option<&str>, &[FileAuthzRule]),
    auth_on: bool,
) -> (RouteAuth, Vec<AuthzRule>) {
    let mode = auth_mode(p, at, auth, auth_on);
    let rules: Vec<AuthzRule> = authz
        .iter()
        .enumerate()
        .filter_map(|(j, r)| authz_rule(p, &format!("{at}.authz[{j}]"), r))
        .collect();
    if !rules.is_empty() && mode == RouteAuth::None {
        p.add(
            format!("{at}.authz"),
            "rules need a caller: set auth: required",
        );
    }
    (mode, rules)
}

/// `auth`: required by default when the top-level `auth` section is on, which `required` needs.
fn auth_mode(p: &mut Problems, at: &str, auth: Option<&str>, auth_on: bool) -> RouteAuth {
    match auth {
        None if auth_on => RouteAuth::Required,
        None | Some("none") => RouteAuth::None,
        Some("required") => {
            if !auth_on {
                p.add(
                    format!("{at}.auth"),
                    "`required` needs the top-level auth section",
                );
            }
            RouteAuth::Required
        }
        Some(other) => {
            p.add(
                format!("{at}.auth"),
                format!("unknown `{other}` (required, none)"),
            );
            RouteAuth::None
        }
    }
}

/// One `authz` rule (at `rat`): `None` when a glob of its match does not compile or its
/// requirement is malformed.
fn authz_rule(p: &mut Problems, rat: &str, r: &FileAuthzRule) -> Option<AuthzRule> {
    p.unknown(rat, &r.unknown, "match, require");
    let m = &r.matches;
    p.unknown(&format!("{rat}.match"), &m.unknown, "method, name");
    let mut compile = |field: &str, glob: &Option<String>| {
        let glob = glob.as_deref()?;
        p.pattern(format!("{rat}.match.{field}"), glob)
    };
    let (method, name) = (compile("method", &m.method), compile("name", &m.name));
    if (m.method.is_some() && method.is_none()) || (m.name.is_some() && name.is_none()) {
        return None;
    }
    let require = require(p, rat, r.require.as_ref())?;
    Some(AuthzRule {
        method,
        name,
        require,
    })
}

/// A rule's `require`: a scope, or a claim with the values any of which it may have.
fn require(p: &mut Problems, rat: &str, require: Option<&FileRequire>) -> Option<Require> {
    match require {
        Some(FileRequire {
            scope: Some(s),
            claim: None,
            unknown,
            ..
        }) => {
            p.unknown(&format!("{rat}.require"), unknown, "scope, claim, any-of");
            Some(Require::Scope(s.clone()))
        }
        Some(FileRequire {
            scope: None,
            claim: Some(c),
            any_of,
            unknown,
        }) if !any_of.is_empty() => {
            p.unknown(&format!("{rat}.require"), unknown, "scope, claim, any-of");
            Some(Require::Claim {
                name: c.clone(),
                any_of: any_of.clone(),
            })
        }
        _ => {
            p.add(
                format!("{rat}.require"),
                "give {scope: S} or {claim: NAME, any-of: [VALUES]}",
            );
            None
        }
    }
}
