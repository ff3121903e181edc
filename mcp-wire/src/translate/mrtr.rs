//! Multi round-trip requests for a 2026-07-28 client on a legacy backend (the reverse bridge):
//! a server→client request the backend sends during a call becomes an `input_required` result
//! with one `inputRequests` entry and a `requestState` the gateway seals; the client's retry
//! carries `inputResponses` and that `requestState` back. Pure: no I/O.
//!
//! The state is sealed by the one sealer (`crate::seal`, purpose `RequestState`: its own key,
//! derived from the configured one): a client can neither read nor change it. It binds the principal, an expiry, a digest of the original request (method and params
//! without `_meta`, `inputResponses` and `requestState`, keys sorted) and the parked call.

use crate::seal::{Purpose, Sealer};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// What a sealed `requestState` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// The principal the call belongs to (`""` without `auth`).
    #[serde(rename = "p")]
    pub principal: String,
    /// When it stops being accepted, in milliseconds since the Unix epoch.
    #[serde(rename = "e")]
    pub expires_ms: u64,
    /// Hex SHA-256 of the request ([`request_digest`]).
    #[serde(rename = "d")]
    pub digest: String,
    /// The parked call's id in this process.
    #[serde(rename = "c")]
    pub parked: String,
    /// The `inputRequests` key the answer comes under.
    #[serde(rename = "k")]
    pub key: String,
    /// The URL of the replica holding the parked call (`bridge.advertise-url`), when it has
    /// one: a retry reaching another replica is forwarded there.
    #[serde(rename = "h", default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
}

/// Why a retry's `requestState` is refused: the `data.reason` of its -32602.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// It does not open with the gateway's key (forged, tampered, another key's, or sealed
    /// for another purpose).
    Forged,
    /// Its expiry passed.
    Expired,
    /// Another principal's.
    OtherPrincipal,
    /// The retry is not the request it was issued for (other method, name or arguments).
    OtherRequest,
}

impl Refusal {
    /// Its name in `data.reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Forged => "forged",
            Refusal::Expired => "expired",
            Refusal::OtherPrincipal => "other-principal",
            Refusal::OtherRequest => "other-request",
        }
    }
}

/// The sealed text of `state` (`Purpose::RequestState`).
pub fn seal(sealer: &Sealer, state: &State) -> String {
    #[expect(
        clippy::expect_used,
        reason = "a State is strings, an integer and an optional string: serde_json fails only \
                  on a map with keys that are not strings or a Serialize impl that errs"
    )]
    let plain = serde_json::to_vec(state).expect("a state serializes");
    sealer.seal(Purpose::RequestState, &[], &plain)
}

/// Opens a sealed state and checks it against the retry: its principal, the time now and the
/// retry's digest.
pub fn open(
    sealer: &Sealer,
    sealed: &str,
    principal: &str,
    now_ms: u64,
    digest: &str,
) -> Result<State, Refusal> {
    let plain = sealer
        .open(Purpose::RequestState, &[], sealed)
        .map_err(|_| Refusal::Forged)?;
    let state: State = serde_json::from_slice(&plain).map_err(|_| Refusal::Forged)?;
    if state.principal != principal {
        return Err(Refusal::OtherPrincipal);
    }
    if now_ms >= state.expires_ms {
        return Err(Refusal::Expired);
    }
    if state.digest != digest {
        return Err(Refusal::OtherRequest);
    }
    Ok(state)
}

