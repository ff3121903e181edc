use super::*;

#[test]
fn a_token_is_used_until_shortly_before_it_expires_and_refreshed_before() {
    let now = Instant::now();
    let t = token_of(
        &serde_json::json!({"access_token": "abc", "token_type": "bearer", "expires_in": 300}),
        now,
    )
    .unwrap();
    assert_eq!(t.usable_until - now, Duration::from_secs(290));
    assert_eq!(t.refresh_at - now, Duration::from_secs(240));
    assert_eq!(t.header.as_bytes(), b"Bearer abc");
    assert!(t.header.is_sensitive());
    let short = token_of(
        &serde_json::json!({"access_token": "a", "expires_in": 5}),
        now,
    )
    .unwrap();
    assert_eq!(short.usable_until - now, Duration::from_millis(4500));
    let default = token_of(&serde_json::json!({"access_token": "a"}), now).unwrap();
    assert_eq!(default.usable_until - now, Duration::from_secs(54));
    for bad in [
        serde_json::json!({}),
        serde_json::json!({"access_token": "a", "token_type": "mac"}),
        serde_json::json!({"access_token": "a", "expires_in": -1}),
        serde_json::json!({"access_token": "a", "expires_in": "soon"}),
        serde_json::json!({"access_token": "a\nb"}),
    ] {
        assert!(token_of(&bad, now).is_err(), "{bad}");
    }
}

#[test]
fn a_401_drops_a_token_at_most_once_per_gap() {
    let now = Instant::now();
    assert!(!may_drop(now, now), "one just dropped: the next is kept");
    assert!(!may_drop(now, now + REFETCH_GAP / 2));
    assert!(may_drop(now, now + REFETCH_GAP));
}

/// A client secret file that blocks its reader (a hung mount) is read beside the runtime
/// thread the fetch runs on, which goes on serving (before: the thread, and every request
/// on it, waited as long as the file).
#[test]
fn a_secret_file_that_blocks_never_holds_the_fetch_thread() {
    use crate::config::{ClientAuth, OAuthClient, SecretSource};
    let fifo = crate::upstream::secrets::blocking_file::fifo("token-hung", None);
    let source = TokenSource::new(
        "p",
        &ClientCredentials {
            client: OAuthClient {
                token_url: "http://127.0.0.1:9/token".into(),
                client_id: "gw".into(),
                client_secret: SecretSource::File(fifo.clone()),
                auth: ClientAuth::Basic,
                timeout: Duration::from_secs(5),
            },
            scope: None,
            audience: None,
            resource: None,
        },
    );
    let events = IntCounterVec::new(
        pingora_prometheus::prometheus::Opts::new("t", "t"),
        &["pool", "event"],
    )
    .unwrap();
    let fetch = async move { source.ready(&events).await.map_err(|f| f.reason) };
    let took = crate::upstream::secrets::blocking_file::timer_beside(&fifo, "s", fetch);
    assert!(took.is_some_and(|t| t < Duration::from_secs(1)), "{took:?}");
    let _ = std::fs::remove_dir_all(fifo.parent().unwrap());
}

#[test]
fn forms_are_encoded() {
    assert_eq!(
        form_urlencoded(&[("scope", "a b"), ("x", "é&=")]),
        "scope=a+b&x=%C3%A9%26%3D"
    );
}

/// What the console shows of a token: its age and how long it may still be sent, never the
/// token; no token yet says so.
#[test]
fn the_status_tells_age_and_time_left_never_the_token() {
    use crate::config::{ClientAuth, OAuthClient, SecretSource};
    let source = TokenSource::new(
        "p",
        &ClientCredentials {
            client: OAuthClient {
                token_url: "http://127.0.0.1:9/token".into(),
                client_id: "gw".into(),
                client_secret: SecretSource::Env("UNSET".into()),
                auth: ClientAuth::Basic,
                timeout: Duration::from_secs(5),
            },
            scope: None,
            audience: None,
            resource: None,
        },
    );
    let none = source.status();
    assert_eq!(
        (none.age, none.usable_for, none.last_failure),
        (None, None, None)
    );
    source.fetched("tok-secret-123");
    let status = source.status();
    assert!(status.age.is_some_and(|a| a < Duration::from_secs(5)));
    // five minutes, less the margin of a tenth (at most 10 s)
    let left = status.usable_for.unwrap();
    assert!(
        left > Duration::from_secs(280) && left <= Duration::from_secs(290),
        "{left:?}"
    );
    assert!(!format!("{status:?}").contains("tok-secret-123"));
}

