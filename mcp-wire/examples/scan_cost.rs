//! Instructions of one body check, for callgrind: `valgrind --tool=callgrind
//! target/release/examples/scan_cost N [BODY]` runs `inspect_body` N times on one body (compare
//! N and 2N: the difference over N is one check). BODY: `call` (default: the body `mcp-load`
//! sends for a 2026-07-28 `tools/call`), or that call with a 4 KiB argument of `ascii` text,
//! `latin` text (an accented letter every few bytes) or `cjk` text (three-byte characters).
fn main() -> std::process::ExitCode {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let call = |argument: &str| {
        format!(
            r#"{{"id":7,"jsonrpc":"2.0","method":"tools/call","params":{{"_meta":{{"io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"mcp-load","version":"0.1.0"}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}},"arguments":{{{argument}}},"name":"whoami"}}}}"#
        )
    };
    let text = |unit: &str| format!(r#""q":"{}""#, unit.repeat(4096 / unit.len()));
    let body = match std::env::args().nth(2).as_deref() {
        None | Some("call") => call(""),
        Some("ascii") => call(&text("lorem ipsum ")),
        Some("latin") => call(&text("café crème ")),
        Some("cjk") => call(&text("漢字")),
        Some(other) => {
            eprintln!("unknown body {other}: call, ascii, latin or cjk");
            return std::process::ExitCode::from(2);
        }
    };
    let body = std::hint::black_box(body.into_bytes());
    let mut found = 0usize;
    for _ in 0..n {
        match mcp_wire::inspect_body(std::hint::black_box(&body)) {
            Ok(info) => found += info.name.map_or(0, |n| n.len()),
            Err(e) => {
                eprintln!("not a message: {e:?}");
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    println!("{found}");
    std::process::ExitCode::SUCCESS
}
