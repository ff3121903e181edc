//! Who may call: the gateway as an OAuth 2.1 resource server (JWT bearer tokens checked on
//! every request against a JWKS, `jwt.rs` and `jwks.rs`), API keys (`apikeys.rs`), the
//! protected-resource metadata document (RFC 9728, `metadata.rs`), authorization rules per
//! route and the filtering of list answers (`authz.rs`). The identity headers sent to backends
//! instead of the client's token are rendered by `identity.rs` and set by
//! `upstream/request.rs`. No pingora types here.
//!
//! A caller is a [`Principal`]: `issuer|subject` for a token, `key:NAME` for an API key.
//! Sessions are bound to it, per-client limits count by it, and rules decide on its scopes
//! and claims.

mod apikeys;
pub mod authz;
mod caller;
pub mod identity;
mod jwks;
mod jwt;
pub mod metadata;
mod principal;
mod refusal;
pub mod resource_uri;

use crate::config::AuthConfig;
use crate::error::GatewayError;
use std::sync::Arc;

pub use authz::{Denied, RouteGuard};
pub use caller::{Caller, Credentials};
pub use principal::Principal;
pub use refusal::Refusal;

/// Longest credential looked at; longer ones are refused unread (an 8 KiB+ header is no token
/// this gateway issued keys for).
pub const MAX_CREDENTIAL_BYTES: usize = 8 * 1024;

/// The compiled `auth` section.
pub struct Auth {
    metadata: metadata::Metadata,
    jwt: Option<jwt::Verifier>,
    keys: Option<apikeys::ApiKeys>,
}

impl Auth {
    /// Compiles `auth`; a JWKS file and the API key file are read now (and again when they
    /// change), a JWKS URL at the first token.
    pub fn new(config: &AuthConfig) -> Auth {
        Auth {
            metadata: metadata::Metadata::new(config),
            jwt: config.jwt.as_ref().map(jwt::Verifier::new),
            keys: config.api_keys.as_ref().map(apikeys::ApiKeys::new),
        }
    }

    /// The protected-resource metadata document, when `path` is one of its well-known paths.
    pub fn metadata_for(&self, path: &str) -> Option<bytes::Bytes> {
        self.metadata.document_for(path)
    }

    /// The header carrying an API key besides `Authorization`, when API keys are on.
    pub fn api_key_header(&self) -> Option<&http::HeaderName> {
        self.keys.as_ref().map(|k| k.header())
    }

    /// The 401 answer for a refused (or missing) credential.
    pub fn unauthorized(&self, why: Refusal) -> GatewayError {
        GatewayError::unauthorized(why.as_str(), &self.metadata.url)
    }

    /// The 403 answer for a principal without `scope` (or a claim) a rule requires.
    pub fn forbidden(&self, scope: Option<&str>) -> GatewayError {
        GatewayError::forbidden(scope, &self.metadata.url)
    }

    /// Authenticates the request's credential: `Authorization: Bearer` (a JWT, or an API key
    /// when it is not one) or the API key header.
    pub async fn authenticate(
        &self,
        headers: &http::HeaderMap,
    ) -> Result<Arc<Principal>, GatewayError> {
        let bearer = headers
            .get(http::header::AUTHORIZATION)
            .map(|v| bearer_token(v.as_bytes()));
        let key_header = self
            .keys
            .as_ref()
            .and_then(|k| headers.get(k.header()))
            .map(|v| v.as_bytes());
        let credential: &[u8] = match (bearer, key_header) {
            (Some(Some(token)), _) => token,
            (Some(None), _) => return Err(self.unauthorized(Refusal::Malformed)),
            (None, Some(key)) => {
                return self.api_key(key);
            }
            (None, None) => return Err(self.unauthorized(Refusal::Missing)),
        };
        if credential.len() > MAX_CREDENTIAL_BYTES {
            return Err(self.unauthorized(Refusal::Malformed));
        }
        let looks_like_jwt = credential.iter().filter(|b| **b == b'.').count() == 2;
        match (&self.jwt, &self.keys) {
            (Some(jwt), _) if looks_like_jwt => {
                let token = std::str::from_utf8(credential)
                    .map_err(|_| self.unauthorized(Refusal::Malformed))?;
                jwt.verify(token).await.map_err(|e| match e {
                    jwt::Failed::Refused(why) => self.unauthorized(why),
                    jwt::Failed::KeysUnavailable(detail) => GatewayError::auth_unavailable(&detail),
                })
            }
            (_, Some(_)) => self.api_key(credential),
            (Some(_), None) => Err(self.unauthorized(Refusal::Malformed)),
            (None, None) => Err(self.unauthorized(Refusal::Missing)),
        }
    }

    fn api_key(&self, key: &[u8]) -> Result<Arc<Principal>, GatewayError> {
        if key.len() > MAX_CREDENTIAL_BYTES {
            return Err(self.unauthorized(Refusal::Malformed));
        }
        self.keys
            .as_ref()
            .and_then(|k| k.lookup(key))
            .ok_or_else(|| self.unauthorized(Refusal::UnknownApiKey))
    }
}

/// The token of an `Authorization: Bearer <token>` value; `None` when the value is another
/// scheme or empty.
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at(value.iter().position(|b| *b == b' ')?);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let token = rest.trim_ascii();
    (!token.is_empty()).then_some(token)
}

#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;
