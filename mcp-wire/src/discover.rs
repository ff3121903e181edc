//! The era probe's protocol knowledge, as pure functions (no I/O): the two probe messages
//! (a 2026-07-28 `server/discover`, then a legacy `initialize`) and the reading of their
//! answers into a backend era. `upstream/era.rs` sends them and records the finding.
//!
//! A backend is legacy only when it positively is a legacy session server: it refused the
//! sessionless `server/discover` for want of a session, the way the legacy SDKs do, or it
//! opened a session at `initialize`. An answer that proves nothing (a static JSON responder, a
//! plain JSON-RPC service, a server that keeps no session) leaves the era unknown: such a
//! backend takes requests of both eras, 2026-07-28 ones passed through natively.
//!
//! | answer to `server/discover` (2026-07-28) | verdict |
//! |---|---|
//! | `supportedVersions` contains 2026-07-28 | modern, then the `initialize` probe decides dual |
//! | -32022 whose `data.supported` names 2026-07-28 | modern, then the `initialize` probe |
//! | HTTP 401, 403, 408, 429 or 5xx | inconclusive (not cached, retried later) |
//! | a 4xx JSON-RPC error asking for a session ("Missing session ID", "No valid session ID", "Server not initialized") | legacy, no `initialize` needed |
//! | anything else (-32601, 404, 405, a result without the version, not JSON) | proves nothing: the `initialize` probe decides |
//!
//! | answer to the legacy `initialize` | after a modern `server/discover` | after one that proved nothing |
//! |---|---|---|
//! | a result with a `protocolVersion` (an `InitializeResult`) and an `Mcp-Session-Id` | dual | legacy |
//! | the same result without a session id | dual | unknown (no session server) |
//! | HTTP 401, 403, 408, 429 or 5xx | inconclusive | inconclusive |
//! | anything else (400 -32022, 404 -32601, ...) | modern | unknown |
//!
//! Why a second probe: `supportedVersions` does not tell whether legacy clients are served
//! (PyPI mcp 2.3.0 lists only `2026-07-28` and serves `initialize` sessions; the TypeScript
//! SDK v2 `createMcpHandler` with `legacy: 'reject'` lists the same and answers `initialize`
//! 400 -32022). Only an `initialize` shows it.

use super::era::STATELESS_SINCE;
use super::BackendEra;
use serde_json::{json, Value};

/// `clientInfo.name` of the probes (a mock can tell them from client traffic by it).
pub const PROBE_CLIENT: &str = "mcp-gateway-era-probe";
/// The legacy version the `initialize` probe asks for.
pub const PROBE_LEGACY_VERSION: &str = "2025-11-25";

/// The body of the `server/discover` probe (2026-07-28, `_meta` with the required keys).
pub fn discover_body() -> String {
    json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "server/discover",
        "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": STATELESS_SINCE,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": client_info(),
        }},
    })
    .to_string()
}

/// The body of the legacy `initialize` probe.
pub fn initialize_body() -> String {
    json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": PROBE_LEGACY_VERSION,
            "capabilities": {},
            "clientInfo": client_info(),
        },
    })
    .to_string()
}

fn client_info() -> Value {
    json!({"name": PROBE_CLIENT, "version": env!("CARGO_PKG_VERSION")})
}

/// What one probe answer says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The backend serves what the probe asked (2026-07-28 for `server/discover`, a legacy
    /// session for `initialize`).
    Serves,
    /// The backend answered and does not serve it (which proves no era by itself).
    Refuses,
    /// `server/discover` refused for want of a session, the way legacy session servers
    /// refuse every sessionless request: a legacy backend.
    WantsSession,
    /// The answer says nothing about the era (auth, overload, server error): ask again later.
    Inconclusive,
}

/// Whether an HTTP status says nothing about the protocol: the request never got as far.
fn inconclusive_status(status: u16) -> bool {
    matches!(status, 401 | 403 | 408 | 429) || status >= 500
}

/// Reads the answer to `server/discover` (status, content type, whole body).
pub fn read_discover(status: u16, content_type: Option<&str>, body: &[u8]) -> Verdict {
    if inconclusive_status(status) {
        return Verdict::Inconclusive;
    }
    let Some(answer) = super::sse::response(content_type, body) else {
        return Verdict::Refuses;
    };
    let names_modern = |list: Option<&Value>| {
        list.and_then(Value::as_array)
            .is_some_and(|l| l.iter().any(|v| v.as_str() == Some(STATELESS_SINCE)))
    };
    if let Some(result) = answer.get("result") {
        return verdict(names_modern(result.get("supportedVersions")));
    }
    let error = answer.get("error");
    let code = error.and_then(|e| e.get("code")).and_then(Value::as_i64);
    let supported = error.and_then(|e| e.pointer("/data/supported"));
    if code == Some(-32022) && names_modern(supported) {
        return Verdict::Serves;
    }
    let message = error.and_then(|e| e.get("message")).and_then(Value::as_str);
    if (400..500).contains(&status) && message.is_some_and(asks_for_session) {
        return Verdict::WantsSession;
    }
    Verdict::Refuses
}

