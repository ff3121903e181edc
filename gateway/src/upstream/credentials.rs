//! The credentials a pool's backends get (`pools.NAME.upstream-auth`, issue 35): headers whose
//! values are secrets, read from files or environment variables when the pool is built (start,
//! reload) and, for files, again every second by the credentials service, so a rotated secret
//! takes effect without a restart.
//!
//! A secret never leaves this module but in the header it is sent in: the values are marked
//! sensitive (`http::HeaderValue::set_sensitive`, so a logged request head shows `Sensitive`),
//! errors name the pool, the header and where the secret comes from, never its value; capture
//! records no headers. A client's own headers of these names, in every spelling a backend
//! framework maps onto them, are dropped before the gateway's are set.

use super::secrets::{read_secret, where_from};
use crate::config::{SecretHeader, SecretSource, UpstreamAuth};
use arc_swap::ArcSwap;
use http::{HeaderName, HeaderValue};
use pingora::http::RequestHeader;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Numbers every [`Credentials`] made (at start and on each reload), so a request head's mark
/// names the credentials that applied it.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// A pool's credential headers, as last read.
#[derive(Debug)]
pub struct Credentials {
    sources: Vec<SecretHeader>,
    /// One value per source (`None`: it could not be read, the header is not sent).
    values: ArcSwap<Vec<Option<HeaderValue>>>,
    /// The names to clear from a client's request, canonical (lowercase, `_` as `-`).
    names: Vec<String>,
    /// What the last refresh could not read (logged when it changes, not every second).
    failing: std::sync::Mutex<Vec<Unreadable>>,
    /// The client-credentials token, sent as `Authorization` (`tokens.rs`).
    token: Option<Arc<super::tokens::TokenSource>>,
    /// The callers' exchanged tokens (`exchange.rs`), sent as `Authorization`.
    exchanges: Option<super::exchange::Exchanges>,
    /// Which credentials these are, of all made ([`GENERATION`]).
    generation: u64,
}

/// What [`Credentials::status`] tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialStatus {
    /// Each secret header: its name, `file` or `env`, and why its last read failed.
    pub headers: Vec<(String, &'static str, Option<String>)>,
    /// The pool's client-credentials token.
    pub token: Option<super::tokens::TokenStatus>,
    /// With token exchange: the callers whose tokens are held, and the gateway's own token.
    pub exchanges: Option<(usize, super::tokens::TokenStatus)>,
}

/// The mark a request head gets from [`Credentials::apply`]: whose credentials it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Applied(u64);

/// Why a secret could not be read (never its value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The header it is for.
    pub header: String,
    /// Where it is read from, and what went wrong.
    pub detail: String,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the secret for header `{}`: {}",
            self.header, self.detail
        )
    }
}

