//! Strings in the scan: a string skipped with its escapes and control characters checked (most
//! of a message is strings, so the plain runs are read a word at a time), and a string decoded,
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
        // the common case, a string without escapes: its plain run, then the closing quote
        self.i += plain_run(&self.b[self.i..]);
        if self.b.get(self.i) == Some(&b'"') {
            self.i += 1;
            return Ok(false);
        }
        self.escaped_string()
    }

    /// The rest of a string from its first escape (or the control character or the end that
    /// makes it an error).
    fn escaped_string(&mut self) -> Result<bool, Refused> {
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
                    // the plain bytes up to the next quote, escape or control character
                    self.i += plain_run(&self.b[self.i..]);
                }
            }
        }
    }
}

/// How many bytes of `b` come before its first `"`, `\\` or control character (U+0000 to
/// U+001F). Most strings of a message are short keys and values, where memchr's vector search
/// costs more to set up than the whole string takes to read: the first 32 bytes are read eight
/// at a time, the rest of a long string with memchr.
fn plain_run(b: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut i = 0;
    while let Some(word) = b.get(i..i + 8) {
        if i == 32 {
            return i + long_run(&b[i..]);
        }
        let w = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        // a byte's high bit set where it is `"`, `\\` or below 0x20: each test is exact at its
        // lowest set bit (a borrow only ever spills into higher bytes), so the lowest bit of
        // their union is the first such byte
        let quote = w ^ (ONES * u64::from(b'"'));
        let escape = w ^ (ONES * u64::from(b'\\'));
        let flags = (quote.wrapping_sub(ONES) & !quote
            | escape.wrapping_sub(ONES) & !escape
            | w.wrapping_sub(ONES * 0x20) & !w)
            & HIGHS;
        if flags != 0 {
            return i + (flags.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + b[i..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .unwrap_or(b.len() - i)
}

/// The same for a long run: memchr's vector search for the quote or escape, then one
/// vectorizable look for a control character before it.
fn long_run(b: &[u8]) -> usize {
    let run = memchr::memchr2(b'"', b'\\', b).unwrap_or(b.len());
    let plain = &b[..run];
    // no early exit, so it compiles to a vector loop; the position only when there is one
    let controls = plain.iter().fold(false, |any, &c| any | (c < 0x20));
    if controls {
        plain.iter().position(|&c| c < 0x20).unwrap_or(run)
    } else {
        run
    }
}

fn lone_surrogate() -> Refused {
    Refused::Syntax("a \\u escape that is a lone UTF-16 surrogate".into())
}

#[cfg(test)]
mod tests {
    use super::plain_run;
    use proptest::prelude::*;

    fn slow(b: &[u8]) -> usize {
        b.iter()
            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
            .unwrap_or(b.len())
    }

    proptest! {
        #[test]
        fn the_plain_run_ends_where_a_byte_by_byte_look_ends(
            b in prop::collection::vec(prop_oneof![
                4 => 0x20u8..0x7f, 1 => Just(b'"'), 1 => Just(b'\\'), 1 => 0u8..0x20,
                2 => 0x80u8..=0xff, 1 => Just(0x21u8), 1 => Just(0x5bu8), 1 => Just(0xa2u8)
            ], 0..120)
        ) {
            prop_assert_eq!(plain_run(&b), slow(&b));
        }
    }

    #[test]
    fn every_byte_at_every_place() {
        for at in 0..70 {
            for c in 0..=255u8 {
                let mut b = vec![b'a'; 70];
                b[at] = c;
                assert_eq!(plain_run(&b), slow(&b), "byte {c:#x} at {at}");
            }
        }
    }
}
