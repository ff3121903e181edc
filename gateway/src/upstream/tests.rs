use super::*;
use crate::config::parse;
use mcp_wire::BackendEra;

fn pool(balance: &str, n: usize) -> Arc<Pool> {
    let backends: Vec<String> = (0..n).map(|i| format!("127.0.0.1:{}", 9000 + i)).collect();
    let yaml = format!(
        "pools: {{ p: {{ backends: [{}], balance: {balance} }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n",
        backends.join(", ")
    );
    Arc::new(Pool::new(&parse(&yaml).unwrap().pools[0]))
}

fn port(b: Option<Arc<Backend>>) -> u16 {
    b.expect("a backend").addr.port() - 9000
}

fn addr(i: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 9000 + i))
}

#[test]
fn round_robin_visits_every_backend_in_turn() {
    let p = pool("round-robin", 3);
    let picks: Vec<u16> = (0..6).map(|_| port(p.select(&[]))).collect();
    assert_eq!(picks, vec![0, 1, 2, 0, 1, 2]);
}

#[test]
fn failed_backends_are_skipped_until_nothing_else_is_left() {
    let p = pool("round-robin", 2);
    let b0 = p.find(addr(0)).unwrap();
    p.mark_failed(&b0);
    for _ in 0..4 {
        assert_eq!(port(p.select(&[])), 1);
    }
    // backend 1 was tried already: the failed mark is only a hint
    assert_eq!(port(p.select(&[addr(1)])), 0);
    assert!(p.select(&[addr(0), addr(1)]).is_none());
    p.mark_ok(&b0);
    assert!(!b0.is_failed());
}

#[test]
fn least_requests_prefers_the_idle_backend() {
    let p = pool("least-requests", 3);
    let _a = Pool::track(&p.find(addr(0)).unwrap());
    let _b = Pool::track(&p.find(addr(1)).unwrap());
    assert_eq!(port(p.select(&[])), 2);
    let c = p.find(addr(2)).unwrap();
    let _c = Pool::track(&c);
    let _d = Pool::track(&c);
    for _ in 0..4 {
        assert_ne!(port(p.select(&[])), 2);
    }
}

#[test]
fn inflight_guard_counts_down_on_drop() {
    let p = pool("least-requests", 1);
    let b = p.find(addr(0)).unwrap();
    {
        let _g = Pool::track(&b);
        assert_eq!(b.inflight(), 1);
    }
    assert_eq!(b.inflight(), 0);
}

#[test]
fn power_of_two_choices_avoids_the_busiest_backend() {
    let p = pool("power-of-two-choices", 2);
    let busy = p.find(addr(0)).unwrap();
    let _busy: Vec<_> = (0..5).map(|_| Pool::track(&busy)).collect();
    for _ in 0..20 {
        assert_eq!(port(p.select(&[])), 1);
    }
}

#[test]
fn new_sessions_go_to_the_backend_with_fewest_sessions() {
    let p = pool("round-robin", 3);
    let counts = [(addr(0), 2), (addr(1), 1)];
    assert_eq!(port(p.select_for_session(&[], &counts)), 2);
    assert_eq!(port(p.select_for_session(&[addr(2)], &counts)), 1);
    p.mark_failed(&p.find(addr(2)).unwrap());
    assert_eq!(port(p.select_for_session(&[], &counts)), 1);
}

#[test]
fn draining_backends_take_no_new_work_while_others_can() {
    let p = pool("round-robin", 2);
    let b0 = p.find(addr(0)).unwrap();
    b0.set_draining(true);
    assert_eq!(b0.state(), BackendState::Draining);
    for _ in 0..4 {
        assert_eq!(port(p.select_for_session(&[], &[])), 1);
        assert_eq!(port(p.select(&[])), 1);
    }
    assert_eq!(
        port(p.select_for_session(&[addr(1)], &[])),
        0,
        "the last resort"
    );
    b0.set_draining(false);
    assert_eq!(b0.state(), BackendState::Up);
}

#[test]
fn membership_changes_keep_the_state_of_backends_that_stay() {
    let p = pool("round-robin", 2);
    let kept = p.find(addr(1)).unwrap();
    let _busy = Pool::track(&kept);
    let change = p.set_members(&[addr(1), addr(2)]);
    assert_eq!(change.added, vec![addr(2)]);
    assert_eq!(change.removed, vec![addr(0)]);
    assert_eq!(p.find(addr(1)).unwrap().inflight(), 1);
    assert!(p.find(addr(0)).is_none());
    assert_eq!(
        p.set_members(&[addr(1), addr(2)]),
        MembershipChange::default()
    );
}

#[test]
fn discovery_removals_drain_first_and_leave_after_the_deadline() {
    let p = pool("round-robin", 2);
    let change = p.sync(
        &[addr(1), addr(2)],
        Duration::from_secs(60),
        &Default::default(),
    );
    assert_eq!(change.added, vec![addr(2)]);
    assert_eq!(change.drained, vec![addr(0)]);
    assert!(change.removed.is_empty());
    let b0 = p.find(addr(0)).unwrap();
    assert_eq!(b0.state(), BackendState::Draining);
    // back in discovery: undrained
    p.sync(
        &[addr(0), addr(1), addr(2)],
        Duration::from_secs(60),
        &Default::default(),
    );
    assert_eq!(b0.state(), BackendState::Up);
    // gone with no drain time: leaves at once
    let change = p.sync(&[addr(1), addr(2)], Duration::ZERO, &Default::default());
    assert_eq!(change.removed, vec![addr(0)]);
    assert!(p.find(addr(0)).is_none());
}

