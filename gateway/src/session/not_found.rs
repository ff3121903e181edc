//! Whether a backend's answer means "I do not know this session", by the pool's rules.

/// Whether a backend's answer means "I do not know this session", by the pool's rules.
pub fn is_not_found(
    rules: &[crate::config::NotFoundRule],
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
) -> bool {
    let error = mcp_wire::sse::response(content_type, body).and_then(|v| v.get("error").cloned());
    let code = error.as_ref().and_then(|e| e.get("code")?.as_i64());
    let message = error
        .as_ref()
        .and_then(|e| e.get("message")?.as_str().map(str::to_lowercase));
    rules.iter().any(|r| {
        r.status == status
            && r.code.is_none_or(|c| code == Some(c))
            && r.message_contains
                .as_ref()
                .is_none_or(|m| message.as_ref().is_some_and(|msg| msg.contains(m.as_str())))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::default_not_found;

    #[test]
    fn the_real_servers_session_not_found_answers_are_recognized() {
        let rules = default_not_found();
        let json = Some("application/json");
        // Python SDK
        assert!(is_not_found(&rules, 404, json, br#"{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Session not found"}}"#));
        // TypeScript SDK
        assert!(is_not_found(
            &rules,
            404,
            json,
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}"#
        ));
        // server-everything
        assert!(is_not_found(&rules, 400, json, br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}"#));
        // other 400s are the client's problem, not a lost session
        assert!(!is_not_found(
            &rules,
            400,
            json,
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params"}}"#
        ));
        assert!(!is_not_found(
            &rules,
            400,
            json,
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"Tool failed"}}"#
        ));
        assert!(!is_not_found(&rules, 200, json, b"{}"));
    }
}
