//! The behavioural suite every [`SessionStore`] implementation runs: the same calls, the same
//! expected answers. A new store joins by calling [`run_all`] from its tests.

use super::{CreateError, Hold, Quota, Rebound, SessionStore, Ttl};
use crate::session::{now_ms, Binding, GoneReason, Lookup, SessionRecord, SettingChange, Settings};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

const TTL: Ttl = Ttl {
    idle: Duration::from_secs(1),
    tombstone: Duration::from_secs(5),
};

/// Tombstones a test can outwait (a networked store forgets them by its own clock).
const SHORT_TOMBSTONES: Ttl = Ttl {
    idle: Duration::from_secs(1),
    tombstone: Duration::from_millis(300),
};

const OPEN: Quota = Quota {
    max_sessions: 100,
    max_per_client: None,
};

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn binding(port: u16, generation: u64) -> Binding {
    Binding {
        backend: addr(port),
        backend_session: format!("b{port}-{generation}").into(),
        generation,
        stale: false,
    }
}

/// A record with a fresh unique id (a shared store may hold other tests' records).
pub(super) fn record(client: &str, port: u16, last_use_ms: u64) -> SessionRecord {
    SessionRecord {
        id: crate::session::new_session_id(),
        pool: "suite-pool".into(),
        client: client.into(),
        principal: None,
        path: "/mcp".into(),
        init_params: r#"{"protocolVersion":"2025-11-25"}"#.into(),
        protocol_version: "2025-11-25".into(),
        binding: binding(port, 1),
        settings: Settings::default(),
        last_use_ms,
    }
}

async fn live(store: &dyn SessionStore, id: &str) -> SessionRecord {
    match store.get(id).await.expect("store answers") {
        Lookup::Live(r) => r,
        other => panic!("session {id} not live: {other:?}"),
    }
}

async fn count_on(store: &dyn SessionStore, port: u16) -> usize {
    store
        .backend_counts("suite-pool")
        .await
        .expect("store answers")
        .into_iter()
        .find(|(a, _)| *a == addr(port))
        .map_or(0, |(_, n)| n)
}

/// Runs every case, each on a new store made by `make`.
pub(crate) async fn run_all<F>(make: F)
where
    F: Fn(Ttl) -> Arc<dyn SessionStore>,
{
    created_sessions_are_found_and_counted(&*make(TTL)).await;
    quotas_hold_in_all_and_per_client(&*make(TTL)).await;
    rebind_is_a_compare_and_set_on_the_generation(&*make(TTL)).await;
    stale_marks_only_the_generation_it_names(&*make(TTL)).await;
    settings_changes_are_kept(&*make(TTL)).await;
    subscriptions_stay_within_their_bound(&*make(TTL)).await;
    ended_sessions_leave_a_tombstone_and_free_their_counts(&*make(TTL)).await;
    use_slides_the_time_to_live(&*make(TTL)).await;
    the_index_lists_the_live_sessions_on_each_backend(&*make(TTL)).await;
    tombstones_are_forgotten_after_their_time(&*make(SHORT_TOMBSTONES)).await;
    a_shorter_time_to_live_applies_to_live_sessions(&*make(TTL)).await;
    one_owner_holds_a_stream_lease_until_it_expires(&*make(TTL)).await;
    concurrent_takers_of_a_free_lease_get_one_owner(make(TTL)).await;
    a_lease_is_released_only_by_its_holder_and_never_given_for_an_ended_session(&*make(TTL)).await;
}

async fn created_sessions_are_found_and_counted(store: &dyn SessionStore) {
    let mut a = record("ip:1", 1, now_ms());
    // The principal a session is bound to survives the store (Redis: every replica sees it).
    a.principal = Some("https://idp.example.com|alice".into());
    let b = record("ip:1", 2, now_ms());
    store.create(a.clone(), OPEN).await.unwrap();
    store.create(b.clone(), OPEN).await.unwrap();
    assert_eq!(live(store, &a.id).await, a);
    assert_eq!(store.get("no-such-session").await.unwrap(), Lookup::Unknown);
    assert_eq!(store.count().await.unwrap(), 2);
    assert_eq!(count_on(store, 1).await, 1);
    assert_eq!(count_on(store, 2).await, 1);
    assert_eq!(store.client_count("ip:1").await.unwrap(), 2);
}

