//! The one sealer of the gateway: every token it hands a client and takes back opaque (a
//! `requestState`, a virtual server's list cursor, a virtual server's session id) is sealed
//! here, and nowhere else. A client can neither read nor change one.
//!
//! One root key is configured (`bridge.request-state-key-file`, the same on every replica; or
//! one random key for the life of the process). Each [`Purpose`] seals with a key of its own,
//! derived from the root with HKDF-SHA256 (RFC 5869; the purpose's name is the `info`), and the
//! purpose's name is bound as associated data too: a token sealed for one purpose never opens
//! for another, even if the derivation were the same.
//!
//! A token is base64url (no padding) of a random 96-bit nonce and the ChaCha20-Poly1305
//! ciphertext with its tag. What a token says, and what is checked once it opens (its
//! principal, its expiry, its server), is its caller's business: this module seals bytes.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use sha2::{Digest, Sha256};

/// What a token is for: each purpose has its own key and its own associated data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Purpose {
    /// A multi round-trip request's `requestState` (`translate::mrtr`).
    RequestState,
    /// The cursor of a virtual server's merged list.
    ListCursor,
    /// A legacy client's session id on a virtual server (its members' session ids).
    VirtualSession,
    /// A response cache entry in the shared Redis tier: sealed empty, the entry bound as
    /// associated data, so the token is the entry's MAC.
    CacheEntry,
}

impl Purpose {
    /// Every purpose, in the order of their keys.
    pub const ALL: [Purpose; 4] = [
        Purpose::RequestState,
        Purpose::ListCursor,
        Purpose::VirtualSession,
        Purpose::CacheEntry,
    ];

    /// Its name: the HKDF `info` its key is derived with, and the head of its associated data
    /// (behind its length in one byte: every name is shorter than 256 bytes, checked below).
    pub const fn name(self) -> &'static str {
        match self {
            Purpose::RequestState => "mcp-gateway request-state v1",
            Purpose::ListCursor => "mcp-gateway virtual-server cursor v1",
            Purpose::VirtualSession => "mcp-gateway virtual-server session v1",
            Purpose::CacheEntry => "mcp-gateway cache entry v1",
        }
    }

    fn index(self) -> usize {
        match self {
            Purpose::RequestState => 0,
            Purpose::ListCursor => 1,
            Purpose::VirtualSession => 2,
            Purpose::CacheEntry => 3,
        }
    }
}

/// A token that does not open: made up, changed, sealed for another purpose or other
/// associated data, or with another root key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forged;

/// The HKDF salt of the derivation (fixed: the root key is the secret).
const SALT: &[u8] = b"mcp-gateway sealer";

/// Nonce and tag lengths of ChaCha20-Poly1305.
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

/// Seals and opens tokens, one key per [`Purpose`], all derived from one root key.
pub struct Sealer {
    ciphers: [ChaCha20Poly1305; 4],
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // never a key, not even a derived one
        f.write_str("Sealer { .. }")
    }
}

impl Sealer {
    /// A sealer of the 256-bit root key `root` (the same on every replica: each opens what
    /// another sealed).
    pub fn new(root: [u8; 32]) -> Sealer {
        Sealer {
            ciphers: Purpose::ALL
                .map(|p| ChaCha20Poly1305::new(Key::from_slice(&derive_key(&root, p)))),
        }
    }

    /// A sealer of a random root key (its tokens stop opening at a restart, and never open on
    /// another replica).
    pub fn random() -> Sealer {
        let root = ChaCha20Poly1305::generate_key(&mut OsRng);
        Sealer::new(root.into())
    }

