//! `Mcp-Param-*` headers (SEP-2243, 2026-07-28): a tool's `inputSchema` marks an argument with
//! `"x-mcp-header": "Region"`, and every 2026-07-28 request calling the tool mirrors the
//! argument's value in `Mcp-Param-Region`, which a 2026-07-28 server checks against the body
//! (-32020 when it is missing or disagrees).
//!
//! The rules are the reference SDK's (PyPI `mcp` 2.3.0, `mcp/shared/inbound.py`), which its
//! server enforces:
//! - which properties count ([`header_params`]): an `x-mcp-header` on a property reached from
//!   the schema's root through `properties` keys only, on a `string`, `integer` or `boolean`
//!   property, naming an RFC 9110 token unique regardless of case; a schema with any other
//!   `x-mcp-header` is invalid ([`find_invalid`]) and mirrors nothing (clients drop such a tool,
//!   the server validates nothing for it);
//! - how a value is written ([`render`], [`encode`]): `true`/`false`, Python's `str()` for
//!   other scalars, wrapped as `=?base64?<canonical base64 of its UTF-8>?=` when it is not
//!   plain printable ASCII (0x20–0x7E), has a leading or trailing space, or already looks
//!   like that wrapping; [`decode`] reverses it, refusing a malformed or non-canonical one;
//! - which headers a call sends ([`mirrored`]): one per marked property whose argument is
//!   present, not null and a scalar.
//!
//! Pure: no I/O; the schema walk keeps its own stack, so no schema can exhaust the call stack.

use base64::Engine;
use serde_json::Value;

/// The schema annotation that marks an argument mirrored in a header.
pub const X_MCP_HEADER: &str = "x-mcp-header";

/// The prefix of a mirrored argument's header name, lowercase (header names are
/// case-insensitive; `Mcp-Param-Region` arrives as `mcp-param-region`).
pub const PREFIX: &str = "mcp-param-";

/// One mirrored argument of a tool: where it is in the arguments (the chain of `properties`
/// keys from the schema's root) and the header token (`Region` → `Mcp-Param-Region`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The property's path from the root of `arguments`.
    pub path: Vec<String>,
    /// The `x-mcp-header` token, as the schema spells it.
    pub token: String,
}

impl HeaderParam {
    /// The header's name: `Mcp-Param-<token>`.
    pub fn header_name(&self) -> String {
        format!("Mcp-Param-{}", self.token)
    }
}

/// JSON Schema applicators whose value is one schema (the walk enters them, off the
/// `properties` chain).
const SINGLE: &[&str] = &[
    "items",
    "contains",
    "unevaluatedItems",
    "additionalProperties",
    "propertyNames",
    "unevaluatedProperties",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];
/// Applicators whose value is a list of schemas.
const LIST: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Applicators whose value is a map of schemas.
const MAP: &[&str] = &[
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];

/// A schema position: its `properties` path from the root (`None` off that chain) and the
/// schema there.
type Position<'a> = (Option<Vec<String>>, &'a serde_json::Map<String, Value>);

/// Every schema position of `root` with its `properties` path (`None` once another
/// applicator was crossed), in the SDK's order. Instance data (`default`, `const`, `enum`,
/// `examples`) and `$ref` are never entered.
fn positions(root: &Value) -> Vec<Position<'_>> {
    let mut out = Vec::new();
    let mut stack: Vec<(Option<Vec<String>>, &Value)> = vec![(Some(Vec::new()), root)];
    while let Some((path, node)) = stack.pop() {
        let Value::Object(schema) = node else {
            continue;
        };
        for (kw, val) in schema {
            let kw = kw.as_str();
            if kw == "properties" {
                if let Value::Object(props) = val {
                    for (name, sub) in props {
                        let sub_path = path.as_ref().map(|p| {
                            let mut p = p.clone();
                            p.push(name.clone());
                            p
                        });
                        stack.push((sub_path, sub));
                    }
                }
            } else if SINGLE.contains(&kw) {
                stack.push((None, val));
            } else if LIST.contains(&kw) {
                if let Value::Array(subs) = val {
                    stack.extend(subs.iter().map(|s| (None, s)));
                }
            } else if MAP.contains(&kw) {
                if let Value::Object(subs) = val {
                    stack.extend(subs.values().map(|s| (None, s)));
                }
            }
        }
        out.push((path, schema));
    }
    out
}

/// Whether `s` is an RFC 9110 token (the characters a header name may have).
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'!' | b'#'
                        | b'$'
                        | b'%'
                        | b'&'
                        | b'\''
                        | b'*'
                        | b'+'
                        | b'-'
                        | b'.'
                        | b'^'
                        | b'_'
                        | b'`'
                        | b'|'
                        | b'~'
                )
        })
}

/// Why `input_schema`'s `x-mcp-header` annotations are invalid, or `None` when they are all
/// valid (or there are none): off a pure `properties` chain or on the root, not a string,
/// not a token, on a property that is not `string`, `integer` or `boolean`, or a token used
/// twice regardless of case.
pub fn find_invalid(input_schema: &Value) -> Option<String> {
    let mut seen: Vec<(String, String)> = Vec::new();
    for (path, schema) in positions(input_schema) {
        let Some(header) = schema.get(X_MCP_HEADER) else {
            continue;
        };
        let Some(path) = path.filter(|p| !p.is_empty()) else {
            return Some(format!(
                "{X_MCP_HEADER} found at a schema position not reachable via a pure `properties` chain"
            ));
        };
        let at = path.join(".");
        let Value::String(header) = header else {
            return Some(format!("property '{at}': {X_MCP_HEADER} must be a string"));
        };
        if !is_token(header) {
            return Some(format!(
                "property '{at}': {X_MCP_HEADER} '{header}' is not an RFC 9110 token"
            ));
        }
        let typed = schema.get("type").and_then(Value::as_str);
        if !matches!(typed, Some("string" | "integer" | "boolean")) {
            return Some(format!(
                "property '{at}': {X_MCP_HEADER} is only permitted on integer/string/boolean properties"
            ));
        }
        let lower = header.to_ascii_lowercase();
        if let Some((_, first)) = seen.iter().find(|(l, _)| *l == lower) {
            return Some(format!(
                "{X_MCP_HEADER} '{header}' on property '{at}' duplicates property '{first}'"
            ));
        }
        seen.push((lower, at));
    }
    None
}

