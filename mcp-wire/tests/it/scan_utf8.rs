//! The body scanner on UTF-8 inside strings and keys (it checks UTF-8 only there, where a byte
//! past ASCII may occur): bytes that may or may not be UTF-8 and characters of every width, held
//! to serde_json's verdict (`properties::check_agreement`).

use super::properties::{check_agreement, config};
use mcp_wire::inspect_body;
use proptest::prelude::*;

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_scanner_agrees_on_utf8_in_strings_and_keys(
        raw in prop::collection::vec(prop_oneof![
            4 => 0x20u8..0x7f,
            2 => 0x80u8..=0xff,
            1 => prop::sample::select(vec![0xc3u8, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80, 0xed, 0xa0, 0xc0, 0xf5]),
        ], 0..48),
        valid in prop::collection::vec(any::<char>(), 0..6),
        at in 0usize..4,
    ) {
        // bytes that may or may not be UTF-8, and characters that are (of every width), in a
        // value the scan keeps, one it skips, a key, and the name it returns
        let text: String = valid.into_iter().collect();
        let mut piece = text.into_bytes();
        piece.extend_from_slice(&raw);
        // no quote or escape: the piece is the string's whole text, as it is in the body
        piece.retain(|&b| b != b'"' && b != b'\\');
        let (before, after): (&[u8], &[u8]) = match at {
            0 => (br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":""#, br#""}}"#),
            1 => (br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"arguments":{"q":""#, br#""}}}"#),
            2 => (br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{""#, br#"":1}}"#),
            _ => (br#"{"jsonrpc":"2.0","id":""#, br#"","method":"x"}"#),
        };
        let body = [before, &piece, after].concat();
        check_agreement(&body)?;
        if let Ok(info) = inspect_body(&body) {
            if at == 0 {
                prop_assert_eq!(info.name.as_deref().map(str::as_bytes), Some(piece.as_slice()));
            }
        }
    }
}
