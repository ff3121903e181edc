//! Log setup: tracing with text or JSON output; pingora's `log` records bridged in.
//!
//! pingora logs a client that goes away (closes mid-request, times out, sends garbage) at
//! ERROR ("Fail to proxy: Downstream ..."). A client leaving is the client's business, not a
//! failure of the gateway: the bridge passes those records on at DEBUG.
//!
//! The `redis` crate logs every failed connect and slot refresh of a failover at WARN, tens a
//! second: the store's outage has one WARN of its own (`session/store/outage.rs`), so the
//! crate's records are passed on at DEBUG too.

use tracing_subscriber::layer::SubscriberExt;

/// Installs the global subscriber. `json` selects one JSON object per line.
/// The level comes from `RUST_LOG` (default `info`).
pub fn init(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let registry = tracing_subscriber::registry().with(filter);
    let installed = if json {
        tracing::subscriber::set_global_default(registry.with(fmt.json()))
    } else {
        tracing::subscriber::set_global_default(registry.with(fmt))
    };
    if installed.is_ok() && log::set_boxed_logger(Box::new(Bridge)).is_ok() {
        log::set_max_level(match tracing::level_filters::LevelFilter::current() {
            tracing::level_filters::LevelFilter::TRACE => log::LevelFilter::Trace,
            tracing::level_filters::LevelFilter::DEBUG => log::LevelFilter::Debug,
            tracing::level_filters::LevelFilter::INFO => log::LevelFilter::Info,
            tracing::level_filters::LevelFilter::WARN => log::LevelFilter::Warn,
            tracing::level_filters::LevelFilter::ERROR => log::LevelFilter::Error,
            _ => log::LevelFilter::Off,
        });
    }
}

/// Whether a pingora ERROR record is about the client (a `Downstream` error), not about the
/// gateway or a backend.
pub fn is_client_gone(target: &str, level: log::Level, message: &str) -> bool {
    level == log::Level::Error && target.starts_with("pingora") && message.contains("Downstream")
}

/// Whether a record comes from the Redis client (reported by the store's outage instead).
pub fn is_store_client(target: &str) -> bool {
    target == "redis" || target.starts_with("redis::")
}

/// `log` → tracing, with client departures moved from ERROR to DEBUG.
struct Bridge;

impl log::Log for Bridge {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        let message = record.args().to_string();
        if is_client_gone(record.target(), record.level(), &message)
            || is_store_client(record.target())
        {
            let lowered = log::Record::builder()
                .level(log::Level::Debug)
                .target(record.target())
                .args(*record.args())
                .module_path(record.module_path())
                .file(record.file())
                .line(record.line())
                .build();
            let _ = tracing_log::format_trace(&lowered);
        } else {
            let _ = tracing_log::format_trace(record);
        }
    }

    fn flush(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_side_pingora_errors_are_told_from_real_ones() {
        let gone =
            "Fail to proxy: Downstream ConnectionClosed context: while reading request headers";
        let error = log::Level::Error;
        assert!(is_client_gone("pingora_proxy", error, gone));
        let upstream = "Fail to proxy: Upstream ConnectRefused";
        assert!(!is_client_gone("pingora_proxy", error, upstream));
        assert!(!is_client_gone("mcp_gateway", error, gone));
        assert!(!is_client_gone("pingora_proxy", log::Level::Warn, gone));
        assert!(is_store_client("redis::cluster_handling::async_connection"));
        assert!(!is_store_client("redis_events"));
    }
}
