use super::*;

#[test]
fn a_probe_is_claimed_once_and_an_inconclusive_one_backs_off() {
    let s = Schedule::due_now();
    let now = now_ms();
    assert!(s.claim(now));
    assert!(!s.claim(now), "one prober at a time");
    s.finish(false, now);
    assert!(!s.claim(now));
    assert!(s.claim(now + FIRST_BACKOFF_MS));
    s.finish(false, now + FIRST_BACKOFF_MS);
    assert!(!s.claim(now + 2 * FIRST_BACKOFF_MS), "the wait doubles");
    assert!(s.claim(now + 3 * FIRST_BACKOFF_MS));
    s.finish(true, now);
    assert!(!s.claim(u64::MAX - 2), "a conclusive probe is kept");
}

#[test]
fn a_suspect_answer_asks_for_one_probe_not_one_per_answer() {
    let s = Schedule::due_now();
    let now = now_ms();
    assert!(s.claim(now));
    s.again();
    assert_eq!(
        s.due_ms.load(Ordering::Relaxed),
        RUNNING,
        "not while running"
    );
    s.finish(true, now);
    s.again();
    s.again();
    let due = s.due_ms.load(Ordering::Relaxed);
    assert_eq!(due, now + MIN_GAP_MS);
}

#[test]
fn a_backend_back_up_is_probed_at_once_even_right_after_a_probe() {
    let s = Schedule::due_now();
    let now = now_ms();
    assert!(s.claim(now));
    s.finish(false, now);
    s.now();
    assert!(s.claim(now_ms()), "no backoff, no gap");
    s.now();
    s.finish(false, now_ms());
    assert!(
        s.claim(now_ms()),
        "the running probe is followed by another"
    );
}

#[test]
fn a_backend_back_while_its_probe_ends_is_probed_again() {
    // `now` saw the probe running and set its flag after `finish` had looked: the probe
    // it asked for must not be lost behind a conclusive (idle) finish
    let s = Schedule::due_now();
    let now = now_ms();
    assert!(s.claim(now));
    s.again_after.store(true, Ordering::Release);
    s.finish(true, now);
    assert!(s.claim(now_ms()), "probed again");
    // and a `now` after the probe ended moves an idle schedule to now
    s.finish(true, now);
    s.now();
    assert!(s.claim(now_ms()));
}

#[test]
fn answers_of_the_other_era_are_suspect() {
    assert!(answer_suggests_other_era(Era::Stateless, 400, false));
    assert!(answer_suggests_other_era(Era::Stateless, 200, true));
    assert!(!answer_suggests_other_era(Era::Stateless, 200, false));
    assert!(answer_suggests_other_era(Era::Legacy, 404, false));
    assert!(!answer_suggests_other_era(Era::Legacy, 200, true));
}
