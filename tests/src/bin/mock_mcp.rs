//! `mock-mcp`: one mock MCP server as its own process (for benchmarks and manual tests).
//!
//! `mock-mcp --port P [--name N] [--legacy VERSION] [--no-capture]`
//! Listens on 127.0.0.1:P until killed. `--legacy` keeps sessions in memory like a 2025-era
//! server; `--no-capture` stops recording requests (long benchmark runs).

use mcp_gateway_tests::MockServer;

fn main() {
    let mut port = None;
    let mut name = "mock".to_owned();
    let mut legacy = None;
    let mut capture = true;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--port" => port = args.next().and_then(|p| p.parse::<u16>().ok()),
            "--name" => name = args.next().unwrap_or(name),
            "--legacy" => legacy = args.next(),
            "--no-capture" => capture = false,
            _ => {
                eprintln!("usage: mock-mcp --port P [--name N] [--legacy VERSION] [--no-capture]");
                std::process::exit(2);
            }
        }
    }
    let Some(port) = port else {
        eprintln!("--port is required");
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mock = match legacy {
            Some(version) => MockServer::legacy(&name, port, &version).await,
            None => MockServer::start_on(&name, port).await,
        };
        mock.set_capture(capture);
        println!("READY {}", mock.addr.port());
        std::future::pending::<()>().await;
    });
}
