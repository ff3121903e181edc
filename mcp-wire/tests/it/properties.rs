//! Property tests (proptest) for what reads untrusted bytes: the body scanner, the
//! `=?base64?…?=` header decoder and the SSE parser. Fed arbitrary and mutated inputs, none
//! panics, and the scanner accepts exactly the bodies serde_json parses as one JSON-RPC message.
//!
//! `cargo test` runs a bounded number of cases (64 per property, or `PROPTEST_CASES`); a longer
//! run: `PROPTEST_CASES=20000 cargo test --release -p mcp-wire --test it properties::`.

use base64::Engine;
use mcp_wire::headers::decode_value;
use mcp_wire::sse::{self, EventSplitter};
use mcp_wire::{inspect_body, InspectError};
use proptest::prelude::*;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{json, Map, Value};

pub(crate) fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(64);
    ProptestConfig::with_cases(cases)
}

/// Any JSON value, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A value for a field the scanner reads: usually of the right type, sometimes not.
fn field(right: impl Strategy<Value = Value> + 'static) -> BoxedStrategy<Option<Value>> {
    prop_oneof![
        3 => right.prop_map(Some),
        1 => Just(None),
        1 => any_json().prop_map(Some),
    ]
    .boxed()
}

/// JSON-RPC-shaped objects: the fields the scanner reads, with right and wrong types.
fn message() -> impl Strategy<Value = Value> {
    let id = field(prop_oneof![
        any::<i64>().prop_map(|n| json!(n)),
        "[a-z0-9-]{0,8}".prop_map(Value::String),
        Just(Value::Null),
    ]);
    let method = field("(tools/call|initialize|resources/read|x)".prop_map(Value::String));
    let name = field("[a-z_]{1,8}".prop_map(Value::String));
    let version = field(Just(json!("2026-07-28")));
    let extra = any_json();
    (id, method, name, version, extra, any::<u8>()).prop_map(
        |(id, method, name, version, extra, shape)| {
            let mut params = Map::new();
            if let Some(n) = name {
                params.insert(if shape & 1 == 0 { "name" } else { "uri" }.into(), n);
            }
            if let Some(v) = version {
                let meta = json!({ "io.modelcontextprotocol/protocolVersion": v });
                params.insert("_meta".into(), meta);
            }
            params.insert("arguments".into(), extra.clone());
            let mut m = Map::new();
            m.insert("jsonrpc".into(), json!("2.0"));
            if let Some(id) = id {
                m.insert("id".into(), id);
            }
            if let Some(method) = method {
                m.insert("method".into(), method);
            }
            if shape & 2 == 0 {
                m.insert("params".into(), Value::Object(params));
            } else if shape & 4 == 0 {
                m.insert("params".into(), extra);
            }
            Value::Object(m)
        },
    )
}

/// A field the gateway reads that appears more than once in its object (serde_json's `Value`
/// keeps the last; a JSON-RPC message with two ids is not one message): `id`, `method`,
/// `params` at the top, `name`, `uri`, `_meta` in `params`, the protocol version in `_meta`.
/// Keys the gateway does not read may repeat (they are the backend's to judge).
fn has_duplicate_keys(body: &[u8]) -> bool {
    const TOP: &[&str] = &["id", "method", "params"];
    const PARAMS: &[&str] = &["name", "uri", "_meta"];
    const META: &[&str] = &["io.modelcontextprotocol/protocolVersion"];
    struct Keys<const LEVEL: u8>(bool);
    fn known(level: u8) -> &'static [&'static str] {
        match level {
            0 => TOP,
            1 => PARAMS,
            _ => META,
        }
    }
    impl<'de, const LEVEL: u8> serde::Deserialize<'de> for Keys<LEVEL> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V<const LEVEL: u8>;
            impl<'de, const LEVEL: u8> Visitor<'de> for V<LEVEL> {
                type Value = Keys<LEVEL>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("anything")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Keys<LEVEL>, A::Error> {
                    let mut seen = std::collections::HashSet::new();
                    let mut dup = false;
                    while let Some(k) = map.next_key::<String>()? {
                        if known(LEVEL).contains(&k.as_str()) {
                            dup |= !seen.insert(k.clone());
                        }
                        if LEVEL == 0 && k == "params" {
                            dup |= map.next_value::<Keys<1>>()?.0;
                        } else if LEVEL == 1 && k == "_meta" {
                            dup |= map.next_value::<Keys<2>>()?.0;
                        } else {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                    Ok(Keys(dup))
                }
                fn visit_seq<A: serde::de::SeqAccess<'de>>(
                    self,
                    mut s: A,
                ) -> Result<Keys<LEVEL>, A::Error> {
                    while s.next_element::<IgnoredAny>()?.is_some() {}
                    Ok(Keys::<LEVEL>(false))
                }
                fn visit_str<E>(self, _: &str) -> Result<Keys<LEVEL>, E> {
                    Ok(Keys::<LEVEL>(false))
                }
                fn visit_bool<E>(self, _: bool) -> Result<Keys<LEVEL>, E> {
                    Ok(Keys::<LEVEL>(false))
                }
                fn visit_i64<E>(self, _: i64) -> Result<Keys<LEVEL>, E> {
                    Ok(Keys::<LEVEL>(false))
                }
                fn visit_u64<E>(self, _: u64) -> Result<Keys<LEVEL>, E> {
                    Ok(Keys::<LEVEL>(false))
                }
                fn visit_f64<E>(self, _: f64) -> Result<Keys<LEVEL>, E> {
                    Ok(Keys::<LEVEL>(false))
                }
                fn visit_unit<E>(self) -> Result<Keys<LEVEL>, E> {
                    Ok(Keys::<LEVEL>(false))
                }
            }
            d.deserialize_any(V::<LEVEL>)
        }
    }
    serde_json::from_slice::<Keys<0>>(body).is_ok_and(|k| k.0)
}