/// Hex SHA-256 of a request as its retries must repeat it: the method and the params without
/// `_meta`, `inputResponses` and `requestState`, object keys sorted at every depth.
pub fn request_digest(msg: &Value) -> String {
    let mut params = msg.get("params").cloned().unwrap_or(Value::Null);
    if let Value::Object(p) = &mut params {
        for k in ["_meta", "inputResponses", "requestState"] {
            p.remove(k);
        }
    }
    let canon = json!([msg.get("method"), sorted(params)]).to_string();
    let digest = Sha256::digest(canon.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut out = Map::new();
            for (k, v) in entries {
                out.insert(k, sorted(v));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// A retry's parts: its `requestState` (when it has one) and `inputResponses`.
pub fn retry_parts(msg: &Value) -> Option<(&str, Option<&Map<String, Value>>)> {
    let params = msg.get("params")?;
    let state = params.get("requestState")?.as_str()?;
    Some((
        state,
        params.get("inputResponses").and_then(Value::as_object),
    ))
}

/// Whether a server→client request of a legacy backend is one a 2026-07-28 client answers
/// through `input_required`.
pub fn is_input_request(method: &str) -> bool {
    matches!(
        method,
        "elicitation/create" | "sampling/createMessage" | "roots/list"
    )
}

/// The `input_required` result asking the client for `method` with `params` under `key`,
/// with the backend's `serverInfo` in `_meta` when it gave one.
pub fn input_required(
    key: &str,
    method: &str,
    params: &Value,
    state: &str,
    server_info: Option<&Value>,
) -> Value {
    let mut result = json!({
        "resultType": "input_required",
        "inputRequests": {key: {"method": method, "params": params}},
        "requestState": state,
    });
    if let Some(info) = server_info {
        result["_meta"] = json!({ super::META_SERVER_INFO: info });
    }
    result
}

/// The answer to the backend's request `id` carrying the client's `response` (a bare result).
pub fn answer_backend(id: &Value, response: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": response}).to_string()
}

/// The answer to the backend's request `id` (of `method`) when nobody answered in time: an
/// elicitation is cancelled (`action: "cancel"`, what a person closing the dialog gives), the
/// others get the gateway's refusal (`code` and `message`, from its error table).
pub fn declined(id: &Value, method: &str, code: i32, message: &str) -> String {
    if method == "elicitation/create" {
        return json!({"jsonrpc": "2.0", "id": id, "result": {"action": "cancel"}}).to_string();
    }
    crate::messages::error_to_backend(id, code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(principal: &str, expires_ms: u64, digest: &str) -> State {
        State {
            principal: principal.into(),
            expires_ms,
            digest: digest.into(),
            parked: "c1".into(),
            key: "k".into(),
            holder: Some("http://10.0.0.7:8080".into()),
        }
    }

    #[test]
    fn a_sealed_state_opens_only_unchanged_in_time_for_its_principal_and_request() {
        let s = Sealer::random();
        let sealed = seal(&s, &state("alice", 1000, "d1"));
        let opened = open(&s, &sealed, "alice", 999, "d1").unwrap();
        assert_eq!(opened.parked, "c1");
        assert_eq!(
            opened.holder.as_deref(),
            Some("http://10.0.0.7:8080"),
            "the holder's address is sealed with the call"
        );
        assert_eq!(
            open(&s, &sealed, "bob", 999, "d1"),
            Err(Refusal::OtherPrincipal)
        );
        assert_eq!(
            open(&s, &sealed, "alice", 1000, "d1"),
            Err(Refusal::Expired)
        );
        assert_eq!(
            open(&s, &sealed, "alice", 999, "d2"),
            Err(Refusal::OtherRequest)
        );
        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 3;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        assert_eq!(
            open(&s, &tampered, "alice", 999, "d1"),
            Err(Refusal::Forged)
        );
        assert_eq!(
            open(&s, "not base64!", "alice", 0, "d1"),
            Err(Refusal::Forged)
        );
        let other = Sealer::random();
        assert_eq!(
            open(&other, &sealed, "alice", 999, "d1"),
            Err(Refusal::Forged)
        );
        assert_ne!(
            seal(&s, &state("alice", 1000, "d1")),
            sealed,
            "a fresh nonce"
        );
    }

    #[test]
    fn a_state_never_opens_as_a_token_of_another_purpose_nor_one_of_those_as_a_state() {
        let s = Sealer::new([7; 32]);
        let sealed = seal(&s, &state("alice", 1000, "d1"));
        for other in [Purpose::ListCursor, Purpose::VirtualSession] {
            assert!(s.open(other, &[], &sealed).is_err(), "{other:?}");
            let plain = serde_json::to_vec(&state("alice", 1000, "d1")).unwrap();
            let foreign = s.seal(other, &[], &plain);
            assert_eq!(
                open(&s, &foreign, "alice", 999, "d1"),
                Err(Refusal::Forged),
                "{other:?}"
            );
        }
    }

    #[test]
    fn the_digest_ignores_the_envelope_and_the_round_but_not_the_arguments() {
        let a = json!({"method": "tools/call", "params": {"name": "t", "arguments": {"x": 1, "y": 2},
                       "_meta": {"progressToken": 1}}});
        let b = json!({"method": "tools/call", "params": {"arguments": {"y": 2, "x": 1}, "name": "t",
                       "inputResponses": {"k": {}}, "requestState": "s"}});
        let c =
            json!({"method": "tools/call", "params": {"name": "t", "arguments": {"x": 2, "y": 2}}});
        assert_eq!(request_digest(&a), request_digest(&b));
        assert_ne!(request_digest(&a), request_digest(&c));
        assert_eq!(retry_parts(&b).unwrap().0, "s");
        assert!(retry_parts(&a).is_none());
    }

    #[test]
    fn an_unanswered_elicitation_is_cancelled_and_other_requests_refused() {
        let late = |method| declined(&json!(3), method, -32603, "late");
        let v: Value = serde_json::from_str(&late("elicitation/create")).unwrap();
        assert_eq!(v["result"]["action"], "cancel");
        let v: Value = serde_json::from_str(&late("roots/list")).unwrap();
        assert_eq!(v["error"], json!({"code": -32603, "message": "late"}));
        let r = input_required("k1", "roots/list", &json!({}), "S", None);
        assert_eq!(r["inputRequests"]["k1"]["method"], "roots/list");
        assert_eq!(r["requestState"], "S");
        assert!(r.get("_meta").is_none());
        let info = json!({"name": "s", "version": "1"});
        let r = input_required("k1", "roots/list", &json!({}), "S", Some(&info));
        assert_eq!(r["_meta"][super::super::META_SERVER_INFO], info);
    }
}
