//! Resource URIs as a backend will look them up, so that `authz` rules on `resources/read`
//! (and `resources/subscribe`/`unsubscribe`) decide on what the backend executes, not on the
//! spelling a client chose.
//!
//! What the real SDKs do with `params.uri` before the lookup (checked against their source):
//! - Python `mcp` 1.30.0 (FastMCP): the request model types it as pydantic `AnyUrl`, which runs
//!   the WHATWG URL parser (the Rust `url` crate inside pydantic-core): surrounding C0 controls
//!   and spaces stripped, tab/CR/LF removed anywhere, the scheme (and a special scheme's host)
//!   lowercased, dot segments resolved, a default port dropped, IDNA for special schemes.
//!   Resources are keyed by that form too, so `ADMIN://secret` finds `admin://secret`.
//! - Python `mcp` 2.3.0 (MCPServer): the raw string; its URI templates `unquote` the
//!   parameters they extract (so `%34%32` reads as `42`).
//! - TypeScript SDK 1.32.2 (`McpServer`): `new URL(uri).toString()`, the same WHATWG parser.
//!
//! A URI is therefore decided under every form it may take: as sent, WHATWG-parsed, and each
//! of those percent-decoded once; it is allowed only when every form is. A URI with a control
//! character (raw or decoded), one whose decoding is not UTF-8, or one over
//! [`MAX_URI_BYTES`] cannot be decided safely and is refused (-32031, docs/errors.md).
//!
//! Routing rules read the same forms ([`routing_forms`]): a rule matches a URI when it matches
//! any of them, so `ADMIN://secret` goes where `admin://secret` goes.
//!
//! `resources/templates/list` entries are URI templates: a template is hidden when some
//! expansion of it could match a rule the caller fails ([`may_overlap`]).

use std::borrow::Cow;

/// Longest resource URI decided on; a longer one is refused.
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// Why a URI cannot be decided: `data.reason` of the -32031 answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undecidable {
    /// Longer than [`MAX_URI_BYTES`].
    TooLong,
    /// A control character (C0 or DEL), as sent or percent-encoded.
    ControlCharacter,
    /// Percent-decoding gives bytes that are not UTF-8.
    NotUtf8,
}

impl Undecidable {
    /// The `data.reason` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Undecidable::TooLong => "too-long",
            Undecidable::ControlCharacter => "control-character",
            Undecidable::NotUtf8 => "not-utf8",
        }
    }
}

/// Whether a method names a resource by URI (`params.uri`).
pub fn names_a_uri(method: &str) -> bool {
    matches!(
        method,
        "resources/read" | "resources/subscribe" | "resources/unsubscribe"
    )
}

fn has_control(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_control())
}

/// Every form under which a backend may execute `uri` (deduplicated, the raw one first).
pub fn forms(uri: &str) -> Result<Vec<Cow<'_, str>>, Undecidable> {
    if uri.len() > MAX_URI_BYTES {
        return Err(Undecidable::TooLong);
    }
    if has_control(uri) {
        return Err(Undecidable::ControlCharacter);
    }
    let mut out: Vec<Cow<'_, str>> = vec![Cow::Borrowed(uri)];
    if let Ok(parsed) = url::Url::parse(uri) {
        out.push(Cow::Owned(String::from(parsed)));
    }
    for i in 0..out.len() {
        let decoded = percent_encoding::percent_decode_str(&out[i])
            .decode_utf8()
            .map_err(|_| Undecidable::NotUtf8)?;
        if has_control(&decoded) {
            return Err(Undecidable::ControlCharacter);
        }
        out.push(Cow::Owned(decoded.into_owned()));
    }
    let mut unique: Vec<Cow<'_, str>> = Vec::with_capacity(out.len());
    for form in out {
        if !unique.contains(&form) {
            unique.push(form);
        }
    }
    Ok(unique)
}

/// The forms a rule that only picks a pool reads (`routing/`): [`forms`] when the URI can be
/// decided, else the URI as sent and WHATWG-parsed (what pydantic and `new URL` make of a
/// URI with a tab or a bad escape), so a routing rule matches the name the backend will
/// execute whichever spelling the client chose. (Authorization refuses what [`forms`]
/// cannot decide; a route only chooses where it goes.)
pub fn routing_forms(uri: &str) -> Vec<Cow<'_, str>> {
    if let Ok(forms) = forms(uri) {
        return forms;
    }
    let mut out = vec![Cow::Borrowed(uri)];
    if uri.len() <= MAX_URI_BYTES {
        if let Ok(parsed) = url::Url::parse(uri) {
            let parsed = String::from(parsed);
            if parsed != uri {
                out.push(Cow::Owned(parsed));
            }
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Lit(char),
    One,
    Any,
}

/// A rule's glob as tokens, widened where it is more than `*`, `?` and literals: a class
/// `[...]` becomes any one character, an alternation `{a,b}` any string. (Wider means a
/// template is hidden more often, never shown wrongly.)
fn glob_tokens(glob: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut chars = glob.chars();
    while let Some(c) = chars.next() {
        match c {
            '*' => {
                if out.last() != Some(&Tok::Any) {
                    out.push(Tok::Any);
                }
            }
            '?' => out.push(Tok::One),
            '[' => {
                for c in chars.by_ref() {
                    if c == ']' {
                        break;
                    }
                }
                out.push(Tok::One);
            }
            '{' => {
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                }
                out.push(Tok::Any);
            }
            '\\' => out.push(Tok::Lit(chars.next().unwrap_or('\\'))),
            c => out.push(Tok::Lit(c)),
        }
    }
    out
}