/// serde_json's verdict: `Some(true)` one JSON-RPC message, `Some(false)` not one, `None` when
/// serde_json cannot say (a number out of `f64` range: never, now that the workspace's
/// serde_json keeps numbers as their text, `arbitrary_precision`).
fn oracle(body: &[u8]) -> Option<bool> {
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) if e.to_string().contains("number out of range") => return None,
        Err(_) => return Some(false),
    };
    let string_or_null =
        |v: Option<&Value>| matches!(v, None | Some(Value::Null | Value::String(_)));
    let Value::Object(m) = &v else {
        return Some(false);
    };
    let id_ok = matches!(
        m.get("id"),
        None | Some(Value::Null | Value::String(_) | Value::Number(_))
    );
    let params_ok = match m.get("params") {
        None | Some(Value::Null) => true,
        Some(Value::Object(p)) => {
            string_or_null(p.get("name"))
                && string_or_null(p.get("uri"))
                && match p.get("_meta") {
                    None | Some(Value::Null) => true,
                    Some(Value::Object(meta)) => {
                        string_or_null(meta.get("io.modelcontextprotocol/protocolVersion"))
                    }
                    _ => false,
                }
        }
        // arrays are read positionally by serde's derive; MCP params are objects
        Some(Value::Array(_)) => return None,
        _ => false,
    };
    Some(id_ok && string_or_null(m.get("method")) && params_ok && !has_duplicate_keys(body))
}

fn mutate(bytes: &mut Vec<u8>, edits: &[(usize, u8, u8)]) {
    for &(at, what, byte) in edits {
        if bytes.is_empty() {
            bytes.push(byte);
            continue;
        }
        let at = at % bytes.len();
        match what % 3 {
            0 => bytes[at] = byte,
            1 => bytes.insert(at, byte),
            _ => {
                bytes.remove(at);
            }
        }
    }
}

/// Bytes JSON bodies are made of, so mutations land on structure, not only on noise.
fn json_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        prop::sample::select(b"{}[]\",:\\0123456789-eE.tfnu \n\xff\xc3".to_vec()),
        any::<u8>(),
    ]
}

