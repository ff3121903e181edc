//! The bounds of a session's subscriptions, checked before a `resources/subscribe` goes out:
//! the gateway keeps each subscribed URI with the session (replayed on every re-initialization;
//! on a bridged session sent upstream in the whole filter of its `subscriptions/listen`), so a
//! session holds at most `sessions.max-subscriptions` URIs of at most
//! `sessions.max-subscription-uri-bytes` each, and a bridged session's listen request never
//! passes `max-body-bytes`. A subscribe over them gets -32036 with its id and nothing is kept
//! or sent; a URI the session holds already is never refused (subscribing again changes
//! nothing).

use super::call::Call;
use crate::config::Config;
use crate::error::GatewayError;
use crate::session::SessionRecord;

/// Whether `call` (in the session `rec`) may go on: anything but a subscribe does.
pub(super) fn admit(call: &Call, rec: &SessionRecord, config: &Config) -> Result<(), GatewayError> {
    if !call.is("resources/subscribe") {
        return Ok(());
    }
    // no `params.uri`: the backend (or the bridge) answers the malformed request itself
    let Some(uri) = call.name.as_deref() else {
        return Ok(());
    };
    let bounds = &config.sessions;
    if uri.len() > bounds.max_subscription_uri_bytes {
        let limit = bounds.max_subscription_uri_bytes as u64;
        return Err(GatewayError::subscription_limit("uri-too-long", limit));
    }
    let held = &rec.settings;
    if held.subscription_full(uri, bounds.max_subscriptions) {
        let limit = bounds.max_subscriptions as u64;
        return Err(GatewayError::subscription_limit("too-many", limit));
    }
    if rec.binding.is_bridged() && !held.subscriptions.iter().any(|u| &**u == uri) {
        let mut uris: Vec<&str> = held.subscriptions.iter().map(|u| &**u).collect();
        uris.push(uri);
        let len =
            crate::bridge::legacy_clients::listen_body_len(&rec.init_params, &uris).unwrap_or(0);
        if len as u64 > config.max_body_bytes {
            let limit = config.max_body_bytes;
            return Err(GatewayError::subscription_limit("listen-too-large", limit));
        }
    }
    Ok(())
}
