//! The error answers: ids echoed verbatim, codes, statuses and headers.

use super::*;
use mcp_wire::RequestId;

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
    ];
    let mut codes: Vec<i32> = kinds.iter().map(|k| k.code()).collect();
    codes.sort();
    codes.dedup();
    assert_eq!(codes.len(), kinds.len());
    for k in kinds {
        let c = k.code();
        assert!(c == -32700 || c == -32600 || c == -32602 || (-32099..=-32000).contains(&c));
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