pub(crate) fn check_agreement(body: &[u8]) -> Result<(), TestCaseError> {
    let scanned = inspect_body(body);
    if let Some(expected) = oracle(body) {
        prop_assert_eq!(
            scanned.is_ok(),
            expected,
            "scanner {:?} vs serde_json on {}",
            scanned.as_ref().err(),
            String::from_utf8_lossy(body)
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_scanner_agrees_with_serde_json_on_generated_messages(m in message()) {
        check_agreement(&serde_json::to_vec(&m).unwrap())?;
    }

    #[test]
    fn the_scanner_agrees_with_serde_json_on_mutated_messages(
        m in message(),
        edits in prop::collection::vec((any::<usize>(), any::<u8>(), json_byte()), 1..4),
    ) {
        let mut body = serde_json::to_vec(&m).unwrap();
        mutate(&mut body, &edits);
        check_agreement(&body)?;
    }

    #[test]
    fn the_scanner_never_panics_on_arbitrary_bytes(body in prop::collection::vec(any::<u8>(), 0..256)) {
        check_agreement(&body)?;
    }

    #[test]
    fn the_scanner_agrees_on_deep_nesting(depth in 100usize..140, object in any::<bool>()) {
        let (open, close) = if object { (r#"{"a":"#, "}") } else { ("[", "]") };
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"arguments":{}1{}}}}}"#,
            open.repeat(depth),
            close.repeat(depth)
        );
        check_agreement(body.as_bytes())?;
    }

    #[test]
    fn the_scanner_agrees_on_unicode_escapes(units in prop::collection::vec(any::<u16>(), 1..4)) {
        let escapes: String = units.iter().map(|u| format!("\\u{u:04x}")).collect();
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"arguments":"{escapes}"}}}}"#);
        check_agreement(body.as_bytes())?;
    }

    #[test]
    fn base64_header_values_round_trip(s in ".{0,40}") {
        let encoded = base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
        let value = format!("=?base64?{encoded}?=");
        let decoded = decode_value(value.as_bytes());
        prop_assert_eq!(decoded.as_deref(), Some(s.as_str()));
    }

    #[test]
    fn the_header_decoder_never_panics(raw in prop::collection::vec(any::<u8>(), 0..64), wrap in any::<bool>()) {
        let mut bytes = raw.clone();
        if wrap {
            bytes = [b"=?base64?".as_slice(), &raw, b"?="].concat();
        }
        if let Some(decoded) = decode_value(&bytes) {
            prop_assert!(std::str::from_utf8(decoded.as_bytes()).is_ok());
        }
    }

    #[test]
    fn sse_events_are_the_same_however_the_stream_is_cut(
        events in prop::collection::vec(("[a-z ]{0,8}", prop::sample::select(vec!["\n", "\r\n", "\r"])), 0..6),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
        tail in prop::collection::vec(any::<u8>(), 0..16),
    ) {
        let mut stream = Vec::new();
        for (data, eol) in &events {
            stream.extend_from_slice(format!("data: {data}{eol}{eol}").as_bytes());
        }
        stream.extend_from_slice(&tail);
        let mut whole = EventSplitter::default();
        let all: Vec<u8> = whole.push(&stream).concat();
        let mut pieces = EventSplitter::default();
        let mut got = Vec::new();
        let mut at = 0;
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
        points.sort();
        for p in points.into_iter().chain([stream.len()]) {
            for e in pieces.push(&stream[at..p.max(at)]) {
                got.extend_from_slice(&e);
            }
            at = p.max(at);
        }
        prop_assert_eq!(&got, &all);
        prop_assert!(stream.starts_with(&all));
        // the buffered-body reader takes the same bytes without panicking
        let _ = sse::messages(Some("text/event-stream"), &stream);
        let _ = sse::response(Some("text/event-stream"), &stream);
    }

    #[test]
    fn sse_messages_are_read_alike_whatever_the_line_ends(
        events in prop::collection::vec((prop::collection::vec("[a-z{}\":, ]{1,8}", 1..3), prop::sample::select(vec!["\n", "\r\n", "\r"])), 0..6),
        comment in any::<bool>(),
    ) {
        let mut stream = Vec::new();
        let mut expected = Vec::new();
        for (lines, eol) in &events {
            if comment {
                stream.extend_from_slice(format!(": ping{eol}").as_bytes());
            }
            stream.extend_from_slice(format!("event: message{eol}").as_bytes());
            for line in lines {
                stream.extend_from_slice(format!("data: {line}{eol}").as_bytes());
            }
            stream.extend_from_slice(eol.as_bytes());
            expected.push(lines.join("\n").into_bytes());
        }
        // every reader sees the same messages, whether lines end in LF, CRLF or CR
        prop_assert_eq!(&sse::messages(Some("text/event-stream"), &stream), &expected);
        // (a final CR may be half a CRLF: the splitter waits for the next byte)
        let mut splitter = EventSplitter::default();
        let mut cut_events = splitter.push(&stream);
        cut_events.extend(splitter.push(b"\n"));
        let cut: Vec<Vec<u8>> = cut_events
            .iter()
            .flat_map(|e| sse::messages(Some("text/event-stream"), e))
            .collect();
        prop_assert_eq!(&cut, &expected);
    }
}

/// Any number RFC 8259 allows: `-? (0 | [1-9] digits) (. digits)? ([eE] [+-]? digits)?`, with
/// mantissas and exponents far beyond what `f64` holds.
fn rfc8259_number() -> impl Strategy<Value = String> {
    let int = prop_oneof![Just("0".to_owned()), "[1-9][0-9]{0,400}"];
    let frac = prop::option::of("\\.[0-9]{1,400}");
    let exp = prop::option::of("[eE][+-]?[0-9]{1,6}");
    (any::<bool>(), int, frac, exp).prop_map(|(neg, i, f, e)| {
        format!(
            "{}{i}{}{}",
            if neg { "-" } else { "" },
            f.unwrap_or_default(),
            e.unwrap_or_default()
        )
    })
}

