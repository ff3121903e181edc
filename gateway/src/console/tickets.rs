//! Tickets for the console's event stream. A browser's `EventSource` cannot send headers, so
//! with `admin-token` set the page first asks `POST /admin/console/ticket` with the token in
//! `Authorization` and opens `/console/events?ticket=T`. A ticket is 256 random bits (the
//! thread's CSPRNG), good for one stream within [`TICKET_TTL`] of its minting, and kept here
//! only until then: at most [`MAX_TICKETS`] are held (minting one more forgets the oldest), so
//! the map never grows with what clients do. Only a holder of the token can mint one.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// How long a ticket may wait for its stream.
pub const TICKET_TTL: Duration = Duration::from_secs(60);

/// Tickets held at once (each a few dozen bytes).
pub const MAX_TICKETS: usize = 64;

/// The tickets minted and not yet used or expired.
#[derive(Debug, Default)]
pub struct Tickets {
    held: Mutex<HashMap<String, Instant>>,
}

impl Tickets {
    /// A new ticket, good until [`TICKET_TTL`] from now.
    pub fn mint(&self) -> String {
        self.mint_at(Instant::now())
    }

    /// Whether `ticket` was minted here, unused and unexpired; it is used up either way.
    pub fn redeem(&self, ticket: &str) -> bool {
        self.redeem_at(ticket, Instant::now())
    }

    fn mint_at(&self, now: Instant) -> String {
        let bytes: [u8; 32] = rand::random();
        let ticket: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut held = crate::sync::lock(&self.held);
        held.retain(|_, minted| now.saturating_duration_since(*minted) < TICKET_TTL);
        if held.len() >= MAX_TICKETS {
            let oldest = held
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(t, _)| t.clone());
            if let Some(oldest) = oldest {
                held.remove(&oldest);
            }
        }
        held.insert(ticket.clone(), now);
        ticket
    }

    /// Compares `ticket` with each held one in constant time (`subtle`; at most
    /// [`MAX_TICKETS`]) rather than looking it up by hash, whose last step compares bytes
    /// until the first that differs.
    fn redeem_at(&self, ticket: &str, now: Instant) -> bool {
        let mut held = crate::sync::lock(&self.held);
        let same = |t: &&String| bool::from(t.as_bytes().ct_eq(ticket.as_bytes()));
        let found = held.keys().find(same).cloned();
        let minted = found.and_then(|t| held.remove(&t));
        minted.is_some_and(|at| now.saturating_duration_since(at) < TICKET_TTL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_opens_one_stream_within_its_minute() {
        let tickets = Tickets::default();
        let now = Instant::now();
        let t = tickets.mint_at(now);
        assert_eq!(t.len(), 64, "256 bits, in hex");
        assert!(tickets.redeem_at(&t, now + Duration::from_secs(59)));
        assert!(
            !tickets.redeem_at(&t, now + Duration::from_secs(59)),
            "used"
        );
        let stale = tickets.mint_at(now);
        assert!(!tickets.redeem_at(&stale, now + TICKET_TTL), "expired");
        assert!(!tickets.redeem_at(&stale, now), "and forgotten");
        assert!(!tickets.redeem_at("", now));
        let other = tickets.mint_at(now);
        let mut last = other.clone().into_bytes();
        last[63] = if last[63] == b'0' { b'1' } else { b'0' };
        let last = String::from_utf8(last).unwrap();
        assert!(!tickets.redeem_at(&last, now), "another last digit");
        assert!(!tickets.redeem_at(&other[..63], now), "one digit short");
        assert!(!tickets.redeem_at(&format!("{other}0"), now), "one more");
        assert!(tickets.redeem_at(&other, now), "still unused");
        assert_ne!(tickets.mint_at(now), tickets.mint_at(now));
    }

    #[test]
    fn the_tickets_held_are_bounded_and_expired_ones_forgotten() {
        let tickets = Tickets::default();
        let start = Instant::now();
        let first = tickets.mint_at(start);
        let mut last = String::new();
        for i in 0..MAX_TICKETS {
            last = tickets.mint_at(start + Duration::from_millis(1 + i as u64));
        }
        assert_eq!(crate::sync::lock(&tickets.held).len(), MAX_TICKETS);
        assert!(!tickets.redeem(&first), "the oldest made room");
        let later = start + TICKET_TTL + Duration::from_secs(1);
        let fresh = tickets.mint_at(later);
        assert_eq!(
            crate::sync::lock(&tickets.held).len(),
            1,
            "expired ones gone"
        );
        assert!(!tickets.redeem_at(&last, later));
        assert!(tickets.redeem_at(&fresh, later));
    }
}