/// Whether an error message refuses a request for want of a session, as the legacy SDKs word
/// it: "Bad Request: Missing session ID" (Python), "Bad Request: No valid session ID provided"
/// and "Bad Request: Server not initialized" (TypeScript).
fn asks_for_session(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("session") || m.contains("not initialized")
}

/// Reads the answer to the legacy `initialize` probe.
pub fn read_initialize(status: u16, content_type: Option<&str>, body: &[u8]) -> Verdict {
    if inconclusive_status(status) {
        return Verdict::Inconclusive;
    }
    let served = super::sse::response(content_type, body)
        .and_then(|a| a.pointer("/result/protocolVersion").cloned())
        .is_some_and(|v| v.is_string());
    verdict(served)
}

fn verdict(serves: bool) -> Verdict {
    if serves {
        Verdict::Serves
    } else {
        Verdict::Refuses
    }
}

/// What a whole probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finding {
    /// The backend's era.
    Era(BackendEra),
    /// It answered, but nothing it said proves an era: unknown (it takes requests of both
    /// eras), and not asked again until an answer or a restart gives cause.
    Unknown,
    /// Nothing was learned (auth, overload, server error, timeout): asked again later.
    Inconclusive,
}

/// The finding from the two verdicts (`initialize`: `None` when it was not sent; `session`:
/// its answer carried an `Mcp-Session-Id`). A discover answer asking for a session is final.
pub fn era_of(discover: Verdict, initialize: Option<Verdict>, session: bool) -> Finding {
    use Verdict::*;
    match (discover, initialize) {
        (Inconclusive, _) | (_, Some(Inconclusive)) => Finding::Inconclusive,
        (WantsSession, _) => Finding::Era(BackendEra::Legacy),
        (Serves, Some(Serves)) => Finding::Era(BackendEra::Dual),
        (Serves, Some(Refuses | WantsSession) | None) => Finding::Era(BackendEra::Modern),
        (Refuses, Some(Serves)) if session => Finding::Era(BackendEra::Legacy),
        (Refuses, _) => Finding::Unknown,
    }
}