/// A token endpoint on loopback answering every request with `answer` (a 200 JSON body), and
/// the number of token requests it received.
fn token_endpoint(answer: &'static str) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    token_endpoint_answering("200 OK", answer)
}

/// The same, answering with `status` (`"401 Unauthorized"`).
fn token_endpoint_answering(
    status: &'static str,
    answer: &'static str,
) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/token", listener.local_addr().unwrap());
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = asked.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let counted = counted.clone();
            // one thread each: twenty requests at once are answered at once
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
            });
        }
    });
    (url, asked)
}

/// The client-credentials source of pool `p` asking `url`, and a counter of its events.
fn source_at(url: &str) -> (TokenSource, IntCounterVec) {
    use crate::config::{ClientAuth, OAuthClient, SecretSource};
    std::env::set_var("MCPGW_TEST_TOKENS_SECRET", "s");
    let source = TokenSource::new(
        "p",
        &ClientCredentials {
            client: OAuthClient {
                token_url: url.into(),
                client_id: "gw".into(),
                client_secret: SecretSource::Env("MCPGW_TEST_TOKENS_SECRET".into()),
                auth: ClientAuth::Basic,
                timeout: Duration::from_secs(5),
            },
            scope: None,
            audience: None,
            resource: None,
        },
    );
    let events = IntCounterVec::new(
        pingora_prometheus::prometheus::Opts::new("t", "t"),
        &["pool", "event"],
    )
    .unwrap();
    (source, events)
}

