//! Safe by default (issue 15): the admin listener refuses browsers and wants a token for
//! changes (hole 3); a loopback listener guards DNS rebinding without being told (and its `*`
//! never crosses a label or a port: hole 9); health checks run by default, so a killed backend
//! reads down until it answers again.

use mcp_gateway_tests::harness::ADMIN_TOKEN;
use mcp_gateway_tests::{assert_eventually, Gateway, MockServer, Request};
use std::time::Duration;

fn pool_config(backend: &MockServer) -> String {
    format!(
        "pools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n",
        backend.addr
    )
}

fn drain(backend: &MockServer) -> Request {
    Request::bare(
        "POST",
        &format!("/admin/backends/drain?pool=p&backend={}", backend.addr),
    )
}

#[tokio::test]
async fn a_cross_site_post_to_the_admin_api_is_refused_and_changes_need_the_token() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&pool_config(&backend)).await;
    let bearer = format!("Bearer {ADMIN_TOKEN}");
    let cross_site = drain(&backend)
        .header("Origin", "http://evil.example")
        .header("Authorization", &bearer);
    assert_eq!(cross_site.send(gw.admin).await.status(), 403);
    let rebound = drain(&backend)
        .header("Host", "evil.example:9090")
        .header("Authorization", &bearer);
    assert_eq!(rebound.send(gw.admin).await.status(), 421);
    let anonymous = drain(&backend).send(gw.admin).await;
    assert_eq!(anonymous.status(), 401);
    assert_eq!(anonymous.head.header("www-authenticate"), Some("Bearer"));
    let (_, view) = gw.admin_get("/admin/backends").await;
    assert!(view.contains("\"up\""), "nothing was drained: {view}");
    let reads = Request::bare("GET", "/admin/backends").send(gw.admin).await;
    assert_eq!(reads.status(), 401, "with a token set, reads need it too");
    assert_eq!(
        Request::bare("GET", "/metrics")
            .send(gw.admin)
            .await
            .status(),
        200
    );
    let operator = drain(&backend).header("Authorization", &bearer);
    assert_eq!(operator.send(gw.admin).await.status(), 200);
}

#[tokio::test]
async fn without_an_admin_token_the_admin_api_only_reads() {
    let backend = MockServer::start("b").await;
    // (a config that names admin-token, in a comment, gets none from the harness)
    let gw = Gateway::start(&format!("# no admin-token\n{}", pool_config(&backend))).await;
    assert_eq!(drain(&backend).send(gw.admin).await.status(), 403);
    let reads = Request::bare("GET", "/admin/backends").send(gw.admin).await;
    assert_eq!(reads.status(), 200);
}

#[tokio::test]
async fn a_loopback_listener_refuses_foreign_hosts_and_origins_by_default() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&pool_config(&backend)).await;
    let call = |id| Request::tools_call("/mcp", id, "whoami");
    let rebound = call(1).header("Host", "evil.example").send(gw.addr).await;
    assert_eq!(rebound.status(), 421);
    assert_eq!(rebound.json()["error"]["code"], -32009);
    let port = gw.addr.port();
    for host in [
        format!("localhost:{port}.evil.com"),
        format!("localhost:{port}@evil.com"),
    ] {
        let resp = call(2).header("Host", &host).send(gw.addr).await;
        // (pingora itself refuses a Host with `@` as a bad request)
        assert!(
            [400, 421].contains(&resp.status()),
            "{host}: {}",
            resp.status()
        );
    }
    let cross = call(3)
        .header("Origin", "http://localhost:1@evil.com")
        .send(gw.addr)
        .await;
    assert_eq!(cross.status(), 403);
    assert_eq!(cross.json()["error"]["code"], -32008);
    assert_eq!(backend.count(), 0, "nothing reached the backend");
    let local = call(4)
        .header("Host", &format!("localhost:{port}"))
        .header("Origin", "http://localhost:5173")
        .send(gw.addr)
        .await;
    assert_eq!(local.status(), 200);
}

#[tokio::test]
async fn a_killed_backend_reads_down_until_it_answers_again() {
    let backend = MockServer::start("b").await;
    let port = backend.addr.port();
    let gw = Gateway::start(&pool_config(&backend)).await;
    let up = format!(
        "mcpgw_backend_up{{pool=\"p\",backend=\"{}\"}}",
        backend.addr
    );
    assert_eventually!(
        Duration::from_secs(10),
        gw.metric(&up).await == 1.0,
        "up at first"
    );
    backend.kill();
    assert_eventually!(
        Duration::from_secs(10),
        gw.metric(&up).await == 0.0,
        "the health checks see the backend gone"
    );
    // passive marks (the call below is refused) last past the 2 s failure cooldown
    let refused = Request::tools_call("/mcp", 1, "whoami").send(gw.addr).await;
    assert_eq!(refused.status(), 503);
    let since = std::time::Instant::now();
    while since.elapsed() < Duration::from_secs(3) {
        assert_eq!(gw.metric(&up).await, 0.0, "still down: nothing answers");
        // looks spread past the 2 s cooldown: that the mark outlasts it is the behaviour
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let _again = MockServer::start_on("b", port).await;
    assert_eventually!(
        Duration::from_secs(10),
        gw.metric(&up).await == 1.0,
        "up again once it answers"
    );
}
