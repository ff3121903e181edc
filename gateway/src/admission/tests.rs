use super::*;
use crate::config::parse;
use crate::error::ErrorKind;

fn admission(limits: &str) -> Admission {
    let yaml = format!(
        "limits: {limits}\npools: {{ p: {{ backends: [127.0.0.1:1] }} }}\nroutes: [ {{ path: /mcp, pool: p, limits: {{ max-inflight: 3, max-streams: 1 }} }} ]\n"
    );
    let config = parse(&yaml).unwrap();
    Admission::new(&config.limits, &config.routes)
}

#[test]
fn in_flight_caps_apply_per_scope_and_free_on_drop() {
    let a = admission("{ max-inflight: 2 }");
    let p1 = a.admit(0, None, false).unwrap();
    let _p2 = a.admit(0, None, false).unwrap();
    let err = a.admit(0, None, false).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Overloaded);
    assert_eq!(err.data["scope"], "gateway");
    assert_eq!(err.data["limit"], 2);
    drop(p1);
    assert!(a.admit(0, None, false).is_ok());
}

#[test]
fn route_stream_cap_is_separate_from_requests() {
    let a = admission("{}");
    let _s = a.admit(0, None, true).unwrap();
    let err = a.admit(0, None, true).unwrap_err();
    assert_eq!(err.data["scope"], "route");
    assert_eq!(err.data["reason"], "streams");
    assert!(a.admit(0, None, false).is_ok());
}

#[test]
fn client_rate_is_keyed_by_identity_with_a_retry_after() {
    let a = admission("{ rate: { per-second: 1, burst: 2 }, client-id-header: X-Api-Key }");
    let mut headers = http::HeaderMap::new();
    headers.insert("x-api-key", "alice".parse().unwrap());
    let alice = a.identity(&headers, None).unwrap();
    assert_eq!(&*alice, "key:alice");
    let bob = a
        .identity(&http::HeaderMap::new(), Some("127.0.0.2".parse().unwrap()))
        .unwrap();
    assert_eq!(&*bob, "ip:127.0.0.2");
    assert!(a.admit(0, Some(&alice), false).is_ok());
    assert!(a.admit(0, Some(&alice), false).is_ok());
    let err = a.admit(0, Some(&alice), false).unwrap_err();
    assert_eq!(err.kind, ErrorKind::RateLimited);
    assert!(err.retry_after.unwrap() > Duration::ZERO);
    assert!(
        a.admit(0, Some(&bob), false).is_ok(),
        "another client has its own bucket"
    );
}

#[test]
fn tool_rate_applies_only_to_matching_tools() {
    let a = admission("{ tool-rate: { per-second: 1, burst: 1, tools: [\"report_*\"] } }");
    let me = a
        .identity(&http::HeaderMap::new(), Some("127.0.0.1".parse().unwrap()))
        .unwrap();
    assert!(a.admit_tool(Some(&me), "report_q3").is_ok());
    assert_eq!(
        a.admit_tool(Some(&me), "report_q3").unwrap_err().data["tool"],
        "report_q3"
    );
    assert!(a.admit_tool(Some(&me), "report_q4").is_ok(), "per tool");
    assert!(a.admit_tool(Some(&me), "whoami").is_ok());
}

#[test]
fn a_rate_too_high_for_governors_clock_is_one_a_nanosecond_not_a_panic() {
    // 10^10 a second passes validation (positive, finite) but its period, 0.1 ns, rounds to zero
    for per_second in ["1e10", "1e300"] {
        let a = admission(&format!(
            "{{ rate: {{ per-second: {per_second}, burst: 2 }} }}"
        ));
        let me = a
            .identity(&http::HeaderMap::new(), Some("127.0.0.1".parse().unwrap()))
            .unwrap();
        assert!(a.admit(0, Some(&me), false).is_ok());
        assert!(a.admit(0, Some(&me), false).is_ok());
    }
    assert_eq!(
        ONE_A_NANOSECOND.replenish_interval(),
        Duration::from_nanos(1)
    );
}

#[test]
fn usage_tells_each_cap_in_use_and_its_limit() {
    let a = admission("{ max-inflight: 2 }");
    let _p = a.admit(0, None, false).unwrap();
    let _s = a.admit(0, None, true).unwrap();
    assert_eq!(
        a.usage(),
        vec![
            (None, "inflight", 1, 2),
            (Some(0), "inflight", 1, 3),
            (Some(0), "streams", 1, 1),
        ]
    );
}
