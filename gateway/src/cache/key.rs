//! What a cached result depends on, as one key: the route (and member), what of the request's
//! head reaches the backend and shapes the answer ([`head`]: the path and query sent upstream,
//! the values of `cache.vary-headers`, and the fingerprint of the route's config that shapes
//! answers), the backends that answer it (the pool's
//! [`signature`](crate::upstream::Pool::signature): its members, their eras, its generation and
//! the fingerprint of its config), the method, the params the method defines (`cursor`, `uri`)
//! and the protocol version and client capabilities the request declared in `_meta` (a server
//! may answer by them: HTTP's `Vary`). A request with any other param, or a protocol version
//! the gateway does not know, is not kept ([`Keyed::Unbounded`]): junk params would make a key
//! each. `params`' members are taken in name order, each value as its text, so two requests
//! that differ only in the order of their params or the spacing between them share a key. A
//! private result's key adds the authorization context: the digest of the credential the
//! caller presented, so a new token is a new context.

use super::store::Key;
use serde::Deserialize;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The `_meta` keys a result may depend on.
const VARY: [&str; 2] = [
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
];

/// The protocol versions a key may hold (a made-up one would make a key each).
const VERSIONS: [&str; 1] = [mcp_wire::era::STATELESS_SINCE];

/// A cacheable request's key, or why it has none.
#[derive(Debug, PartialEq, Eq)]
pub enum Keyed {
    /// Its key (the public part's; [`private`] for a context's).
    Key(Key),
    /// A multi round-trip retry (`inputResponses` or `requestState` in its params): its
    /// answer is for this round only.
    Retry,
    /// Not a request whose params can be read.
    Unreadable,
    /// A param the method does not define, or a protocol version the gateway does not know:
    /// each such request would be a key of its own, so none is kept.
    Unbounded,
}

/// Where a result comes from: the route, the member of a virtual route (else empty), what of
/// the request's head shapes it, and the signature of the backends that answer it.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The route's label.
    pub route: &'a str,
    /// The member's name on a virtual route, else empty.
    pub member: &'a str,
    /// The request's [`head`].
    pub head: Key,
    /// The answering pool's signature (a merged list's: every member's).
    pub backends: u64,
}

/// What of a request's head shapes its answer, as one digest: the path and query it goes
/// upstream with (`target`: a prefix route sends each tail to its own server), the route's
/// config fingerprint (`shape`: its `upstream-path`, a virtual server's members, prefixes,
/// renames and excludes), and the values of the `vary` headers (absent, or each value, in the
/// order the config names them).
pub fn head<'a>(
    target: &str,
    shape: u64,
    vary: impl IntoIterator<Item = http::header::GetAll<'a, http::HeaderValue>>,
) -> Key {
    let mut h = Sha256::new();
    h.update(b"head");
    h.update((target.len() as u64).to_be_bytes());
    h.update(target.as_bytes());
    h.update(shape.to_be_bytes());
    for values in vary {
        h.update(b"|");
        for value in values {
            h.update((value.len() as u64 + 1).to_be_bytes());
            h.update(value.as_bytes());
        }
    }
    h.finalize().into()
}

/// The params `method` defines that its result may depend on (besides `_meta`).
fn defined(method: &str) -> &'static [&'static str] {
    match method {
        "resources/read" => &["uri"],
        "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => {
            &["cursor"]
        }
        _ => &[],
    }
}

/// The message as the key reads it: its `params`, borrowed, not parsed.
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

/// An object's members by name (sorted), each value its own text, borrowed.
type Members<'a> = BTreeMap<&'a str, &'a RawValue>;

