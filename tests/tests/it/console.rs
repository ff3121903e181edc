//! The operator's console in a real browser (Debian's `chromium`, headless, driven over the
//! DevTools protocol: `mcp_gateway_tests::browser`): two PyPI `mcp==1.30.0` FastMCP pods on a
//! stateful route and a virtual route whose member lists a tool named with an HTML/JS payload.
//! With `admin-token` set the page shows nothing and its stream is refused until the token is
//! typed in (the page then opens the stream with a ticket minted with it). The page shows both
//! pods up and a real client's session on one; that pod is SIGKILLed and within 10 s the page
//! shows it down, the session on the other pod and the move on the timeline. Drain with the
//! token; the policy header; the payload as text. With `CONSOLE_SCREENSHOTS=docs/img` the screenshots of docs/console.md are written.
//! Needs `scripts/setup-peers` and chromium.

use mcp_gateway_tests::browser::Chromium;
use mcp_gateway_tests::harness::{workspace, ADMIN_TOKEN};
use mcp_gateway_tests::{Gateway, MockServer, PythonPeer, ReplClient, Request};
use serde_json::json;
use std::time::{Duration, Instant};

/// A tool name that would run script if the page ever wrote it as HTML.
const PAYLOAD: &str = "<img src=x onerror=\"window.__pwned=1\">";

/// `CONSOLE_SCREENSHOTS` (relative to the workspace): where to write the docs' screenshots.
async fn screenshot(browser: &mut Chromium, name: &str) {
    if let Ok(dir) = std::env::var("CONSOLE_SCREENSHOTS") {
        let dir = workspace().join(dir);
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        browser
            .screenshot(&dir.join(format!("console-{name}.png")))
            .await;
    }
}

/// `selector`'s text in the page, as a JS expression comparing it.
fn text_is(selector: &str, want: &str) -> String {
    format!("document.querySelector({selector:?})?.textContent === {want:?}")
}

async fn waited(browser: &mut Chromium, what: &str, expression: &str, within: Duration) {
    assert!(
        browser.wait_for(expression, within).await,
        "{what}: `{expression}` not true in {within:?}; the page: {}",
        browser.eval("document.body.innerText").await
    );
}

struct Setup {
    pods: Vec<(String, PythonPeer)>,
    _evil: PythonPeer,
    gw: Gateway,
}

async fn setup() -> Setup {
    let mut pods = Vec::new();
    for name in ["pod-0", "pod-1"] {
        pods.push((name.to_owned(), PythonPeer::legacy_v1(name, 0).await));
    }
    let evil_args = ["--port", "0", "--name", "evil", "--alias-tool", PAYLOAD];
    let evil = PythonPeer::start("mcp1", "legacy_server.py", &evil_args).await;
    let yaml = format!(
        "pools:\n  legacy: {{ backends: [{}, {}], failure-cooldown-ms: 60000, health: {{ interval-ms: 100, fall: 1, timeout-ms: 500 }} }}\n  \
         tools: {{ era: legacy, backends: [{}] }}\n\
         routes:\n  - {{ path: /mcp, mode: stateful, pool: legacy }}\n  \
         - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n      - {{ name: evil, pool: tools, mode: stateful }}\n",
        pods[0].1.addr(),
        pods[1].1.addr(),
        evil.addr()
    );
    let gw = Gateway::start(&yaml).await;
    Setup {
        pods,
        _evil: evil,
        gw,
    }
}

/// The console's answers carry the policy and the headers against sniffing and referrers.
async fn policy_is_set(gw: &Gateway) {
    let page = Request::bare("GET", "/console").send(gw.admin).await;
    assert_eq!(page.status(), 200);
    let csp = page.head.header("content-security-policy").unwrap_or("");
    for part in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(part), "{csp}");
    }
    assert_eq!(page.head.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(page.head.header("referrer-policy"), Some("no-referrer"));
}