#[test]
fn an_undiscovered_member_holding_tasks_stays_past_the_deadline_until_they_end() {
    let p = pool("round-robin", 2);
    let holding: std::collections::HashSet<_> = [addr(0)].into();
    let change = p.sync(&[addr(1)], Duration::ZERO, &holding);
    assert!(change.removed.is_empty(), "its tasks hold it: {change:?}");
    assert_eq!(change.drained, vec![addr(0)]);
    assert_eq!(p.find(addr(0)).unwrap().state(), BackendState::Draining);
    // the tasks ended: it leaves
    let change = p.sync(&[addr(1)], Duration::ZERO, &Default::default());
    assert_eq!(change.removed, vec![addr(0)]);
}

#[test]
fn health_probes_need_fall_failures_and_rise_successes() {
    let p = pool("round-robin", 1);
    let b = p.find(addr(0)).unwrap();
    assert_eq!(b.record_probe(false, 2, 2), None);
    assert_eq!(b.record_probe(false, 2, 2), Some(true));
    assert_eq!(b.state(), BackendState::Down);
    assert_eq!(b.record_probe(true, 2, 2), None);
    assert_eq!(b.record_probe(false, 2, 2), None);
    assert_eq!(b.record_probe(true, 2, 2), None);
    assert_eq!(b.record_probe(true, 2, 2), Some(false));
    assert_eq!(b.state(), BackendState::Up);
}

#[test]
fn requests_go_only_to_backends_of_their_era_and_unknown_ones_take_both() {
    let p = pool("round-robin", 3);
    let b = p.backends();
    b[0].set_era(Some(BackendEra::Legacy));
    b[1].set_era(Some(BackendEra::Modern));
    // backend 2: not probed yet, takes both
    for _ in 0..6 {
        assert_ne!(port(p.select_serving(&[], Some(Era::Stateless))), 0);
        assert_ne!(port(p.select_for_session(&[], &[])), 1);
    }
    assert_eq!(port(p.select_serving(&[addr(1)], Some(Era::Stateless))), 2);
    assert!(p
        .select_serving(&[addr(1), addr(2)], Some(Era::Stateless))
        .is_none());
    assert!(!p.lacks_era(Era::Stateless));
    b[2].set_era(Some(BackendEra::Dual));
    b[1].set_era(Some(BackendEra::Legacy));
    assert_eq!(port(p.select_serving(&[], Some(Era::Stateless))), 2);
    b[2].set_era(Some(BackendEra::Legacy));
    assert!(p.lacks_era(Era::Stateless) && !p.lacks_era(Era::Legacy));
    assert!(p.select_serving(&[], Some(Era::Stateless)).is_none());
}

#[test]
fn a_backend_that_went_down_takes_work_only_when_no_other_can_until_probed() {
    let p = pool("round-robin", 2);
    let b = p.backends();
    b[0].set_era(Some(BackendEra::Legacy));
    b[1].set_era(Some(BackendEra::Legacy));
    b[0].era_went_stale();
    for _ in 0..4 {
        assert_eq!(port(p.select_for_session(&[], &[])), 1);
        assert_eq!(port(p.select(&[])), 1);
    }
    assert_eq!(
        port(p.select_for_session(&[addr(1)], &[])),
        0,
        "the last resort"
    );
}

#[test]
fn a_failure_is_dated_from_its_start_and_a_new_one_after_recovery() {
    let p = pool("round-robin", 1);
    let b = p.find(addr(0)).unwrap();
    assert_eq!(b.last_failure(), None);
    p.mark_failed_for(&b, "connect-refused");
    let (began, what) = b.last_failure().unwrap();
    assert_eq!(what, "connect-refused");
    std::thread::sleep(std::time::Duration::from_millis(5));
    p.mark_failed(&b);
    assert_eq!(
        b.last_failure(),
        Some((began, "connect-refused")),
        "the same failure"
    );
    p.mark_ok(&b);
    p.mark_failed(&b);
    let (again, what) = b.last_failure().unwrap();
    assert!(again > began);
    assert_eq!(what, "connection-lost");
}

/// A backend that stopped serving and answers again at the same address may be another
/// program (a new version behind a Service's address): the pool's signature, which the
/// response cache keys results by, is not the one it had before, whether passive marks or the
/// health checks saw it go.
#[test]
fn a_pool_that_went_down_and_came_back_has_a_new_signature() {
    let p = pool("round-robin", 1);
    let b = p.find(addr(0)).unwrap();
    let before = p.signature();
    assert_eq!(p.signature(), before, "nothing changed");
    p.mark_failed(&b);
    p.mark_ok(&b);
    let back = p.signature();
    assert_ne!(back, before, "back after a failure");
    for _ in 0..3 {
        b.record_probe(false, 3, 1);
    }
    b.record_probe(true, 3, 1);
    assert_ne!(
        p.signature(),
        back,
        "back after the health checks saw it down"
    );
}
