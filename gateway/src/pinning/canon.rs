//! Canonical JSON (RFC 8785, JCS) and a tool definition's fingerprint: what the model reads of
//! a tool (its name, title, description, `inputSchema`, `outputSchema` and annotations), written
//! canonically and hashed with SHA-256, so key order, spacing, escapes and the spelling of a
//! number (`1.0`, `1`, `1e0`) never read as a change.

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// The fields of a tool definition that are fingerprinted, in their wire names.
pub const FIELDS: [&str; 6] = [
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];

/// The part of `tool` that is fingerprinted: the [`FIELDS`] it has (an absent field and a
/// `null` one differ, as they do to a client).
pub fn definition(tool: &serde_json::Map<String, Value>) -> Value {
    let mut out = serde_json::Map::new();
    for field in FIELDS {
        if let Some(v) = tool.get(field) {
            out.insert(field.to_owned(), v.clone());
        }
    }
    Value::Object(out)
}

/// `value` written as RFC 8785 says: object members sorted by their names' UTF-16 code units,
/// no whitespace, strings escaped as ECMAScript's `JSON.stringify` does, numbers as
/// ECMAScript's `Number.prototype.toString` writes the IEEE 754 double they denote. A number
/// no double can hold (past ±1.8e308) is written as it was spelt (JCS would refuse it; the
/// gateway must still fingerprint what it was sent).
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write(&mut out, value);
    out
}

/// `sha256:` and the hex SHA-256 of the canonical form of `definition`.
pub fn fingerprint_of(canonical: &str) -> String {
    let digest = Sha256::digest(canonical.as_bytes());
    let mut out = String::with_capacity(71);
    out.push_str("sha256:");
    for b in digest {
        let _ = write!(out, "{b:02x}");
    }
    out
}

fn write(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_f64().filter(|f| f.is_finite()) {
            Some(f) => number(out, f),
            None => out.push_str(&n.to_string()),
        },
        Value::String(s) => string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<(Vec<u16>, &String, &Value)> = map
                .iter()
                .map(|(k, v)| (k.encode_utf16().collect(), k, v))
                .collect();
            keys.sort_by(|a, b| a.0.cmp(&b.0));
            out.push('{');
            for (i, (_, k, v)) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(out, k);
                out.push(':');
                write(out, v);
            }
            out.push('}');
        }
    }
}

