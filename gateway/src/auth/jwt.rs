//! JWT bearer tokens, checked on every request: the algorithm pinned by the key (never
//! `none`, never HMAC), the signature, `iss`, `aud` (RFC 8707: the token must be meant for
//! this resource), `exp`/`nbf` with a small leeway, and `sub`. A verified token is remembered
//! until it expires, so a client reusing its token costs one map lookup, not a signature check.

use super::jwks::{FetchError, KeySet};
use super::principal::Principal;
use super::refusal::Refusal;
use crate::config::JwtConfig;
use base64::Engine as _;
use dashmap::DashMap;
use jsonwebtoken::errors::ErrorKind as JwtError;
use jsonwebtoken::Validation;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Verified tokens remembered at most; past it, expired entries are dropped (and, if that is
/// not enough, all of them).
const CACHE_MAX: usize = 16_384;

/// Why a token was not accepted.
pub enum Failed {
    /// The token is refused (401).
    Refused(Refusal),
    /// The key set could not be fetched (503).
    KeysUnavailable(String),
}

impl From<Refusal> for Failed {
    fn from(r: Refusal) -> Self {
        Failed::Refused(r)
    }
}

/// Checks tokens against the configured issuer, audiences and key set.
pub struct Verifier {
    issuer: String,
    audiences: Vec<String>,
    leeway: u64,
    keys: KeySet,
    /// token → (principal, valid until, seconds since the epoch, leeway included).
    verified: DashMap<Box<str>, (Arc<Principal>, u64)>,
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Verifier {
    /// A verifier for `config`.
    pub fn new(config: &JwtConfig) -> Verifier {
        Verifier {
            issuer: config.issuer.clone(),
            audiences: config.audiences.clone(),
            leeway: config.leeway.as_secs(),
            keys: KeySet::new(config),
            verified: DashMap::new(),
        }
    }

    /// The principal of a valid token.
    pub async fn verify(&self, token: &str) -> Result<Arc<Principal>, Failed> {
        let now = now_s();
        if let Some(hit) = self.verified.get(token) {
            if now <= hit.1 {
                return Ok(hit.0.clone());
            }
        }
        let alg = header_alg(token).ok_or(Refusal::Malformed)?;
        if alg == "none" || alg.starts_with("HS") {
            return Err(Refusal::Algorithm.into());
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| Refusal::Malformed)?;
        // A token that cannot be a JWT is refused before its `kid` may trigger a key fetch.
        if !well_formed(token) {
            return Err(Refusal::Malformed.into());
        }
        let kid = header.kid.as_deref();
        let key = match self.keys.find(kid) {
            Some(key) => key,
            None => match self.keys.refresh_for(kid).await {
                Ok(Some(key)) => key,
                Ok(None) => return Err(Refusal::UnknownKey.into()),
                Err(FetchError::Unavailable(detail)) => {
                    tracing::warn!(detail, "JWKS unavailable");
                    return Err(Failed::KeysUnavailable(detail));
                }
            },
        };
        if !key.algorithms.contains(&header.alg) {
            return Err(Refusal::Algorithm.into());
        }
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        validation.set_issuer(&[self.issuer.as_str()]);
        validation.set_audience(&self.audiences);
        validation.required_spec_claims = ["exp", "iss", "aud", "sub"]
            .into_iter()
            .map(String::from)
            .collect::<HashSet<_>>();
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
            .map_err(|e| refusal(e.kind()))?;
        let claims = data.claims;
        let sub = claims
            .get("sub")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if sub.is_empty() {
            return Err(Refusal::Malformed.into());
        }
        let exp = claims.get("exp").and_then(Value::as_u64).unwrap_or(0);
        let principal = Arc::new(Principal {
            id: format!("{}|{sub}", self.issuer).into(),
            subject: sub.to_owned(),
            scopes: scopes(&claims),
            claims,
        });
        self.remember(
            token,
            principal.clone(),
            exp.saturating_add(self.leeway),
            now,
        );
        Ok(principal)
    }

    fn remember(&self, token: &str, principal: Arc<Principal>, until: u64, now: u64) {
        if self.verified.len() >= CACHE_MAX {
            self.verified.retain(|_, (_, until)| *until >= now);
            if self.verified.len() >= CACHE_MAX {
                self.verified.clear();
            }
        }
        self.verified.insert(token.into(), (principal, until));
    }
}

/// The `alg` of a token's header, read without trusting anything else in it.
fn header_alg(token: &str) -> Option<String> {
    let header = token.split('.').next()?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header.trim_end_matches('='))
        .ok()?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    Some(value.get("alg")?.as_str()?.to_owned())
}

/// Whether the claims decode to a JSON object and the signature is base64url.
fn well_formed(token: &str) -> bool {
    let engine = &base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut parts = token.split('.').skip(1);
    let (Some(claims), Some(signature)) = (parts.next(), parts.next()) else {
        return false;
    };
    let claims_ok = engine
        .decode(claims)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Map<String, Value>>(&bytes).ok())
        .is_some();
    claims_ok && !signature.is_empty() && engine.decode(signature).is_ok()
}

fn refusal(kind: &JwtError) -> Failed {
    Failed::Refused(match kind {
        JwtError::ExpiredSignature => Refusal::Expired,
        JwtError::ImmatureSignature => Refusal::NotYetValid,
        JwtError::InvalidIssuer => Refusal::WrongIssuer,
        JwtError::InvalidAudience => Refusal::WrongAudience,
        JwtError::InvalidSignature => Refusal::BadSignature,
        JwtError::InvalidAlgorithm | JwtError::InvalidAlgorithmName => Refusal::Algorithm,
        _ => Refusal::Malformed,
    })
}

/// Scopes from `scope` (space separated, RFC 8693/9068) or `scp` (a string or an array).
fn scopes(claims: &Map<String, Value>) -> Vec<String> {
    let words = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(s)), _) => words(s),
        (_, Some(Value::String(s))) => words(s),
        (_, Some(Value::Array(a))) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}