    /// The token of `plain` for `purpose`, bound to `associated` (which the token does not
    /// carry: opening it needs the same bytes). A fresh random nonce each time, so the same
    /// input seals to different tokens.
    pub fn seal(&self, purpose: Purpose, associated: &[u8], plain: &[u8]) -> String {
        let nonce = ChaCha20Poly1305::generate_nonce(&mut OsRng);
        let aad = associated_data(purpose, associated);
        #[expect(
            clippy::expect_used,
            reason = "ChaCha20-Poly1305 refuses only a message over 2^38 bytes (256 GiB); a token's \
                      plaintext is a few hundred bytes"
        )]
        let sealed = self.ciphers[purpose.index()]
            .encrypt(
                &nonce,
                Payload {
                    msg: plain,
                    aad: &aad,
                },
            )
            .expect("encryption of a small message does not fail");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        URL_SAFE_NO_PAD.encode(out)
    }

    /// What `token` carries, if this sealer sealed it for `purpose` with `associated`.
    pub fn open(
        &self,
        purpose: Purpose,
        associated: &[u8],
        token: &str,
    ) -> Result<Vec<u8>, Forged> {
        let raw = URL_SAFE_NO_PAD
            .decode(token.as_bytes())
            .map_err(|_| Forged)?;
        if raw.len() < NONCE_LEN + TAG_LEN {
            return Err(Forged);
        }
        let (nonce, ciphertext) = raw.split_at(NONCE_LEN);
        let aad = associated_data(purpose, associated);
        self.ciphers[purpose.index()]
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: &aad,
                },
            )
            .map_err(|_| Forged)
    }
}

// Every purpose's name is shorter than 256 bytes, so its length is one byte of the associated
// data (`associated_data`): a longer name does not compile.
const _: () = {
    let mut i = 0;
    while i < Purpose::ALL.len() {
        assert!(Purpose::ALL[i].name().len() <= u8::MAX as usize);
        i += 1;
    }
};

/// The associated data a token of `purpose` is sealed with: the length of the purpose's name
/// (one byte), the name, then the caller's bytes. The length keeps a name and the caller's
/// bytes from running into each other.
fn associated_data(purpose: Purpose, associated: &[u8]) -> Vec<u8> {
    let name = purpose.name().as_bytes();
    let mut aad = Vec::with_capacity(1 + name.len() + associated.len());
    // every name fits its one-byte length (checked when compiled, above)
    aad.push(name.len() as u8);
    aad.extend_from_slice(name);
    aad.extend_from_slice(associated);
    aad
}

/// The key of `purpose`: HKDF-SHA256 of the root key, with the purpose's name as `info`.
pub fn derive_key(root: &[u8; 32], purpose: Purpose) -> [u8; 32] {
    hkdf_sha256(SALT, root, purpose.name().as_bytes())
}

/// HKDF-SHA256 (RFC 5869) with 32 bytes of output: `T(1)` of the expansion.
fn hkdf_sha256(salt: &[u8], ikm: &[u8], info: &[u8]) -> [u8; 32] {
    let prk = hmac_sha256(salt, &[ikm]);
    hmac_sha256(&prk, &[info, &[1]])
}

