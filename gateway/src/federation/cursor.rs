//! The cursor a virtual server hands out for its merged lists: opaque to the client, it carries
//! where each member is in its own pagination (the member's own cursor, or "done"), the virtual
//! server it belongs to and the principal it was given to. It is sealed (ChaCha20-Poly1305 with
//! the gateway's key, so any replica with that key opens it): a client can neither read nor
//! forge one, and a cursor of another virtual server or another caller is refused by name.
//!
//! Members are named, not numbered, so a reload that adds or removes members keeps cursors
//! valid: a removed member is skipped, and a member the cursor does not name is done for this
//! pagination (it appears on the next first page).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where one member is in its pagination.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Page {
    /// Ask the member again with its own cursor.
    #[serde(rename = "n")]
    Next(String),
    /// The member has no more pages.
    #[serde(rename = "d")]
    Done,
}

/// What a merged cursor says: each member's next page.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Position {
    /// Member name → its next page. A member not named here is done.
    #[serde(rename = "m")]
    pub members: BTreeMap<String, Page>,
}

impl Position {
    /// Whether every member is done: the merged list has no next page.
    pub fn finished(&self) -> bool {
        self.members.values().all(|p| *p == Page::Done)
    }

    /// The cursor to send `member` for its next page; `None` when it is done (or not named,
    /// which is the same), so it is not asked again in this pagination.
    pub fn next_of(&self, member: &str) -> Option<&str> {
        match self.members.get(member) {
            Some(Page::Next(c)) => Some(c),
            _ => None,
        }
    }
}

/// Why a cursor was refused (`data.reason` of the answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// It does not open with the gateway's key: made up, altered, or from before a key change.
    Forged,
    /// It opens, but another virtual server gave it out.
    OtherServer,
    /// It opens, but was given to another caller.
    OtherPrincipal,
}

impl Refusal {
    /// The `data.reason` text.
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::Forged => "forged-cursor",
            Refusal::OtherServer => "cursor-of-another-virtual-server",
            Refusal::OtherPrincipal => "cursor-of-another-caller",
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Sealed<'a, T> {
    #[serde(rename = "v")]
    version: u8,
    #[serde(rename = "s", borrow)]
    server: std::borrow::Cow<'a, str>,
    #[serde(rename = "p", borrow)]
    principal: std::borrow::Cow<'a, str>,
    #[serde(rename = "c")]
    position: T,
}

/// A marker in the associated data so a sealed MRTR state never opens as a cursor.
const PURPOSE: &[u8] = b"mcp-gateway virtual-server cursor v1";

/// The same for a virtual server's session ids.
const SESSION_PURPOSE: &[u8] = b"mcp-gateway virtual-server session v1";

/// Seals and opens the cursors of virtual servers with one key.
pub struct CursorSealer {
    cipher: ChaCha20Poly1305,
}

impl std::fmt::Debug for CursorSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorSealer")
    }
}

impl CursorSealer {
    /// A sealer with a 256-bit key (the same on every replica).
    pub fn new(key: [u8; 32]) -> CursorSealer {
        CursorSealer {
            cipher: ChaCha20Poly1305::new(Key::from_slice(&key)),
        }
    }

    /// A sealer with a random key (cursors stop opening at a restart, or on another replica).
    pub fn random() -> CursorSealer {
        CursorSealer {
            cipher: ChaCha20Poly1305::new(&ChaCha20Poly1305::generate_key(&mut OsRng)),
        }
    }

    /// The cursor for `position`, given by virtual server `server` to `principal`.
    pub fn seal(&self, server: &str, principal: &str, position: &Position) -> String {
        self.seal_as(PURPOSE, server, principal, position)
    }

    /// The position a cursor carries, if virtual server `server` gave it to `principal`.
    pub fn open(&self, cursor: &str, server: &str, principal: &str) -> Result<Position, Refusal> {
        self.open_as(PURPOSE, cursor, server, principal)
    }

    /// A legacy client's session id on virtual server `server`: its members' own session ids
    /// (member name → the member route's session id; `""` for a member that keeps none),
    /// sealed for `principal` under another purpose than cursors (one never opens as the
    /// other).
    pub fn seal_session(
        &self,
        server: &str,
        principal: &str,
        members: &BTreeMap<String, String>,
    ) -> String {
        self.seal_as(SESSION_PURPOSE, server, principal, members)
    }

