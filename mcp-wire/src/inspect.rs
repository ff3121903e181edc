//! Cheap inspection of one JSON-RPC message: the few fields routing and validation need,
//! borrowed from the body. The body itself is never re-serialized; fields the gateway does not
//! read are skipped by the scanner without being parsed (so `1e400` or 20-digit integers in
//! `arguments` cost nothing and survive untouched).

use crate::scan::{self, Refused};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// `params._meta` key carrying the 2026-07-28 protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// A JSON-RPC id as it appeared on the wire (string, number or null), echoed verbatim in errors.
#[derive(Debug, Clone)]
pub struct RequestId(Box<RawValue>);

impl PartialEq for RequestId {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

impl Eq for RequestId {}

impl RequestId {
    /// The id `null`, used when the request's id is unknown (e.g. unparseable bodies).
    pub fn null() -> Self {
        RequestId(RawValue::NULL.to_owned())
    }

    /// The id as raw JSON, for serializing verbatim.
    pub fn raw(&self) -> &RawValue {
        &self.0
    }

    /// The id's JSON text, exactly as the client sent it.
    pub fn as_json(&self) -> &str {
        self.0.get()
    }

    /// Parses an id given as JSON text (tests and gateway-owned ids).
    pub fn from_json(text: &str) -> Option<Self> {
        let raw = RawValue::from_string(text.to_owned()).ok()?;
        valid_id(raw.get()).then_some(RequestId(raw))
    }
}

fn valid_id(json: &str) -> bool {
    matches!(
        json.as_bytes().first(),
        Some(b'"' | b'-' | b'0'..=b'9' | b'n')
    )
}

/// What the gateway reads of a request body.
#[derive(Debug, Default)]
pub struct BodyInfo<'a> {
    /// The JSON text of `id`; `None` for notifications and bodies without one.
    pub id: Option<&'a str>,
    /// `method`; `None` for responses the client sends to server requests.
    pub method: Option<Cow<'a, str>>,
    /// `params.name` (tools/call, prompts/get), `params.uri` (resources/read) or
    /// `params.taskId` (the task methods: [`TASK_METHODS`]).
    pub name: Option<Cow<'a, str>>,
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]`.
    pub meta_protocol_version: Option<Cow<'a, str>>,
    /// Whether `params._meta` is present at all.
    pub has_meta: bool,
    /// Whether `params._meta`'s client capabilities list the Tasks extension: only then may
    /// a server answer with a task (SEP-2663).
    pub declares_tasks: bool,
}

impl BodyInfo<'_> {
    /// The id, owned, for answering with an error; `null` when the message had none.
    pub fn request_id(&self) -> RequestId {
        self.id
            .and_then(RequestId::from_json)
            .unwrap_or_else(RequestId::null)
    }
}

/// Why a body could not be inspected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InspectError {
    /// Not JSON at all (JSON-RPC -32700).
    Parse(String),
    /// A JSON array: batches were removed from MCP in 2025-06-18 (JSON-RPC -32600).
    Batch,
    /// JSON, but not a JSON-RPC message object (JSON-RPC -32600).
    NotAMessage(String),
}

/// Nesting of arrays and objects refused (serde_json's own limit).
pub use crate::scan::MAX_DEPTH;

/// The methods that name one task by `params.taskId`: the Tasks extension's (2026-07-28,
/// where `Mcp-Name` must carry the id) and the legacy (2025-11-25) tasks'.
pub const TASK_METHODS: &[&str] = &["tasks/get", "tasks/update", "tasks/cancel", "tasks/result"];

/// Whether `method` names one task by `params.taskId` ([`TASK_METHODS`]).
pub fn is_task_method(method: &str) -> bool {
    TASK_METHODS.contains(&method)
}

/// Reads the routing-relevant fields of one JSON-RPC message, checking the whole body in the
/// same pass (`scan.rs`).
pub fn inspect_body(body: &[u8]) -> Result<BodyInfo<'_>, InspectError> {
    let env = scan::scan(body).map_err(|refused| match refused {
        Refused::Syntax(detail) => InspectError::Parse(detail),
        Refused::Array => InspectError::Batch,
        Refused::NotObject => InspectError::NotAMessage("not a JSON object".into()),
        Refused::Shape(detail) => InspectError::NotAMessage(detail),
    })?;
    // the scan checked the id's JSON: only its type is left to check (the text is given a
    // type, a `RequestId`, only where it is answered)
    if env.id.is_some_and(|text| !valid_id(text)) {
        return Err(InspectError::NotAMessage(
            "id must be a string or a number".into(),
        ));
    }
    let id = env.id;
    let method_is = |m: &str| env.method.as_deref() == Some(m);
    let name = if method_is("resources/read")
        || method_is("resources/subscribe")
        || method_is("resources/unsubscribe")
    {
        env.uri
    } else if env.method.as_deref().is_some_and(is_task_method) {
        env.task_id
    } else {
        env.name
    };
    Ok(BodyInfo {
        id,
        method: env.method,
        name,
        meta_protocol_version: env.protocol_version,
        has_meta: env.has_meta,
        declares_tasks: env.declares_tasks,
    })
}

/// The raw `params` of a message (JSON text, verbatim), for storing or replaying it.
pub fn params_raw(body: &[u8]) -> Option<&RawValue> {
    #[derive(Deserialize)]
    struct OnlyParams<'a> {
        #[serde(borrow, default)]
        params: Option<&'a RawValue>,
    }
    serde_json::from_slice::<OnlyParams>(body).ok()?.params
}

/// Finds the top-level `"id"` of a JSON-RPC message from a prefix of its body (for answering
/// errors about bodies too large to read whole). Returns `None` when the prefix does not reach
/// a complete id.
pub fn scan_id(prefix: &[u8]) -> Option<RequestId> {
    let mut depth = 0usize;
    let mut i = 0;
    let mut expect_key = false;
    while i < prefix.len() {
        match prefix[i] {
            b'{' | b'[' => {
                depth += 1;
                expect_key = prefix[i] == b'{' && depth == 1;
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => expect_key = depth == 1,
            b'"' => {
                let end = string_end(prefix, i)?;
                if depth == 1 && expect_key && &prefix[i..=end] == b"\"id\"" {
                    let rest = &prefix[end + 1..];
                    let colon = rest.iter().position(|b| !b.is_ascii_whitespace())?;
                    if rest[colon] != b':' {
                        return None;
                    }
                    let value = &rest[colon + 1..];
                    let start = value.iter().position(|b| !b.is_ascii_whitespace())?;
                    let value = &value[start..];
                    let len = if value.first() == Some(&b'"') {
                        string_end(value, 0)? + 1
                    } else {
                        value
                            .iter()
                            .position(|b| matches!(b, b',' | b'}' | b' ' | b'\n' | b'\r' | b'\t'))?
                    };
                    return RequestId::from_json(std::str::from_utf8(&value[..len]).ok()?);
                }
                expect_key = false;
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Index of the closing quote of the string starting at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn scan_id_finds_top_level_id_in_a_prefix() {
        assert_eq!(
            scan_id(br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"#)
                .unwrap()
                .as_json(),
            "42"
        );
        assert_eq!(
            scan_id(br#"{"params":{"id":1,"x":"\"id\""},"id" : "a\"b","#)
                .unwrap()
                .as_json(),
            r#""a\"b""#
        );
        assert!(scan_id(br#"{"method":"x","params":{"id":5"#).is_none());
        assert!(scan_id(br#"{"id":12"#).is_none());
    }

    use super::*;

    #[test]
    fn tools_call_yields_method_name_and_version() {
        let body = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"report_q3","arguments":{"n":1e400,"big":123456789012345678901},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let info = inspect_body(body).unwrap();
        assert_eq!(info.id.unwrap(), "7");
        assert_eq!(info.method.as_deref(), Some("tools/call"));
        assert_eq!(info.name.as_deref(), Some("report_q3"));
        assert_eq!(info.meta_protocol_version.as_deref(), Some("2026-07-28"));
    }

    #[test]
    fn a_wrongly_typed_field_is_described_without_its_value() {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"hunter2-secret"}"#;
        match inspect_body(body) {
            Err(InspectError::NotAMessage(detail)) => {
                assert!(!detail.contains("hunter2"), "{detail}");
                assert!(detail.contains("params"), "{detail}");
            }
            _ => panic!("not refused as a message"),
        }
    }

    #[test]
    fn resources_read_name_is_the_uri() {
        let body = br#"{"jsonrpc":"2.0","id":"a","method":"resources/read","params":{"uri":"file:///x","name":"ignored"}}"#;
        let info = inspect_body(body).unwrap();
        assert_eq!(info.name.as_deref(), Some("file:///x"));
        assert_eq!(info.request_id().as_json(), "\"a\"");
    }

    #[test]
    fn escaped_strings_are_decoded() {
        let body =
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"caf\u00e9"}}"#;
        assert_eq!(
            inspect_body(body).unwrap().name.as_deref(),
            Some("caf\u{e9}")
        );
    }

    #[test]
    fn garbage_is_a_parse_error() {
        assert!(matches!(
            inspect_body(b"{nope"),
            Err(InspectError::Parse(_))
        ));
        assert!(matches!(inspect_body(b""), Err(InspectError::Parse(_))));
        assert!(matches!(inspect_body(b"[1,"), Err(InspectError::Parse(_))));
    }

    #[test]
    fn batches_and_non_objects_are_rejected() {
        assert_eq!(inspect_body(b"[{}]").unwrap_err(), InspectError::Batch);
        assert!(matches!(
            inspect_body(b"42"),
            Err(InspectError::NotAMessage(_))
        ));
        assert!(matches!(
            inspect_body(br#"{"id":{"x":1},"method":"ping"}"#),
            Err(InspectError::NotAMessage(_))
        ));
        assert!(matches!(
            inspect_body(br#"{"method":5}"#),
            Err(InspectError::NotAMessage(_))
        ));
    }

    #[test]
    fn notification_has_no_id() {
        let info =
            inspect_body(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(info.id.is_none());
        assert_eq!(info.request_id().as_json(), "null");
    }
}
