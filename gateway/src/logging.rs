//! Log setup: tracing with text or JSON output; pingora's `log` records bridged in.
//!
//! pingora logs some conditions the gateway handles at ERROR. The bridge passes these records
//! on at DEBUG, each counted in `mcpgw_log_records_demoted_total{record}` (`quiet.rs`), by
//! target and message ([`demotion`]):
//! - a client that goes away (closes mid-request, times out, sends garbage): "Fail to proxy:
//!   Downstream ..." (`client-gone`): the client's business, not a failure of the gateway;
//! - `pingora_core::connectors` "failed to acquire reusable stream" (`pool-race`): a pooled
//!   upstream connection another request still held a reference to at that instant (a race
//!   in pingora's pool); pingora opens a new connection and the request goes on;
//! - the `redis` crate's own records (`store-client`): it logs every failed connect and slot
//!   refresh of a failover at WARN, tens a second, and the store's outage has one WARN of its
//!   own (`session/store/outage.rs`, through `quiet::STORE`).
//!
//! The records pingora writes itself through the `ProxyHttp` hooks ("Fail to proxy" for a
//! request the gateway answered with a documented error, the retry warning after a refused
//! connect) are kept out in `proxy/mod.rs` (`suppress_error_log`, `suppress_proxy_warn_log`).

use tracing_subscriber::layer::SubscriberExt;

/// Installs the global subscriber, writing to stderr. `json` selects one JSON object per line.
/// The level comes from `RUST_LOG` (default `info`).
pub fn init(json: bool) {
    init_with(json, std::io::stderr, true);
}

/// [`init`], writing to `file` instead (the demo keeps its story on the terminal and its log
/// out of it).
pub fn init_to_file(json: bool, file: std::fs::File) {
    init_with(json, std::sync::Mutex::new(file), false);
}

fn init_with<W>(json: bool, writer: W, ansi: bool)
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let fmt = tracing_subscriber::fmt::layer().with_writer(writer);
    let registry = tracing_subscriber::registry().with(filter);
    let installed = if json {
        tracing::subscriber::set_global_default(registry.with(fmt.json()))
    } else {
        tracing::subscriber::set_global_default(registry.with(fmt.with_ansi(ansi)))
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

/// The `record` label of a record the bridge moves to DEBUG, `None` for the others.
pub fn demotion(target: &str, level: log::Level, message: &str) -> Option<&'static str> {
    if is_client_gone(target, level, message) {
        return Some("client-gone");
    }
    if is_store_client(target) {
        return Some("store-client");
    }
    if level <= log::Level::Warn
        && target.starts_with("pingora_core::connectors")
        && message.starts_with("failed to acquire reusable stream")
    {
        return Some("pool-race");
    }
    None
}

/// `log` → tracing, with client departures moved from ERROR to DEBUG.
struct Bridge;

impl log::Log for Bridge {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        // only records at WARN and above are looked at (and formatted) here
        let demoted = (record.level() <= log::Level::Warn)
            .then(|| demotion(record.target(), record.level(), &record.args().to_string()))
            .flatten();
        if let Some(label) = demoted {
            crate::quiet::demoted(label);
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

    #[test]
    fn the_pool_race_is_demoted_and_real_connector_errors_are_not() {
        let race = "failed to acquire reusable stream";
        let e = log::Level::Error;
        assert_eq!(
            demotion("pingora_core::connectors", e, race),
            Some("pool-race")
        );
        assert_eq!(
            demotion("pingora_core::connectors::l4", e, "connect refused"),
            None
        );
        assert_eq!(demotion("mcp_gateway", e, race), None);
        let gone = "Fail to proxy: Downstream ConnectionClosed";
        assert_eq!(demotion("pingora_proxy", e, gone), Some("client-gone"));
        assert_eq!(
            demotion("pingora_proxy", e, "Fail to proxy: Upstream ConnectRefused"),
            None
        );
    }
}