impl Finding {
    /// The `result` label of `mcpgw_era_probes_total`.
    pub fn as_str(self) -> &'static str {
        match self {
            Finding::Era(era) => era.as_str(),
            Finding::Unknown => "unknown",
            Finding::Inconclusive => "inconclusive",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: Option<&str> = Some("application/json");
    const SSE: Option<&str> = Some("text/event-stream");

    #[test]
    fn a_discover_result_listing_2026_07_28_serves_the_modern_era() {
        // mcp 2.3.0 and the TypeScript SDK v2 (both list only 2026-07-28)
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{},"resultType":"complete","ttlMs":0,"cacheScope":"private"}}"#;
        assert_eq!(read_discover(200, JSON, body), Verdict::Serves);
        let sse = b"event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"supportedVersions\":[\"2025-11-25\",\"2026-07-28\"]}}\r\n\r\n";
        assert_eq!(read_discover(200, SSE, sse), Verdict::Serves);
        let other = br#"{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2025-11-25"]}}"#;
        assert_eq!(read_discover(200, JSON, other), Verdict::Refuses);
    }

    #[test]
    fn legacy_servers_refuse_discover_with_their_session_errors() {
        // FastMCP 1.30.0 (stateful): 400 -32600, with a throwaway session id the reader ignores
        let fastmcp = br#"{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Bad Request: Missing session ID"}}"#;
        assert_eq!(read_discover(400, JSON, fastmcp), Verdict::WantsSession);
        // TypeScript SDK 1.32.2 and server-everything: 400 -32000
        let ts = br#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#;
        assert_eq!(read_discover(400, JSON, ts), Verdict::WantsSession);
        let uninit = br#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}"#;
        assert_eq!(read_discover(400, JSON, uninit), Verdict::WantsSession);
    }

    #[test]
    fn answers_that_prove_nothing_are_not_legacy() {
        // a plain JSON-RPC service, a server that routes by method, a static JSON responder
        let unknown =
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}"#;
        assert_eq!(read_discover(404, JSON, unknown), Verdict::Refuses);
        assert_eq!(read_discover(200, JSON, unknown), Verdict::Refuses);
        assert_eq!(read_discover(405, None, b""), Verdict::Refuses);
        assert_eq!(read_discover(200, JSON, b"not json"), Verdict::Refuses);
        let fixed =
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"static"}]}}"#;
        assert_eq!(read_discover(200, JSON, fixed), Verdict::Refuses);
        // a 400 that is not about a session; a session named in a success is no refusal
        let other = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: Unsupported protocol version"}}"#;
        assert_eq!(read_discover(400, JSON, other), Verdict::Refuses);
        let named =
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"session pool busy"}}"#;
        assert_eq!(read_discover(200, JSON, named), Verdict::Refuses);
    }

    #[test]
    fn unsupported_version_errors_count_only_when_they_name_2026_07_28() {
        let shared = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}}"#;
        assert_eq!(read_discover(400, JSON, shared), Verdict::Serves);
        let legacy_only = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported","data":{"supported":["2025-06-18"]}}}"#;
        assert_eq!(read_discover(400, JSON, legacy_only), Verdict::Refuses);
    }

    #[test]
    fn auth_overload_and_server_errors_are_inconclusive() {
        for status in [401, 403, 408, 429, 500, 502, 503, 504] {
            assert_eq!(read_discover(status, None, b""), Verdict::Inconclusive);
            assert_eq!(read_initialize(status, None, b""), Verdict::Inconclusive);
        }
    }

    #[test]
    fn an_initialize_result_means_legacy_clients_are_served() {
        // mcp 2.3.0 stateful: a real InitializeResult (and a session id, deleted by the prober)
        let served = br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
        assert_eq!(read_initialize(200, JSON, served), Verdict::Serves);
        // TypeScript SDK v2 with legacy: 'reject'
        let rejected = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"2025-11-25"}}}"#;
        assert_eq!(read_initialize(400, JSON, rejected), Verdict::Refuses);
        // a modern-only server that routes by method: -32601; a result that is no InitializeResult
        let unknown = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: initialize"}}"#;
        assert_eq!(read_initialize(404, JSON, unknown), Verdict::Refuses);
        let odd = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
        assert_eq!(read_initialize(200, JSON, odd), Verdict::Refuses);
    }

    #[test]
    fn the_era_follows_from_both_verdicts() {
        use Verdict::*;
        let era = |e| Finding::Era(e);
        assert_eq!(era_of(WantsSession, None, false), era(BackendEra::Legacy));
        assert_eq!(era_of(Serves, Some(Serves), true), era(BackendEra::Dual));
        assert_eq!(era_of(Serves, Some(Serves), false), era(BackendEra::Dual));
        assert_eq!(
            era_of(Serves, Some(Refuses), false),
            era(BackendEra::Modern)
        );
        assert_eq!(
            era_of(Serves, Some(Inconclusive), false),
            Finding::Inconclusive
        );
        assert_eq!(era_of(Inconclusive, None, false), Finding::Inconclusive);
        // after a discover answer that proved nothing, only an opened session is legacy
        assert_eq!(era_of(Refuses, Some(Serves), true), era(BackendEra::Legacy));
        assert_eq!(era_of(Refuses, Some(Serves), false), Finding::Unknown);
        assert_eq!(era_of(Refuses, Some(Refuses), false), Finding::Unknown);
        assert_eq!(
            era_of(Refuses, Some(Inconclusive), false),
            Finding::Inconclusive
        );
    }

    proptest::proptest! {
        #[test]
        fn any_answer_is_read_without_panicking_and_overload_is_never_an_era(
            status in 100u16..600,
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..256),
            sse in proptest::bool::ANY,
        ) {
            let ct = if sse { SSE } else { JSON };
            let d = read_discover(status, ct, &body);
            let i = read_initialize(status, ct, &body);
            if inconclusive_status(status) {
                proptest::prop_assert_eq!(d, Verdict::Inconclusive);
                proptest::prop_assert_eq!(i, Verdict::Inconclusive);
            } else {
                proptest::prop_assert_ne!(d, Verdict::Inconclusive);
                proptest::prop_assert_ne!(i, Verdict::Inconclusive);
            }
        }
    }

    #[test]
    fn the_probes_carry_what_each_era_requires() {
        let discover: Value = serde_json::from_str(&discover_body()).unwrap();
        let meta = &discover["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
        let init: Value = serde_json::from_str(&initialize_body()).unwrap();
        assert_eq!(init["params"]["protocolVersion"], PROBE_LEGACY_VERSION);
        assert_eq!(init["params"]["clientInfo"]["name"], PROBE_CLIENT);
    }
}
