//! Log setup: tracing with text or JSON output; pingora's `log` records bridged in.

/// Installs the global subscriber. `json` selects one JSON object per line.
/// The level comes from `RUST_LOG` (default `info`).
pub fn init(json: bool) {
    // tracing-subscriber's `tracing-log` feature installs the `log` -> tracing bridge.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