/// An RFC 6570 template as tokens: each `{expression}` any string (expansions may be
/// percent-encoded, and backends decode them).
fn template_tokens(template: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut chars = template.chars();
    while let Some(c) = chars.next() {
        if c == '{' {
            for c in chars.by_ref() {
                if c == '}' {
                    break;
                }
            }
            out.push(Tok::Any);
        } else {
            out.push(Tok::Lit(c));
        }
    }
    out
}

/// Longest pattern compared token by token; longer ones are taken to overlap.
const MAX_PATTERN: usize = 2048;

/// Whether some string matches both token patterns (a search over pairs of positions).
fn overlap(a: &[Tok], b: &[Tok]) -> bool {
    if a.len() > MAX_PATTERN || b.len() > MAX_PATTERN {
        return true;
    }
    let (n, m) = (a.len(), b.len());
    let mut seen = vec![false; (n + 1) * (m + 1)];
    let mut stack = vec![(0usize, 0usize)];
    while let Some((i, j)) = stack.pop() {
        let k = i * (m + 1) + j;
        if seen[k] {
            continue;
        }
        seen[k] = true;
        if i == n && j == m {
            return true;
        }
        match (a.get(i), b.get(j)) {
            (Some(Tok::Any), _) => {
                stack.push((i + 1, j));
                if j < m {
                    stack.push((i, j + 1));
                }
            }
            (_, Some(Tok::Any)) => {
                stack.push((i, j + 1));
                if i < n {
                    stack.push((i + 1, j));
                }
            }
            (Some(x), Some(y)) => {
                let fits = match (x, y) {
                    (Tok::Lit(p), Tok::Lit(q)) => p == q,
                    _ => true,
                };
                if fits {
                    stack.push((i + 1, j + 1));
                }
            }
            _ => {}
        }
    }
    false
}

/// Whether some URI the template `template` expands to (in any of its [`forms`], taking the
/// lowercased spelling for the normalized one) could match the glob `glob`.
pub fn may_overlap(glob: &str, template: &str) -> bool {
    let g = glob_tokens(glob);
    [template.to_owned(), template.to_ascii_lowercase()]
        .iter()
        .any(|t| overlap(&g, &template_tokens(t)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(uri: &str) -> Vec<String> {
        forms(uri)
            .unwrap()
            .into_iter()
            .map(Cow::into_owned)
            .collect()
    }

    #[test]
    fn the_forms_hold_what_pydantic_and_new_url_make_of_a_uri() {
        // Each pair measured with pydantic 2.14.4's AnyUrl (mcp 1.30.0's venv).
        for (sent, normalized) in [
            ("ADMIN://secret", "admin://secret"),
            ("aDmIn://users/42", "admin://users/42"),
            (" admin://secret", "admin://secret"),
            ("admin://secret/./x", "admin://secret/x"),
            ("admin://secret/a/../b", "admin://secret/b"),
            ("http://EXAMPLE.com:80/a", "http://example.com/a"),
        ] {
            let f = all(sent);
            assert_eq!(f[0], sent);
            assert!(f.iter().any(|x| x == normalized), "{sent}: {f:?}");
        }
        assert!(all("admin://users/%34%32")
            .iter()
            .any(|x| x == "admin://users/42"));
        assert_eq!(all("admin://secret"), vec!["admin://secret"]);
    }

    #[test]
    fn what_cannot_be_decided_is_named() {
        assert_eq!(
            forms("\tadmin://secret"),
            Err(Undecidable::ControlCharacter)
        );
        assert_eq!(
            forms("admin://se\ncret"),
            Err(Undecidable::ControlCharacter)
        );
        assert_eq!(forms("admin://a%0Ab"), Err(Undecidable::ControlCharacter));
        assert_eq!(forms("admin://a%FFb"), Err(Undecidable::NotUtf8));
        assert_eq!(
            forms(&"a".repeat(MAX_URI_BYTES + 1)),
            Err(Undecidable::TooLong)
        );
    }

    #[test]
    fn routing_reads_the_same_forms_and_the_parsed_one_of_what_authz_refuses() {
        let f = |uri: &str| -> Vec<String> {
            routing_forms(uri)
                .into_iter()
                .map(Cow::into_owned)
                .collect()
        };
        assert_eq!(f("ADMIN://secret"), all("ADMIN://secret"));
        assert_eq!(f(" admin://secret"), all(" admin://secret"));
        assert_eq!(
            f("\tadmin://secret"),
            vec!["\tadmin://secret", "admin://secret"]
        );
        assert_eq!(f("admin://a%FFb"), vec!["admin://a%FFb"]);
        let long = "a".repeat(MAX_URI_BYTES + 1);
        assert_eq!(f(&long), vec![long.clone()]);
    }

    #[test]
    fn a_template_overlaps_a_glob_when_some_expansion_matches_it() {
        assert!(may_overlap("admin://*", "admin://users/{uid}"));
        assert!(may_overlap("admin://users/4?", "admin://users/{uid}"));
        assert!(may_overlap("admin://*", "ADMIN://users/{uid}"));
        assert!(may_overlap("*secret*", "{+path}"));
        assert!(may_overlap("admin://[ab]x", "admin://{v}"));
        assert!(!may_overlap("admin://*", "public://{x}"));
        assert!(!may_overlap("admin://users/1", "admin://posts/{id}"));
        assert!(
            !may_overlap("a?", "abc{x}"),
            "a? is two characters, abc… at least three"
        );
    }
}