/// The arguments `input_schema` mirrors in headers; none when its annotations are invalid
/// ([`find_invalid`]): a client drops such a tool, and the server checks nothing for it.
pub fn header_params(input_schema: &Value) -> Vec<HeaderParam> {
    if find_invalid(input_schema).is_some() {
        return Vec::new();
    }
    let mut params: Vec<HeaderParam> = positions(input_schema)
        .into_iter()
        .filter_map(|(path, schema)| {
            let path = path.filter(|p| !p.is_empty())?;
            let token = schema.get(X_MCP_HEADER)?.as_str()?.to_owned();
            Some(HeaderParam { path, token })
        })
        .collect();
    params.sort_by(|a, b| a.path.cmp(&b.path));
    params
}

/// The sentinel's parts.
const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";

/// The payload of a value that has the sentinel's form (`=?base64?...?=`, case-sensitive, as
/// the SDK's `^=\?base64\?(.*)\?=$`).
fn sentinel_payload(value: &str) -> Option<&str> {
    let rest = value.strip_prefix(SENTINEL_START)?;
    rest.strip_suffix(SENTINEL_END)
}

/// Writes `value` as a header value: as it is when it is printable ASCII (0x20–0x7E, the
/// empty string included) without a leading or trailing space and does not look like the
/// sentinel; else `=?base64?<base64 of its UTF-8>?=`. Always a valid header value.
pub fn encode(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && sentinel_payload(value).is_none();
    if plain {
        return value.to_owned();
    }
    let b64 = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
    format!("{SENTINEL_START}{b64}{SENTINEL_END}")
}

/// Reads a header value [`encode`] wrote: as it is, unless it has the sentinel's form, whose
/// payload must be canonical base64 of UTF-8 (`None` otherwise, so that a corrupt header never
/// matches a value by accident).
pub fn decode(value: &str) -> Option<String> {
    let Some(payload) = sentinel_payload(value) else {
        return Some(value.to_owned());
    };
    let engine = base64::engine::general_purpose::STANDARD;
    let bytes = engine.decode(payload).ok()?;
    if engine.encode(&bytes) != payload {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// An argument's value as the SDK mirrors it before encoding: `true`/`false`, a string as it
/// is, a number as Python's `str()` writes the number the JSON text parses to (an integer's
/// digits, a float's shortest repr: `42.0`, `1e+20`, `inf`); `None` for null, arrays and
/// objects (nothing is sent).
pub fn render(value: &Value) -> Option<String> {
    match value {
        Value::Bool(b) => Some(if *b { "true" } else { "false" }.to_owned()),
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(python_number(&n.to_string())),
        _ => None,
    }
}

/// Python's `str()` of the number JSON text `text` parses to (`json.loads`: an int without a
/// fraction or exponent, else a float).
fn python_number(text: &str) -> String {
    if !text.contains(['.', 'e', 'E']) {
        // an int: JSON allows no leading zeros, so only `-0` differs from its `str()`
        return if text == "-0" {
            "0".to_owned()
        } else {
            text.to_owned()
        };
    }
    match text.parse::<f64>() {
        Ok(f) if f.is_infinite() => if f < 0.0 { "-inf" } else { "inf" }.to_owned(),
        Ok(f) => python_float(f),
        Err(_) => text.to_owned(),
    }
}

/// Python's `repr()` of a finite float: the shortest digits that read back as `f`, fixed
/// notation when the decimal exponent is within [-4, 16), else `d.ddde±XX`.
pub fn python_float(f: f64) -> String {
    // `{:e}` writes the shortest round-trip digits: `1.5e-7`, `-3e20`, `0e0`
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let n = digits.len() as i32;
    let point = exp + 1; // digits before the decimal point
    if !(-4 < point && point <= 16) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{esign}{:02}", exp.unsigned_abs());
    }
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point >= n {
        format!("{digits}{}.0", "0".repeat((point - n) as usize))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{body}")
}

/// The value at `path` in `arguments`, when every step is an object that has the key.
fn at_path<'a>(arguments: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter()
        .try_fold(arguments, |node, key| node.as_object()?.get(key))
}

/// The `Mcp-Param-*` headers (name, wire value) a `tools/call` with `arguments` sends for a
/// tool that mirrors `params`: one per parameter whose argument is present, not null and a
/// scalar, in the order of `params`.
pub fn mirrored(params: &[HeaderParam], arguments: Option<&Value>) -> Vec<(String, String)> {
    let Some(arguments) = arguments else {
        return Vec::new();
    };
    params
        .iter()
        .filter_map(|p| {
            let value = render(at_path(arguments, &p.path)?)?;
            Some((p.header_name(), encode(&value)))
        })
        .collect()
}

/// Whether a header name (any case) is an `Mcp-Param-*` header.
pub fn is_param_header(name: &str) -> bool {
    name.len() > PREFIX.len()
        && name.as_bytes()[..PREFIX.len()].eq_ignore_ascii_case(PREFIX.as_bytes())
}

#[cfg(test)]
#[path = "param_headers_tests.rs"]
mod tests;
