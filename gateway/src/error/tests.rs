//! The error answers: ids echoed verbatim, codes, statuses and headers.

use super::*;
use mcp_wire::RequestId;
use serde_json::Value;

#[test]
fn error_body_echoes_the_request_id_verbatim() {
    let id = RequestId::from_json("12345678901234567890123").unwrap();
    let body = GatewayError::no_route("/x").body(&id);
    let text = std::str::from_utf8(&body).unwrap();
    assert!(text.contains("\"id\":12345678901234567890123"), "{text}");
}

#[test]
fn unavailable_carries_retry_after_everywhere() {
    let (status, headers, body) = GatewayError::unavailable("p", 2).to_http(&RequestId::null());
    assert_eq!(status, 503);
    assert!(headers.contains(&("retry-after", "1".to_owned())));
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["error"]["code"], -32011);
    assert_eq!(v["error"]["data"]["retryAfterMs"], 1000);
    assert_eq!(v["error"]["data"]["kind"], "backend-unavailable");
    assert_eq!(v["id"], Value::Null);
}

#[test]
fn every_kind_has_a_distinct_code() {
    use ErrorKind::*;
    let kinds = [
        ParseError,
        InvalidRequest,
        InvalidParams,
        HeaderMismatch,
        NoRoute,
        BackendUnavailable,
        NoBackendOfEra,
        UpstreamTimeout,
        BackendLost,
        BodyTooLarge,
        SessionNotFound,
        SessionLimit,
        RateLimited,
        Overloaded,
        Internal,
        HostNotAllowed,
        OriginNotAllowed,
        SessionRequired,
        StoreUnavailable,
        ResumeUnavailable,
        Unauthorized,
        Forbidden,
        AuthUnavailable,
        BadFraming,
        HeadTooLarge,
        ClientTimeout,
        MethodNotAllowed,
        UndecidableName,
        MissingClientCapability,
        BridgeRoundsExceeded,
        NotBridged,
        HolderUnreachable,
        InputNotGiven,
        Untranslatable,
        SubscriptionLimit,
        ServerRequestRefused,
        ServerRequestNotBridged,
        UnknownName,
        TaskLost,
        UpstreamCredentials,
        ExchangeRefused,
        InterceptorTimeout,
        InterceptorDenied,
        InterceptorFailed,
        InterceptorInvalidMutation,
        InterceptorLimit,
        AnswerUnchecked,
        AuditUnavailable,
        ToolQuarantined,
    ];
    let mut codes: Vec<i32> = kinds.iter().map(|k| k.code()).collect();
    codes.sort();
    codes.dedup();
    assert_eq!(codes.len(), kinds.len());
    for k in kinds {
        let c = k.code();
        let spec = [-32700, -32600, -32601, -32602, -32603];
        assert!(spec.contains(&c) || (-32099..=-32000).contains(&c));
    }
}

#[test]
fn an_unauthorized_answer_names_the_metadata_document_in_www_authenticate() {
    let meta = "https://gw.example.com/.well-known/oauth-protected-resource/mcp";
    let (status, headers, body) =
        GatewayError::unauthorized("missing", meta).to_http(&RequestId::null());
    assert_eq!(status, 401);
    let challenge = format!("Bearer resource_metadata=\"{meta}\"");
    assert!(
        headers.contains(&("www-authenticate", challenge)),
        "{headers:?}"
    );
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["error"]["code"], -32023);
    let (status, headers, _) =
        GatewayError::forbidden(Some("admin"), meta).to_http(&RequestId::null());
    assert_eq!(status, 403);
    let challenge = headers
        .iter()
        .find(|(n, _)| *n == "www-authenticate")
        .unwrap();
    assert!(challenge
        .1
        .contains("error=\"insufficient_scope\", scope=\"admin\""));
}

#[test]
fn a_refusal_to_a_backends_request_carries_the_tables_code_and_message_only() {
    let refusal = GatewayError::no_call_for_server_request().to_backend(&Value::from(4));
    assert_eq!(
        refusal,
        r#"{"error":{"code":-32603,"message":"mcp-gateway: no single call in flight to relate this request to"},"id":4,"jsonrpc":"2.0"}"#
    );
    let v: Value = serde_json::from_str(
        &GatewayError::server_request_not_bridged("x/y").to_backend(&Value::Null),
    )
    .unwrap();
    assert_eq!(v["error"]["code"], -32601);
    assert!(v["error"].get("data").is_none());
}
