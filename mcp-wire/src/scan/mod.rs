//! The one pass over a request body: it checks the whole text against RFC 8259 (what serde_json
//! accepts: UTF-8, the grammar, any number the grammar allows however large, no lone UTF-16
//! surrogate escapes, nesting below [`MAX_DEPTH`]) and, in the same pass, borrows the few
//! fields the gateway reads: `id`, `method`, `params.name`, `params.uri` and
//! `params._meta["io.modelcontextprotocol/protocolVersion"]`. Nothing is allocated unless one of
//! those is written with escapes.
//!
//! UTF-8 is checked where it can occur: a byte past ASCII is only valid inside a string (the
//! grammar refuses it anywhere else), so each string's non-ASCII runs are checked as the string
//! is read, and a body of ASCII is read once, not once for UTF-8 and again for JSON. Keys are
//! compared as bytes; only the values kept are given as text.
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
    /// `params.taskId` (the Tasks extension's `tasks/get`, `tasks/update`, `tasks/cancel`, and
    /// the legacy tasks' methods).
    pub task_id: Option<Cow<'a, str>>,
    pub has_meta: bool,
    pub protocol_version: Option<Cow<'a, str>>,
    /// Whether `params._meta`'s client capabilities list the Tasks extension (under any of
    /// the `clientCapabilities` keys given, should one be given twice).
    pub declares_tasks: bool,
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
    let mut s = Scanner {
        b: body,
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
                        env.id = Some(s.text(start, s.i)?);
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
        let mut seen = Seen::new(["name", "uri", "taskId", "_meta"]);
        self.object(|s, key| {
            match seen.field(&key, s)?.map(|k| seen.names[k]) {
                Some("name") => env.name = s.string_or_null("params.name")?,
                Some("uri") => env.uri = s.string_or_null("params.uri")?,
                Some("taskId") => env.task_id = s.string_or_null("params.taskId")?,
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
            } else if *key == *crate::translate::META_CLIENT_CAPABILITIES.as_bytes() {
                env.declares_tasks |=
                    s.lists_extension("extensions", crate::tasks::TASKS_EXTENSION)?;
            } else {
                s.value()?;
            }
            Ok(())
        })
    }

    /// Skips a value, and says whether it is an object whose `group` member is an object
    /// with the key `wanted` (a capability the client declares).
    fn lists_extension(&mut self, group: &str, wanted: &str) -> Result<bool, Refused> {
        self.ws();
        if self.peek() != Some(b'{') {
            return self.value().map(|_| false);
        }
        let mut found = false;
        self.object(|s, key| {
            s.ws();
            if *key == *group.as_bytes() && s.peek() == Some(b'{') {
                s.object(|s, key| {
                    found |= *key == *wanted.as_bytes();
                    s.value().map(drop)
                })
            } else {
                s.value().map(drop)
            }
        })?;
        Ok(found)
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

    /// An object, calling `field` with each key (its bytes, decoded), the scanner at the key's
    /// value (before any whitespace). The scanner is at `{`.
    fn object(
        &mut self,
        mut field: impl FnMut(&mut Self, Cow<'a, [u8]>) -> Result<(), Refused>,
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
            let key = self.key()?;
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
    fn field(&mut self, key: &[u8], at: &Scanner<'_>) -> Result<Option<usize>, Refused> {
        let Some(k) = self.names.iter().position(|n| n.as_bytes() == key) else {
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
fn printable(key: &[u8]) -> String {
    let key = String::from_utf8_lossy(key);
    if key.chars().count() <= 40 && !key.chars().any(char::is_control) {
        key.into_owned()
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

mod strings;
#[cfg(test)]
mod tests;