async fn quotas_hold_in_all_and_per_client(store: &dyn SessionStore) {
    let quota = Quota {
        max_sessions: 3,
        max_per_client: Some(2),
    };
    store
        .create(record("ip:a", 1, now_ms()), quota)
        .await
        .unwrap();
    store
        .create(record("ip:a", 1, now_ms()), quota)
        .await
        .unwrap();
    assert_eq!(
        store.create(record("ip:a", 1, now_ms()), quota).await,
        Err(CreateError::ClientFull { max: 2 })
    );
    // sessions without a client identity are never counted per client
    let anonymous = record("", 1, now_ms());
    store.create(anonymous.clone(), quota).await.unwrap();
    assert_eq!(
        store.create(record("ip:b", 1, now_ms()), quota).await,
        Err(CreateError::Full { max: 3 })
    );
    assert_eq!(store.count().await.unwrap(), 3);
    store.end(&anonymous.id, GoneReason::Deleted).await.unwrap();
    store
        .create(record("ip:b", 1, now_ms()), quota)
        .await
        .unwrap();
}

async fn rebind_is_a_compare_and_set_on_the_generation(store: &dyn SessionStore) {
    let rec = record("", 1, now_ms());
    store.create(rec.clone(), OPEN).await.unwrap();
    let won = match store.rebind(&rec.id, 1, binding(2, 2)).await.unwrap() {
        Rebound::Won(r) => r,
        lost => panic!("first re-binder must win: {lost:?}"),
    };
    assert_eq!(won.binding, binding(2, 2));
    assert_eq!((count_on(store, 1).await, count_on(store, 2).await), (0, 1));
    // a second re-binder that read generation 1 loses and sees the winner's binding
    match store.rebind(&rec.id, 1, binding(3, 2)).await.unwrap() {
        Rebound::Lost(Lookup::Live(current)) => assert_eq!(current.binding, binding(2, 2)),
        other => panic!("{other:?}"),
    }
    assert_eq!(count_on(store, 3).await, 0);
    store.end(&rec.id, GoneReason::Deleted).await.unwrap();
    assert_eq!(
        store.rebind(&rec.id, 2, binding(3, 3)).await.unwrap(),
        Rebound::Lost(Lookup::Gone(GoneReason::Deleted))
    );
}

async fn stale_marks_only_the_generation_it_names(store: &dyn SessionStore) {
    let rec = record("", 1, now_ms());
    store.create(rec.clone(), OPEN).await.unwrap();
    store.mark_stale(&rec.id, 7).await.unwrap();
    assert!(!live(store, &rec.id).await.binding.stale);
    store.mark_stale(&rec.id, 1).await.unwrap();
    assert!(live(store, &rec.id).await.binding.stale);
}

async fn settings_changes_are_kept(store: &dyn SessionStore) {
    let rec = record("", 1, now_ms());
    store.create(rec.clone(), OPEN).await.unwrap();
    let level: Arc<str> = r#"{"level":"debug"}"#.into();
    for change in [
        SettingChange::LogLevel(level.clone()),
        SettingChange::Subscribe("file:///x".into(), 64),
        SettingChange::Subscribe("file:///y".into(), 64),
        SettingChange::Unsubscribe("file:///x".into()),
    ] {
        store.update_settings(&rec.id, change).await.unwrap();
    }
    let settings = live(store, &rec.id).await.settings;
    assert_eq!(settings.log_level, Some(level));
    assert_eq!(settings.subscriptions, vec![Arc::<str>::from("file:///y")]);
}

/// A subscribe past the bound it carries is not kept (concurrent subscribes that passed the
/// check before they went out together), one already held is, and an unsubscribe makes room.
async fn subscriptions_stay_within_their_bound(store: &dyn SessionStore) {
    let rec = record("", 1, now_ms());
    store.create(rec.clone(), OPEN).await.unwrap();
    for uri in ["a://1", "a://2", "a://3", "a://1"] {
        let change = SettingChange::Subscribe(uri.into(), 2);
        store.update_settings(&rec.id, change).await.unwrap();
    }
    let kept = |v: &[&str]| v.iter().map(|u| Arc::<str>::from(*u)).collect::<Vec<_>>();
    let settings = live(store, &rec.id).await.settings;
    assert_eq!(settings.subscriptions, kept(&["a://1", "a://2"]));
    let changes = [
        SettingChange::Unsubscribe("a://1".into()),
        SettingChange::Subscribe("a://3".into(), 2),
    ];
    for change in changes {
        store.update_settings(&rec.id, change).await.unwrap();
    }
    let settings = live(store, &rec.id).await.settings;
    assert_eq!(settings.subscriptions, kept(&["a://2", "a://3"]));
}

