//! The harness's own guarantees: a process it starts talks on ports proven to be its own.

use mcp_gateway_tests::ports::{check, Listening};
use mcp_gateway_tests::{free_port, Gateway, MockServer, Request};
use std::net::TcpListener;

#[tokio::test]
async fn a_gateway_whose_port_is_taken_starts_again_on_ports_of_its_own() {
    let mock = MockServer::start("m").await;
    // a stranger listens on the first port the harness picks
    let stranger = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = stranger.local_addr().unwrap().port();
    let mut picks = vec![taken];
    let gw = Gateway::start_picking(
        &format!(
            "pools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n",
            mock.addr
        ),
        move || picks.pop().unwrap_or_else(free_port),
    )
    .await;
    assert_ne!(gw.addr.port(), taken);
    assert_eq!(check(gw.pid(), gw.addr.port()), Listening::Ours);
    assert_eq!(check(gw.pid(), gw.admin.port()), Listening::Ours);
    assert!(matches!(check(gw.pid(), taken), Listening::Contended(_)));
    let resp = Request::tools_call("/mcp", 1, "whoami").send(gw.addr).await;
    assert_eq!(resp.tool_text(), "m");
}
