//! `StoreError`: the store could not be reached or answered nonsense; the client gets 503
//! -32006 to retry, never a lost session.

/// The store could not be reached or answered nonsense. Requests that need it are answered
/// with -32006 (`store-unavailable`); a session is never silently recreated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError {
    /// What went wrong, for logs and `data.detail`.
    pub detail: String,
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "session store: {}", self.detail)
    }
}

/// A store that fails answers 503 -32006 (retry later), never "session lost".
impl From<StoreError> for crate::error::GatewayError {
    fn from(e: StoreError) -> Self {
        crate::error::GatewayError::store_unavailable(&e.detail)
    }
}

#[cfg(test)]
mod tests {
    use super::StoreError;
    use crate::error::GatewayError;
    use mcp_wire::RequestId;
    use serde_json::Value;

    #[test]
    fn a_store_failure_is_a_503_to_retry_not_a_lost_session() {
        let err = GatewayError::from(StoreError {
            detail: "connection refused".into(),
        });
        let (status, headers, body) = err.to_http(&RequestId::null());
        assert_eq!(status, 503);
        assert!(headers.contains(&("retry-after", "1".to_owned())));
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["error"]["code"], -32006);
        assert_eq!(v["error"]["data"]["kind"], "store-unavailable");
        assert_eq!(v["error"]["data"]["detail"], "connection refused");
    }
}