async fn ended_sessions_leave_a_tombstone_and_free_their_counts(store: &dyn SessionStore) {
    let rec = record("ip:z", 4, now_ms());
    store.create(rec.clone(), OPEN).await.unwrap();
    let ended = store.end(&rec.id, GoneReason::Deleted).await.unwrap();
    assert_eq!(ended, Some(rec.clone()));
    assert_eq!(store.end(&rec.id, GoneReason::Expired).await.unwrap(), None);
    assert_eq!(
        store.get(&rec.id).await.unwrap(),
        Lookup::Gone(GoneReason::Deleted)
    );
    assert_eq!(store.count().await.unwrap(), 0);
    assert_eq!(count_on(store, 4).await, 0);
    assert_eq!(store.client_count("ip:z").await.unwrap(), 0);
}

async fn on(store: &dyn SessionStore, pool: &str, port: u16) -> Vec<Arc<str>> {
    let mut ids = store
        .sessions_on(pool, addr(port))
        .await
        .expect("store answers");
    ids.sort();
    ids
}

fn sorted(ids: &[&Arc<str>]) -> Vec<Arc<str>> {
    let mut ids: Vec<Arc<str>> = ids.iter().map(|id| (*id).clone()).collect();
    ids.sort();
    ids
}

async fn the_index_lists_the_live_sessions_on_each_backend(store: &dyn SessionStore) {
    let t0 = now_ms();
    let (a, b, c) = (record("", 11, t0), record("", 11, t0), record("", 12, t0));
    for r in [&a, &b, &c] {
        store.create(r.clone(), OPEN).await.unwrap();
    }
    assert_eq!(on(store, "suite-pool", 11).await, sorted(&[&a.id, &b.id]));
    assert_eq!(on(store, "suite-pool", 12).await, sorted(&[&c.id]));
    assert!(on(store, "other-pool", 11).await.is_empty(), "per pool");
    // a move takes the session from one backend's list to the other's
    assert!(matches!(
        store.rebind(&a.id, 1, binding(12, 2)).await.unwrap(),
        Rebound::Won(_)
    ));
    assert_eq!(on(store, "suite-pool", 11).await, sorted(&[&b.id]));
    assert_eq!(on(store, "suite-pool", 12).await, sorted(&[&a.id, &c.id]));
    // a lost compare-and-set changes nothing
    store.rebind(&a.id, 1, binding(13, 2)).await.unwrap();
    assert!(on(store, "suite-pool", 13).await.is_empty());
    // ended and expired sessions leave it
    store.end(&b.id, GoneReason::Deleted).await.unwrap();
    assert!(on(store, "suite-pool", 11).await.is_empty());
    store.touch(&a.id, t0 + 5_000).await.unwrap();
    let expired = store.take_expired(t0 + 1_500, 10).await.unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(on(store, "suite-pool", 12).await, sorted(&[&a.id]));
}

async fn use_slides_the_time_to_live(store: &dyn SessionStore) {
    let t0 = now_ms();
    let rec = record("ip:t", 5, t0);
    store.create(rec.clone(), OPEN).await.unwrap();
    assert!(store.take_expired(t0 + 500, 10).await.unwrap().is_empty());
    store.touch(&rec.id, t0 + 800).await.unwrap();
    // due by its creation time, but used since: kept
    assert!(store.take_expired(t0 + 1500, 10).await.unwrap().is_empty());
    let expired = store.take_expired(t0 + 1900, 10).await.unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].id, rec.id);
    assert_eq!(
        store.get(&rec.id).await.unwrap(),
        Lookup::Gone(GoneReason::Expired)
    );
    assert_eq!(count_on(store, 5).await, 0);
    assert_eq!(store.client_count("ip:t").await.unwrap(), 0);
}

