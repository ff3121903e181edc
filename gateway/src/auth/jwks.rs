//! The signing keys: a JWKS read from a file or fetched from an URL, kept in memory and
//! fetched again when a token names a `kid` not in it — one fetch at a time, and at most one
//! per `refresh-min-interval-s`, so a stream of made-up `kid`s cannot turn the gateway into a
//! load generator against the identity provider. A fetch of an URL is bounded by
//! `fetch-timeout-s` (5 s): a key set that does not come in time is "unavailable" (503 -32025).
//! `jsonwebtoken` parses keys but does not fetch them; the HTTP(S) GET is the leaf `fetch.rs`'s
//! (over pingora's connector, TLS via its rustls feature), so no pingora type is used here.

use crate::config::{JwksSource, JwtConfig};
use arc_swap::ArcSwap;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Largest key set accepted.
const JWKS_LIMIT: usize = 1024 * 1024;

/// One verification key and the algorithms it may verify (pinned by the key: its `alg`, or
/// what its type and curve allow; never a symmetric algorithm).
pub struct Key {
    /// `kid`, if the key has one.
    pub kid: Option<String>,
    /// The key.
    pub key: DecodingKey,
    /// Algorithms this key verifies.
    pub algorithms: Vec<Algorithm>,
}

/// The key set and how to fetch it again.
pub struct KeySet {
    source: JwksSource,
    keys: ArcSwap<Vec<Arc<Key>>>,
    refresh: tokio::sync::Mutex<Refresh>,
    min_interval: Duration,
    fetch_timeout: Duration,
}

/// Why no key could be had.
pub enum FetchError {
    /// The source could not be read; `detail` says why.
    Unavailable(String),
}

impl KeySet {
    /// A key set from `config`; a file is read now, an URL at the first use.
    pub fn new(config: &JwtConfig) -> KeySet {
        let mut set = KeySet {
            source: config.jwks.clone(),
            keys: ArcSwap::from_pointee(Vec::new()),
            refresh: tokio::sync::Mutex::new(Refresh::default()),
            min_interval: config.refresh_min_interval,
            fetch_timeout: config.fetch_timeout,
        };
        if let JwksSource::File(path) = &set.source {
            match std::fs::read(path) {
                Ok(bytes) => {
                    set.keys.store(Arc::new(parse_jwks(&bytes)));
                    set.refresh.get_mut().loaded = true;
                }
                Err(e) => {
                    tracing::error!(file = %path.display(), error = %e, "JWKS file unreadable")
                }
            }
        }
        set
    }

    /// The key for `kid` (a token without `kid` is verified by the only key of a one-key set).
    pub fn find(&self, kid: Option<&str>) -> Option<Arc<Key>> {
        let keys = self.keys.load();
        match kid {
            Some(kid) => keys.iter().find(|k| k.kid.as_deref() == Some(kid)).cloned(),
            None if keys.len() == 1 => keys.first().cloned(),
            None => None,
        }
    }

    /// Fetches the set again for an unknown `kid`, unless another request just did (then its
    /// result is used) or the last fetch is more recent than the minimum interval. The first
    /// load (an URL is fetched at the first token) does not count against the interval; a
    /// failed fetch does, and until the interval passes an empty set answers "unavailable".
    pub async fn refresh_for(&self, kid: Option<&str>) -> Result<Option<Arc<Key>>, FetchError> {
        let mut state = self.refresh.lock().await;
        if let Some(key) = self.find(kid) {
            return Ok(Some(key));
        }
        if state
            .last
            .is_some_and(|at| at.elapsed() < self.min_interval)
        {
            return match (&state.last_error, state.loaded) {
                (Some(e), false) => Err(FetchError::Unavailable(e.clone())),
                _ => Ok(None),
            };
        }
        let fetched = match &self.source {
            JwksSource::File(path) => tokio::fs::read(path)
                .await
                .map_err(|e| format!("{}: {e}", path.display())),
            JwksSource::Url(url) => {
                match tokio::time::timeout(self.fetch_timeout, fetch(url)).await {
                    Ok(fetched) => fetched.map(|b| b.to_vec()),
                    Err(_) => Err(format!(
                        "fetching {url}: no key set within {} s (auth.jwt.jwks.fetch-timeout-s)",
                        self.fetch_timeout.as_secs()
                    )),
                }
            }
        };
        let first = !state.loaded;
        let bytes = match fetched {
            Ok(bytes) => bytes,
            Err(e) => {
                state.last = Some(Instant::now());
                state.last_error = Some(e.clone());
                return Err(FetchError::Unavailable(e));
            }
        };
        let keys = parse_jwks(&bytes);
        tracing::info!(keys = keys.len(), "JWKS loaded");
        self.keys.store(Arc::new(keys));
        state.loaded = true;
        state.last_error = None;
        state.last = if first { None } else { Some(Instant::now()) };
        Ok(self.find(kid))
    }
}

