//! The one pass over a request body: it checks the whole text against RFC 8259 (what serde_json
//! accepts: UTF-8, the grammar, any number the grammar allows however large, no lone UTF-16
//! surrogate escapes, nesting below [`MAX_DEPTH`]) and, in the same pass, borrows the few
//! fields the gateway reads: `id`, `method`, `params.name`, `params.uri` and
//! `params._meta["io.modelcontextprotocol/protocolVersion"]`. Nothing is allocated unless one of
//! those is written with escapes.
//!
//! Before, the body was read twice (a check of what serde's skipping misses, then serde_json
//! into a struct); the property tests hold this scanner to serde_json's verdict on generated
//! and mutated messages.

use std::borrow::Cow;

/// Nesting of arrays and objects refused: serde_json's own limit (it accepts 127 levels), far
/// below what breaks a backend's parser (100,000 levels made the Python SDK answer 500).
pub const MAX_DEPTH: usize = 128;

/// The key of the 2026-07-28 protocol version in `params._meta`.
const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// What the scan found in a message object. A field is `None` when absent or `null`.
#[derive(Debug, Default)]
pub(crate) struct Envelope<'a> {
    /// The JSON text of `id`, exactly as sent (any JSON value: the caller checks its type).
    pub id: Option<&'a str>,
    pub method: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    pub uri: Option<Cow<'a, str>>,
    pub has_meta: bool,
    pub protocol_version: Option<Cow<'a, str>>,
}

/// Why a body is not one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Not JSON (with what and where, in serde_json's words).
    Syntax(String),
    /// A JSON array (a batch).
    Array,
    /// JSON, but not an object.
    NotObject,
    /// An object whose known field has the wrong type, or a key given twice.
    Shape(String),
}

/// The kind of value a scan of one value found.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Found {
    String,
    Other,
    Null,
}

/// Scans a whole body as one JSON-RPC message.
pub(crate) fn scan(body: &[u8]) -> Result<Envelope<'_>, Refused> {
    let text =
        std::str::from_utf8(body).map_err(|e| Refused::Syntax(format!("invalid UTF-8: {e}")))?;
    let mut s = Scanner {
        b: body,
        text,
        i: 0,
        depth: 0,
    };
    s.ws();
    let envelope = match s.peek() {
        Some(b'{') => s.message()?,
        Some(b'[') => {
            s.value()?;
            s.end()?;
            return Err(Refused::Array);
        }
        _ => {
            s.value()?;
            s.end()?;
            return Err(Refused::NotObject);
        }
    };
    s.end()?;
    Ok(envelope)
}

