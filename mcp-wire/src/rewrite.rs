//! Changing one string in a message and nothing else: the bytes before and after the value are
//! kept as they came, so a body keeps its key order, spacing, numbers and `_meta` exactly. A
//! virtual server uses it to give a member back its own name (`params.name` of `tools/call`,
//! `params.ref.name` of `completion/complete`, `params.uri` of `resources/read`).
//!
//! The value is found by serde_json itself, borrowing the body (`RawValue`s), so the splice
//! lands where a JSON parser reads the value; an object with the key twice is refused rather
//! than guessed at, as the body check refuses it.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// The members of one JSON object, in order, each value unparsed.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    members.push((key, map.next_value::<&'de RawValue>()?));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(V)
    }
}

/// The raw text of the member `key` of the object `object`; `None` when it is missing, not an
/// object, or present twice.
pub(crate) fn member<'a>(object: &'a str, key: &str) -> Option<&'a RawValue> {
    let Members(members) = serde_json::from_str(object).ok()?;
    let mut found = members
        .into_iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v);
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// `body` with one string replaced by `value` (written as a JSON string), where `at` is that
/// string's text as a scan of `body` borrowed it: the bytes between its quotes, written without
/// escapes (the body check hands out a borrowed name only then). The splice costs one copy of
/// the body, no parse. `None` when `at` is not a quoted run of `body` (an escaped name was
/// copied out of the body: [`replace_string`] finds it).
pub fn splice_string(body: &[u8], at: &str, value: &str) -> Option<Vec<u8>> {
    let start = (at.as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
    let end = start.checked_add(at.len())?;
    let quoted = start > 0 && end < body.len() && body[start - 1] == b'"' && body[end] == b'"';
    if !quoted {
        return None;
    }
    let value = serde_json::to_string(value).ok()?;
    let mut out = Vec::with_capacity(body.len() - at.len() - 2 + value.len());
    out.extend_from_slice(&body[..start - 1]);
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(&body[end + 1..]);
    Some(out)
}

/// `body` with the string at `path` (object keys from the top) replaced by `value`, written as
/// a JSON string; `None` when the body is not UTF-8, the path does not lead to a string, or an
/// object on the way has the key twice.
pub fn replace_string(body: &[u8], path: &[&str], value: &str) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(body).ok()?;
    let mut at: &str = text;
    for key in path {
        at = member(at, key)?.get();
    }
    if !at.starts_with('"') {
        return None;
    }
    // `at` borrows `text`: its place in the body is the distance between their starts
    let start = at.as_ptr() as usize - text.as_ptr() as usize;
    let end = start + at.len();
    let quoted = serde_json::to_string(value).ok()?;
    let mut out = Vec::with_capacity(body.len() - at.len() + quoted.len());
    out.extend_from_slice(&body[..start]);
    out.extend_from_slice(quoted.as_bytes());
    out.extend_from_slice(&body[end..]);
    Some(out)
}

