//! What `mcp-gateway validate` tells an operator about a valid config whose meaning changed
//! (issue 48): nothing to fix, but something a config written before behaves differently
//! with, each a sentence with the key it concerns.

use super::{Config, Kind, NameMatch, PathMatch, Prefix, RouteAuth};

/// The notices for `config`, in route order.
pub fn notices(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    for (i, route) in config.routes.iter().enumerate() {
        let path = match &route.path {
            PathMatch::Exact(p) | PathMatch::Prefix(p) => p.as_str(),
        };
        let at = format!("routes[{i}] ({path})");
        if config.auth.is_some() && route.auth == RouteAuth::None {
            out.push(format!(
                "{at}: `auth: none` on a gateway with `auth`: the client's Authorization and API key headers are not forwarded to its backends (a credential good on the protected routes never reaches a public backend); give its pool `upstream-auth` if its backends need one"
            ));
        }
        let Some(server) = &route.virtual_server else {
            continue;
        };
        let members: Vec<_> = server.members.iter().map(|m| &m.names).collect();
        for (j, m) in members.iter().enumerate() {
            let filtered = [Kind::Tool, Kind::Prompt, Kind::Resource].iter().any(|k| {
                let f = m.filter(*k);
                !f.include.is_empty() || !f.exclude.is_empty() || !f.rename.is_empty()
            });
            if route.name_match == NameMatch::Folded && filtered {
                out.push(format!(
                    "{at}.members[{j}] ({}): with `name-match: folded` its include, exclude and rename read folded names, as authz does (`ADMIN_reset` is excluded by `admin_*`)",
                    m.name
                ));
            }
            let prefixed: Vec<&str> = members
                .iter()
                .filter_map(|o| match &o.prefix {
                    Prefix::Literal(p) => Some(p.as_str()),
                    Prefix::Never => None,
                })
                .collect();
            let later: Vec<String> = members[j + 1..]
                .iter()
                .map(|o| format!("`{}`", o.name))
                .collect();
            if m.resources.include.is_empty() && !later.is_empty() {
                out.push(format!(
                    "{at}.members[{j}] ({}): resource URIs are not prefixed: a URI it lists or one of its templates expands to (a catch-all such as `{{+uri}}` expands to every URI) is its, not a later member's ({}), though they serve it too; give it `resources.include` to leave the later members theirs",
                    m.name,
                    later.join(", ")
                ));
            }
            if m.prefix == Prefix::Never && !prefixed.is_empty() {
                out.push(format!(
                    "{at}.members[{j}] ({}): `prefix: never`: its tools and prompts whose names start with another member's prefix ({}) are left out of its lists and never routed to it",
                    m.name,
                    prefixed
                        .iter()
                        .map(|p| format!("`{p}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn configs_whose_meaning_changed_are_told() {
        let yaml = "pools:\n  p: { backends: [127.0.0.1:1] }\n  q: { backends: [127.0.0.1:2] }\n\
            routes:\n  - { path: /open, pool: p, mode: stateless }\n  - path: /hub\n    mode: virtual\n    name-match: folded\n    members:\n      - { name: a, pool: p, prefix: never }\n      - { name: b, pool: q, tools: { exclude: [\"admin_*\"] } }\n";
        let config = super::super::parse(yaml).unwrap();
        let said = super::notices(&config);
        assert_eq!(said.len(), 3, "{said:#?}");
        assert!(
            said[0].contains("members[0] (a)")
                && said[0].contains("resource URIs are not prefixed")
                && said[0].contains("(`b`)"),
            "{}",
            said[0]
        );
        assert!(
            said[1].contains("members[0] (a)") && said[1].contains("`b__`"),
            "{}",
            said[1]
        );
        assert!(
            said[2].contains("members[1] (b)") && said[2].contains("folded"),
            "{}",
            said[2]
        );
        // with `auth`, a public route is told too
        let keys = std::env::temp_dir().join(format!("mcpgw-notices-{}.txt", std::process::id()));
        std::fs::write(&keys, format!("{} k tools\n", "0".repeat(64))).unwrap();
        let with_auth = format!(
            "auth:\n  resource: https://mcp.example.com/mcp\n  authorization-servers: [https://idp.example.com]\n  api-keys: {{ file: {} }}\n{}",
            keys.display(),
            yaml.replace("mode: stateless }", "mode: stateless, auth: none }")
        );
        let config = super::super::parse(&with_auth).unwrap();
        let _ = std::fs::remove_file(&keys);
        let said = super::notices(&config);
        assert!(
            said.iter()
                .any(|s| s.starts_with("routes[0] (/open)") && s.contains("auth: none")),
            "{said:#?}"
        );
    }

    #[test]
    fn a_member_listed_first_without_a_resource_include_is_told_it_takes_later_members_uris() {
        let yaml = "pools:\n  p: { backends: [127.0.0.1:1] }\n  q: { backends: [127.0.0.1:2] }\n\
            routes:\n  - path: /hub\n    mode: virtual\n    members:\n      - { name: a, pool: p }\n      - { name: b, pool: q }\n      - { name: c, pool: q }\n";
        let said = super::notices(&super::super::parse(yaml).unwrap());
        assert_eq!(said.len(), 2, "{said:#?}");
        assert!(
            said[0].starts_with("routes[0] (/hub).members[0] (a)"),
            "{}",
            said[0]
        );
        assert!(said[0].contains("(`b`, `c`)"), "{}", said[0]);
        assert!(
            said[1].starts_with("routes[0] (/hub).members[1] (b)"),
            "{}",
            said[1]
        );
        assert!(said[1].contains("(`c`)"), "{}", said[1]);
        // a member kept to its own URIs is not told
        let kept = yaml.replace(
            "{ name: a, pool: p }",
            "{ name: a, pool: p, resources: { include: [\"a://*\"] } }",
        );
        let said = super::notices(&super::super::parse(&kept).unwrap());
        assert_eq!(said.len(), 1, "{said:#?}");
        assert!(said[0].contains("members[1] (b)"), "{}", said[0]);
    }
}