/// Numbers RFC 8259 does not allow, made from valid ones.
fn invalid_number() -> impl Strategy<Value = String> {
    ("[1-9][0-9]{0,20}", "[0-9]{1,20}", 0u8..9).prop_map(|(int, digits, how)| match how {
        0 => format!("0{int}"),          // leading zero: `01`
        1 => format!("{int}."),          // no fraction digits: `1.`
        2 => format!(".{digits}"),       // no integer part: `.5`
        3 => format!("+{int}"),          // a plus sign: `+1`
        4 => format!("{int}e"),          // no exponent digits: `1e`
        5 => format!("{int}e+"),         // `1e+`
        6 => format!("-0{int}"),         // `-01`
        7 => format!("{int}.e{digits}"), // `1.e5`
        _ => "-".to_owned(),
    })
}

/// `number` as serde_json writes it back: `E` as `e`, an exponent's sign always given.
fn exponent_spelled_out(number: &str) -> String {
    match number.find(['e', 'E']) {
        Some(at) => {
            let exp = &number[at + 1..];
            let signed = if exp.starts_with(['+', '-']) {
                exp.to_owned()
            } else {
                format!("+{exp}")
            };
            format!("{}e{signed}", &number[..at])
        }
        None => number.to_owned(),
    }
}

fn with_number(number: &str, in_id: bool) -> String {
    let id = if in_id { number } else { "1" };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"x","arguments":{{"n":{number},"l":[{number}]}}}}}}"#
    )
}

proptest! {
    #![proptest_config(config())]

    /// Every RFC 8259 number is accepted wherever it stands (an argument, the id) and the body
    /// passes as it is (the scanner only borrows it; errors echo the id verbatim). A bridge that
    /// reads the message into a tree and writes it again keeps the number's exact value: its
    /// digits as sent, only the exponent spelled `e+N` (serde_json's `arbitrary_precision`).
    #[test]
    fn every_rfc_8259_number_is_accepted_and_kept(number in rfc8259_number(), in_id in any::<bool>()) {
        let body = with_number(&number, in_id);
        let info = inspect_body(body.as_bytes());
        prop_assert!(info.is_ok(), "{:?} refused: {}", info.err(), body);
        let id = info.unwrap().request_id();
        if in_id {
            prop_assert_eq!(id.as_json(), number.as_str(), "the id verbatim");
        }
        let tree: Value = serde_json::from_str(&body).unwrap();
        let kept = exponent_spelled_out(&number);
        prop_assert_eq!(tree["params"]["arguments"]["n"].to_string(), kept.clone());
        let written = serde_json::to_string(&tree).unwrap();
        let (alone, listed) = (format!("\"n\":{kept}}}"), format!("[{kept}]"));
        prop_assert!(written.contains(&alone) && written.contains(&listed), "{}", written);
    }

    #[test]
    fn numbers_rfc_8259_does_not_allow_are_refused(number in invalid_number(), in_id in any::<bool>()) {
        let body = with_number(&number, in_id);
        prop_assert!(
            matches!(inspect_body(body.as_bytes()), Err(InspectError::Parse(_))),
            "accepted: {}", body
        );
    }
}

#[test]
fn the_numbers_of_issue_31_are_accepted_and_the_invalid_ones_refused() {
    let huge = "9".repeat(400);
    for ok in [
        "1e400",
        "-1e400",
        huge.as_str(),
        "0",
        "-0",
        "0.5e-999",
        "1E+2",
    ] {
        assert!(
            inspect_body(with_number(ok, true).as_bytes()).is_ok(),
            "{ok}"
        );
    }
    for bad in ["01", "1.", ".5", "+1", "1e", "Infinity", "NaN", "0x1"] {
        let body = with_number(bad, false);
        let refused = inspect_body(body.as_bytes());
        assert!(matches!(refused, Err(InspectError::Parse(_))), "{bad}");
    }
}

#[test]
fn an_inspect_error_is_never_a_panic_for_the_issue_15_bodies() {
    let deep = format!(
        r#"{{"params":{{"a":{}{}}}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert!(matches!(
        inspect_body(deep.as_bytes()),
        Err(InspectError::Parse(_))
    ));
    let bad = b"{\"params\":{\"a\":\"\xff\"}}";
    assert!(matches!(inspect_body(bad), Err(InspectError::Parse(_))));
}
