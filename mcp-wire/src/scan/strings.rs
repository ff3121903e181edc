//! Strings in the scan: a string skipped with its escapes, control characters and UTF-8
//! checked (most of a message is strings, so the plain ASCII runs are read a word at a time),
//! and a string decoded, borrowed from the body when it has no escapes.

use super::{Refused, Scanner};
use std::borrow::Cow;

impl<'a> Scanner<'a> {
    /// A string value, decoded: borrowed when it has no escapes. The scanner is at its `"`.
    pub(super) fn string(&mut self) -> Result<Cow<'a, str>, Refused> {
        let start = self.i;
        match self.key()? {
            Cow::Borrowed(_) => Ok(Cow::Borrowed(self.text(start + 1, self.i - 1)?)),
            Cow::Owned(bytes) => String::from_utf8(bytes)
                .map(Cow::Owned)
                .map_err(|_| self.error("invalid UTF-8")),
        }
    }

    /// A key (or any string) as bytes, decoded: borrowed when it has no escapes. The scanner is
    /// at its `"`. Keys are only compared, so they are never made text.
    pub(super) fn key(&mut self) -> Result<Cow<'a, [u8]>, Refused> {
        let start = self.i + 1;
        if !self.skip_string()? {
            return Ok(Cow::Borrowed(&self.b[start..self.i - 1]));
        }
        // the escapes were checked by the skip: serde_json decodes them the same way
        serde_json::from_slice::<String>(&self.b[start - 1..self.i])
            .map(|s| Cow::Owned(s.into_bytes()))
            .map_err(|e| Refused::Syntax(e.to_string()))
    }

    /// The body's bytes `start..end`, as text: a value the scan read whole (so its strings'
    /// UTF-8 was checked; everything else in a value is ASCII).
    pub(super) fn text(&self, start: usize, end: usize) -> Result<&'a str, Refused> {
        std::str::from_utf8(&self.b[start..end]).map_err(|_| self.error("invalid UTF-8"))
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

    /// The rest of a string from its first escape or non-ASCII byte (or the control character
    /// or the end that makes it an error); whether it had escapes.
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
                0x80..=0xFF => {
                    // text past ASCII: the rest of its run (to the next quote, escape or
                    // control character, none of which is part of a UTF-8 character) is
                    // checked as UTF-8 at once
                    let rest = &self.b[self.i..];
                    let run = run::<false>(rest);
                    if std::str::from_utf8(&rest[..run]).is_err() {
                        return Err(self.error("invalid UTF-8"));
                    }
                    self.i += run;
                }
                _ => {
                    // the plain bytes up to the next quote, escape, control or non-ASCII byte
                    self.i += plain_run(&self.b[self.i..]);
                }
            }
        }
    }
}

/// How many bytes of `b` come before its first `"`, `\\`, control character (U+0000 to
/// U+001F) or non-ASCII byte (checked as UTF-8 by the caller): [`run`] of an ASCII run.
fn plain_run(b: &[u8]) -> usize {
    run::<true>(b)
}

/// How many bytes of `b` come before its first `"`, `\\` or control character, and with
/// `ASCII`, its first byte past ASCII. Most strings of a message are short keys and values,
/// where memchr's vector search costs more to set up than the whole string takes to read: the
/// first 32 bytes are read eight at a time, the rest of a long string with memchr.
fn run<const ASCII: bool>(b: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut i = 0;
    while let Some(word) = b.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        if i == 32 {
            return i + long_run::<ASCII>(&b[i..]);
        }
        let w = u64::from_le_bytes(*word);
        // a byte's high bit set where it is `"`, `\\` or below 0x20 (and with `ASCII`, past
        // ASCII): each test is exact at its lowest set bit (a borrow only ever spills into
        // higher bytes), so the lowest bit of their union is the first such byte
        let quote = w ^ (ONES * u64::from(b'"'));
        let escape = w ^ (ONES * u64::from(b'\\'));
        let below = if ASCII {
            w.wrapping_sub(ONES * 0x20) | w
        } else {
            w.wrapping_sub(ONES * 0x20) & !w
        };
        let flags =
            (quote.wrapping_sub(ONES) & !quote | escape.wrapping_sub(ONES) & !escape | below)
                & HIGHS;
        if flags != 0 {
            return i + (flags.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + b[i..]
        .iter()
        .position(|&c| stops::<ASCII>(c))
        .unwrap_or(b.len() - i)
}

/// Whether a run of a string ends at byte `c`.
fn stops<const ASCII: bool>(c: u8) -> bool {
    c == b'"' || c == b'\\' || c < 0x20 || (ASCII && c >= 0x80)
}

/// The same for a long run: memchr's vector search for the quote or escape, then one
/// vectorizable look for a control (or non-ASCII) byte before it.
fn long_run<const ASCII: bool>(b: &[u8]) -> usize {
    let end = memchr::memchr2(b'"', b'\\', b).unwrap_or(b.len());
    let plain = &b[..end];
    // no early exit, so it compiles to a vector loop; the position only when there is one
    let others = plain.iter().fold(false, |any, &c| {
        any | if ASCII {
            c.wrapping_sub(0x20) >= 0x60
        } else {
            c < 0x20
        }
    });
    if others {
        plain.iter().position(|&c| stops::<ASCII>(c)).unwrap_or(end)
    } else {
        end
    }
}

fn lone_surrogate() -> Refused {
    Refused::Syntax("a \\u escape that is a lone UTF-16 surrogate".into())
}

#[cfg(test)]
mod tests {
    use super::{plain_run, run};
    use proptest::prelude::*;

    fn slow(b: &[u8]) -> usize {
        b.iter()
            .position(|&c| c == b'"' || c == b'\\' || !(0x20..=0x7f).contains(&c))
            .unwrap_or(b.len())
    }

    fn slow_text(b: &[u8]) -> usize {
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
            prop_assert_eq!(run::<false>(&b), slow_text(&b));
        }
    }

    #[test]
    fn every_byte_at_every_place() {
        for at in 0..70 {
            for c in 0..=255u8 {
                let mut b = vec![b'a'; 70];
                b[at] = c;
                assert_eq!(plain_run(&b), slow(&b), "byte {c:#x} at {at}");
                assert_eq!(run::<false>(&b), slow_text(&b), "byte {c:#x} at {at}");
            }
        }
    }
}
