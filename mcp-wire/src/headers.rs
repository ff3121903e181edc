//! Every MCP header name in one place, and decoding of header values.

use base64::Engine;
use std::borrow::Cow;

/// The session id minted by a 2025-era server (and, on stateful routes, by the gateway).
pub const MCP_SESSION_ID: &str = "mcp-session-id";
/// The negotiated (legacy) or per-request (2026-07-28) protocol version.
pub const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// 2026-07-28: mirrors the body's `method`.
pub const MCP_METHOD: &str = "mcp-method";
/// 2026-07-28: mirrors `params.name` (tools/call, prompts/get) or `params.uri` (resources/read).
pub const MCP_NAME: &str = "mcp-name";
/// SSE resumption cursor.
pub const LAST_EVENT_ID: &str = "last-event-id";
/// The gateway's hop marker: set on a retry of an `input_required` call one replica forwards
/// to the replica holding the parked call, which never forwards it again.
pub const MCPGW_FORWARDED: &str = "mcpgw-forwarded";

use http::HeaderName;

/// [`MCP_METHOD`] as a pre-built header name (no parsing per lookup).
pub static MCP_METHOD_NAME: HeaderName = HeaderName::from_static(MCP_METHOD);
/// [`MCP_NAME`] as a pre-built header name.
pub static MCP_NAME_NAME: HeaderName = HeaderName::from_static(MCP_NAME);
/// [`MCP_PROTOCOL_VERSION`] as a pre-built header name.
pub static MCP_PROTOCOL_VERSION_NAME: HeaderName = HeaderName::from_static(MCP_PROTOCOL_VERSION);

/// Decodes a header value, including the `=?base64?<b64>?=` sentinel form that 2026-07-28 clients
/// use for values that are not visible ASCII. Returns `None` for a malformed sentinel or non-UTF-8.
pub fn decode_value(raw: &[u8]) -> Option<Cow<'_, str>> {
    const PREFIX: &[u8] = b"=?base64?";
    const SUFFIX: &[u8] = b"?=";
    if raw.len() >= PREFIX.len() + SUFFIX.len()
        && raw[..PREFIX.len()].eq_ignore_ascii_case(PREFIX)
        && raw.ends_with(SUFFIX)
    {
        let inner = &raw[PREFIX.len()..raw.len() - SUFFIX.len()];
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(inner)
            .ok()?;
        return String::from_utf8(bytes).ok().map(Cow::Owned);
    }
    std::str::from_utf8(raw).ok().map(Cow::Borrowed)
}

/// Encodes a header value as a 2026-07-28 client does (the TypeScript SDK's `needsBase64`):
/// a plain value when it is visible ASCII, space or tab without leading or trailing
/// whitespace, else (and for the empty string, or a value that already looks like the
/// sentinel) `=?base64?<b64 of its UTF-8>?=`. [`decode_value`] reverses it.
pub fn encode_value(value: &str) -> String {
    let looks_encoded = value.len() >= 11
        && value.as_bytes()[..9].eq_ignore_ascii_case(b"=?base64?")
        && value.ends_with("?=");
    let plain = !value.is_empty()
        && !looks_encoded
        && value.trim() == value
        && value
            .bytes()
            .all(|b| b == b'\t' || (0x20..=0x7e).contains(&b));
    if plain {
        return value.to_owned();
    }
    let b64 = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
    format!("=?base64?{b64}?=")
}

/// The MCP headers of one request, decoded.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct McpHeaders<'a> {
    /// `Mcp-Method`, decoded.
    pub method: Option<Cow<'a, str>>,
    /// `Mcp-Name`, decoded.
    pub name: Option<Cow<'a, str>>,
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<&'a str>,
}