impl Credentials {
    /// Reads every secret of `cfg` once (`pool` names the pool in the log line of one that
    /// cannot be read: its header is then not sent).
    pub fn load(pool: &str, cfg: &UpstreamAuth) -> Credentials {
        let mut failing = Vec::new();
        let values = cfg
            .headers
            .iter()
            .map(|h| match read(h) {
                Ok(v) => Some(v),
                Err(e) => {
                    tracing::error!(pool, header = %e.header, detail = %e.detail, "a backend credential cannot be read: requests to the pool go without it");
                    failing.push(e);
                    None
                }
            })
            .collect();
        let token = (cfg.client_credentials.as_ref())
            .map(|cc| Arc::new(super::tokens::TokenSource::new(pool, cc)));
        let exchanges =
            (cfg.token_exchange.as_ref()).map(|te| super::exchange::Exchanges::new(pool, te));
        let token_header =
            (token.is_some() || exchanges.is_some()).then(|| "authorization".to_owned());
        Credentials {
            failing: std::sync::Mutex::new(failing),
            names: cfg
                .headers
                .iter()
                .map(|h| crate::auth::identity::canonical(&h.name))
                .chain(token_header)
                .collect(),
            token,
            exchanges,
            sources: cfg.headers.clone(),
            values: ArcSwap::from_pointee(values),
            generation: GENERATION.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Whether any of the pool's secrets is read from a file (again every second).
    pub(super) fn reads_files(&self) -> bool {
        (self.sources.iter()).any(|h| matches!(h.source, SecretSource::File(_)))
    }

    /// Whether the pool's backends get any credentials.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty() && self.token.is_none() && self.exchanges.is_none()
    }

    /// The pool's client-credentials token, if it has one.
    pub fn token(&self) -> Option<&super::tokens::TokenSource> {
        self.token.as_deref()
    }

    /// Whether the pool exchanges the caller's token (its requests need the caller).
    pub fn exchanges_tokens(&self) -> bool {
        self.exchanges.is_some()
    }

    /// Whether requests to the pool carry a token (the pool's own, or the caller's exchanged).
    pub fn has_token(&self) -> bool {
        self.token.is_some() || self.exchanges.is_some()
    }

    /// The token source a request to the pool takes its `Authorization` from: the pool's own,
    /// or, with token exchange, the one of the caller `req` is for (its principal and the token
    /// it authenticated with, kept in the head's extensions by the auth step); `None` for a
    /// pool without tokens.
    pub fn source_for(
        &self,
        req: &RequestHeader,
    ) -> Result<Option<Arc<super::tokens::TokenSource>>, super::exchange::NoSubject> {
        if let Some(token) = &self.token {
            return Ok(Some(token.clone()));
        }
        let Some(exchanges) = &self.exchanges else {
            return Ok(None);
        };
        // the caller the request is made for: the client's, or the one a request of the
        // gateway's own was built for (`request::own`)
        let principal = req.extensions.get::<Arc<crate::auth::Principal>>();
        let removed = req.extensions.get::<crate::auth::Credentials>();
        let bearer = removed.and_then(|c| {
            let (_, v) = c.0.iter().find(|(n, _)| n == http::header::AUTHORIZATION)?;
            let text = v.to_str().ok()?;
            let (kind, token) = text.split_once(' ')?;
            kind.eq_ignore_ascii_case("bearer").then(|| token.trim())
        });
        exchanges
            .source_for(principal.map(|p| &**p), bearer)
            .map(Some)
    }

    /// Takes over `previous`'s tokens when the pool asks for the same ones (a reload): its
    /// own, and the callers' exchanged tokens.
    pub fn carry_over(&self, previous: &Credentials, cfg: &UpstreamAuth) {
        if let (Some(now), Some(before), Some(cc)) =
            (&self.token, &previous.token, &cfg.client_credentials)
        {
            if before.same_as(cc) {
                now.carry_over(before);
            }
        }
        if let (Some(now), Some(before)) = (&self.exchanges, &previous.exchanges) {
            now.carry_over(before);
        }
    }

    /// What an operator may know of these credentials, never a value: each header's name and
    /// where its secret is read from (and whether the last read failed), the pool's token, the
    /// callers' exchanged tokens.
    pub fn status(&self) -> CredentialStatus {
        let failing = self.failing.lock().unwrap_or_else(|e| e.into_inner());
        let headers = (self.sources.iter())
            .map(|h| {
                let from = match &h.source {
                    SecretSource::File(_) => "file",
                    SecretSource::Env(_) => "env",
                };
                let problem = failing.iter().find(|u| u.header == h.name);
                (h.name.clone(), from, problem.map(|u| u.detail.clone()))
            })
            .collect();
        CredentialStatus {
            headers,
            token: self.token.as_ref().map(|t| t.status()),
            exchanges: self.exchanges.as_ref().map(|e| e.status()),
        }
    }

    /// The secrets that cannot be read now.
    pub fn unreadable(&self) -> Vec<Unreadable> {
        self.sources.iter().filter_map(|h| read(h).err()).collect()
    }

    /// Reads the secret files again; whether a value changed. A secret that cannot be read
    /// now keeps its last value (a rotation caught midway is not a lost credential); the error
    /// is returned for the caller to log.
    pub fn refresh(&self) -> (bool, Vec<Unreadable>) {
        let old = self.values.load();
        let mut next = Vec::with_capacity(self.sources.len());
        let mut problems = Vec::new();
        for (source, was) in self.sources.iter().zip(old.iter()) {
            if !matches!(source.source, SecretSource::File(_)) {
                next.push(was.clone());
                continue;
            }
            match read(source) {
                Ok(v) => next.push(Some(v)),
                Err(e) => {
                    problems.push(e);
                    next.push(was.clone());
                }
            }
        }
        let changed = next.iter().zip(old.iter()).any(|(a, b)| {
            a.as_ref().map(HeaderValue::as_bytes) != b.as_ref().map(HeaderValue::as_bytes)
        });
        if changed {
            self.values.store(Arc::new(next));
        }
        (changed, problems)
    }

    /// Refreshes, logging what changed (a rotation taken, a secret that became unreadable or
    /// readable again), once per change.
    pub fn refresh_logged(&self, pool: &str) {
        let (changed, problems) = self.refresh();
        if changed {
            tracing::info!(
                pool,
                "a backend credential changed: the next requests carry it"
            );
        }
        let mut failing = self.failing.lock().unwrap_or_else(|e| e.into_inner());
        if *failing != problems {
            for e in problems.iter().filter(|e| !failing.contains(e)) {
                tracing::error!(pool, header = %e.header, detail = %e.detail, "a backend credential cannot be read: its last value is kept");
            }
            *failing = problems;
        }
    }

    /// Sets the credential headers on a request to one of the pool's backends, after dropping
    /// the client's own of the same names (any case, `_` for `-`).
    pub fn apply(&self, req: &mut RequestHeader) {
        if self.is_empty() {
            return;
        }
        let spoofed: Vec<HeaderName> = req
            .headers
            .keys()
            .filter(|k| {
                let k = k.as_str();
                (self.names.iter()).any(|n| crate::auth::identity::is_canonically(k, n))
            })
            .cloned()
            .collect();
        for name in spoofed {
            req.remove_header(&name);
        }
        let values = self.values.load();
        for (source, value) in self.sources.iter().zip(values.iter()) {
            if let Some(value) = value {
                let _ = req.insert_header(source.name.clone(), value.clone());
            }
        }
        // a token that may be sent (`ready` made sure of one before the request was built):
        // the pool's own, or the caller's exchanged one when cached
        let token = match (&self.token, &self.exchanges) {
            (Some(own), _) => own.header(),
            (None, Some(_)) => self.source_for(req).ok().flatten().and_then(|s| s.header()),
            (None, None) => None,
        };
        if let Some(value) = token {
            let _ = req.insert_header(http::header::AUTHORIZATION, value);
        }
        req.extensions_mut().insert(Applied(self.id()));
    }

    /// Whether `req` carries this pool's credentials already ([`Credentials::apply`] made it),
    /// with `token` as its `Authorization` when one is due: then it is sent as it is.
    pub fn applied(&self, req: &RequestHeader, token: Option<&HeaderValue>) -> bool {
        let ours = req
            .extensions
            .get::<Applied>()
            .is_some_and(|a| a.0 == self.id());
        ours && token.is_none_or(|t| {
            req.headers
                .get(http::header::AUTHORIZATION)
                .map(HeaderValue::as_bytes)
                == Some(t.as_bytes())
        })
    }

    /// These credentials, told apart from any other made before or after. Not the address:
    /// after a reload, the freed pool's allocation may be a new pool's, and a head the old
    /// credentials applied counted as carrying the new ones (a rotated secret, another pool's
    /// token).
    fn id(&self) -> u64 {
        self.generation
    }
}

/// Every secret of `config`'s pools that cannot be read now, as `validate` and a start
/// report them (`pools.NAME.upstream-auth.headers.H: ...`).
pub fn unreadable_in(config: &crate::config::Config) -> Vec<String> {
    let headers = config.pools.iter().flat_map(|p| {
        p.upstream_auth.headers.iter().filter_map(move |h| {
            read(h).err().map(|e| {
                format!(
                    "pools.{}.upstream-auth.headers.{}: {}",
                    p.name, e.header, e.detail
                )
            })
        })
    });
    let client_secrets = config.pools.iter().filter_map(|p| {
        let auth = &p.upstream_auth;
        let (key, client) = match (&auth.client_credentials, &auth.token_exchange) {
            (Some(cc), _) => ("client-credentials", &cc.client),
            (None, Some(te)) => ("token-exchange", &te.own.client),
            (None, None) => return None,
        };
        let e = read_secret(&client.client_secret).err()?;
        Some(format!(
            "pools.{}.upstream-auth.{key}.client-secret: {e}",
            p.name
        ))
    });
    headers.chain(client_secrets).collect()
}

/// Reads one secret into its header value (prefix included), marked sensitive.
fn read(h: &SecretHeader) -> Result<HeaderValue, Unreadable> {
    let fail = |detail: String| Unreadable {
        header: h.name.clone(),
        detail,
    };
    let secret = read_secret(&h.source).map_err(fail)?;
    let mut value = HeaderValue::from_str(&format!("{}{secret}", h.prefix)).map_err(|_| {
        fail(format!(
            "{} holds characters a header value cannot carry",
            where_from(&h.source)
        ))
    })?;
    value.set_sensitive(true);
    Ok(value)
}

#[cfg(test)]
#[path = "credentials_tests.rs"]
mod tests;