/// The member's payload tool name is shown as text: no element made of it, no script run.
async fn payload_is_text(browser: &mut Chromium) {
    let member = "[data-virtual=\"/hub\"] tr[data-member=\"evil\"]";
    let shown = format!(
        "[...document.querySelectorAll('{member} .name')].some(n => n.textContent === 'evil__' + {PAYLOAD:?})"
    );
    waited(
        browser,
        "the payload as text",
        &shown,
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(
        browser
            .eval("document.querySelectorAll('img').length")
            .await,
        0
    );
    assert_eq!(browser.eval("typeof window.__pwned").await, "undefined");
}

fn backend_row(addr: &str) -> String {
    format!("[data-pool=\"legacy\"] tr[data-backend=\"{addr}\"]")
}

#[tokio::test]
async fn the_console_shows_a_killed_pods_sessions_arrive_on_the_survivor_within_10_s() {
    // its verdict counts a time (10 s), and a browser is a load of its own
    let _machine = mcp_gateway_tests::machine::shared().await;
    let mut s = setup().await;
    policy_is_set(&s.gw).await;
    let mut client = ReplClient::connect("mcp1", &s.gw.url("/mcp"), None).await;
    let pinned = client.call_text("whoami", json!({})).await;
    for _ in 0..30 {
        // some traffic for the charts
        assert_eq!(client.call_text("whoami", json!({})).await, pinned);
    }
    let mut hub = ReplClient::connect("mcp1", &s.gw.url("/hub"), None).await;
    let listed = hub.cmd(json!({"op": "list"})).await;
    assert!(listed.to_string().contains("onerror"), "{listed}");
    let (dead, alive) = match s.pods.iter().position(|(n, _)| *n == pinned) {
        Some(0) => (s.pods[0].1.addr(), s.pods[1].1.addr()),
        Some(_) => (s.pods[1].1.addr(), s.pods[0].1.addr()),
        None => panic!("whoami said {pinned}"),
    };

    let mut browser = Chromium::start(1400, 1200).await;
    browser
        .navigate(&format!("http://{}/console", s.gw.admin))
        .await;
    locked_until_the_token_is_given(&mut browser).await;
    let up =
        "document.querySelectorAll('[data-pool=\"legacy\"] tr[data-state=\"up\"]').length === 2";
    waited(&mut browser, "both pods up", up, Duration::from_secs(10)).await;
    let sessions = |addr: &str| format!("{} td:nth-child(5)", backend_row(addr));
    let held = text_is(&sessions(&dead), "1");
    waited(
        &mut browser,
        "the client's session",
        &held,
        Duration::from_secs(10),
    )
    .await;
    payload_is_text(&mut browser).await;
    screenshot(&mut browser, "overview").await;

    let killed = s.pods.iter_mut().find(|(n, _)| *n == pinned).expect("pod");
    killed.1.kill().await;
    let started = Instant::now();
    let moved = format!(
        "document.querySelector('{} ')?.dataset.state === 'down' && {} && \
         !!document.querySelector('#timeline li[data-kind=\"reinitialized\"][data-from=\"{dead}\"][data-to=\"{alive}\"]')",
        backend_row(&dead),
        text_is(&sessions(&alive), "1")
    );
    waited(
        &mut browser,
        "the move, in the page",
        &moved,
        Duration::from_secs(10),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    screenshot(&mut browser, "failover").await;
    assert_ne!(client.call_text("whoami", json!({})).await, pinned);
    assert!(client.close().await);
    assert!(hub.close().await);
    operate(&mut browser, &s.gw, &alive).await;
}

/// With a token set, the page shows nothing until it is given: the stream refuses the page
/// without a ticket (401, a JSON-RPC error), and no data is drawn. Typed in, it is live.
async fn locked_until_the_token_is_given(browser: &mut Chromium) {
    let locked = "document.getElementById('status')?.dataset.state === 'locked'";
    waited(browser, "the page locked", locked, Duration::from_secs(10)).await;
    let pools = "document.querySelectorAll('[data-pool]').length";
    assert_eq!(browser.eval(pools).await, 0, "no data without the token");
    let stream =
        "fetch('/console/events').then(async r => r.status + ' ' + (await r.json()).error.code)";
    assert_eq!(browser.eval(stream).await, "401 -32023");
    let typed = format!(
        "document.getElementById('token').value = {ADMIN_TOKEN:?}; \
         document.getElementById('token-form').requestSubmit(); true"
    );
    browser.eval(&typed).await;
    let live = "document.getElementById('status')?.dataset.state === 'live'";
    waited(browser, "the page live", live, Duration::from_secs(10)).await;
    let stored = "sessionStorage.getItem('mcpgw-admin-token') !== null";
    assert_eq!(browser.eval(stored).await, true, "kept for this tab");
}

/// Without the token the API refuses a drain; the page's button, with it, drains the survivor.
async fn operate(browser: &mut Chromium, gw: &Gateway, alive: &str) {
    let refused = format!(
        "fetch('/admin/backends/drain?pool=legacy&backend={alive}', {{method: 'POST'}}).then(r => r.status)"
    );
    assert_eq!(browser.eval(&refused).await, 401);
    let row = backend_row(alive);
    let button = format!("document.querySelector('{row} button[data-action=\"drain\"]')");
    waited(
        browser,
        "a drain button",
        &format!("!!{button}"),
        Duration::from_secs(5),
    )
    .await;
    browser.eval(&format!("{button}.click(); true")).await;
    let draining = format!("document.querySelector('{row}')?.dataset.state === 'draining'");
    waited(
        browser,
        "the survivor draining",
        &draining,
        Duration::from_secs(10),
    )
    .await;
    let (_, backends) = gw.admin_get("/admin/backends").await;
    assert!(backends.contains("\"draining\""), "{backends}");
    screenshot(browser, "operator").await;
}

/// The event streams are bounded: the 17th is answered 503 in JSON while 16 are open, and a
/// closed one makes room again.
#[tokio::test]
async fn event_streams_are_bounded_and_a_closed_one_makes_room() {
    let mock = MockServer::start("m").await;
    let yaml = format!(
        "pools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n",
        mock.addr
    );
    let gw = Gateway::start(&yaml).await;
    let events = Request::bare("GET", "/console/events")
        .header("Authorization", &format!("Bearer {ADMIN_TOKEN}"));
    let mut open = Vec::new();
    for _ in 0..16 {
        let (head, reader) = events.send_for_head(gw.admin).await;
        assert_eq!(head.status, 200);
        assert_eq!(head.header("content-type"), Some("text/event-stream"));
        assert!(head.header("content-security-policy").is_some());
        open.push(reader);
    }
    let (head, mut reader) = events.send_for_head(gw.admin).await;
    assert_eq!(head.status, 503);
    assert_eq!(head.header("content-type"), Some("application/json"));
    let body = mcp_gateway_tests::wire::read_body(&mut reader, &head, false)
        .await
        .expect("a body");
    let v: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(v["error"]["code"], -32018, "{v}");
    assert_eq!(v["error"]["data"]["limit"], 16, "{v}");
    drop(open.pop());
    mcp_gateway_tests::assert_eventually!(
        Duration::from_secs(5),
        events.send_for_head(gw.admin).await.0.status == 200,
        "a closed stream's slot is free again"
    );
}
