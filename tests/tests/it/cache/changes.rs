//! What drops the cache's results on a stream the gateway passes through untouched: the four
//! change notifications, heard on the fast path and on the buffered relay.

use super::{config, request, Backend, PUBLIC};
use mcp_gateway_tests::Gateway;
use serde_json::json;
use std::time::Duration;

/// A `subscriptions/listen` stream whose backend sends the notification `method`.
pub(super) fn listen_saying(method: &str) -> String {
    format!("SSE:event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"{method}\",\"params\":{{}}}}\n\n")
}

/// The cache hears each notification that says results changed on a stream it passes through
/// untouched (a plain route's `subscriptions/listen`, on the fast path, and a POST answered
/// with an event stream on a route that reads bodies) and asks the backend again; a progress
/// notification drops nothing.
#[tokio::test]
async fn each_change_on_a_relayed_event_stream_drops_the_kept_results() {
    let changes = [
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    ];
    for (method, changed) in changes
        .map(|c| (c, true))
        .into_iter()
        .chain([("notifications/progress", false)])
    {
        for route_extra in ["", ", limits: { timeout-ms: 5000 }"] {
            let listen = listen_saying(method);
            let backend = Backend::start(
                &[("tools/list", PUBLIC), ("subscriptions/listen", &listen)],
                Duration::ZERO,
            )
            .await;
            let gw = Gateway::start(&config(&backend, route_extra)).await;
            for (id, how) in [("1", "miss"), ("2", "hit")] {
                let r = request(id, "tools/list", json!({}), None)
                    .send(gw.addr)
                    .await;
                assert_eq!(r.head.header("mcp-gateway-cache"), Some(how));
            }
            let heard = request(
                "3",
                "subscriptions/listen",
                json!({"notifications": {}}),
                None,
            )
            .send(gw.addr)
            .await;
            assert!(heard.text().contains(method), "{}", heard.text());
            let after = request("4", "tools/list", json!({}), None)
                .send(gw.addr)
                .await;
            let how = if changed { "miss" } else { "hit" };
            let at = format!("{method} on the route{route_extra}");
            assert_eq!(after.head.header("mcp-gateway-cache"), Some(how), "{at}");
        }
    }
}
