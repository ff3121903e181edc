//! The cursor a virtual server hands out for its merged lists: opaque to the client, it carries
//! where each member is in its own pagination (the member's own cursor, or "done"), the virtual
//! server it belongs to and the principal it was given to. It is sealed by the gateway's one
//! sealer (`mcp_wire::seal`, purpose `ListCursor`: a key of its own derived from the configured
//! key, so any replica with that key opens it): a client can neither read nor forge one, and a
//! cursor of another virtual server or another caller is refused by name. A virtual server's
//! session ids are sealed the same way, under purpose `VirtualSession`.
//!
//! Members are named, not numbered, so a reload that adds or removes members keeps cursors
//! valid: a removed member is skipped, and a member the cursor does not name is done for this
//! pagination (it appears on the next first page).

use mcp_wire::seal::{Purpose, Sealer};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

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

/// Seals and opens the cursors and session ids of virtual servers: a thin user of the one
/// sealer, which gives each its own key.
pub struct CursorSealer {
    sealer: Arc<Sealer>,
}

impl std::fmt::Debug for CursorSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorSealer")
    }
}

impl CursorSealer {
    /// Cursors and session ids sealed by `sealer` (of the configured key: the same on every
    /// replica; or the process's random one).
    pub fn new(sealer: Arc<Sealer>) -> CursorSealer {
        CursorSealer { sealer }
    }

    /// The cursor for `position`, given by virtual server `server` to `principal`; an error
    /// only if the position does not serialize.
    pub fn seal(
        &self,
        server: &str,
        principal: &str,
        position: &Position,
    ) -> Result<String, serde_json::Error> {
        self.seal_as(Purpose::ListCursor, server, principal, position)
    }

    /// The position a cursor carries, if virtual server `server` gave it to `principal`.
    pub fn open(&self, cursor: &str, server: &str, principal: &str) -> Result<Position, Refusal> {
        self.open_as(Purpose::ListCursor, cursor, server, principal)
    }

    /// A legacy client's session id on virtual server `server`: its members' own session ids
    /// (member name → the member route's session id; `""` for a member that keeps none),
    /// sealed for `principal` under another purpose than cursors (one never opens as the
    /// other); an error only if the ids do not serialize.
    pub fn seal_session(
        &self,
        server: &str,
        principal: &str,
        members: &BTreeMap<String, String>,
    ) -> Result<String, serde_json::Error> {
        self.seal_as(Purpose::VirtualSession, server, principal, members)
    }

    /// The members' session ids a virtual session id carries.
    pub fn open_session(
        &self,
        id: &str,
        server: &str,
        principal: &str,
    ) -> Result<BTreeMap<String, String>, Refusal> {
        self.open_as(Purpose::VirtualSession, id, server, principal)
    }

    fn seal_as<T: Serialize>(
        &self,
        purpose: Purpose,
        server: &str,
        principal: &str,
        what: &T,
    ) -> Result<String, serde_json::Error> {
        let plain = serde_json::to_vec(&Sealed {
            version: 1,
            server: server.into(),
            principal: principal.into(),
            position: what,
        })?;
        Ok(self.sealer.seal(purpose, &[], &plain))
    }

    fn open_as<T: serde::de::DeserializeOwned>(
        &self,
        purpose: Purpose,
        sealed: &str,
        server: &str,
        principal: &str,
    ) -> Result<T, Refusal> {
        let plain = self
            .sealer
            .open(purpose, &[], sealed)
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
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;

    fn sealer(key: u8) -> CursorSealer {
        CursorSealer::new(Arc::new(Sealer::new([key; 32])))
    }

    fn position() -> Position {
        let mut p = Position::default();
        p.members
            .insert("search".into(), Page::Next("page-2".into()));
        p.members.insert("conf".into(), Page::Done);
        p
    }

    #[test]
    fn a_cursor_opens_to_the_position_it_was_sealed_with() {
        let s = sealer(7);
        let c = s.seal("/hub", "alice", &position()).unwrap();
        assert_eq!(s.open(&c, "/hub", "alice"), Ok(position()));
        assert_eq!(position().next_of("search"), Some("page-2"));
        assert_eq!(position().next_of("conf"), None);
        assert!(!position().finished());
    }

    #[test]
    fn the_same_position_seals_to_different_cursors() {
        let s = sealer(7);
        assert_ne!(
            s.seal("/hub", "a", &position()).unwrap(),
            s.seal("/hub", "a", &position()).unwrap()
        );
    }

    #[test]
    fn a_cursor_of_another_server_or_caller_is_refused_by_name() {
        let s = sealer(7);
        let c = s.seal("/hub", "alice", &position()).unwrap();
        assert_eq!(s.open(&c, "/other", "alice"), Err(Refusal::OtherServer));
        assert_eq!(s.open(&c, "/hub", "bob"), Err(Refusal::OtherPrincipal));
    }

    #[test]
    fn altered_made_up_and_foreign_key_cursors_are_forged() {
        let s = sealer(7);
        let c = s.seal("/hub", "alice", &position()).unwrap();
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
        let other = sealer(8);
        assert_eq!(other.open(&c, "/hub", "alice"), Err(Refusal::Forged));
    }

    #[test]
    fn a_session_id_never_opens_as_a_cursor_nor_a_cursor_as_a_session_id() {
        let s = sealer(7);
        let members: BTreeMap<String, String> = [("search".to_owned(), "sid-1".to_owned())].into();
        let id = s.seal_session("/hub", "alice", &members).unwrap();
        assert_eq!(s.open_session(&id, "/hub", "alice"), Ok(members));
        assert_eq!(s.open(&id, "/hub", "alice"), Err(Refusal::Forged));
        let c = s.seal("/hub", "alice", &position()).unwrap();
        assert_eq!(s.open_session(&c, "/hub", "alice"), Err(Refusal::Forged));
        assert_eq!(
            s.open_session(&id, "/other", "alice"),
            Err(Refusal::OtherServer)
        );
        assert_eq!(
            s.open_session(&id, "/hub", "bob"),
            Err(Refusal::OtherPrincipal)
        );
    }

    #[test]
    fn a_request_state_never_opens_as_a_cursor_or_session_id() {
        let one = Arc::new(Sealer::new([7; 32]));
        let s = CursorSealer::new(one.clone());
        // a requestState-sealed body that would otherwise read as a cursor
        let plain = serde_json::to_vec(&Sealed {
            version: 1,
            server: "/hub".into(),
            principal: "alice".into(),
            position: position(),
        })
        .unwrap();
        let state = one.seal(Purpose::RequestState, &[], &plain);
        assert_eq!(s.open(&state, "/hub", "alice"), Err(Refusal::Forged));
        assert_eq!(
            s.open_session(&state, "/hub", "alice"),
            Err(Refusal::Forged)
        );
        let cursor = one.seal(Purpose::ListCursor, &[], &plain);
        assert_eq!(s.open(&cursor, "/hub", "alice"), Ok(position()));
    }

    #[test]
    fn a_position_whose_members_are_all_done_is_finished() {
        let mut p = position();
        p.members.insert("search".into(), Page::Done);
        assert!(p.finished());
        assert!(Position::default().finished());
    }
}
