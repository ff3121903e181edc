//! Header/body agreement for 2026-07-28 requests and notifications: `Mcp-Method`, `Mcp-Name`
//! (requests naming a tool, prompt, resource or task) and `MCP-Protocol-Version` must say what
//! the body says (the 2.3.0 server's -32020 rules).

use crate::error::GatewayError;
use mcp_wire::headers::{read_mcp_headers, MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION};
use mcp_wire::{inspect_body, BodyInfo, RequestId};

/// Methods whose `Mcp-Name` mirrors a body field.
const NAMED_METHODS: &[&str] = &[
    "tools/call",
    "prompts/get",
    "resources/read",
    // the spec: `Mcp-Name` carries `params.taskId`, so a balancer can route by it
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
];

/// A body refused by the check: the error to answer and the request's id, when known.
#[derive(Debug)]
pub struct Rejected {
    /// The request's id (`None` when the body could not be parsed).
    pub id: Option<RequestId>,
    /// What to answer.
    pub error: GatewayError,
}

fn rejected(info: Option<&BodyInfo<'_>>, error: GatewayError) -> Box<Rejected> {
    Box::new(Rejected {
        id: info.map(BodyInfo::request_id),
        error,
    })
}

/// Inspects a complete body and checks it against the request's MCP headers.
/// Returns the body's info or what to answer instead of forwarding it.
pub fn check_body<'b>(
    headers: &http::HeaderMap,
    body: &'b [u8],
) -> Result<BodyInfo<'b>, Box<Rejected>> {
    let info = inspect_body(body).map_err(|e| rejected(None, e.into()))?;
    // Responses carry no method to check (a 2026-07-28 client sends none).
    if info.method.is_none() {
        return Ok(info);
    }
    let h = match read_mcp_headers(headers, true) {
        Ok(h) => h,
        Err(_) => return Ok(info), // already answered in request_filter
    };
    // A notification's headers are checked as a request's are (`Mcp-Method`, the version),
    // but a missing `Mcp-Method` is no mismatch there: the spec requires the header on
    // requests only, and the TypeScript SDK's server dispatches a notification without it,
    // while one that disagrees with the body is its -32020. Refused, a notification is
    // answered 400 with a null id, as an SDK server answers a body it cannot take.
    let method = info.method.as_deref();
    let request = info.id.is_some();
    if h.method.as_deref() != method && (request || h.method.is_some()) {
        let err = GatewayError::header_mismatch(MCP_METHOD, h.method.as_deref(), method);
        return Err(rejected(Some(&info), err));
    }
    if request
        && method.is_some_and(|m| NAMED_METHODS.contains(&m))
        && h.name.as_deref() != info.name.as_deref()
    {
        let err = GatewayError::header_mismatch(MCP_NAME, h.name.as_deref(), info.name.as_deref());
        return Err(rejected(Some(&info), err));
    }
    if let (Some(hv), Some(bv)) = (h.protocol_version, info.meta_protocol_version.as_deref()) {
        if hv != bv {
            let err = GatewayError::header_mismatch(MCP_PROTOCOL_VERSION, Some(hv), Some(bv));
            return Err(rejected(Some(&info), err));
        }
    }
    Ok(info)
}

/// What a read body says (`mcp_wire::inspect`), checked against the request's MCP headers
/// when `check` (the route's `check-headers`); the request's id noted in `ctx` for the answer,
/// a refused body's too. The one reading of a gateway-driven request's body, on every path.
pub fn inspect<'b>(
    ctx: &mut crate::request::ctx::RequestCtx,
    headers: &http::HeaderMap,
    body: &'b [u8],
    check: bool,
) -> Result<BodyInfo<'b>, crate::error::GatewayError> {
    let info = if check {
        check_body(headers, body).map_err(|rejected| {
            ctx.request_id = rejected.id;
            rejected.error
        })?
    } else {
        inspect_body(body)?
    };
    ctx.request_id = Some(info.request_id());
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn headers(pairs: &[(&'static str, &'static str)]) -> http::HeaderMap {
        let mut m = http::HeaderMap::new();
        for (k, v) in pairs {
            m.append(*k, http::HeaderValue::from_static(v));
        }
        m
    }

    const CALL: &[u8] = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"whoami","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;

    #[test]
    fn agreeing_headers_pass() {
        let h = headers(&[
            ("mcp-method", "tools/call"),
            ("mcp-name", "whoami"),
            ("mcp-protocol-version", "2026-07-28"),
        ]);
        assert!(check_body(&h, CALL).is_ok());
    }

    #[test]
    fn method_name_and_version_mismatches_are_caught() {
        for (pairs, header) in [
            (
                vec![("mcp-method", "tools/list"), ("mcp-name", "whoami")],
                MCP_METHOD,
            ),
            (
                vec![("mcp-method", "tools/call"), ("mcp-name", "other")],
                MCP_NAME,
            ),
            (vec![("mcp-method", "tools/call")], MCP_NAME),
            (
                vec![
                    ("mcp-method", "tools/call"),
                    ("mcp-name", "whoami"),
                    ("mcp-protocol-version", "2027-01-01"),
                ],
                MCP_PROTOCOL_VERSION,
            ),
        ] {
            let err = check_body(&headers(&pairs), CALL).unwrap_err().error;
            assert_eq!(err.kind, ErrorKind::HeaderMismatch);
            assert_eq!(err.data["header"], header, "{pairs:?}");
        }
    }

    #[test]
    fn a_notifications_method_header_is_checked_against_its_body() {
        let body = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#;
        let refused = check_body(&headers(&[("mcp-method", "tools/call")]), body).unwrap_err();
        assert_eq!(refused.error.kind, ErrorKind::HeaderMismatch);
        assert_eq!(refused.error.data["header"], MCP_METHOD);
        // answered with a null id: a notification has none
        assert_eq!(refused.id, Some(RequestId::null()));
        // the header is required on requests only
        assert!(check_body(&headers(&[]), body).is_ok());
        let other_version = headers(&[
            ("mcp-method", "notifications/cancelled"),
            ("mcp-protocol-version", "2027-01-01"),
        ]);
        let versioned = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let refused = check_body(&other_version, versioned).unwrap_err();
        assert_eq!(refused.error.data["header"], MCP_PROTOCOL_VERSION);
        let agreeing = headers(&[
            ("mcp-method", "notifications/cancelled"),
            ("mcp-protocol-version", "2026-07-28"),
        ]);
        assert!(check_body(&agreeing, body).is_ok());
        // no `Mcp-Name` on a notification
        let named = br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#;
        assert!(check_body(&headers(&[("mcp-method", "tools/call")]), named).is_ok());
    }

    #[test]
    fn responses_have_no_method_to_check() {
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        assert!(check_body(&headers(&[("mcp-method", "tools/call")]), body).is_ok());
    }

    #[test]
    fn malformed_bodies_are_parse_errors() {
        let err = check_body(&headers(&[]), b"{oops").unwrap_err().error;
        assert_eq!(err.kind, ErrorKind::ParseError);
        let err = check_body(&headers(&[]), b"[]").unwrap_err().error;
        assert_eq!(err.kind, ErrorKind::InvalidRequest);
    }
}
