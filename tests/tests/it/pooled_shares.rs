//! Issue 31, items 4, 6, 8 and 9, with the Rust legacy mock: who shares a pooled backend
//! session and how many one caller may hold. Anonymous callers never share one (a session per
//! call, closed after it); a principal at its share (`bridge.pooled-sessions.max-per-principal`,
//! at most half a backend) is refused or closes its own idle session, never another's, while
//! another principal still opens its own; a 2026-07-28 `initialize` never reaches a pooled
//! session.

use super::pooled_bridge::{anonymous, call_anonymous, config, meta, modern_anonymous, text, V};
use mcp_gateway_tests::{assert_eventually, Gateway, MockServer};
use serde_json::json;
use std::net::IpAddr;
use std::time::Duration;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[tokio::test]
async fn two_anonymous_clients_never_share_a_backend_session() {
    let a = MockServer::legacy("a", 0, V).await;
    let gw = Gateway::start(&anonymous(&[&a], "")).await;
    // client X (127.0.0.2) counts three times, then client Y (127.0.0.3), same clientInfo
    let mut counts = Vec::new();
    for (i, from) in ["127.0.0.2", "127.0.0.2", "127.0.0.2", "127.0.0.3"]
        .iter()
        .enumerate()
    {
        let resp = call_anonymous(i as u64, "count", json!({}), "same")
            .send_from(gw.addr, ip(from))
            .await;
        assert_eq!(resp.status(), 200, "{}", resp.text());
        counts.push(text(&resp.json()));
    }
    assert_eq!(
        counts,
        ["1", "1", "1", "1"],
        "no call sees another's session state (before: X 1, 2, 3 and Y 4)"
    );
    assert_eq!(a.sessions().initializes(), 4, "a backend session per call");
    assert_eventually!(
        Duration::from_secs(5),
        a.sessions().live() == 0,
        "each closed upstream after its call"
    );
    assert_eq!(
        gw.metric("mcpgw_pooled_session_events_total{event=\"closed\",pool=\"p\"}")
            .await,
        4.0
    );
    assert_eq!(gw.metric("mcpgw_pooled_sessions{pool=\"p\"}").await, 0.0);
}

#[tokio::test]
async fn a_principal_at_its_share_is_refused_while_another_still_opens_its_own() {
    let a = MockServer::legacy("a", 0, V).await;
    // a principal's share on the backend: half of 4 = 2 (the default max-per-principal is 16)
    let extra = "bridge:\n  pooled-sessions: { max-per-backend: 4 }\n";
    let gw = Gateway::start(&config(&[&a], extra)).await;
    let addr = gw.addr;
    // principal one keeps four sessions busy (four client identities), one after the other
    let mut busy = Vec::new();
    let mut refused = Vec::new();
    for i in 0..4u64 {
        let r = call_anonymous(i, "sleep", json!({"ms": 4000}), &format!("one-{i}"))
            .header("X-Api-Key", "k-one");
        let before = a.in_flight();
        let task = tokio::spawn(async move { r.send(addr).await });
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        // its sleep runs at the backend, or its answer came back at once
        loop {
            if a.in_flight() > before {
                busy.push(task);
                break;
            }
            if task.is_finished() {
                refused.push(task.await.unwrap());
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "call {i} neither ran nor was answered"
            );
            // the poll interval of this bounded wait for either event
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    assert_eq!(
        busy.len(),
        2,
        "one principal holds its share of the backend"
    );
    for resp in &refused {
        assert_eq!(resp.status(), 503, "{}", resp.text());
        let v = resp.json();
        assert_eq!(v["error"]["code"], -32018, "{v}");
        assert_eq!(v["error"]["data"]["reason"], "pooled-sessions");
        assert_eq!(v["error"]["data"]["scope"], "principal");
        assert_eq!(v["error"]["data"]["limit"], 2);
    }
    // principal two is still served, on a session of its own
    let resp = call_anonymous(9, "count", json!({}), "two")
        .header("X-Api-Key", "k-two")
        .send(addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    assert_eq!(text(&resp.json()), "1");
    assert_eq!(
        gw.metric("mcpgw_pooled_session_events_total{event=\"refused\",pool=\"p\"}")
            .await,
        2.0
    );
    for task in busy {
        assert_eq!(task.await.unwrap().status(), 200);
    }
}

#[tokio::test]
async fn a_principal_opening_many_sessions_evicts_only_its_own() {
    let a = MockServer::legacy("a", 0, V).await;
    // a principal's share on the backend: half of 8 = 4
    let extra = "bridge:\n  pooled-sessions: { max-per-backend: 8 }\n";
    let gw = Gateway::start(&config(&[&a], extra)).await;
    let count = |id: u64, client: &str, key: &str| {
        call_anonymous(id, "count", json!({}), client).header("X-Api-Key", key)
    };
    let resp = count(1, "two", "k-two").send(gw.addr).await;
    assert_eq!(text(&resp.json()), "1");
    // principal one opens 20 sessions (20 client identities): past its share of 4 it closes
    // its own least recently used ones, never principal two's
    for i in 0..20u64 {
        let resp = count(10 + i, &format!("one-{i}"), "k-one")
            .send(gw.addr)
            .await;
        assert_eq!(resp.status(), 200, "{}", resp.text());
        assert_eq!(text(&resp.json()), "1");
    }
    let resp = count(2, "two", "k-two").send(gw.addr).await;
    assert_eq!(
        text(&resp.json()),
        "2",
        "principal two's session kept its state: {}",
        resp.text()
    );
    assert_eq!(
        gw.metric("mcpgw_pooled_session_events_total{event=\"evicted\",pool=\"p\"}")
            .await,
        16.0
    );
    assert_eventually!(
        Duration::from_secs(5),
        a.sessions().live() == 5,
        "four of principal one's and principal two's"
    );
    // and principal two opens another of its own
    let resp = count(3, "two-b", "k-two").send(gw.addr).await;
    assert_eq!(text(&resp.json()), "1");
}

#[tokio::test]
async fn an_initialize_in_a_2026_request_never_reaches_the_pooled_session() {
    let a = MockServer::legacy("a", 0, V).await;
    a.set_capture(true);
    let gw = Gateway::start(&config(&[&a], "")).await;
    let count = |id: u64| call_anonymous(id, "count", json!({}), "c").header("X-Api-Key", "k-one");
    assert_eq!(text(&count(1).send(gw.addr).await.json()), "1");
    for (id, method, params) in [
        (
            2,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "intruder", "version": "1"}}),
        ),
        (3, "logging/setLevel", json!({"level": "debug"})),
        (4, "resources/subscribe", json!({"uri": "note://x"})),
    ] {
        let resp = modern_anonymous(id, method, params, meta("c", None))
            .header("X-Api-Key", "k-one")
            .send(gw.addr)
            .await;
        let v = resp.json();
        assert_eq!(v["id"], id, "{v}");
        assert_eq!(v["error"]["code"], -32033, "{method}: {v}");
        assert_eq!(v["error"]["data"]["reason"], "session-method", "{v}");
        assert_eq!(v["error"]["data"]["method"], method);
    }
    assert_eq!(a.count_method("initialize"), 1, "only the gateway's own");
    assert_eq!(a.count_method("logging/setLevel"), 0);
    // the session goes on as it was
    assert_eq!(text(&count(5).send(gw.addr).await.json()), "2");
    assert_eq!(a.sessions().initializes(), 1);
}
