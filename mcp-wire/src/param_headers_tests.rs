//! The codec and the schema walk against vectors the reference SDK itself gave (PyPI `mcp`
//! 2.3.0, `mcp.shared.inbound`: `encode_header_value`, `decode_header_value`,
//! `_render_header_scalar`, `x_mcp_header_map`, `find_invalid_x_mcp_header`,
//! `mcp_param_headers`), and properties: every value round trips, and the wrapping is used
//! exactly where the SDK's rules call for it.

use super::*;
use serde_json::json;

#[test]
fn values_are_encoded_as_the_reference_sdk_encodes_them() {
    // (value, encode_header_value(value)) from mcp 2.3.0
    let vectors = [
        ("us-west1", "us-west1"),
        ("", ""),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("a b", "a b"),
        ("a\tb", "=?base64?YQli?="),
        ("\tx", "=?base64?CXg=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        ("=?base64?abc?=", "=?base64?PT9iYXNlNjQ/YWJjPz0=?="),
        ("=?base64??=", "=?base64?PT9iYXNlNjQ/Pz0=?="),
        ("=?BASE64?abc?=", "=?BASE64?abc?="),
        ("=?base64?x", "=?base64?x"),
        ("~!", "~!"),
        ("é", "=?base64?w6k=?="),
        ("x ", "=?base64?eCA=?="),
        (" x", "=?base64?IHg=?="),
        ("\u{7f}", "=?base64?fw==?="),
        ("?=", "?="),
    ];
    for (value, wire) in vectors {
        assert_eq!(encode(value), wire, "{value:?}");
    }
}

#[test]
fn header_values_are_decoded_as_the_reference_sdk_decodes_them() {
    // (header, decode_header_value(header)) from mcp 2.3.0: non-canonical base64 (trailing
    // bits, missing padding), bad characters and bytes that are not UTF-8 are refused
    let vectors = [
        ("=?base64?YQ==?=", Some("a")),
        ("=?base64?YR==?=", None),
        ("=?base64?YQ?=", None),
        ("=?base64?!!?=", None),
        ("=?BASE64?YQ==?=", Some("=?BASE64?YQ==?=")),
        ("plain", Some("plain")),
        ("=?base64?/w==?=", None),
        ("=?base64??=", Some("")),
    ];
    for (header, value) in vectors {
        assert_eq!(decode(header).as_deref(), value, "{header:?}");
    }
}

#[test]
fn numbers_are_written_as_pythons_str_of_what_the_json_text_parses_to() {
    // (JSON text, _render_header_scalar(json.loads(text))) from mcp 2.3.0
    let vectors = [
        ("42", "42"),
        ("-0", "0"),
        ("42.0", "42.0"),
        ("1E5", "100000.0"),
        ("1e400", "inf"),
        ("-1e400", "-inf"),
        ("1.5", "1.5"),
        ("1e16", "1e+16"),
        ("1e15", "1000000000000000.0"),
        ("1e-5", "1e-05"),
        ("0.0001", "0.0001"),
        (
            "123456789012345678901234567890",
            "123456789012345678901234567890",
        ),
        ("3.14159", "3.14159"),
        ("-2.5e-7", "-2.5e-07"),
        ("0.0", "0.0"),
        ("-0.0", "-0.0"),
        ("1e22", "1e+22"),
        ("12345678901234567.0", "1.2345678901234568e+16"),
        ("0.1", "0.1"),
    ];
    for (text, rendered) in vectors {
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(render(&value).as_deref(), Some(rendered), "{text}");
    }
    assert_eq!(render(&json!(true)).as_deref(), Some("true"));
    assert_eq!(render(&json!(false)).as_deref(), Some("false"));
    assert_eq!(render(&json!(null)), None);
    assert_eq!(render(&json!([1])), None);
    assert_eq!(render(&json!({"a": 1})), None);
}

#[test]
fn only_annotations_on_a_pure_properties_chain_of_scalars_count() {
    let nested = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "n": {"type": "integer", "x-mcp-header": "N"},
        "cfg": {"type": "object", "properties": {"deep": {"type": "boolean", "x-mcp-header": "Deep"}}}
    }});
    assert_eq!(find_invalid(&nested), None);
    let params = header_params(&nested);
    let got: Vec<(String, &str)> = params
        .iter()
        .map(|p| (p.path.join("."), p.token.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("cfg.deep".to_owned(), "Deep"),
            ("n".to_owned(), "N"),
            ("region".to_owned(), "Region")
        ]
    );
    // the schemas mcp 2.3.0's find_invalid_x_mcp_header refuses: none mirrors anything
    for invalid in [
        json!({"type": "object", "properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
        json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}}),
        json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
        json!({"type": "object", "x-mcp-header": "Root"}),
        json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Has Space"}}}),
        json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
        json!({"type": "object", "$defs": {"d": {"type": "string", "x-mcp-header": "D"}}}),
        json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": 7}}}),
        json!({"type": "object", "properties": {"a": {"x-mcp-header": "A"}}}),
    ] {
        assert!(find_invalid(&invalid).is_some(), "{invalid}");
        assert!(header_params(&invalid).is_empty(), "{invalid}");
    }
    // instance data is not a schema position
    let data = json!({"type": "object", "properties": {"a": {"type": "string", "default": {"x-mcp-header": "X"}}}});
    assert_eq!(find_invalid(&data), None);
    assert!(header_params(&data).is_empty());
}

