//! Property tests (proptest) for the one sealer (`src/seal.rs`): any bytes sealed with any
//! associated data for any purpose open to the same bytes, and only for that purpose and those
//! associated data; a token changed anywhere never opens; and `open` never panics, whatever
//! string a client sends.
//!
//! `cargo test` runs 64 cases per property (or `PROPTEST_CASES`).

use crate::generate::config;
use mcp_wire::seal::{Forged, Purpose, Sealer};
use proptest::prelude::*;
use std::sync::OnceLock;

fn sealer() -> &'static Sealer {
    static SEALER: OnceLock<Sealer> = OnceLock::new();
    SEALER.get_or_init(|| Sealer::new([7; 32]))
}

fn purpose() -> impl Strategy<Value = Purpose> {
    prop::sample::select(Purpose::ALL.to_vec())
}

/// Strings a client might send: base64url-looking ones (of any length, so some decode to a
/// nonce and a tag's worth of bytes) and anything at all.
fn token_like() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9_-]{0,120}",
        "[A-Za-z0-9_=+/-]{0,80}",
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_bytes_open_as_they_were_sealed(
        p in purpose(),
        ad in prop::collection::vec(any::<u8>(), 0..64),
        plain in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        let token = sealer().seal(p, &ad, &plain);
        prop_assert_eq!(sealer().open(p, &ad, &token), Ok(plain));
    }

    #[test]
    fn a_token_never_opens_for_another_purpose_or_other_associated_data(
        p in purpose(),
        other in purpose(),
        ad in prop::collection::vec(any::<u8>(), 0..32),
        other_ad in prop::collection::vec(any::<u8>(), 0..32),
        plain in prop::collection::vec(any::<u8>(), 0..128),
    ) {
        let token = sealer().seal(p, &ad, &plain);
        if other != p {
            prop_assert_eq!(sealer().open(other, &ad, &token), Err(Forged));
        }
        if other_ad != ad {
            prop_assert_eq!(sealer().open(p, &other_ad, &token), Err(Forged));
        }
    }

    #[test]
    fn a_token_changed_anywhere_never_opens(
        p in purpose(),
        plain in prop::collection::vec(any::<u8>(), 0..128),
        at in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let token = sealer().seal(p, b"", &plain);
        let mut raw = b64.decode(&token).unwrap();
        let i = at.index(raw.len());
        raw[i] ^= flip;
        prop_assert_eq!(sealer().open(p, b"", &b64.encode(raw)), Err(Forged));
    }

    #[test]
    fn open_never_panics_and_a_made_up_token_never_opens(
        p in purpose(),
        token in token_like(),
    ) {
        prop_assert_eq!(sealer().open(p, b"", &token), Err(Forged));
    }
}
