//! `mock-interceptor`: one mock interceptor server (SEP-2624 draft wire shapes) as its own
//! process, for benchmarks: one validator of `tools/call` requests that denies a payload
//! holding "secret" (it lets the benchmark's calls through, each checked).
//!
//! `mock-interceptor --port P` listens on 127.0.0.1:P until killed.

use mcp_gateway_tests::interceptor_mock::{MockInterceptor, Rule};

fn main() {
    let mut args = std::env::args().skip(1);
    let port = match (args.next().as_deref(), args.next()) {
        (Some("--port"), Some(p)) => p.parse::<u16>().ok(),
        _ => None,
    };
    let Some(port) = port else {
        eprintln!("usage: mock-interceptor --port P");
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let rules = vec![Rule::deny("deny-secret", "tools/call", "request", "secret")];
        let _mock = MockInterceptor::start_on(port, rules).await;
        std::future::pending::<()>().await;
    });
}