/// A string as `JSON.stringify` writes it: `"` and `\` escaped, the control characters as
/// `\b \t \n \f \r` or `\u00xx` (lowercase hex), everything else as it is.
fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A finite double as ECMAScript's `Number.prototype.toString` writes it (RFC 8785 §3.2.2.3):
/// the shortest digits that read back as the same double (Rust's `{:e}` gives them), placed
/// by the ECMAScript rules.
fn number(out: &mut String, f: f64) {
    if f == 0.0 {
        out.push('0');
        return;
    }
    if f < 0.0 {
        out.push('-');
    }
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i64;
    // n: where the decimal point goes, counted from the first digit
    let n = exp.parse::<i64>().unwrap_or(0) + 1;
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if n - 1 < 0 { '-' } else { '+' });
        let _ = write!(out, "{}", (n - 1).abs());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn canon(text: &str) -> String {
        canonical(&serde_json::from_str(text).unwrap())
    }

    #[test]
    fn numbers_are_written_as_ecmascript_writes_them() {
        // RFC 8785 appendix B's examples
        let cases = [
            ("0", "0"),
            ("-0", "0"),
            ("1.0", "1"),
            ("1e0", "1"),
            ("100", "100"),
            ("1e21", "1e+21"),
            ("1e20", "100000000000000000000"),
            ("123456789012345680000", "123456789012345680000"),
            ("0.000001", "0.000001"),
            ("1e-7", "1e-7"),
            ("9007199254740992", "9007199254740992"),
            ("295147905179352830000", "295147905179352830000"),
            ("4.50", "4.5"),
            ("2e-3", "0.002"),
            ("0.000001234", "0.000001234"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("5e-324", "5e-324"),
            ("-1.5e-9", "-1.5e-9"),
            ("333333333.33333329", "333333333.3333333"),
        ];
        for (text, want) in cases {
            assert_eq!(canon(text), want, "{text}");
        }
    }

    #[test]
    fn objects_are_sorted_by_utf16_code_units_and_strings_escaped_as_json_stringify() {
        // RFC 8785 §3.2.3: "\r" < "1" < "\u0080" < "\u00f6" < "\u20ac" < "😀" < "\ufb33"
        let text = r#"{"\u20ac":1,"\r":2,"\ufb33":3,"1":4,"\ud83d\ude00":5,"\u0080":6,"\u00f6":7}"#;
        assert_eq!(
            canon(text),
            "{\"\\r\":2,\"1\":4,\"\u{80}\":6,\"ö\":7,\"€\":1,\"😀\":5,\"\u{fb33}\":3}"
        );
        assert_eq!(canon(r#""a\u001fb\/c""#), r#""a\u001fb/c""#);
        assert_eq!(canon(r#"[ true , null , { } ]"#), "[true,null,{}]");
    }

    /// A JSON value, with numbers that have many spellings.
    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            "[a-z\u{80}-\u{ff}\"\\\\\n]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-zA-Z]{1,4}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// `value` written with its object keys in reverse order, spaces around every token, and
    /// each number in another spelling of the same double.
    fn respelt(value: &Value) -> String {
        match value {
            Value::Object(m) => {
                let parts: Vec<String> = m
                    .iter()
                    .rev()
                    .map(|(k, v)| format!(" {} : {} ", Value::String(k.clone()), respelt(v)))
                    .collect();
                format!("{{{}}}", parts.join(","))
            }
            Value::Array(a) => {
                let parts: Vec<String> = a.iter().map(respelt).collect();
                format!("[ {} ]", parts.join(" , "))
            }
            Value::Number(n) => match n.as_f64() {
                Some(f) => format!("{f:e}"),
                None => n.to_string(),
            },
            other => other.to_string(),
        }
    }

    proptest! {
        #[test]
        fn key_order_spacing_and_number_spelling_do_not_change_the_fingerprint(v in json()) {
            let respelt: Value = serde_json::from_str(&respelt(&v)).unwrap();
            let a = fingerprint_of(&canonical(&v));
            let b = fingerprint_of(&canonical(&respelt));
            prop_assert_eq!(a, b);
        }

        #[test]
        fn a_change_of_any_fingerprinted_field_changes_the_fingerprint(
            field in 0usize..FIELDS.len(),
            a in json(),
            b in json(),
        ) {
            prop_assume!(canonical(&a) != canonical(&b));
            let tool = |v: &Value| {
                let mut m = serde_json::Map::new();
                for f in FIELDS {
                    m.insert(f.to_owned(), Value::from("same"));
                }
                m.insert(FIELDS[field].to_owned(), v.clone());
                m.insert("_meta".to_owned(), Value::from("not fingerprinted"));
                fingerprint_of(&canonical(&definition(&m)))
            };
            prop_assert_ne!(tool(&a), tool(&b));
        }

        #[test]
        fn the_canonical_form_reads_back_as_the_same_canonical_form(v in json()) {
            let once = canonical(&v);
            let again: Value = serde_json::from_str(&once).unwrap();
            prop_assert_eq!(canonical(&again), once);
        }
    }

    #[test]
    fn fields_that_are_not_fingerprinted_do_not_change_it() {
        let a: Value = serde_json::json!({"name": "t", "description": "d", "_meta": {"x": 1}});
        let b: Value = serde_json::json!({"name": "t", "description": "d", "icons": []});
        let fp = |v: &Value| fingerprint_of(&canonical(&definition(v.as_object().unwrap())));
        assert_eq!(fp(&a), fp(&b));
    }
}
