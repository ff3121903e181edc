//! Whom a request is made for ([`Caller`]): the principal the auth step found and the
//! credential headers it took off the client's request. A request the gateway builds on its own
//! for a client's (a session's re-initialization on another pod, a bridged backend session's
//! `initialize`, a replayed setting) is made for that client's caller: a pool that exchanges
//! the caller's token (`upstream-auth.token-exchange`) reads the caller from the request's head,
//! and identity headers render its principal. The caller is handed down as a parameter from the
//! client request to the head built for it, never looked up from the task that runs it.

use super::Principal;
use std::sync::Arc;

/// The credential headers removed from an authenticated request (kept in its head's
/// extensions, never sent to a backend): a retry of an `input_required` call forwarded to the
/// replica that holds it carries them again, so that replica authenticates the client itself.
#[derive(Clone, Default)]
pub struct Credentials(pub Vec<(http::HeaderName, http::HeaderValue)>);

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|(n, _)| n.as_str()).collect();
        write!(f, "Credentials({names:?}, ***)")
    }
}

/// Whom a request is made for; [`Caller::default`] is nobody (a route without `auth`, or a
/// request of the gateway's own for no client, such as a health probe).
#[derive(Clone, Default, Debug)]
pub struct Caller {
    principal: Option<Arc<Principal>>,
    credentials: Option<Credentials>,
}

impl Caller {
    /// The caller of a client request, from its head's extensions (where the auth step left
    /// the principal and the credentials it removed).
    pub fn of(extensions: &http::Extensions) -> Caller {
        Caller {
            principal: extensions.get::<Arc<Principal>>().cloned(),
            credentials: extensions.get::<Credentials>().cloned(),
        }
    }

    /// The authenticated principal, if any.
    pub fn principal(&self) -> Option<&Arc<Principal>> {
        self.principal.as_ref()
    }

    /// Marks a head's extensions as a request made for this caller (what [`Caller::of`]
    /// reads back).
    pub fn mark(&self, extensions: &mut http::Extensions) {
        if let Some(p) = &self.principal {
            extensions.insert(p.clone());
        }
        if let Some(c) = &self.credentials {
            extensions.insert(c.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_marked_on_a_head_is_read_back_and_nobody_marks_nothing() {
        let principal = Arc::new(Principal {
            id: "key:k".into(),
            subject: "k".into(),
            scopes: Vec::new(),
            claims: serde_json::Map::new(),
        });
        let credentials = Credentials(vec![(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_static("Bearer t"),
        )]);
        let mut client = http::Extensions::new();
        client.insert(principal.clone());
        client.insert(credentials);
        let caller = Caller::of(&client);
        let mut own = http::Extensions::new();
        caller.mark(&mut own);
        let back = Caller::of(&own);
        assert_eq!(back.principal().map(|p| &*p.id), Some("key:k"));
        assert_eq!(back.credentials.map(|c| c.0.len()), Some(1));
        let mut none = http::Extensions::new();
        Caller::default().mark(&mut none);
        assert!(none.is_empty());
    }
}
