//! Hearing what says cached results changed on a stream the gateway passes through untouched
//! (a `subscriptions/listen` stream, a POST answered with an event stream): each chunk is
//! searched for the notification methods ([`super::CHANGES`]) as JSON strings, with the end of
//! the chunk before kept so a name split across two chunks is found too. A stream's events are
//! never parsed for it: a false match (the name quoted inside some text) only drops results
//! early, never serves a stale one.

use memchr::memmem;

/// The longest method searched for, with its quotes.
const LONGEST: usize = 2 + "notifications/resources/list_changed".len();

/// What a stream said so far, for the search.
#[derive(Debug, Default)]
pub struct Changes {
    /// The chunk before's last bytes (fewer than [`LONGEST`]).
    tail: Vec<u8>,
}

impl Changes {
    /// The change notification `chunk` holds (or completes), if any.
    pub fn scan(&mut self, chunk: &[u8]) -> Option<&'static str> {
        let found = self.across(chunk).or_else(|| within(chunk));
        let keep = (LONGEST - 1).min(chunk.len());
        if keep == chunk.len() {
            self.tail.extend_from_slice(chunk);
            let excess = self.tail.len().saturating_sub(LONGEST - 1);
            self.tail.drain(..excess);
        } else {
            self.tail.clear();
            self.tail.extend_from_slice(&chunk[chunk.len() - keep..]);
        }
        found
    }

    /// A name that starts in the tail and ends in `chunk` (one wholly in the tail was heard
    /// with the chunk before).
    fn across(&self, chunk: &[u8]) -> Option<&'static str> {
        if self.tail.is_empty() {
            return None;
        }
        // on the stack: a stream's every chunk passes here
        let mut joined = [0u8; 2 * LONGEST];
        let head = &chunk[..(LONGEST - 1).min(chunk.len())];
        let len = self.tail.len() + head.len();
        joined[..self.tail.len()].copy_from_slice(&self.tail);
        joined[self.tail.len()..len].copy_from_slice(head);
        ending_after(&joined[..len], self.tail.len())
    }
}

/// The change `bytes` name wholly.
fn within(bytes: &[u8]) -> Option<&'static str> {
    ending_after(bytes, 0)
}

/// The changes, as JSON strings.
const QUOTED: [&str; 4] = [
    "\"notifications/tools/list_changed\"",
    "\"notifications/prompts/list_changed\"",
    "\"notifications/resources/list_changed\"",
    "\"notifications/resources/updated\"",
];

/// The change named in `bytes` whose closing quote is past the first `from` bytes.
fn ending_after(bytes: &[u8], from: usize) -> Option<&'static str> {
    QUOTED
        .into_iter()
        .find(|quoted| memmem::find_iter(bytes, quoted).any(|at| at + quoted.len() > from))
        .map(|quoted| &quoted[1..quoted.len() - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: &[u8] =
        b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n";

    #[test]
    fn a_change_is_heard_whole_and_split_anywhere() {
        assert_eq!(
            Changes::default().scan(EVENT),
            Some("notifications/tools/list_changed")
        );
        for at in 1..EVENT.len() {
            let mut c = Changes::default();
            let first = c.scan(&EVENT[..at]);
            let second = c.scan(&EVENT[at..]);
            assert_eq!(
                first.or(second),
                Some("notifications/tools/list_changed"),
                "split at {at}"
            );
        }
        // byte by byte
        let mut c = Changes::default();
        let heard: Vec<_> = EVENT.iter().filter_map(|b| c.scan(&[*b])).collect();
        assert_eq!(heard, ["notifications/tools/list_changed"]);
    }

    #[test]
    fn the_searched_names_are_the_caches_changes() {
        let names: Vec<&str> = QUOTED.iter().map(|q| &q[1..q.len() - 1]).collect();
        assert_eq!(names, super::super::CHANGES);
        assert_eq!(QUOTED.iter().map(|q| q.len()).max(), Some(LONGEST));
    }

    #[test]
    fn other_notifications_are_not_changes() {
        let mut c = Changes::default();
        let progress = b"data: {\"method\":\"notifications/progress\",\"params\":{}}\n\n";
        assert_eq!(c.scan(progress), None);
        assert_eq!(
            c.scan(b"notifications/tools/list_changed without quotes"),
            None
        );
        let updated = b"data: {\"method\":\"notifications/resources/updated\"}\n\n";
        assert_eq!(c.scan(updated), Some("notifications/resources/updated"));
    }
}