/// HMAC-SHA256 (RFC 2104) of the concatenation of `parts`.
fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    for part in parts {
        inner.update(part);
    }
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn hmac_sha256_matches_rfc_4231() {
        // test case 2
        assert_eq!(
            hex(&hmac_sha256(
                b"Jefe",
                &[b"what do ya want ", b"for nothing?"]
            )),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // test case 6: a key longer than a block is hashed first
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                &[b"Test Using Larger Than Block-Size Key - Hash Key First"]
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn hkdf_sha256_matches_rfc_5869() {
        // test case 1 (its first 32 bytes of output)
        let salt: Vec<u8> = (0x00..=0x0c).collect();
        let info: Vec<u8> = (0xf0..=0xf9).collect();
        assert_eq!(
            hex(&hmac_sha256(&salt, &[&[0x0b; 22]])),
            "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5"
        );
        assert_eq!(
            hex(&hkdf_sha256(&salt, &[0x0b; 22], &info)),
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
        );
    }

    #[test]
    fn each_purpose_has_its_own_key_and_none_is_the_root() {
        let root = [7; 32];
        let keys: Vec<[u8; 32]> = Purpose::ALL.iter().map(|p| derive_key(&root, *p)).collect();
        for (i, a) in keys.iter().enumerate() {
            assert_ne!(*a, root);
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_ne!(
            derive_key(&[8; 32], Purpose::ListCursor),
            keys[1],
            "another root, other keys"
        );
        assert_eq!(
            derive_key(&root, Purpose::ListCursor),
            keys[1],
            "deterministic"
        );
    }

    #[test]
    fn a_token_opens_only_for_its_purpose_and_associated_data() {
        let s = Sealer::new([7; 32]);
        for sealed_for in Purpose::ALL {
            let token = s.seal(sealed_for, b"ad", b"hello");
            for opened_as in Purpose::ALL {
                let opened = s.open(opened_as, b"ad", &token);
                if opened_as == sealed_for {
                    assert_eq!(opened, Ok(b"hello".to_vec()));
                } else {
                    assert_eq!(opened, Err(Forged), "{sealed_for:?} as {opened_as:?}");
                }
            }
            assert_eq!(s.open(sealed_for, b"other", &token), Err(Forged));
            assert_eq!(s.open(sealed_for, b"", &token), Err(Forged));
        }
    }

    #[test]
    fn a_token_of_the_same_root_opens_on_another_sealer_and_of_another_root_never() {
        let token = Sealer::new([7; 32]).seal(Purpose::RequestState, b"", b"x");
        assert_eq!(
            Sealer::new([7; 32]).open(Purpose::RequestState, b"", &token),
            Ok(b"x".to_vec()),
            "another replica with the same key"
        );
        assert_eq!(
            Sealer::new([8; 32]).open(Purpose::RequestState, b"", &token),
            Err(Forged)
        );
        assert_eq!(
            Sealer::random().open(Purpose::RequestState, b"", &token),
            Err(Forged)
        );
    }

    #[test]
    fn a_token_sealed_with_the_root_key_itself_never_opens() {
        // what a sealer that used the configured key as is (as the gateway did before) made
        let root = [7; 32];
        let raw = ChaCha20Poly1305::new(Key::from_slice(&root));
        let nonce = ChaCha20Poly1305::generate_nonce(&mut OsRng);
        let mut old = nonce.to_vec();
        old.extend_from_slice(&raw.encrypt(&nonce, b"x".as_slice()).unwrap());
        let old = URL_SAFE_NO_PAD.encode(old);
        let s = Sealer::new(root);
        for p in Purpose::ALL {
            assert_eq!(s.open(p, b"", &old), Err(Forged));
        }
    }

    #[test]
    fn every_changed_byte_and_every_short_token_is_forged() {
        let s = Sealer::new([7; 32]);
        let token = s.seal(Purpose::ListCursor, b"", b"a cursor");
        let raw = URL_SAFE_NO_PAD.decode(&token).unwrap();
        for i in 0..raw.len() {
            let mut changed = raw.clone();
            changed[i] ^= 0x01;
            let changed = URL_SAFE_NO_PAD.encode(changed);
            assert_eq!(
                s.open(Purpose::ListCursor, b"", &changed),
                Err(Forged),
                "byte {i}"
            );
        }
        for n in 0..raw.len() {
            let short = URL_SAFE_NO_PAD.encode(&raw[..n]);
            assert_eq!(
                s.open(Purpose::ListCursor, b"", &short),
                Err(Forged),
                "{n} bytes"
            );
        }
        for bad in [
            "",
            "not base64!",
            "AAAA",
            &format!("{token}="),
            &format!("{token}A"),
        ] {
            assert_eq!(s.open(Purpose::ListCursor, b"", bad), Err(Forged), "{bad}");
        }
    }

    #[test]
    fn the_same_input_seals_to_different_tokens() {
        let s = Sealer::new([7; 32]);
        let a = s.seal(Purpose::VirtualSession, b"", b"same");
        let b = s.seal(Purpose::VirtualSession, b"", b"same");
        assert_ne!(a, b, "a fresh nonce");
        assert_eq!(
            s.open(Purpose::VirtualSession, b"", &a),
            Ok(b"same".to_vec())
        );
        assert_eq!(
            s.open(Purpose::VirtualSession, b"", &b),
            Ok(b"same".to_vec())
        );
    }

    #[test]
    fn the_debug_form_shows_no_key() {
        assert_eq!(format!("{:?}", Sealer::new([7; 32])), "Sealer { .. }");
    }
}
