//! Issue 59, item 22: one member's list larger than a caller's share of the merged lists'
//! bytes (`limits.max-merged-list-bytes`, a quarter of it per caller) is refused at once with
//! 503 -32018 `merged-list-bytes`, as docs/errors.md says. Before, the read of the member's
//! answer stopped at the share but the member's request went on writing into the full channel
//! until the member deadline (10 s), which then hid the refusal: the client waited 10 s and got
//! a 200 list with the member silently missing.
//!
//! Peers: PyPI mcp 2.3.0 servers (`paged_server.py`, 2026-07-28): one listing 1,000 tools of
//! 8 KB descriptions in one page (about 8 MB: past the 1 MiB the member's cache reads whole, it
//! is relayed in many chunks), one listing 3.

use super::rpc;
use mcp_gateway_tests::{Gateway, PythonPeer};
use serde_json::json;
use std::time::{Duration, Instant};

/// Well under the 10 s member deadline the old gateway waited out, generous for a debug build
/// on a loaded machine.
const AT_ONCE: Duration = Duration::from_secs(5);

#[tokio::test]
async fn a_member_list_larger_than_the_callers_share_is_refused_at_once() {
    let big = PythonPeer::start(
        "mcp2",
        "paged_server.py",
        &[
            "--port",
            "0",
            "--name",
            "big",
            "--tools",
            "1000",
            "--page",
            "1000",
            "--description-bytes",
            "8000",
        ],
    )
    .await;
    let small = PythonPeer::start(
        "mcp2",
        "paged_server.py",
        &[
            "--port", "0", "--name", "small", "--tools", "3", "--page", "3",
        ],
    )
    .await;
    let yaml = format!(
        "limits: {{ max-merged-list-bytes: 40000 }}\npools:\n  big: {{ backends: [{}] }}\n  small: {{ backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n\
         \x20     - {{ name: big, pool: big }}\n      - {{ name: small, pool: small }}\n",
        big.addr(),
        small.addr()
    );
    let gw = Gateway::start(&yaml).await;
    for id in [1, 2] {
        let started = Instant::now();
        let list = tokio::time::timeout(
            Duration::from_secs(30),
            rpc(id, "tools/list", json!({})).send(gw.addr),
        )
        .await
        .expect("an answer");
        let took = started.elapsed();
        assert_eq!(list.status(), 503, "{}", list.text());
        assert!(list.head.header("retry-after").is_some(), "{:?}", list.head);
        let v = list.json();
        assert_eq!(v["id"], id, "{v}");
        assert_eq!(v["error"]["code"], -32018, "{v}");
        assert_eq!(v["error"]["data"]["reason"], "merged-list-bytes", "{v}");
        assert_eq!(v["error"]["data"]["scope"], "caller", "{v}");
        assert_eq!(
            v["error"]["data"]["limit"], 10000,
            "a quarter of 40000: {v}"
        );
        assert!(took < AT_ONCE, "answered after {took:?}");
    }
}