/// The key of a request with `body` for `method` from `source`. The request is read once,
/// borrowed: `params`' members sorted by name, each value as its text (`_meta` left out but for
/// the members a result may vary by), so nothing is built but the sorted list of names.
pub fn of(source: Source<'_>, method: &str, body: &[u8]) -> Keyed {
    let Ok(message) = serde_json::from_slice::<Message<'_>>(body) else {
        return Keyed::Unreadable;
    };
    let params: Members<'_> = match message.params.map(RawValue::get) {
        None | Some("null") => Members::new(),
        // (a name with an escape in it cannot be borrowed: such a request is not kept)
        Some(p) if p.starts_with('{') => match serde_json::from_str(p) {
            Ok(members) => members,
            Err(_) => return Keyed::Unreadable,
        },
        Some(_) => return Keyed::Unreadable,
    };
    if params.contains_key("inputResponses") || params.contains_key("requestState") {
        return Keyed::Retry;
    }
    let defined = defined(method);
    if (params.keys()).any(|name| *name != "_meta" && !defined.contains(name)) {
        return Keyed::Unbounded;
    }
    let meta: Members<'_> = match params.get("_meta") {
        Some(meta) => serde_json::from_str(meta.get()).unwrap_or_default(),
        None => Members::new(),
    };
    let version = meta.get(VARY[0]).map(|v| v.get());
    if version.is_some_and(|v| !VERSIONS.iter().any(|known| v == format!("\"{known}\""))) {
        return Keyed::Unbounded;
    }
    let mut h = Sha256::new();
    let mut part = |text: &[u8]| {
        h.update((text.len() as u64).to_be_bytes());
        h.update(text);
    };
    for text in [source.route, source.member, method] {
        part(text.as_bytes());
    }
    part(&source.head);
    for (name, value) in params.iter().filter(|(name, _)| **name != "_meta") {
        part(name.as_bytes());
        part(value.get().as_bytes());
    }
    // the end of the params, so that no member can pass for a `_meta` one
    part(b"\x00");
    for name in VARY {
        part(meta.get(name).map_or("", |v| v.get()).as_bytes());
    }
    h.update(source.backends.to_be_bytes());
    Keyed::Key(h.finalize().into())
}

/// The key of `base` in the authorization context `context`.
pub fn private(base: &Key, context: &Key) -> Key {
    let mut h = Sha256::new();
    h.update(b"private");
    h.update(base);
    h.update(context);
    h.finalize().into()
}