/// Why the MCP headers cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderProblem {
    /// The header was sent more than once.
    Duplicated(&'static str),
    /// Not visible ASCII / bad base64 sentinel / not UTF-8.
    Undecodable(&'static str),
}

/// The `Mcp-Session-Id` a head carries (its first), when it is visible ASCII.
pub fn session_id(headers: &http::HeaderMap) -> Option<String> {
    headers
        .get(MCP_SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Reads `Mcp-Method`, `Mcp-Name` and `MCP-Protocol-Version`. With `strict`, duplicated or
/// undecodable headers are problems (as the 2.3.0 server treats them); otherwise the first
/// decodable value is used and bad ones are ignored.
pub fn read_mcp_headers(
    headers: &http::HeaderMap,
    strict: bool,
) -> Result<McpHeaders<'_>, HeaderProblem> {
    // one pass over the head: three hashed lookups cost more than comparing a request's few
    // header names (a name's values come one after another, the first first)
    let mut raw: [Option<&[u8]>; 3] = [None; 3];
    for (key, value) in headers {
        let slot = if key == MCP_METHOD_NAME {
            0
        } else if key == MCP_NAME_NAME {
            1
        } else if key == MCP_PROTOCOL_VERSION_NAME {
            2
        } else {
            continue;
        };
        if raw[slot].is_none() {
            raw[slot] = Some(value.as_bytes());
        } else if strict {
            return Err(HeaderProblem::Duplicated(key_name(slot)));
        }
    }
    fn key_name(slot: usize) -> &'static str {
        [MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION][slot]
    }
    fn decode<'a>(
        name: &'static str,
        raw: Option<&'a [u8]>,
        strict: bool,
    ) -> Result<Option<Cow<'a, str>>, HeaderProblem> {
        match raw.map(decode_value) {
            None => Ok(None),
            Some(Some(v)) => Ok(Some(v)),
            Some(None) if strict => Err(HeaderProblem::Undecodable(name)),
            Some(None) => Ok(None),
        }
    }
    let method = decode(MCP_METHOD, raw[0], strict)?;
    let name = decode(MCP_NAME, raw[1], strict)?;
    let protocol_version = match raw[2] {
        None => None,
        Some(raw) => match std::str::from_utf8(raw) {
            Ok(v) => Some(v),
            Err(_) if strict => return Err(HeaderProblem::Undecodable(MCP_PROTOCOL_VERSION)),
            Err(_) => None,
        },
    };
    Ok(McpHeaders {
        method,
        name,
        protocol_version,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&'static str, &'static str)]) -> http::HeaderMap {
        let mut m = http::HeaderMap::new();
        for (k, v) in pairs {
            m.append(*k, http::HeaderValue::from_static(v));
        }
        m
    }

    #[test]
    fn reads_and_decodes_all_three() {
        let m = map(&[
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?csOpc3Vtw6k=?="),
            ("mcp-protocol-version", "2026-07-28"),
        ]);
        let h = read_mcp_headers(&m, true).unwrap();
        assert_eq!(h.method.as_deref(), Some("tools/call"));
        assert_eq!(h.name.as_deref(), Some("r\u{e9}sum\u{e9}"));
        assert_eq!(h.protocol_version, Some("2026-07-28"));
    }

    #[test]
    fn duplicates_are_a_problem_only_when_strict() {
        let m = map(&[("mcp-method", "tools/call"), ("mcp-method", "tools/list")]);
        assert_eq!(
            read_mcp_headers(&m, true),
            Err(HeaderProblem::Duplicated(MCP_METHOD))
        );
        assert_eq!(
            read_mcp_headers(&m, false).unwrap().method.as_deref(),
            Some("tools/call")
        );
    }

    #[test]
    fn bad_sentinel_is_undecodable() {
        let m = map(&[("mcp-name", "=?base64?!!?=")]);
        assert_eq!(
            read_mcp_headers(&m, true),
            Err(HeaderProblem::Undecodable(MCP_NAME))
        );
        assert_eq!(read_mcp_headers(&m, false).unwrap().name, None);
    }

    #[test]
    fn plain_values_pass_through() {
        assert_eq!(decode_value(b"tools/call").as_deref(), Some("tools/call"));
    }

    #[test]
    fn base64_sentinel_is_decoded() {
        // "résumé" in UTF-8, base64
        assert_eq!(
            decode_value(b"=?base64?csOpc3Vtw6k=?=").as_deref(),
            Some("r\u{e9}sum\u{e9}")
        );
    }

    #[test]
    fn malformed_sentinel_is_rejected() {
        assert_eq!(decode_value(b"=?base64?***?="), None);
    }
}
