//! The errors of backend credentials (`tokens.rs`, `exchange.rs`): the table in
//! docs/errors.md; the one writer is `error/http.rs`.

use super::tokens::Failure;

impl crate::error::GatewayError {
    /// No credentials for `pool`'s backends could be had (`upstream/tokens.rs`): nothing was
    /// sent. The reason and, for a refusal, the token endpoint's OAuth error code; never its
    /// own message, the secret or the endpoint's address.
    pub fn upstream_credentials(pool: &str, failure: &Failure) -> Self {
        let why = match failure.reason {
            "unreachable" => "its authorization server cannot be reached",
            "timeout" => "its authorization server did not answer in time",
            "refused" => "its authorization server refused the gateway's client",
            "endpoint-error" => "its authorization server failed",
            "bad-answer" => "its authorization server's answer is not a usable token",
            "short-lived" => "its authorization server's last token has ended, and another is asked for at most once a second",
            _ => "the gateway's client secret for it cannot be read",
        };
        let mut e = Self::new(
            crate::error::ErrorKind::UpstreamCredentials,
            format!("The gateway has no credentials for the backends of pool `{pool}`: {why}; retry later"),
        )
        .with("pool", pool)
        .with("reason", failure.reason);
        if let Some(code) = failure.oauth_error {
            e = e.with("oauthError", code);
        }
        e.retry_after = Some(failure.retry_after);
        e
    }

    /// A token-exchange pool has no token for this caller: `reason` is the authorization
    /// server's OAuth error code (`invalid_grant`, `invalid_target`, ..., `other`), or
    /// `api-key-caller`, or `no-caller-token`. Never the server's own message.
    pub fn exchange_refused(pool: &str, reason: &str) -> Self {
        let why = match reason {
            "api-key-caller" => "calls to it act for the caller with the caller's token, and API-key callers have none".to_owned(),
            "no-caller-token" => "calls to it act for the caller with the caller's token, and this request carries none".to_owned(),
            code => format!("the authorization server refused to exchange your token for one its backends accept ({code})"),
        };
        Self::new(
            crate::error::ErrorKind::ExchangeRefused,
            format!("Forbidden: the backends of pool `{pool}` cannot be called for you: {why}"),
        )
        .with("pool", pool)
        .with("reason", reason)
    }
}
