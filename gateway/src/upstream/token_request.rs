//! The token endpoint's wire (RFC 6749 §4.4, RFC 8693): a token request's form past its grant
//! (`scope`, `audience`, `resource`, the client's authentication) and the reading of the answer
//! (an OAuth error code passed on only when known, the token and its lifetime). Never a secret,
//! a token or the endpoint's own text in an error.

use crate::config::{ClientAuth, ClientCredentials};
use http::{HeaderName, HeaderValue};
use std::time::{Duration, Instant};

/// How long a failed fetch is the answer before the token endpoint is asked again.
pub const BACKOFF: Duration = Duration::from_secs(1);
/// The shortest time between a token's answer and the next fetch of its source for its
/// expiry: a token of any `expires_in` (down to 1e-9 s) costs at most one fetch per this time,
/// never one per request. A token that ends sooner is used until its end; past it, until the
/// floor, requests are answered [`SHORT_LIVED`] (401 drops are spaced by their own gap).
pub const REFETCH_FLOOR: Duration = Duration::from_secs(1);
/// The reason of a request answered while its source's token has ended within
/// [`REFETCH_FLOOR`] of its answer.
pub const SHORT_LIVED: &str = "short-lived";
/// The lifetime of a token whose answer gave no `expires_in`.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(60);
/// Largest token endpoint answer read.
pub(super) const ANSWER_LIMIT: usize = 64 * 1024;
/// The OAuth error codes passed on in `data.oauthError` (RFC 6749 §5.2, RFC 8693 §2.2.2); any
/// other is `other`. The endpoint's own description is never passed on.
const OAUTH_ERRORS: [&str; 8] = [
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "unauthorized_client",
    "unsupported_grant_type",
    "invalid_scope",
    "invalid_target",
    "access_denied",
];

/// A token in use.
pub(super) struct Token {
    /// `Bearer <token>`, sensitive.
    pub(super) header: HeaderValue,
    /// When its answer arrived (its age, for the console).
    pub(super) received: Instant,
    /// From when it is refreshed in the background.
    pub(super) refresh_at: Instant,
    /// Until when it may be sent.
    pub(super) usable_until: Instant,
    /// From when a request that finds it ended may fetch another ([`REFETCH_FLOOR`] after
    /// `received`); before, it is answered [`SHORT_LIVED`].
    pub(super) refetch_after: Instant,
}

/// Why no token could be had (never a secret or the endpoint's own text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// `unreachable`, `timeout`, `refused`, `endpoint-error`, `bad-answer`, `secret-unreadable`,
    /// `short-lived` ([`SHORT_LIVED`]: no fetch was made).
    pub reason: &'static str,
    /// The endpoint's OAuth error code (`refused`), one of the known ones or `other`.
    pub oauth_error: Option<&'static str>,
    /// For the log line: what happened, for an operator.
    pub detail: String,
    /// How long the failure stands.
    pub retry_after: Duration,
}

/// A failure of `reason` that stands for [`BACKOFF`].
pub(super) fn fail(reason: &'static str, detail: String) -> Failure {
    Failure {
        reason,
        oauth_error: None,
        detail,
        retry_after: BACKOFF,
    }
}

/// The request's form past its grant (`form`) and its headers: the optional parameters, then the
/// client's authentication (`secret`, read for this request).
pub(super) fn form(
    mut form: String,
    cfg: &ClientCredentials,
    secret: &str,
) -> Result<(String, Vec<(HeaderName, HeaderValue)>), Failure> {
    let client = &cfg.client;
    for (key, value) in [
        ("scope", &cfg.scope),
        ("audience", &cfg.audience),
        ("resource", &cfg.resource),
    ] {
        if let Some(v) = value {
            form.push('&');
            form.push_str(&form_urlencoded(&[(key, v)]));
        }
    }
    let mut headers = Vec::new();
    match client.auth {
        ClientAuth::Basic => {
            // RFC 6749 §2.3.1: each form-encoded, then joined by a colon
            use base64::Engine;
            let pair = format!(
                "{}:{}",
                form_component(&client.client_id),
                form_component(secret)
            );
            let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
            let mut value = HeaderValue::from_str(&format!("Basic {encoded}")).map_err(|_| {
                fail(
                    "secret-unreadable",
                    "the client secret cannot be sent in a header".into(),
                )
            })?;
            value.set_sensitive(true);
            headers.push((http::header::AUTHORIZATION, value));
        }
        ClientAuth::Post => {
            form.push('&');
            form.push_str(&form_urlencoded(&[
                ("client_id", &client.client_id),
                ("client_secret", secret),
            ]));
        }
    }
    Ok((form, headers))
}

/// The token of an answer of `status` with `body`, received at `received`.
pub(super) fn answer(status: u16, body: &[u8], received: Instant) -> Result<Token, Failure> {
    let body: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    if status == 400 || status == 401 || status == 403 {
        let code = body.get("error").and_then(serde_json::Value::as_str);
        let known = code.and_then(|c| OAUTH_ERRORS.iter().find(|k| **k == c).copied());
        return Err(Failure {
            reason: "refused",
            oauth_error: Some(known.unwrap_or("other")),
            detail: format!(
                "the token endpoint answered {status} ({})",
                known.unwrap_or("other")
            ),
            retry_after: BACKOFF,
        });
    }
    if status != 200 {
        return Err(fail(
            "endpoint-error",
            format!("the token endpoint answered {status}"),
        ));
    }
    token_of(&body, received).map_err(|detail| fail("bad-answer", detail))
}

/// The token of a 200 answer received at `received`: sent until its lifetime less a margin (a
/// tenth, at most 10 s), refreshed from 80% of it, neither sooner than [`REFETCH_FLOOR`].
pub(super) fn token_of(body: &serde_json::Value, received: Instant) -> Result<Token, String> {
    let token = body
        .get("access_token")
        .and_then(serde_json::Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or("the answer has no access_token")?;
    let kind = body.get("token_type").and_then(serde_json::Value::as_str);
    if kind.is_some_and(|k| !k.eq_ignore_ascii_case("bearer")) {
        return Err("the answer's token_type is not Bearer".into());
    }
    let lifetime = match body.get("expires_in") {
        None | Some(serde_json::Value::Null) => DEFAULT_LIFETIME,
        Some(v) => match v.as_f64() {
            Some(s) if s > 0.0 && s.is_finite() => Duration::from_secs_f64(s.min(1e9)),
            _ => return Err("the answer's expires_in is not a positive number".into()),
        },
    };
    let mut header = HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| "the token holds characters a header cannot carry")?;
    header.set_sensitive(true);
    let margin = (lifetime / 10).min(Duration::from_secs(10));
    Ok(Token {
        header,
        received,
        refresh_at: received + lifetime.mul_f64(0.8).max(REFETCH_FLOOR),
        usable_until: received + lifetime - margin,
        refetch_after: received + REFETCH_FLOOR,
    })
}

/// `application/x-www-form-urlencoded` pairs.
pub(super) fn form_urlencoded(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", form_component(k), form_component(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn form_component(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}