struct Scanner<'a> {
    b: &'a [u8],
    text: &'a str,
    i: usize,
    depth: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// Where the scanner is, as a person reads it: `line L column C` (both from 1).
    fn position(&self) -> String {
        self.position_of(self.i)
    }

    /// Where byte `at` is, as a person reads it (only for errors: it counts lines).
    fn position_of(&self, at: usize) -> String {
        let upto = &self.b[..at.min(self.b.len())];
        let line = 1 + upto.iter().filter(|&&b| b == b'\n').count();
        let column = upto.len() - upto.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        format!("line {line} column {}", column + 1)
    }

    /// A syntax error at the current byte, in serde_json's words and with its line and column.
    fn error(&self, what: &str) -> Refused {
        Refused::Syntax(format!("{what} at {}", self.position()))
    }

    fn eof_or(&self, what: &str) -> Refused {
        if self.i >= self.b.len() {
            self.error("EOF while parsing a value")
        } else {
            self.error(what)
        }
    }

    /// Only whitespace may follow the message.
    fn end(&mut self) -> Result<(), Refused> {
        self.ws();
        if self.i < self.b.len() {
            return Err(self.error("trailing characters"));
        }
        Ok(())
    }

    fn enter(&mut self) -> Result<(), Refused> {
        self.depth += 1;
        if self.depth >= MAX_DEPTH {
            return Err(Refused::Syntax(format!(
                "nested {MAX_DEPTH} levels deep or more"
            )));
        }
        Ok(())
    }

    /// The top-level object, reading the fields the gateway needs.
    fn message(&mut self) -> Result<Envelope<'a>, Refused> {
        let mut env = Envelope::default();
        let mut seen = Seen::new(["id", "method", "params"]);
        self.object(|s, key| {
            match seen.field(&key, s)?.map(|k| seen.names[k]) {
                Some("id") => {
                    s.ws();
                    let start = s.i;
                    if s.value()? != Found::Null {
                        env.id = Some(&s.text[start..s.i]);
                    }
                }
                Some("method") => env.method = s.string_or_null("method")?,
                Some("params") => {
                    s.ws();
                    match s.peek() {
                        Some(b'{') => s.params(&mut env)?,
                        Some(b'n') => {
                            s.value()?;
                        }
                        _ => {
                            let at = s.position();
                            s.value()?;
                            return Err(shape("params must be an object", at));
                        }
                    }
                }
                _ => {
                    s.value()?;
                }
            }
            Ok(())
        })?;
        Ok(env)
    }

    fn params(&mut self, env: &mut Envelope<'a>) -> Result<(), Refused> {
        let mut seen = Seen::new(["name", "uri", "_meta"]);
        self.object(|s, key| {
            match seen.field(&key, s)?.map(|k| seen.names[k]) {
                Some("name") => env.name = s.string_or_null("params.name")?,
                Some("uri") => env.uri = s.string_or_null("params.uri")?,
                Some("_meta") => {
                    s.ws();
                    match s.peek() {
                        Some(b'{') => {
                            env.has_meta = true;
                            s.meta(env)?;
                        }
                        Some(b'n') => {
                            s.value()?;
                        }
                        _ => {
                            let at = s.position();
                            s.value()?;
                            return Err(shape("params._meta must be an object", at));
                        }
                    }
                }
                _ => {
                    s.value()?;
                }
            }
            Ok(())
        })
    }

    fn meta(&mut self, env: &mut Envelope<'a>) -> Result<(), Refused> {
        let mut seen = Seen::new([PROTOCOL_VERSION_KEY]);
        self.object(|s, key| {
            if seen.field(&key, s)?.is_some() {
                env.protocol_version = s.string_or_null("the protocol version in params._meta")?;
            } else {
                s.value()?;
            }
            Ok(())
        })
    }

    /// A string or `null`; anything else is the wrong type for `what`.
    fn string_or_null(&mut self, what: &str) -> Result<Option<Cow<'a, str>>, Refused> {
        self.ws();
        let start = self.i;
        match self.peek() {
            Some(b'"') => self.string().map(Some),
            _ => match self.value()? {
                Found::Null => Ok(None),
                _ => Err(shape(
                    &format!("{what} must be a string or null"),
                    self.position_of(start),
                )),
            },
        }
    }

    /// An object, calling `field` with each key, the scanner at the key's value (before any
    /// whitespace). The scanner is at `{`.
    fn object(
        &mut self,
        mut field: impl FnMut(&mut Self, Cow<'a, str>) -> Result<(), Refused>,
    ) -> Result<(), Refused> {
        self.enter()?;
        self.i += 1;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return Err(self.eof_or("key must be a string"));
            }
            let key = self.string()?;
            self.ws();
            if self.peek() != Some(b':') {
                return Err(self.eof_or("expected `:`"));
            }
            self.i += 1;
            field(self, key)?;
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                _ => return Err(self.eof_or("expected `,` or `}`")),
            }
        }
    }

    /// Any value, checked and skipped.
    fn value(&mut self) -> Result<Found, Refused> {
        self.ws();
        match self.peek() {
            Some(b'"') => {
                self.skip_string()?;
                Ok(Found::String)
            }
            Some(b'{') => {
                self.object(|s, _| s.value().map(drop))?;
                Ok(Found::Other)
            }
            Some(b'[') => {
                self.enter()?;
                self.i += 1;
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                } else {
                    loop {
                        self.value()?;
                        self.ws();
                        match self.peek() {
                            Some(b',') => self.i += 1,
                            Some(b']') => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err(self.eof_or("expected `,` or `]`")),
                        }
                    }
                }
                self.depth -= 1;
                Ok(Found::Other)
            }
            Some(b't') => self.literal(b"true", Found::Other),
            Some(b'f') => self.literal(b"false", Found::Other),
            Some(b'n') => self.literal(b"null", Found::Null),
            Some(b'-' | b'0'..=b'9') => {
                self.number()?;
                Ok(Found::Other)
            }
            _ => Err(self.eof_or("expected value")),
        }
    }

    fn literal(&mut self, word: &[u8], found: Found) -> Result<Found, Refused> {
        for &want in word {
            match self.peek() {
                Some(b) if b == want => self.i += 1,
                None => return Err(self.error("EOF while parsing a value")),
                Some(_) => return Err(self.error("expected ident")),
            }
        }
        Ok(found)
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, of any length.
    fn number(&mut self) -> Result<(), Refused> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.eof_or("invalid number")),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.eof_or("invalid number"));
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.eof_or("invalid number"));
            }
            self.digits();
        }
        Ok(())
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
    }

    /// A string, decoded: borrowed when it has no escapes. The scanner is at its `"`.
    fn string(&mut self) -> Result<Cow<'a, str>, Refused> {
        let start = self.i + 1;
        let escaped = self.skip_string()?;
        let raw = &self.text[start..self.i - 1];
        if !escaped {
            return Ok(Cow::Borrowed(raw));
        }
        // the escapes were checked by the skip: serde_json decodes them the same way
        let quoted = &self.text[start - 1..self.i];
        serde_json::from_str::<String>(quoted)
            .map(Cow::Owned)
            .map_err(|e| Refused::Syntax(e.to_string()))
    }

    /// Skips a string, checking its escapes and that it has no control characters; whether it
    /// had escapes. The scanner is at its `"`, and ends past the closing one.
    fn skip_string(&mut self) -> Result<bool, Refused> {
        self.i += 1;
        let mut escaped = false;
        // a high surrogate escape just ended: the next thing must be its low half
        let mut want_low = false;
        loop {
            let Some(&b) = self.b.get(self.i) else {
                return Err(self.error("EOF while parsing a string"));
            };
            if want_low && b != b'\\' {
                return Err(lone_surrogate());
            }
            match b {
                b'"' => {
                    self.i += 1;
                    return Ok(escaped);
                }
                b'\\' => {
                    escaped = true;
                    self.i += 1;
                    match self.peek() {
                        Some(b'u') => {
                            let unit = self
                                .b
                                .get(self.i + 1..self.i + 5)
                                .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
                                .map(|h| {
                                    h.iter().fold(0u16, |n, &d| {
                                        n * 16 + (d as char).to_digit(16).unwrap_or(0) as u16
                                    })
                                });
                            let Some(unit) = unit else {
                                return Err(self.eof_or("invalid escape"));
                            };
                            match unit {
                                0xD800..=0xDBFF if !want_low => want_low = true,
                                0xDC00..=0xDFFF if want_low => want_low = false,
                                0xD800..=0xDFFF => return Err(lone_surrogate()),
                                _ if want_low => return Err(lone_surrogate()),
                                _ => {}
                            }
                            self.i += 5;
                        }
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't')
                            if !want_low =>
                        {
                            self.i += 1;
                        }
                        Some(_) if want_low => return Err(lone_surrogate()),
                        None => return Err(self.error("EOF while parsing a string")),
                        Some(_) => return Err(self.error("invalid escape")),
                    }
                }
                0x00..=0x1F => {
                    return Err(self
                        .error("control character (\\u0000-\\u001F) found while parsing a string"))
                }
                _ => {
                    // the plain bytes up to the next quote or escape (memchr's vector search),
                    // then one vectorizable look for a control character among them
                    let rest = &self.b[self.i..];
                    let run = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
                    let plain = &rest[..run];
                    // no early exit, so it compiles to a vector loop; the position only when
                    // there is one (the error path)
                    let controls = plain.iter().fold(false, |any, &c| any | (c < 0x20));
                    self.i += if controls {
                        plain.iter().position(|&c| c < 0x20).unwrap_or(run)
                    } else {
                        run
                    };
                }
            }
        }
    }
}

