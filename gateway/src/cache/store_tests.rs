//! The store's bounds: the whole, a context's share, an entry, and whose results make room.

use super::*;
use mcp_wire::cacheable::Scope;
use std::time::Duration;

fn result(bytes: usize, ttl_ms: u64) -> Arc<Stored> {
    Arc::new(Stored {
        result: vec![b' '; bytes],
        ttl_at: 0..0,
        ttl_ms,
        scope: Scope::Private,
    })
}

fn key(n: u8) -> Key {
    [n; 32]
}

const ALICE: Owner = Owner::Private([1; 32]);
const BOB: Owner = Owner::Private([2; 32]);

#[test]
fn a_result_is_fresh_for_its_ttl_and_gone_after() {
    let mut s = Store::new(Bounds {
        max_bytes: 10_000,
        per_context: 5_000,
    });
    let t0 = Instant::now();
    assert!(s.insert(key(1), Owner::Public, result(10, 1000), t0).kept);
    let fresh = s.get(&key(1), t0 + Duration::from_millis(400)).unwrap();
    assert_eq!(fresh.age_ms, 400);
    let stale = s.get(&key(1), t0 + Duration::from_millis(1000));
    assert_eq!(stale.err(), Some(Missing::Stale));
    assert_eq!(s.held(), (0, 0), "a stale result is dropped when looked up");
    assert_eq!(s.get(&key(1), t0).err(), Some(Missing::Absent));
}

#[test]
fn a_context_at_its_share_drops_its_own_oldest_never_anothers() {
    let entry = 1000 - ENTRY_OVERHEAD;
    let mut s = Store::new(Bounds {
        max_bytes: 10_000,
        per_context: 2_000,
    });
    let now = Instant::now();
    assert!(s.insert(key(1), BOB, result(entry, 60_000), now).kept);
    assert!(s.insert(key(2), ALICE, result(entry, 60_000), now).kept);
    assert!(s.insert(key(3), ALICE, result(entry, 60_000), now).kept);
    // alice's third takes the place of her first, bob's stays
    let third = s.insert(key(4), ALICE, result(entry, 60_000), now);
    assert_eq!(
        third,
        Inserted {
            kept: true,
            evicted: 1
        }
    );
    assert!(s.get(&key(2), now).is_err());
    assert!(
        s.get(&key(1), now).is_ok(),
        "bob's result is not alice's to drop"
    );
    // larger than a share: never kept
    assert!(!s.insert(key(5), ALICE, result(3_000, 60_000), now).kept);
}

#[test]
fn a_full_store_makes_room_from_public_results_and_stale_ones_not_from_other_contexts() {
    let entry = 1000 - ENTRY_OVERHEAD;
    let mut s = Store::new(Bounds {
        max_bytes: 3_000,
        per_context: 3_000,
    });
    let now = Instant::now();
    assert!(
        s.insert(key(1), Owner::Public, result(entry, 60_000), now)
            .kept
    );
    assert!(s.insert(key(2), BOB, result(entry, 60_000), now).kept);
    assert!(s.insert(key(3), BOB, result(entry, 100), now).kept);
    let later = now + Duration::from_millis(200);
    // full: bob's stale result goes first, then the public one; bob's fresh one stays
    assert!(s.insert(key(4), ALICE, result(entry, 60_000), later).kept);
    assert!(s.insert(key(5), ALICE, result(entry, 60_000), later).kept);
    assert!(s.get(&key(1), later).is_err());
    assert!(s.get(&key(2), later).is_ok());
    // nothing left that alice may drop but her own: her oldest goes for her next
    assert!(s.insert(key(6), ALICE, result(entry, 60_000), later).kept);
    assert!(s.get(&key(4), later).is_err());
    assert!(s.get(&key(2), later).is_ok());
    // a public result finds no room it may take
    assert!(
        !s.insert(key(7), Owner::Public, result(entry, 60_000), later)
            .kept
    );
    assert_eq!(s.held().1, 3);
}

#[test]
fn a_lookup_makes_a_result_the_most_recently_used() {
    let entry = 1000 - ENTRY_OVERHEAD;
    let mut s = Store::new(Bounds {
        max_bytes: 2_000,
        per_context: 2_000,
    });
    let now = Instant::now();
    s.insert(key(1), Owner::Public, result(entry, 60_000), now);
    s.insert(key(2), Owner::Public, result(entry, 60_000), now);
    assert!(s.get(&key(1), now).is_ok());
    s.insert(key(3), Owner::Public, result(entry, 60_000), now);
    assert!(s.get(&key(1), now).is_ok(), "used last: kept");
    assert!(s.get(&key(2), now).is_err(), "least recently used: dropped");
    assert_eq!(s.clear(), 2);
    assert_eq!(s.held(), (0, 0));
}