/// Where a request names what it acts on, by method: `params.name` (tools/call, prompts/get),
/// `params.ref.name` or `params.ref.uri` (completion/complete, by the reference's type),
/// `params.uri` (resources/read, resources/subscribe, resources/unsubscribe).
pub fn name_path(method: &str, ref_type: Option<&str>) -> Option<&'static [&'static str]> {
    Some(match method {
        "tools/call" | "prompts/get" => &["params", "name"],
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => &["params", "uri"],
        "completion/complete" => match ref_type? {
            "ref/prompt" => &["params", "ref", "name"],
            "ref/resource" => &["params", "ref", "uri"],
            _ => return None,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replaced(body: &str, path: &[&str], value: &str) -> Option<String> {
        replace_string(body.as_bytes(), path, value).map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn a_splice_where_the_scan_borrowed_the_name_gives_what_the_parse_gives() {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"k":"whoami"},"name":"m__whoami","arguments":{"x":1e400}}}"#;
        let info = crate::inspect_body(body).unwrap();
        let Some(Cow::Borrowed(name)) = info.name else {
            panic!("the scan borrows an unescaped name")
        };
        let spliced = splice_string(body, name, "who\"ami").unwrap();
        assert_eq!(
            spliced,
            replace_string(body, &["params", "name"], "who\"ami").unwrap()
        );
        // a string that is not a quoted run of the body is refused
        assert!(splice_string(body, "m__whoami", "x").is_none());
        let inner = &name[1..4];
        assert!(splice_string(body, inner, "x").is_none());
        assert!(splice_string(b"", "", "x").is_none());
    }

    proptest::proptest! {
        /// Wherever the scan borrows the name, the splice writes what the parse-led rewrite does.
        #[test]
        fn splicing_agrees_with_the_parsed_rewrite(
            name in "[a-zA-Z0-9_.:/ -]{0,12}",
            value in "\\PC{0,12}",
            before in proptest::bool::ANY,
        ) {
            let meta = r#""_meta":{"name":"decoy","k":[1,2.5e3,"x"]}"#;
            let (a, b) = if before { (format!("{meta},"), String::new()) } else { (String::new(), format!(",{meta}")) };
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{{a}"name":{}{b}}}}}"#,
                serde_json::to_string(&name).unwrap()
            );
            let info = crate::inspect_body(body.as_bytes()).unwrap();
            if let Some(Cow::Borrowed(at)) = info.name {
                proptest::prop_assert_eq!(
                    splice_string(body.as_bytes(), at, &value),
                    replace_string(body.as_bytes(), &["params", "name"], &value)
                );
            }
        }
    }

    #[test]
    fn only_the_value_changes_and_every_other_byte_is_kept() {
        let body = r#"{"jsonrpc":"2.0", "id":1e400,"method":"tools/call","params":{ "name" : "fast__whoami","arguments":{"name":"x","n":0.10},"_meta":{"k":[1,2]}}}"#;
        let out = replaced(body, &["params", "name"], "whoami").unwrap();
        assert_eq!(
            out,
            r#"{"jsonrpc":"2.0", "id":1e400,"method":"tools/call","params":{ "name" : "whoami","arguments":{"name":"x","n":0.10},"_meta":{"k":[1,2]}}}"#
        );
    }

    #[test]
    fn a_nested_path_reaches_the_reference_of_a_completion() {
        let body = r#"{"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"s.greet"},"argument":{"name":"n","value":"a"}}}"#;
        let path = name_path("completion/complete", Some("ref/prompt")).unwrap();
        let out = replaced(body, path, "greet").unwrap();
        assert!(
            out.contains(r#""ref":{"type":"ref/prompt","name":"greet"}"#),
            "{out}"
        );
        assert!(out.contains(r#""argument":{"name":"n""#), "{out}");
    }

    #[test]
    fn the_new_value_is_escaped_as_json() {
        let out = replaced(
            r#"{"params":{"name":"a"}}"#,
            &["params", "name"],
            "q\"\\\u{1}é",
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["params"]["name"], "q\"\\\u{1}é");
    }

    #[test]
    fn an_escaped_key_or_value_is_found_as_a_parser_reads_it() {
        let out = replaced(
            r#"{"params":{"n\u0061me":"a\u0062"}}"#,
            &["params", "name"],
            "z",
        )
        .unwrap();
        assert_eq!(out, r#"{"params":{"n\u0061me":"z"}}"#);
    }

    #[test]
    fn missing_duplicate_and_non_string_values_are_refused() {
        for (body, why) in [
            (r#"{"params":{}}"#, "missing"),
            (r#"{"params":{"name":"a","name":"b"}}"#, "duplicate"),
            (
                r#"{"params":{"name":"a"},"params":{"name":"b"}}"#,
                "duplicate parent",
            ),
            (r#"{"params":{"name":7}}"#, "a number"),
            (r#"{"params":["name"]}"#, "not an object"),
            (r#"{"params":{"name":"a"}"#, "truncated"),
            ("\u{feff}{}", "not JSON"),
        ] {
            assert_eq!(replaced(body, &["params", "name"], "x"), None, "{why}");
        }
        assert_eq!(replace_string(b"\xff", &["params"], "x"), None);
    }

    #[test]
    fn name_paths_follow_the_method() {
        assert_eq!(name_path("tools/call", None), Some(&["params", "name"][..]));
        assert_eq!(
            name_path("resources/read", None),
            Some(&["params", "uri"][..])
        );
        assert_eq!(
            name_path("completion/complete", Some("ref/resource")),
            Some(&["params", "ref", "uri"][..])
        );
        assert_eq!(name_path("completion/complete", None), None);
        assert_eq!(name_path("tools/list", None), None);
    }

    proptest::proptest! {
        #[test]
        fn whatever_the_names_a_rewrite_parses_as_the_original_with_the_name_changed(
            old in "\\PC{0,12}", new in "\\PC{0,12}", pad in "[ \\t\\n]{0,3}", extra in proptest::option::of("\\PC{0,6}"),
        ) {
            let mut params = serde_json::Map::new();
            if let Some(e) = &extra { params.insert("arguments".into(), serde_json::json!({"name": e})); }
            params.insert("name".into(), serde_json::Value::String(old));
            let body = format!(
                "{{\"jsonrpc\":\"2.0\",{pad}\"id\":1,\"params\":{pad}{}}}",
                serde_json::to_string(&params).unwrap()
            );
            let out = replace_string(body.as_bytes(), &["params", "name"], &new).unwrap();
            let mut want: serde_json::Value = serde_json::from_str(&body).unwrap();
            want["params"]["name"] = serde_json::Value::String(new);
            let got: serde_json::Value = serde_json::from_slice(&out).unwrap();
            proptest::prop_assert_eq!(got, want);
        }
    }
}