/// The authorization context of a caller that presented these credentials (the values the
/// auth step took off, in the order given) and these values of the headers that make a
/// context (`cache.context-headers`, in the config's order); `None` without any: such a
/// caller has no private cache.
pub fn context<'a, 'b>(
    credentials: impl IntoIterator<Item = &'a [u8]>,
    named: impl IntoIterator<Item = http::header::GetAll<'b, http::HeaderValue>>,
) -> Option<Key> {
    let mut h = Sha256::new();
    let mut any = false;
    // each value's length plus one, so that a 0 between the named headers parts them
    let mut value = |h: &mut Sha256, v: &[u8]| {
        any = true;
        h.update((v.len() as u64 + 1).to_be_bytes());
        h.update(v);
    };
    for v in credentials {
        value(&mut h, v);
    }
    for values in named {
        h.update(0u64.to_be_bytes());
        for v in values {
            value(&mut h, v.as_bytes());
        }
    }
    any.then(|| h.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(route: &str) -> Source<'_> {
        Source {
            route,
            member: "",
            head: head("/mcp", 1, []),
            backends: 7,
        }
    }

    fn key(route: &str, method: &str, body: &str) -> Keyed {
        of(source(route), method, body.as_bytes())
    }

    #[test]
    fn key_order_spacing_and_the_rest_of_meta_do_not_change_a_key() {
        let a = key(
            "/mcp",
            "tools/list",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":5}}}"#,
        );
        let b = key(
            "/mcp",
            "tools/list",
            r#"{"id":"other","method":"tools/list","jsonrpc":"2.0","params":{ "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}, "cursor" : "c"}}"#,
        );
        assert_eq!(a, b);
        assert!(matches!(a, Keyed::Key(_)));
    }

    #[test]
    fn what_a_result_depends_on_changes_the_key() {
        let base = r#"{"id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        let k = key("/mcp", "tools/list", base);
        assert_ne!(k, key("/other", "tools/list", base), "route");
        assert_ne!(k, key("/mcp", "prompts/list", base), "method");
        let cursor = base.replace("\"params\":{", "\"params\":{\"cursor\":\"2\",");
        assert_ne!(k, key("/mcp", "tools/list", &cursor), "params");
        let caps = base.replace(
            "clientCapabilities\":{}",
            "clientCapabilities\":{\"sampling\":{}}",
        );
        assert_ne!(k, key("/mcp", "tools/list", &caps), "declared capabilities");
        let unversioned = base.replace(
            "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",",
            "",
        );
        assert_ne!(
            k,
            key("/mcp", "tools/list", &unversioned),
            "protocol version"
        );
        let member = Source {
            member: "a",
            ..source("/mcp")
        };
        assert_ne!(k, of(member, "tools/list", base.as_bytes()), "member");
        let other_backends = Source {
            backends: 8,
            ..source("/mcp")
        };
        let other = of(other_backends, "tools/list", base.as_bytes());
        assert_ne!(k, other, "the backends that answer");
        let reloaded = Source {
            head: head("/mcp", 2, []),
            ..source("/mcp")
        };
        let other = of(reloaded, "tools/list", base.as_bytes());
        assert_ne!(k, other, "the config that shapes the answer");
    }

    #[test]
    fn the_path_and_query_sent_upstream_and_the_vary_headers_are_in_the_key() {
        let tail = |target: &str| head(target, 1, []);
        let jira = tail("/mcp/jira");
        assert_ne!(jira, tail("/mcp/github"), "a prefix route's tail");
        assert_ne!(jira, tail("/mcp/jira?toolset=admin"), "the query");
        assert_eq!(jira, tail("/mcp/jira"));
        let mut a = http::HeaderMap::new();
        a.insert("x-toolset", http::HeaderValue::from_static("read"));
        let mut b = http::HeaderMap::new();
        b.insert("x-toolset", http::HeaderValue::from_static("write"));
        let none = http::HeaderMap::new();
        let vary = |h: &http::HeaderMap| head("/mcp", 1, [h.get_all("x-toolset")]);
        assert_ne!(vary(&a), vary(&b), "a vary header's value");
        assert_ne!(vary(&a), vary(&none), "a vary header's absence");
        assert_eq!(vary(&a), vary(&a.clone()));
        assert_ne!(
            vary(&none),
            tail("/mcp"),
            "an absent vary header is still a part"
        );
    }

    #[test]
    fn a_param_the_method_does_not_define_or_a_made_up_version_has_no_key() {
        let junk = r#"{"id":1,"method":"tools/list","params":{"x":1}}"#;
        assert_eq!(key("/mcp", "tools/list", junk), Keyed::Unbounded);
        let uri = r#"{"id":1,"method":"resources/read","params":{"uri":"a://b"}}"#;
        assert!(matches!(key("/mcp", "resources/read", uri), Keyed::Key(_)));
        assert_eq!(
            key("/mcp", "tools/list", uri),
            Keyed::Unbounded,
            "no uri on a list"
        );
        let made_up = r#"{"id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}}"#;
        assert_eq!(key("/mcp", "tools/list", made_up), Keyed::Unbounded);
        let discover = r#"{"id":1,"method":"server/discover","params":{"cursor":"c"}}"#;
        assert_eq!(key("/mcp", "server/discover", discover), Keyed::Unbounded);
    }

    #[test]
    fn a_retry_has_no_key_and_contexts_are_apart() {
        let retry =
            r#"{"id":1,"method":"resources/read","params":{"uri":"a://b","requestState":"s"}}"#;
        assert_eq!(key("/mcp", "resources/read", retry), Keyed::Retry);
        let answers = r#"{"id":1,"method":"resources/read","params":{"inputResponses":{}}}"#;
        assert_eq!(key("/mcp", "resources/read", answers), Keyed::Retry);
        assert_eq!(key("/mcp", "tools/list", "[1]"), Keyed::Unreadable);
        let none = std::iter::empty::<http::header::GetAll<'_, http::HeaderValue>>;
        let alice = context([b"Bearer a".as_slice()], none()).unwrap();
        let alice_renewed = context([b"Bearer a2".as_slice()], none()).unwrap();
        assert_ne!(alice, alice_renewed, "a new token is a new context");
        assert_eq!(context(std::iter::empty(), none()), None);
        let base = [0u8; 32];
        assert_ne!(private(&base, &alice), private(&base, &alice_renewed));
        assert_ne!(private(&base, &alice), base);
    }

    #[test]
    fn the_named_headers_make_a_context_each_header_apart() {
        let mut key = http::HeaderMap::new();
        key.insert("x-api-key", http::HeaderValue::from_static("k1"));
        let mut cookie = http::HeaderMap::new();
        cookie.insert("cookie", http::HeaderValue::from_static("k1"));
        let named = |h: &http::HeaderMap| {
            let names = ["x-api-key", "cookie"];
            context(std::iter::empty(), names.map(|n| h.get_all(n)))
        };
        assert!(named(&key).is_some());
        assert_ne!(
            named(&key),
            named(&cookie),
            "the same value in another header"
        );
        assert_eq!(
            named(&http::HeaderMap::new()),
            None,
            "none of them: no context"
        );
        let mut other = http::HeaderMap::new();
        other.insert("x-api-key", http::HeaderValue::from_static("k2"));
        assert_ne!(named(&key), named(&other));
    }
}