/// Calls `ready` every 20 ms until it gives a token, within `bound`; when it did.
async fn ready_within(source: &TokenSource, events: &IntCounterVec, bound: Duration) -> Instant {
    let start = Instant::now();
    loop {
        match source.ready(events).await {
            Ok(()) => return Instant::now(),
            Err(f) => assert_eq!(f.reason, SHORT_LIVED, "{f:?}"),
        }
        assert!(start.elapsed() < bound, "no token within {bound:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The lifetime rules at their edges: a token of a nanosecond ends at once and is refreshed,
/// and fetched again, no sooner than the 1 s floor after its answer (before: refreshed at once
/// and fetched again by every request).
#[test]
fn a_token_of_a_nanosecond_ends_at_once_and_is_fetched_again_no_sooner_than_the_floor() {
    let now = Instant::now();
    let t = token_of(
        &serde_json::json!({"access_token": "a", "expires_in": 1e-9}),
        now,
    )
    .unwrap();
    assert!(t.usable_until <= now + Duration::from_nanos(1));
    assert_eq!(t.refresh_at - now, REFETCH_FLOOR);
    assert_eq!(t.refetch_after - now, REFETCH_FLOOR);
    let long = token_of(
        &serde_json::json!({"access_token": "a", "expires_in": 300}),
        now,
    )
    .unwrap();
    assert_eq!(long.refetch_after - now, REFETCH_FLOOR);
    assert_eq!(long.refresh_at - now, Duration::from_secs(240));
}

/// Fifty requests against an endpoint whose tokens live 1e-9 s make one token request, and
/// none is sent a token past its end: each is answered `short-lived` with the time left to the
/// floor as `Retry-After` (before: each of the fifty made a token request of its own). After
/// the floor, the next request fetches again, once for twenty at once.
#[tokio::test]
async fn tokens_of_a_nanosecond_cost_one_fetch_per_second_not_one_per_request() {
    let (url, asked) = token_endpoint(r#"{"access_token":"nano","expires_in":1e-9}"#);
    let (source, events) = source_at(&url);
    let first = Instant::now();
    for _ in 0..50 {
        let failed = source.ready(&events).await.unwrap_err();
        assert_eq!(failed.reason, SHORT_LIVED, "{failed:?}");
        assert!(failed.retry_after <= REFETCH_FLOOR, "{failed:?}");
        assert!(source.header().is_none(), "a token sent past its end");
    }
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1);
    // the answer the caller gets: 503 -32039 with the reason and the time left
    let failed = source.ready(&events).await.unwrap_err();
    let answer = crate::error::GatewayError::upstream_credentials("p", &failed);
    assert_eq!(answer.data["reason"], SHORT_LIVED);
    assert!(
        answer.message.contains("at most once a second"),
        "{}",
        answer.message
    );
    assert!(answer.retry_after.is_some_and(|r| r <= REFETCH_FLOOR));
    // past the floor: twenty requests at once make one fetch between them
    let start = Instant::now();
    loop {
        let tries = futures_util::future::join_all((0..20).map(|_| source.ready(&events))).await;
        if asked.load(std::sync::atomic::Ordering::SeqCst) > 1 {
            assert!(tries
                .iter()
                .all(|t| t.as_ref().is_err_and(|f| f.reason == SHORT_LIVED)));
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "no fetch after the floor"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        first.elapsed() >= REFETCH_FLOOR,
        "fetched again within the floor"
    );
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 2);
}

/// A token of 0.4 s is sent for its life (less its margin), then not at all: the requests
/// after its end, until the floor, are answered `short-lived` without a fetch, and the first
/// after the floor gets a new token.
#[tokio::test]
async fn a_token_shorter_than_the_floor_is_used_for_its_life_then_fetched_after_the_floor() {
    let (url, asked) = token_endpoint(r#"{"access_token":"short","expires_in":0.4}"#);
    let (source, events) = source_at(&url);
    let first = Instant::now();
    source.ready(&events).await.unwrap();
    assert!(source.header().is_some(), "the fresh token is used");
    // its end: polled until no header is given, then every request is refused until the floor
    let start = Instant::now();
    while source.header().is_some() {
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "the token never ended"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(first.elapsed() >= Duration::from_millis(350), "ended early");
    let failed = source.ready(&events).await.unwrap_err();
    assert_eq!(failed.reason, SHORT_LIVED, "{failed:?}");
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1);
    let again = ready_within(&source, &events, Duration::from_secs(3)).await;
    assert!(
        again - first >= REFETCH_FLOOR,
        "fetched again within the floor"
    );
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 2);
}

/// Twenty callers' exchanges at once, against an endpoint that refuses: a refusal of the
/// gateway's own client (`invalid_client`) stands for every caller after one request; a
/// refusal of a caller's token (`invalid_grant`) says the endpoint works, and each caller's
/// exchange then goes on (one request each).
#[tokio::test]
async fn a_refusal_of_the_gateways_client_stands_for_every_caller_and_one_of_a_callers_token_does_not(
) {
    for (answer, requests) in [
        (r#"{"error":"invalid_client"}"#, 1),
        (r#"{"error":"invalid_grant"}"#, 20),
    ] {
        let (url, asked) = token_endpoint_answering("401 Unauthorized", answer);
        let (own, events) = source_at(&url);
        let health = SharedHealth::default();
        let sources: Vec<TokenSource> = (0..20)
            .map(|i| {
                TokenSource::exchange("p", &own.cfg, format!("caller-{i}"), None, health.clone())
            })
            .collect();
        let all = futures_util::future::join_all(sources.iter().map(|s| s.ready(&events))).await;
        for failed in all {
            assert_eq!(failed.unwrap_err().reason, "refused", "{answer}");
        }
        assert_eq!(
            asked.load(std::sync::atomic::Ordering::SeqCst),
            requests,
            "{answer}"
        );
    }
}
