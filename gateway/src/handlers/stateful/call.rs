//! One request on a session route, as far as the gateway needs to know it.

use crate::error::GatewayError;
use crate::session::SettingChange;
use bytes::Bytes;
use mcp_wire::messages::safe_to_repeat;
use mcp_wire::{inspect, Era, RequestId};
use std::sync::Arc;

/// A classified request body.
pub(super) struct Call {
    pub(super) body: Bytes,
    pub(super) method: Option<String>,
    pub(super) id: RequestId,
    /// Safe to send twice.
    pub(super) repeatable: bool,
    /// Raw `params` for session settings (setLevel, subscribe) and initialize.
    pub(super) params: Option<Arc<str>>,
    /// `params.name` / `params.uri`, for limits and for routing rules on auto routes.
    pub(super) name: Option<String>,
    /// `_meta` says 2026-07-28 or later: no session (auto routes).
    pub(super) stateless: bool,
    /// Its deadline on the route, as the classification found it (`classify::classify`).
    pub(super) deadline: Option<std::time::Duration>,
    /// The list whose answer the route's `authz` rules filter for this caller, as the
    /// classification found it.
    pub(super) filter: Option<&'static str>,
}

impl Call {
    /// Reads what the gateway needs from a whole body.
    pub(super) fn classify(body: Bytes) -> Result<Call, GatewayError> {
        let info = inspect::inspect_body(&body)?;
        let method = info.method.as_deref().map(str::to_owned);
        let id = info.request_id();
        let repeatable = safe_to_repeat(method.as_deref(), info.id.is_some());
        let wants_params = matches!(
            method.as_deref(),
            Some(
                "initialize" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe"
            )
        );
        let params = wants_params
            .then(|| inspect::params_raw(&body).map(|p| Arc::<str>::from(p.get())))
            .flatten();
        let name = info.name.as_deref().map(str::to_owned);
        let stateless = Era::of_version(info.meta_protocol_version.as_deref()) == Era::Stateless;
        drop(info);
        Ok(Call {
            body,
            method,
            id,
            repeatable,
            params,
            name,
            stateless,
            deadline: None,
            filter: None,
        })
    }

    /// Whether it is a request for method `m`.
    pub(super) fn is(&self, m: &str) -> bool {
        self.method.as_deref() == Some(m)
    }

    /// The session setting this call changes once the backend accepted it (a subscription
    /// kept within `max_subscriptions` URIs).
    pub(super) fn setting(&self, max_subscriptions: usize) -> Option<SettingChange> {
        let params = self.params.as_ref()?;
        if self.is("logging/setLevel") {
            return Some(SettingChange::LogLevel(params.clone()));
        }
        let subscribed = match self.method.as_deref() {
            Some("resources/subscribe") => true,
            Some("resources/unsubscribe") => false,
            _ => return None,
        };
        let uri = serde_json::from_str::<serde_json::Value>(params)
            .ok()?
            .get("uri")?
            .as_str()
            .map(Arc::<str>::from)?;
        Some(match subscribed {
            true => SettingChange::Subscribe(uri, max_subscriptions),
            false => SettingChange::Unsubscribe(uri),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(body: &'static str) -> Call {
        Call::classify(Bytes::from_static(body.as_bytes())).unwrap()
    }

    #[test]
    fn settings_are_read_from_the_calls_that_change_them() {
        let level = call(
            r#"{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}"#,
        );
        assert_eq!(
            level.setting(64),
            Some(SettingChange::LogLevel(r#"{"level":"debug"}"#.into()))
        );
        let unsub = call(
            r#"{"jsonrpc":"2.0","id":2,"method":"resources/unsubscribe","params":{"uri":"file:///x"}}"#,
        );
        assert_eq!(
            unsub.setting(64),
            Some(SettingChange::Unsubscribe("file:///x".into()))
        );
        let sub = call(
            r#"{"jsonrpc":"2.0","id":4,"method":"resources/subscribe","params":{"uri":"file:///x"}}"#,
        );
        assert_eq!(
            sub.setting(64),
            Some(SettingChange::Subscribe("file:///x".into(), 64))
        );
        let tool = call(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t"}}"#);
        assert_eq!(tool.setting(64), None);
        assert!(!tool.repeatable);
        assert_eq!(tool.name.as_deref(), Some("t"));
    }
}
