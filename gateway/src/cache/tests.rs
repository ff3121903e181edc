//! The cache's invalidation by scope and generation, and its single flight.

use super::*;
use crate::metrics::scratch;

fn common() -> Common {
    Common {
        metrics: scratch(CacheMetrics::register),
        shared: None,
        generations: Arc::default(),
    }
}

fn cache(common: &Common) -> Arc<Cache> {
    Arc::new(Cache::new(CacheConfig::default(), common.clone()))
}

fn public() -> Stored {
    mcp_wire::cacheable::stored(
        br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[],"ttlMs":60000,"cacheScope":"public"}}"#,
    )
    .unwrap()
}

/// A source of no route, head or backends: the tests' keys are made by hand.
const NOWHERE: key::Source<'static> = key::Source {
    route: "",
    member: "",
    head: [0; 32],
    backends: 0,
};

fn keys(n: u8, pool: &str, context: Option<u8>) -> Keys {
    Keys::new(
        [n; 32],
        context.map(|c| [c; 32]),
        &NOWHERE,
        Scopes::from([pool.to_owned()]),
    )
}

const AT: (&str, &str) = ("/mcp", "tools/list");

#[tokio::test]
async fn a_miss_in_flight_when_its_pool_changes_is_not_kept() {
    let common = common();
    let cache = cache(&common);
    let mut k = keys(1, "a", None);
    assert!(cache.lookup(&mut k, AT).await.is_err());
    // the backend answers while a change of its pool is heard
    assert!(cache.heard("a", "notifications/tools/list_changed"));
    assert_eq!(cache.keep(&k, public(), AT).await, Err(NotKept::Changed));
    let mut again = keys(1, "a", None);
    assert!(cache.lookup(&mut again, AT).await.is_err(), "asked again");
}

#[tokio::test]
async fn a_change_drops_only_the_results_of_the_pool_that_announced_it() {
    let common = common();
    let cache = cache(&common);
    for (n, pool) in [(1, "a"), (2, "b")] {
        let mut k = keys(n, pool, None);
        assert!(cache.lookup(&mut k, AT).await.is_err());
        cache.keep(&k, public(), AT).await.unwrap();
    }
    assert!(!cache.heard("a", "notifications/progress"), "no change");
    assert!(cache.heard("a", "notifications/resources/list_changed"));
    assert!(cache.lookup(&mut keys(1, "a", None), AT).await.is_err());
    assert!(
        cache.lookup(&mut keys(2, "b", None), AT).await.is_ok(),
        "pool b's stays"
    );
    let mut merged = Keys::new(
        [3; 32],
        None,
        &NOWHERE,
        Scopes::from(["b".into(), "c".into()]),
    );
    assert!(cache.lookup(&mut merged, AT).await.is_err());
    cache.keep(&merged, public(), AT).await.unwrap();
    cache.changed("c");
    let mut merged = Keys::new(
        [3; 32],
        None,
        &NOWHERE,
        Scopes::from(["b".into(), "c".into()]),
    );
    assert!(
        cache.lookup(&mut merged, AT).await.is_err(),
        "a member changed"
    );
}

#[tokio::test]
async fn a_stream_of_the_snapshot_before_a_reload_drops_the_live_caches_results() {
    let common = common();
    let (old, live) = (cache(&common), cache(&common));
    let mut k = keys(1, "a", None);
    assert!(live.lookup(&mut k, AT).await.is_err());
    live.keep(&k, public(), AT).await.unwrap();
    assert!(live.lookup(&mut keys(1, "a", None), AT).await.is_ok());
    // a listen stream opened before the reload holds the old snapshot
    old.heard("a", "notifications/tools/list_changed");
    assert!(live.lookup(&mut keys(1, "a", None), AT).await.is_err());
}

#[tokio::test]
async fn one_public_key_makes_one_flight_whatever_the_callers_contexts() {
    let cache = cache(&common());
    let (mut alice, mut bob) = (keys(1, "a", Some(7)), keys(1, "a", Some(8)));
    let _ = cache.lookup(&mut alice, AT).await;
    let _ = cache.lookup(&mut bob, AT).await;
    let Flight::Lead(lead) = cache.flight(&alice, false) else {
        panic!("the first leads")
    };
    let Flight::Wait(mut waits) = cache.flight(&bob, false) else {
        panic!("another context waits for the same public key")
    };
    // the result is private: bob leads his own context's flight
    lead.release(Outcome::Private);
    assert_eq!(*waits.borrow_and_update(), Outcome::Private);
    assert!(matches!(cache.flight(&bob, true), Flight::Lead(_)));
}

#[tokio::test]
async fn a_leader_that_kept_nothing_hands_the_lead_to_one_waiter_and_a_waiter_may_take_it() {
    let cache = cache(&common());
    let mut k = keys(1, "a", None);
    let _ = cache.lookup(&mut k, AT).await;
    let Flight::Lead(first) = cache.flight(&k, false) else {
        panic!("leads")
    };
    let Flight::Wait(waits) = cache.flight(&k, false) else {
        panic!("waits")
    };
    drop(first);
    assert_eq!(*waits.borrow(), Outcome::Nothing);
    let Flight::Lead(next) = cache.flight(&k, false) else {
        panic!("the next leads")
    };
    assert!(
        matches!(cache.flight(&k, false), Flight::Wait(_)),
        "the rest wait again"
    );
    let Flight::Wait(before) = cache.flight(&k, false) else {
        panic!("waits")
    };
    // a waiter that waited its longest takes the lead from a leader that does not read
    let taken = cache.take_lead(&k, false);
    assert_eq!(*before.borrow(), Outcome::Handover);
    drop(next);
    let Flight::Wait(now) = cache.flight(&k, false) else {
        panic!("the old leader's end leaves the new flight alone")
    };
    taken.release(Outcome::Public);
    assert_eq!(*now.borrow(), Outcome::Public);
}
