//! Instructions of one body check, for callgrind: `valgrind --tool=callgrind
//! target/release/examples/scan_cost N` runs `inspect_body` N times on the body `mcp-load`
//! sends for a 2026-07-28 `tools/call` (compare N and 2N: the difference over N is one check).
fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let body = std::hint::black_box(
        br#"{"id":7,"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcp-load","version":"0.1.0"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"arguments":{},"name":"whoami"}}"#
            .to_vec(),
    );
    let mut found = 0usize;
    for _ in 0..n {
        let info = mcp_wire::inspect_body(std::hint::black_box(&body)).expect("a message");
        found += info.name.map_or(0, |n| n.len());
    }
    println!("{found}");
}
