//! The `Mcp-Param-*` headers of a bridged `tools/call` (SEP-2243): a legacy client sends none,
//! and a 2026-07-28 server refuses a call whose `x-mcp-header` arguments have no header
//! (-32020). The bridge mirrors them from the tool's schema as the pool's path listed it
//! (`upstream::tool_headers`): learnt from the `tools/list` answers it bridges, else from a
//! listing of its own (every page, at most [`MAX_LIST_PAGES`] within [`LIST_WITHIN`],
//! single-flighted per path).

use super::call::{Call, Final};
use super::upstream::Upstream;
use crate::bridge::answer::Messages;
use mcp_wire::param_headers::mirrored;
use mcp_wire::translate::request::{modern_request, Envelope};
use serde_json::{json, Value};

/// Pages of `tools/list` a listing of the bridge's own reads at most.
pub(super) const MAX_LIST_PAGES: usize = 20;

/// The longest a listing of the bridge's own takes (the calls waiting for it wait no longer).
pub(super) const LIST_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

impl Call<'_> {
    /// The `Mcp-Param-*` headers (name, wire value) of this call: none but for a `tools/call`
    /// with arguments of a tool whose schema marks some of them.
    pub(super) async fn param_headers(&self, env: Envelope<'_>) -> Vec<(String, String)> {
        if self.method != "tools/call" {
            return Vec::new();
        }
        let params = self.msg.get("params");
        let name = params.and_then(|p| p.get("name")).and_then(Value::as_str);
        let arguments = params.and_then(|p| p.get("arguments"));
        let has_arguments = arguments
            .and_then(Value::as_object)
            .is_some_and(|a| !a.is_empty());
        let Some(name) = name.filter(|_| has_arguments) else {
            return Vec::new();
        };
        let tools = self.up.pool.tool_headers.at(self.up.path);
        let up = self.up;
        let list = || async move {
            let listed = tokio::time::timeout(LIST_WITHIN, list_tools(up, env)).await;
            listed.ok().flatten()
        };
        let known = tools.resolve(name, list).await;
        mirrored(&known, arguments)
    }

    /// Learns the tools a bridged `tools/list` answer names.
    pub(super) fn learn(&self, done: &Final) {
        if self.method != "tools/list" {
            return;
        }
        let parsed;
        let result = match done {
            Final::Result(result) => result,
            Final::Verbatim(raw) => {
                parsed = serde_json::from_slice::<Value>(raw).ok();
                match parsed.as_ref().and_then(|m| m.get("result")) {
                    Some(result) => result,
                    None => return,
                }
            }
            Final::Error(_) | Final::Cancelled => return,
        };
        if let Some(tools) = result.get("tools") {
            self.up.pool.tool_headers.at(self.up.path).learn(tools);
        }
    }
}

/// Every tool the path lists (at most [`MAX_LIST_PAGES`] pages), asked as the calling client
/// (its envelope, its head's identity); `None` when a page fails.
async fn list_tools(up: Upstream<'_>, env: Envelope<'_>) -> Option<Vec<Value>> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0..MAX_LIST_PAGES {
        let mut params = json!({});
        if let Some(c) = cursor.take() {
            params["cursor"] = Value::String(c);
        }
        let msg = json!({
            "jsonrpc": "2.0",
            "id": format!("mcpgw-tools-{page}"),
            "method": "tools/list",
            "params": params,
        });
        let req = modern_request(&msg, env, None).ok()?;
        let sent = up.send(&req, true).await.ok()?;
        let mut result = result_of(Messages::new(sent.exchange), up).await?;
        if let Some(Value::Array(listed)) = result.get_mut("tools").map(Value::take) {
            tools.extend(listed);
        }
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => return Some(tools),
        }
    }
    Some(tools)
}

/// The `result` of the response an answer carries (its notifications passed over); `None`
/// for an error, a broken answer or none.
async fn result_of(mut messages: Messages, up: Upstream<'_>) -> Option<Value> {
    let mut result = None;
    while let Ok(Some(raw)) = messages.next().await {
        let Ok(mut msg) = serde_json::from_slice::<Value>(&raw) else {
            continue;
        };
        if msg.get("method").is_none() && msg.get("id").is_some() {
            result = msg.get_mut("result").map(Value::take);
            break;
        }
    }
    messages.finish(up.engine).await;
    result
}
