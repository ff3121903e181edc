use super::*;
use crate::config::parse;
use std::sync::Arc;

fn pool(balance: &str, n: usize) -> Arc<Pool> {
    let backends: Vec<String> = (0..n).map(|i| format!("127.0.0.1:{}", 9000 + i)).collect();
    let yaml = format!(
        "pools: {{ p: {{ backends: [{}], balance: {balance} }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n",
        backends.join(", ")
    );
    Arc::new(Pool::new(&parse(&yaml).unwrap().pools[0]))
}

#[test]
fn round_robin_visits_every_backend_in_turn() {
    let p = pool("round-robin", 3);
    let picks: Vec<usize> = (0..6).map(|_| p.select(&[]).unwrap()).collect();
    assert_eq!(picks, vec![0, 1, 2, 0, 1, 2]);
}

#[test]
fn failed_backends_are_skipped_until_nothing_else_is_left() {
    let p = pool("round-robin", 2);
    p.mark_failed(0);
    for _ in 0..4 {
        assert_eq!(p.select(&[]), Some(1));
    }
    // backend 1 was tried already: the failed mark is only a hint
    assert_eq!(p.select(&[1]), Some(0));
    assert_eq!(p.select(&[0, 1]), None);
    p.mark_ok(0);
    assert!(!p.backends[0].is_failed());
}

#[test]
fn least_requests_prefers_the_idle_backend() {
    let p = pool("least-requests", 3);
    let _a = p.track(0);
    let _b = p.track(1);
    assert_eq!(p.select(&[]), Some(2));
    let _c = p.track(2);
    let _d = p.track(2);
    for _ in 0..4 {
        assert_ne!(p.select(&[]), Some(2));
    }
}

#[test]
fn inflight_guard_counts_down_on_drop() {
    let p = pool("least-requests", 1);
    {
        let _g = p.track(0);
        assert_eq!(p.backends[0].inflight(), 1);
    }
    assert_eq!(p.backends[0].inflight(), 0);
}

#[test]
fn power_of_two_choices_avoids_the_busiest_backend() {
    let p = pool("power-of-two-choices", 2);
    let _busy: Vec<_> = (0..5).map(|_| p.track(0)).collect();
    for _ in 0..20 {
        assert_eq!(p.select(&[]), Some(1));
    }
}

#[test]
fn new_sessions_go_to_the_backend_with_fewest_sessions() {
    let p = pool("round-robin", 3);
    let addr = |i: usize| p.backends[i].addr;
    p.count_session(addr(0), true);
    p.count_session(addr(0), true);
    p.count_session(addr(1), true);
    assert_eq!(p.select_for_session(&[]), Some(2));
    assert_eq!(p.select_for_session(&[2]), Some(1));
    p.mark_failed(2);
    assert_eq!(p.select_for_session(&[]), Some(1));
    p.count_session(addr(0), false);
    p.count_session(addr(0), false);
    p.count_session(addr(0), false); // never below zero
    assert_eq!(p.backends[0].sessions(), 0);
}