/// When the set was last fetched, and how that went.
#[derive(Default)]
struct Refresh {
    last: Option<Instant>,
    last_error: Option<String>,
    loaded: bool,
}

/// The usable keys of a JWKS document; keys this gateway cannot use (symmetric keys, unknown
/// types, encryption keys) are skipped, not fatal.
pub fn parse_jwks(bytes: &[u8]) -> Vec<Arc<Key>> {
    #[derive(serde::Deserialize)]
    struct Raw {
        keys: Vec<serde_json::Value>,
    }
    let Ok(raw) = serde_json::from_slice::<Raw>(bytes) else {
        tracing::warn!("JWKS is not a JSON key set");
        return Vec::new();
    };
    raw.keys
        .into_iter()
        .filter_map(|v| serde_json::from_value::<Jwk>(v).ok())
        .filter_map(|jwk| {
            let algorithms = algorithms_for(&jwk);
            if algorithms.is_empty() {
                return None;
            }
            let key = DecodingKey::from_jwk(&jwk).ok()?;
            Some(Arc::new(Key {
                kid: jwk.common.key_id.clone(),
                key,
                algorithms,
            }))
        })
        .collect()
}

/// What a key may verify: its own `alg` when it names an asymmetric signature algorithm,
/// otherwise what its type allows. Symmetric (`oct`) keys verify nothing: a public key set
/// must never become an HMAC secret.
fn algorithms_for(jwk: &Jwk) -> Vec<Algorithm> {
    let by_type: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => vec![
            Algorithm::RS256,
            Algorithm::RS384,
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::PS384,
            Algorithm::PS512,
        ],
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => vec![],
        },
        AlgorithmParameters::OctetKeyPair(_) => vec![Algorithm::EdDSA],
        _ => vec![],
    };
    let pinned = match jwk.common.key_algorithm {
        None => return by_type,
        Some(KeyAlgorithm::RS256) => Algorithm::RS256,
        Some(KeyAlgorithm::RS384) => Algorithm::RS384,
        Some(KeyAlgorithm::RS512) => Algorithm::RS512,
        Some(KeyAlgorithm::PS256) => Algorithm::PS256,
        Some(KeyAlgorithm::PS384) => Algorithm::PS384,
        Some(KeyAlgorithm::PS512) => Algorithm::PS512,
        Some(KeyAlgorithm::ES256) => Algorithm::ES256,
        Some(KeyAlgorithm::ES384) => Algorithm::ES384,
        Some(KeyAlgorithm::EdDSA) => Algorithm::EdDSA,
        Some(_) => return vec![],
    };
    by_type.into_iter().filter(|a| *a == pinned).collect()
}

/// GETs `url` (http or https) and returns the body of a 200 answer.
async fn fetch(url: &str) -> Result<bytes::Bytes, String> {
    let answer = crate::fetch::get(url, "application/json", JWKS_LIMIT).await?;
    if answer.status != 200 {
        return Err(format!("fetching {url}: status {}", answer.status));
    }
    Ok(answer.body)
}
