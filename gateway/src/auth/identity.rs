//! The caller's identity as header values for a pool's backends (`identity-headers`), and the
//! header names a client must not send in their place.
//!
//! Encoding, the same for every identity header: a value is percent-encoded (`%XX` of its UTF-8
//! bytes) for `%`, `,` and every byte that is not visible ASCII or space; an array claim is its
//! elements, each encoded so, joined by `,` (so `["a,b", "admin"]` is `a%2Cb,admin`, never
//! `a,b,admin`). A value holding a control character (CR, LF, any C0 or DEL) cannot be carried
//! in a header without changing meaning: the token is refused (401 -32023, reason
//! `unrenderable-claim`), never passed on without identity headers.
//!
//! Backend frameworks map other spellings onto the same header: WSGI/CGI turn `-` and `_`
//! into `HTTP_X_MCP_SUBJECT` alike, and header names are case-insensitive; so a client header
//! whose name equals an identity header's once lowercased with `_` read as `-` is removed.

use super::principal::Principal;
use crate::config::IdentityHeaders;
use std::fmt::Write;

/// A principal value that no header can carry as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unrenderable;

/// One value, encoded (see the module header).
pub fn encode(value: &str) -> Result<String, Unrenderable> {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            c if c.is_ascii_control() => return Err(Unrenderable),
            '%' | ',' => {
                let _ = write!(out, "%{:02X}", c as u32);
            }
            c if c.is_ascii() => out.push(c),
            c => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    let _ = write!(out, "%{b:02X}");
                }
            }
        }
    }
    Ok(out)
}

/// The values of the identity headers for `principal`: `(header, value)`, a claim without a
/// string value left out.
pub fn render(
    principal: &Principal,
    identity: &IdentityHeaders,
) -> Result<Vec<(String, String)>, Unrenderable> {
    let mut out = Vec::new();
    if let Some(h) = &identity.principal {
        out.push((h.clone(), encode(&principal.id)?));
    }
    if let Some(h) = &identity.subject {
        out.push((h.clone(), encode(&principal.subject)?));
    }
    for (claim, header) in &identity.claims {
        let values = principal.claim_values(claim);
        if values.is_empty() {
            continue;
        }
        let encoded: Result<Vec<String>, _> = values.iter().map(|v| encode(v)).collect();
        out.push((header.clone(), encoded?.join(",")));
    }
    Ok(out)
}

/// Whether header `name` reads as `canonical` (a [`canonical`] name) once canonical itself,
/// without allocating.
pub fn is_canonically(name: &str, canonical: &str) -> bool {
    name.len() == canonical.len()
        && name.bytes().zip(canonical.bytes()).all(|(a, c)| {
            let a = if a == b'_' {
                b'-'
            } else {
                a.to_ascii_lowercase()
            };
            a == c
        })
}

/// Whether two header names are one to a backend framework (any case, `_` the same as `-`),
/// neither of them canonical, without allocating.
pub fn same_name(a: &str, b: &str) -> bool {
    let read = |c: u8| {
        if c == b'_' {
            b'-'
        } else {
            c.to_ascii_lowercase()
        }
    };
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| read(x) == read(y))
}

/// A header name as backend frameworks read it: lowercase, `_` the same as `-`.
pub fn canonical(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            '_' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_reads_as_its_canonical_form_in_every_spelling() {
        for name in ["X-Api-Key", "x_api_key", "X_API-KEY", "x-api-key"] {
            assert!(is_canonically(name, "x-api-key"), "{name}");
            assert_eq!(canonical(name), "x-api-key");
        }
        assert!(!is_canonically("x-api-keys", "x-api-key"));
        assert!(!is_canonically("x-api-kez", "x-api-key"));
    }

    fn principal(sub: &str, groups: serde_json::Value) -> Principal {
        let mut claims = serde_json::Map::new();
        claims.insert("groups".into(), groups);
        Principal {
            id: format!("https://idp.example.com|{sub}").into(),
            subject: sub.into(),
            scopes: vec!["tools".into()],
            claims,
        }
    }

    fn identity() -> IdentityHeaders {
        IdentityHeaders {
            principal: Some("x-mcp-principal".into()),
            subject: Some("x-mcp-subject".into()),
            claims: vec![("groups".into(), "x-mcp-groups".into())],
        }
    }

    #[test]
    fn claim_arrays_are_joined_unambiguously_and_non_ascii_is_percent_encoded() {
        let p = principal("jösé", serde_json::json!(["a,b", "admin", "50%"]));
        let out = render(&p, &identity()).unwrap();
        assert_eq!(
            out,
            vec![
                (
                    "x-mcp-principal".to_string(),
                    "https://idp.example.com|j%C3%B6s%C3%A9".to_string()
                ),
                ("x-mcp-subject".to_string(), "j%C3%B6s%C3%A9".to_string()),
                ("x-mcp-groups".to_string(), "a%2Cb,admin,50%25".to_string()),
            ]
        );
    }

    #[test]
    fn a_control_character_cannot_be_rendered() {
        assert_eq!(
            render(
                &principal("alice\r\nx-admin: 1", serde_json::json!([])),
                &identity()
            ),
            Err(Unrenderable)
        );
        let p = principal("alice", serde_json::json!(["ok", "bad\u{7f}"]));
        assert_eq!(render(&p, &identity()), Err(Unrenderable));
        assert_eq!(canonical("X_Mcp_Subject"), "x-mcp-subject");
        assert!(same_name("x_gw_key", "X-Gw-Key"));
        assert!(same_name("x-gw-key", "x_gw_key"));
        assert!(!same_name("x-gw-keys", "x-gw-key"));
        assert!(!same_name("x-gw-kez", "x-gw-key"));
    }
}
