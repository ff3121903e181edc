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
