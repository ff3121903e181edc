//! How the demo's own setup fails: with a message and exit code 1, not a panic.

/// `result`'s value; else the demo stops there: what failed is printed and the process exits
/// with 1.
pub(super) fn or_exit<T, E: std::fmt::Debug>(result: Result<T, E>, what: &str) -> T {
    result.unwrap_or_else(|e| {
        eprintln!("mcp-gateway demo: {what} failed: {e:?}");
        std::process::exit(1)
    })
}