#[test]
fn a_call_mirrors_present_scalar_arguments_only() {
    let schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "n": {"type": "integer", "x-mcp-header": "N"},
        "cfg": {"type": "object", "properties": {"deep": {"type": "boolean", "x-mcp-header": "Deep"}}}
    }});
    let params = header_params(&schema);
    // mcp_param_headers(...) from mcp 2.3.0
    let sent = mirrored(
        &params,
        Some(&json!({"region": "é", "n": 7, "cfg": {"deep": false}})),
    );
    let mut sent: Vec<(&str, &str)> = sent.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    sent.sort();
    assert_eq!(
        sent,
        [
            ("Mcp-Param-Deep", "false"),
            ("Mcp-Param-N", "7"),
            ("Mcp-Param-Region", "=?base64?w6k=?=")
        ]
    );
    let none = mirrored(
        &params,
        Some(&json!({"region": null, "n": [1], "cfg": "x"})),
    );
    assert!(none.is_empty());
    assert!(mirrored(&params, None).is_empty());
}

#[test]
fn param_header_names_are_recognised_in_any_case() {
    assert!(is_param_header("mcp-param-region"));
    assert!(is_param_header("MCP-PARAM-Region"));
    assert!(!is_param_header("mcp-param-"));
    assert!(!is_param_header("mcp-name"));
}

/// The SDK's rule, written as its source reads (`_HEADER_SAFE`, `value == value.strip()`,
/// `_B64_SENTINEL`): whether a value goes on the wire as it is.
fn sdk_sends_plain(value: &str) -> bool {
    let safe = value.chars().all(|c| ('\x20'..='\x7e').contains(&c));
    let stripped = value.trim_matches(|c: char| c.is_whitespace());
    let sentinel = value.len() >= 11 && value.starts_with("=?base64?") && value.ends_with("?=");
    safe && value == stripped && !sentinel
}

proptest::proptest! {
    #[test]
    fn every_value_round_trips(value in "\\PC*|[ -~\t\r\n]*|=\\?base64\\?[A-Za-z0-9+/=]*\\?=") {
        let wire = encode(&value);
        proptest::prop_assert_eq!(decode(&wire), Some(value.clone()));
        proptest::prop_assert!(http::HeaderValue::from_str(&wire).is_ok(), "{:?}", wire);
    }

    #[test]
    fn the_wrapping_is_used_exactly_where_the_sdk_uses_it(
        value in "[ -~]{0,12}|.{0,6}|=\\?base64\\?.{0,4}\\?=| ?[a-z]{0,3} ?"
    ) {
        let wire = encode(&value);
        proptest::prop_assert_eq!(wire == value, sdk_sends_plain(&value), "{:?} -> {:?}", value, wire);
    }

    #[test]
    fn floats_read_back_as_themselves(f in proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL | proptest::num::f64::ZERO) {
        let text = python_float(f);
        let back: f64 = text.parse().unwrap();
        proptest::prop_assert_eq!(back.to_bits(), f.to_bits(), "{}", text);
        proptest::prop_assert!(text.contains('.') || text.contains('e'), "{}", text);
    }
}