    /// The members' session ids a virtual session id carries.
    pub fn open_session(
        &self,
        id: &str,
        server: &str,
        principal: &str,
    ) -> Result<BTreeMap<String, String>, Refusal> {
        self.open_as(SESSION_PURPOSE, id, server, principal)
    }

    fn seal_as<T: Serialize>(
        &self,
        purpose: &[u8],
        server: &str,
        principal: &str,
        what: &T,
    ) -> String {
        let plain = serde_json::to_vec(&Sealed {
            version: 1,
            server: server.into(),
            principal: principal.into(),
            position: what,
        })
        .expect("a sealed value serializes");
        let nonce = ChaCha20Poly1305::generate_nonce(&mut OsRng);
        let sealed = self
            .cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: &plain,
                    aad: purpose,
                },
            )
            .expect("encryption of a small message does not fail");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        URL_SAFE_NO_PAD.encode(out)
    }

    fn open_as<T: serde::de::DeserializeOwned>(
        &self,
        purpose: &[u8],
        sealed: &str,
        server: &str,
        principal: &str,
    ) -> Result<T, Refusal> {
        let raw = URL_SAFE_NO_PAD
            .decode(sealed.as_bytes())
            .map_err(|_| Refusal::Forged)?;
        if raw.len() < 12 + 16 {
            return Err(Refusal::Forged);
        }
        let (nonce, ciphertext) = raw.split_at(12);
        let plain = self
            .cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: purpose,
                },
            )
            .map_err(|_| Refusal::Forged)?;
        let sealed: Sealed<'_, T> = serde_json::from_slice(&plain).map_err(|_| Refusal::Forged)?;
        if sealed.version != 1 {
            return Err(Refusal::Forged);
        }
        if sealed.server != server {
            return Err(Refusal::OtherServer);
        }
        if sealed.principal != principal {
            return Err(Refusal::OtherPrincipal);
        }
        Ok(sealed.position)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn position() -> Position {
        let mut p = Position::default();
        p.members
            .insert("search".into(), Page::Next("page-2".into()));
        p.members.insert("conf".into(), Page::Done);
        p
    }

    #[test]
    fn a_cursor_opens_to_the_position_it_was_sealed_with() {
        let s = CursorSealer::new([7; 32]);
        let c = s.seal("/hub", "alice", &position());
        assert_eq!(s.open(&c, "/hub", "alice"), Ok(position()));
        assert_eq!(position().next_of("search"), Some("page-2"));
        assert_eq!(position().next_of("conf"), None);
        assert!(!position().finished());
    }

    #[test]
    fn the_same_position_seals_to_different_cursors() {
        let s = CursorSealer::new([7; 32]);
        assert_ne!(
            s.seal("/hub", "a", &position()),
            s.seal("/hub", "a", &position())
        );
    }

    #[test]
    fn a_cursor_of_another_server_or_caller_is_refused_by_name() {
        let s = CursorSealer::new([7; 32]);
        let c = s.seal("/hub", "alice", &position());
        assert_eq!(s.open(&c, "/other", "alice"), Err(Refusal::OtherServer));
        assert_eq!(s.open(&c, "/hub", "bob"), Err(Refusal::OtherPrincipal));
    }

    #[test]
    fn altered_made_up_and_foreign_key_cursors_are_forged() {
        let s = CursorSealer::new([7; 32]);
        let c = s.seal("/hub", "alice", &position());
        let mut bytes = URL_SAFE_NO_PAD.decode(&c).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let altered = URL_SAFE_NO_PAD.encode(bytes);
        for bad in [
            altered.as_str(),
            "",
            "not base64!",
            "AAAA",
            &c[..c.len() - 4],
        ] {
            assert_eq!(s.open(bad, "/hub", "alice"), Err(Refusal::Forged), "{bad}");
        }
        let other = CursorSealer::new([8; 32]);
        assert_eq!(other.open(&c, "/hub", "alice"), Err(Refusal::Forged));
    }

    #[test]
    fn a_position_whose_members_are_all_done_is_finished() {
        let mut p = position();
        p.members.insert("search".into(), Page::Done);
        assert!(p.finished());
        assert!(Position::default().finished());
    }
}