fn lone_surrogate() -> Refused {
    Refused::Syntax("a \\u escape that is a lone UTF-16 surrogate".into())
}

/// A field of the wrong type, named with where its value starts (never the value itself: it
/// may be a client's secret).
fn shape(what: &str, at: String) -> Refused {
    Refused::Shape(format!("{what} (at {at})"))
}

/// The fields of one object the gateway reads, and whether each was seen: one given twice is
/// refused (a message with two ids is not one message), as serde refuses a struct's field given
/// twice. Keys the gateway does not read may repeat; they are the backend's to judge.
struct Seen<const N: usize> {
    names: [&'static str; N],
    seen: [bool; N],
}

impl<const N: usize> Seen<N> {
    fn new(names: [&'static str; N]) -> Self {
        Seen {
            names,
            seen: [false; N],
        }
    }

    /// Which of the fields `key` is, if any; an error if it was seen before.
    fn field(&mut self, key: &str, at: &Scanner<'_>) -> Result<Option<usize>, Refused> {
        let Some(k) = self.names.iter().position(|n| *n == key) else {
            return Ok(None);
        };
        if std::mem::replace(&mut self.seen[k], true) {
            return Err(Refused::Shape(format!(
                "the key `{}` is given twice (at {})",
                printable(key),
                at.position()
            )));
        }
        Ok(Some(k))
    }
}

/// A key as the answer may quote it: short keys as they are, long ones cut (never a client's
/// long text in an error).
fn printable(key: &str) -> String {
    if key.chars().count() <= 40 && !key.chars().any(char::is_control) {
        key.to_owned()
    } else {
        format!(
            "{}…",
            key.chars()
                .filter(|c| !c.is_control())
                .take(40)
                .collect::<String>()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(body: &str) -> Refused {
        scan(body.as_bytes()).expect_err(body)
    }

    #[test]
    fn the_fields_are_borrowed_from_the_body_when_they_have_no_escapes() {
        let body = r#" {"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"echo","arguments":{"x":[1,2.5e-3,{}]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}} "#;
        let env = scan(body.as_bytes()).unwrap();
        assert_eq!(env.id, Some(r#""a-1""#));
        assert!(matches!(env.method, Some(Cow::Borrowed("tools/call"))));
        assert!(matches!(env.name, Some(Cow::Borrowed("echo"))));
        assert!(env.has_meta);
        assert_eq!(env.protocol_version.as_deref(), Some("2026-07-28"));
    }

    #[test]
    fn escaped_keys_and_values_are_read_as_a_parser_reads_them() {
        let env = scan(
            br#"{"i\u0064":7,"m\u0065thod":"tools\/call","params":{"name":"\u00e9\ud83d\ude00"}}"#,
        )
        .unwrap();
        assert_eq!(env.id, Some("7"));
        assert_eq!(env.method.as_deref(), Some("tools/call"));
        assert_eq!(env.name.as_deref(), Some("é😀"));
    }

    #[test]
    fn a_field_the_gateway_reads_given_twice_is_refused_and_others_may_repeat() {
        for body in [
            r#"{"id":1,"id":2}"#,
            r#"{"id":1,"i\u0064":1}"#,
            r#"{"params":{"name":"a","name":"b"}}"#,
            r#"{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"a","io.modelcontextprotocol/protocolVersion":"b"}}}"#,
        ] {
            assert!(
                matches!(refused(body), Refused::Shape(m) if m.contains("given twice")),
                "{body}"
            );
        }
        assert!(scan(
            br#"{"jsonrpc":"2.0","jsonrpc":"2.0","params":{"arguments":1,"arguments":2}}"#
        )
        .is_ok());
    }

    #[test]
    fn wrong_types_name_the_field_and_where_never_the_value() {
        let Refused::Shape(m) = refused("{\"id\":1,\n \"params\":\"sk-secret\"}") else {
            panic!()
        };
        assert_eq!(m, "params must be an object (at line 2 column 11)");
        let Refused::Shape(m) = refused(r#"{"method":["sk-secret"]}"#) else {
            panic!()
        };
        assert!(
            m.starts_with("method must be a string or null") && !m.contains("secret"),
            "{m}"
        );
        assert!(scan(br#"{"method":null,"params":null,"id":null}"#).is_ok());
    }

    #[test]
    fn syntax_errors_say_what_and_where() {
        for (body, want) in [
            ("", "EOF while parsing a value at line 1 column 1"),
            ("{\"id\":1,}", "key must be a string at line 1 column 9"),
            ("{\"id\" 1}", "expected `:` at line 1 column 7"),
            ("{\"id\":01}", "expected `,` or `}` at line 1 column 8"),
            ("{\"id\":1.}", "invalid number at line 1 column 9"),
            ("{\"id\":tru}", "expected ident at line 1 column 10"),
            ("{} x", "trailing characters at line 1 column 4"),
            ("{\"a\":\"\u{1}\"}", "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 7"),
            ("{\"a\":\"\\x\"}", "invalid escape at line 1 column 8"),
            ("{\"a\":\"\\ud800\"}", "a \\u escape that is a lone UTF-16 surrogate"),
            ("{\"a\":\"\\ud800\\n\"}", "a \\u escape that is a lone UTF-16 surrogate"),
            ("{\"a\":\"\\udc00\"}", "a \\u escape that is a lone UTF-16 surrogate"),
            ("{\"a\":\"x", "EOF while parsing a string at line 1 column 8"),
        ] {
            assert_eq!(refused(body), Refused::Syntax(want.into()), "{body:?}");
        }
        assert!(
            matches!(scan(b"{\"a\":\"\xff\"}"), Err(Refused::Syntax(m)) if m.starts_with("invalid UTF-8"))
        );
    }

    #[test]
    fn any_number_the_grammar_allows_is_accepted_however_large() {
        for n in [
            "0",
            "-0",
            "1e400",
            "-1.5E-400",
            "123456789012345678901234567890",
            "0.0e+0",
        ] {
            assert!(scan(format!("{{\"id\":{n}}}").as_bytes()).is_ok(), "{n}");
        }
        for n in ["01", "1.", ".5", "+1", "1e", "-", "1e+", "NaN", "Infinity"] {
            assert!(
                matches!(refused(&format!("{{\"id\":{n}}}")), Refused::Syntax(_)),
                "{n}"
            );
        }
    }

    #[test]
    fn batches_and_non_objects_are_told_apart_from_broken_json() {
        assert_eq!(refused(r#"[{"id":1}]"#), Refused::Array);
        assert!(matches!(refused("[1,"), Refused::Syntax(_)));
        assert_eq!(refused(r#""a string""#), Refused::NotObject);
        assert_eq!(refused("  null "), Refused::NotObject);
    }

    #[test]
    fn nesting_stops_at_the_limit() {
        let ok = format!(
            "{{\"a\":{}{}}}",
            "[".repeat(MAX_DEPTH - 2),
            "]".repeat(MAX_DEPTH - 2)
        );
        assert!(scan(ok.as_bytes()).is_ok());
        let deep = format!(
            "{{\"a\":{}{}}}",
            "[".repeat(MAX_DEPTH - 1),
            "]".repeat(MAX_DEPTH - 1)
        );
        assert!(matches!(refused(&deep), Refused::Syntax(m) if m.contains("levels deep")));
    }
}
