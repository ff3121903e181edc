//! The process's sealer (`mcp_wire::seal`, a key per purpose): of the configured root key
//! (`bridge.request-state-key-file`, the same on every replica), else of one random root key
//! for the life of the process (kept across reloads). `requestState`s (`bridge/`), the cursors
//! of virtual servers and their session ids (`routing/members.rs`, for `federation/cursor.rs`)
//! are all sealed by it: a leaf, so both share it without importing each other.

use mcp_wire::seal::Sealer;
use std::sync::{Arc, OnceLock};

/// The sealer of `key`, or the process's random one.
pub fn sealer(key: Option<[u8; 32]>) -> Arc<Sealer> {
    static RANDOM: OnceLock<Arc<Sealer>> = OnceLock::new();
    match key {
        Some(key) => Arc::new(Sealer::new(key)),
        None => RANDOM.get_or_init(|| Arc::new(Sealer::random())).clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_wire::seal::Purpose;

    #[test]
    fn without_a_key_every_user_shares_one_random_root() {
        let token = sealer(None).seal(Purpose::ListCursor, b"", b"x");
        assert_eq!(
            sealer(None).open(Purpose::ListCursor, b"", &token),
            Ok(b"x".to_vec())
        );
        assert!(sealer(Some([7; 32]))
            .open(Purpose::ListCursor, b"", &token)
            .is_err());
    }

    #[test]
    fn with_a_key_every_sealer_of_it_opens_the_others_tokens() {
        let token = sealer(Some([7; 32])).seal(Purpose::RequestState, b"", b"x");
        assert_eq!(
            sealer(Some([7; 32])).open(Purpose::RequestState, b"", &token),
            Ok(b"x".to_vec())
        );
    }
}
