//! The harness's own guarantees: a process it starts talks on ports proven to be its own, and
//! a mock can die and come back at an address no one else can take in between.

use mcp_gateway_tests::ports::{check, Listening};
use mcp_gateway_tests::{free_port, DeadAddr, Gateway, MockServer, PortClaim, Request};
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

#[tokio::test]
async fn a_claimed_address_refuses_while_its_mock_is_dead_and_no_one_else_can_take_it() {
    let claim = PortClaim::new();
    let a = MockServer::legacy_on(&claim, "a", "2025-11-25").await;
    assert_eq!(a.addr, claim.addr);
    assert_eq!(
        check(std::process::id(), claim.addr.port()),
        Listening::Ours
    );
    a.kill();
    drop(a);
    let back = MockServer::legacy_on(&claim, "a2", "2025-11-25").await;
    assert_eq!(back.addr, claim.addr);
    back.kill();
    mcp_gateway_tests::assert_eventually!(
        std::time::Duration::from_secs(5),
        tokio::net::TcpStream::connect(claim.addr).await.is_err(),
        "connections to a dead claimed address are refused"
    );
    assert!(
        TcpListener::bind(claim.addr).is_err(),
        "a stranger cannot bind the claimed port"
    );
    let dead = DeadAddr::new();
    assert!(tokio::net::TcpStream::connect(dead.addr).await.is_err());
    assert!(TcpListener::bind(dead.addr).is_err());
}