async fn tombstones_are_forgotten_after_their_time(store: &dyn SessionStore) {
    let rec = record("", 1, now_ms());
    store.create(rec.clone(), OPEN).await.unwrap();
    store.end(&rec.id, GoneReason::Deleted).await.unwrap();
    store.take_expired(now_ms(), 10).await.unwrap();
    assert_eq!(
        store.get(&rec.id).await.unwrap(),
        Lookup::Gone(GoneReason::Deleted)
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    store.take_expired(now_ms(), 10).await.unwrap();
    assert_eq!(store.get(&rec.id).await.unwrap(), Lookup::Unknown);
}

async fn a_shorter_time_to_live_applies_to_live_sessions(store: &dyn SessionStore) {
    let t0 = now_ms();
    let rec = record("", 1, t0);
    store.create(rec.clone(), OPEN).await.unwrap();
    store.set_ttl(Ttl {
        idle: Duration::from_millis(100),
        tombstone: TTL.tombstone,
    });
    let expired = store.take_expired(t0 + 200, 10).await.unwrap();
    assert_eq!(expired.len(), 1);
}

const LEASE: Duration = Duration::from_millis(300);

async fn one_owner_holds_a_stream_lease_until_it_expires(store: &dyn SessionStore) {
    let rec = record("", 1, now_ms());
    store.create(rec.clone(), OPEN).await.unwrap();
    assert_eq!(
        store.hold_lease(&rec.id, "a", LEASE).await.unwrap(),
        Hold::Mine
    );
    assert_eq!(
        store.hold_lease(&rec.id, "b", LEASE).await.unwrap(),
        Hold::Theirs("a".into())
    );
    // renewed while held: past the first expiry, still a's
    tokio::time::sleep(LEASE / 2).await;
    assert_eq!(
        store.hold_lease(&rec.id, "a", LEASE).await.unwrap(),
        Hold::Mine
    );
    tokio::time::sleep(LEASE * 2 / 3).await;
    assert_eq!(
        store.hold_lease(&rec.id, "b", LEASE).await.unwrap(),
        Hold::Theirs("a".into())
    );
    // a stops renewing (it died): b takes it over after the expiry, and a has lost it
    tokio::time::sleep(LEASE + Duration::from_millis(50)).await;
    assert_eq!(
        store.hold_lease(&rec.id, "b", LEASE).await.unwrap(),
        Hold::Mine
    );
    assert_eq!(
        store.hold_lease(&rec.id, "a", LEASE).await.unwrap(),
        Hold::Theirs("b".into())
    );
}

async fn concurrent_takers_of_a_free_lease_get_one_owner(store: Arc<dyn SessionStore>) {
    let rec = record("", 1, now_ms());
    store.create(rec.clone(), OPEN).await.unwrap();
    let mut takers = Vec::new();
    for i in 0..8 {
        let (store, id) = (store.clone(), rec.id.clone());
        takers.push(tokio::spawn(async move {
            store
                .hold_lease(&id, &format!("r{i}"), Duration::from_secs(5))
                .await
                .unwrap()
        }));
    }
    let mut mine = 0;
    for t in takers {
        if t.await.unwrap() == Hold::Mine {
            mine += 1;
        }
    }
    assert_eq!(mine, 1, "exactly one replica holds the stream");
}

async fn a_lease_is_released_only_by_its_holder_and_never_given_for_an_ended_session(
    store: &dyn SessionStore,
) {
    let rec = record("", 1, now_ms());
    store.create(rec.clone(), OPEN).await.unwrap();
    assert_eq!(
        store
            .hold_lease(&rec.id, "a", Duration::from_secs(5))
            .await
            .unwrap(),
        Hold::Mine
    );
    store.release_lease(&rec.id, "b").await.unwrap();
    assert_eq!(
        store.hold_lease(&rec.id, "b", LEASE).await.unwrap(),
        Hold::Theirs("a".into()),
        "only the holder releases"
    );
    store.release_lease(&rec.id, "a").await.unwrap();
    assert_eq!(
        store.hold_lease(&rec.id, "b", LEASE).await.unwrap(),
        Hold::Mine
    );
    store.end(&rec.id, GoneReason::Deleted).await.unwrap();
    assert_eq!(
        store.hold_lease(&rec.id, "b", LEASE).await.unwrap(),
        Hold::Gone
    );
    assert_eq!(
        store
            .hold_lease("no-such-session", "b", LEASE)
            .await
            .unwrap(),
        Hold::Gone
    );
}
