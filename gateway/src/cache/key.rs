//! What a cached result depends on, as one key: the route (and member), the backends that
//! answer it (the pool's [`signature`](crate::upstream::Pool::signature): its members and
//! their eras), the method, the request's `params` except `_meta`, the protocol version and
//! the client capabilities the request declared (a server may answer by them: HTTP's `Vary`).
//! `params`' members are taken in name order, each value as its text, so two requests that
//! differ only in the order of their params or the spacing between them share a key. A private
//! result's key adds the authorization context: the digest of the credential the caller
//! presented, so a new token is a new context.

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
}

/// Where a result comes from: the route, the member of a virtual route (else empty), and the
/// signature of the backends that answer it.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The route's label.
    pub route: &'a str,
    /// The member's name on a virtual route, else empty.
    pub member: &'a str,
    /// The answering pool's signature (a merged list's: every member's).
    pub backends: u64,
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
    let meta: Members<'_> = match params.get("_meta") {
        Some(meta) => serde_json::from_str(meta.get()).unwrap_or_default(),
        None => Members::new(),
    };
    let mut h = Sha256::new();
    let mut part = |text: &str| {
        h.update((text.len() as u64).to_be_bytes());
        h.update(text.as_bytes());
    };
    for text in [source.route, source.member, method] {
        part(text);
    }
    for (name, value) in params.iter().filter(|(name, _)| **name != "_meta") {
        part(name);
        part(value.get());
    }
    // the end of the params, so that no member can pass for a `_meta` one
    part("\u{0}");
    for name in VARY {
        part(meta.get(name).map_or("", |v| v.get()));
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

/// The authorization context of a caller that presented these credential header values (in
/// the order given); `None` without one: such a caller has no private cache.
pub fn context<'a>(credentials: impl IntoIterator<Item = &'a [u8]>) -> Option<Key> {
    let mut h = Sha256::new();
    let mut any = false;
    for value in credentials {
        any = true;
        h.update((value.len() as u64).to_be_bytes());
        h.update(value);
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
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c","x":1,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":5}}}"#,
        );
        let b = key(
            "/mcp",
            "tools/list",
            r#"{"id":"other","method":"tools/list","jsonrpc":"2.0","params":{ "x" : 1, "cursor":"c","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        );
        assert_eq!(a, b);
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
        let version = base.replace("2026-07-28", "2026-09-01");
        assert_ne!(k, key("/mcp", "tools/list", &version), "protocol version");
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
    }

    #[test]
    fn a_retry_has_no_key_and_contexts_are_apart() {
        let retry =
            r#"{"id":1,"method":"resources/read","params":{"uri":"a://b","requestState":"s"}}"#;
        assert_eq!(key("/mcp", "resources/read", retry), Keyed::Retry);
        let answers = r#"{"id":1,"method":"resources/read","params":{"inputResponses":{}}}"#;
        assert_eq!(key("/mcp", "resources/read", answers), Keyed::Retry);
        assert_eq!(key("/mcp", "tools/list", "[1]"), Keyed::Unreadable);
        let alice = context([b"Bearer a".as_slice()]).unwrap();
        let alice_renewed = context([b"Bearer a2".as_slice()]).unwrap();
        assert_ne!(alice, alice_renewed, "a new token is a new context");
        assert_eq!(context(std::iter::empty()), None);
        let base = [0u8; 32];
        assert_ne!(private(&base, &alice), private(&base, &alice_renewed));
        assert_ne!(private(&base, &alice), base);
    }
}
