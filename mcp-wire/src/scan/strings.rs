//! Strings in the scan: a string skipped with its escapes and control characters checked (most
//! of a message is strings, so the plain runs are found with memchr), and a string decoded,
//! borrowed from the body when it has no escapes.

use super::{Refused, Scanner};
use std::borrow::Cow;

impl<'a> Scanner<'a> {
    /// A string, decoded: borrowed when it has no escapes. The scanner is at its `"`.
    pub(super) fn string(&mut self) -> Result<Cow<'a, str>, Refused> {
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
    pub(super) fn skip_string(&mut self) -> Result<bool, Refused> {
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
