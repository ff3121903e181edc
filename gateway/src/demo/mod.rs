//! `mcp-gateway demo`: the gateway on 127.0.0.1 in front of demo MCP servers of both eras, so
//! a newcomer sees it work with one command:
//! - `/mcp` (stateless): three in-process 2026-07-28 servers; `report_*` calls go to their own
//!   pool by a rule;
//! - `/bridge` (stateful, the era bridge): a legacy client's session on the same 2026-07-28
//!   servers as `/mcp`, each call balanced on its own;
//! - `/legacy` (stateful): three legacy pods, separate processes keeping sessions in memory.
//!   A scripted client opens a session, the demo SIGKILLs its pod, and the next call is
//!   answered by another pod on the same session.
//!
//! The console's address is printed first: the failover waits a moment for a newcomer to open
//! it, then happens there as the terminal tells it. The gateway's log goes to a file
//! ([`log_path`]), so no log line interrupts the story.

mod exit;
mod legacy;
mod show;
mod stateless;

pub use legacy::run_pod;
pub use stateless::{demo_service, DemoServer};

use crate::config::Config;
use exit::or_exit;
use std::process::{Child, Command, Stdio};

/// Ports of one demo: gateway `port`, admin `port+10`, stateless servers `port+1..=3`,
/// legacy pods `port+4..=6`.
pub fn config_yaml(port: u16) -> String {
    format!(
        r#"listen: 127.0.0.1:{port}
admin: 127.0.0.1:{admin}
threads: 2
pools:
  modern: {{ backends: [127.0.0.1:{a}, 127.0.0.1:{b}], balance: round-robin, era: modern }}
  heavy:  {{ backends: [127.0.0.1:{c}] }}
  pods:   {{ backends: [127.0.0.1:{p0}, 127.0.0.1:{p1}, 127.0.0.1:{p2}], failure-cooldown-ms: 5000 }}
routes:
  - path: /mcp
    mode: stateless
    pool: modern
    rules:
      - match: {{ method: tools/call, name: "report_*" }}
        pool: heavy
  - path: /bridge
    mode: stateful
    pool: modern
    upstream-path: /mcp
  - path: /legacy
    mode: stateful
    pool: pods
    upstream-path: /mcp
"#,
        admin = port + 10,
        a = port + 1,
        b = port + 2,
        c = port + 3,
        p0 = port + 4,
        p1 = port + 5,
        p2 = port + 6,
    )
}

/// Where the demo's log goes: `mcp-gateway-demo.log` in the temporary directory.
pub fn log_path() -> std::path::PathBuf {
    std::env::temp_dir().join("mcp-gateway-demo.log")
}

/// Runs the whole demo; never returns.
pub fn run(port: u16) -> ! {
    let config = or_exit(
        crate::config::parse(&config_yaml(port)),
        "the demo's config",
    );
    let exe = or_exit(
        std::env::current_exe(),
        "finding the gateway's own executable",
    );
    let pods: Vec<(String, Child)> = (0..3)
        .map(|i| {
            let name = format!("pod-{i}");
            let child = or_exit(
                Command::new(&exe)
                    .args([
                        "demo-pod",
                        "--port",
                        &(port + 4 + i).to_string(),
                        "--name",
                        &name,
                    ])
                    .stdout(Stdio::null())
                    .spawn(),
                "starting a demo pod",
            );
            (name, child)
        })
        .collect();
    println!("{}", banner(&config));
    let mut server = crate::server::build(config, None);
    for (i, name) in ["demo-a", "demo-b", "demo-c"].iter().enumerate() {
        server.add_service(demo_service(name, port + 1 + i as u16));
    }
    std::thread::spawn(move || show::failover(port, pods));
    server.run_forever()
}

/// What to try, printed at start.
pub fn banner(config: &Config) -> String {
    let gw = config.listen;
    let admin = config.admin.map(|a| a.to_string()).unwrap_or_default();
    let curl = |method: &str, name: Option<&str>, params: &str| {
        let name_header = name
            .map(|n| format!(" -H 'Mcp-Name: {n}'"))
            .unwrap_or_default();
        format!(
            "curl -s http://{gw}/mcp -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\\n     -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: {method}'{name_header} \\\n     -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"{method}\",\"params\":{params}}}'"
        )
    };
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    format!(
        "Open the console: http://{admin}/console  (the failover below happens there too)\n\n\
         mcp-gateway demo: gateway on http://{gw}, admin on http://{admin}; log in {log}\n\
         /mcp     stateless: modern = demo-a + demo-b (round robin), heavy = demo-c (report_* calls)\n\
         /bridge  stateful on the same 2026-07-28 servers: legacy clients bridged (docs/eras.md)\n\
         /legacy  stateful: pods = pod-0, pod-1, pod-2 (legacy servers, sessions in memory)\n\n\
         Try (run whoami twice: the answer alternates between demo-a and demo-b):\n\n\
         {}\n\n{}\n\n\
         A header that disagrees with the body is refused by the gateway (400, JSON-RPC -32020):\n\n{}\n\n\
         A legacy session through the gateway (the demo kills its pod below; the session lives on):\n\n\
         curl -si http://{gw}/legacy -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\\n\
         \x20    -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{{}},\"clientInfo\":{{\"name\":\"curl\",\"version\":\"1\"}}}}}}' | grep -i mcp-session-id\n\n\
         A legacy client (mcp 1.30.0) on the 2026-07-28 servers: the gateway answers its initialize from\n\
         server/discover and sends each call as a 2026-07-28 request, balanced per call:\n\n\
         .venv-mcp1/bin/python tests/peers/bridge_client_v1.py --url http://{gw}/bridge whoami\n\n\
         Metrics: curl -s http://{admin}/metrics | grep mcpgw_\n\
         With the real Python SDK (after scripts/setup-peers):\n\
         .venv-mcp2/bin/python tests/peers/client_v2.py --url http://{gw}/mcp call whoami '{{}}'\n",
        curl("tools/call", Some("whoami"), &format!(r#"{{"name":"whoami",{meta}}}"#)),
        curl("tools/call", Some("report_sales"), &format!(r#"{{"name":"report_sales",{meta}}}"#)),
        curl("tools/call", Some("echo"), &format!(r#"{{"name":"whoami",{meta}}}"#)),
        log = log_path().display(),
    )
}
