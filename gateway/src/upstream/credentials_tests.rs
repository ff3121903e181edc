use super::*;
use crate::upstream::credentials_service::CredentialsService;
use crate::upstream::secrets::{blocking_file, read_secret_off_runtime, turn};
use std::time::Duration;

fn header(name: &str, path: &std::path::Path) -> SecretHeader {
    SecretHeader {
        name: name.into(),
        source: SecretSource::File(path.into()),
        prefix: "Bearer ".into(),
    }
}

/// The pools in force, for a round of the service.
struct Pools(crate::config::PoolConfig, Arc<crate::upstream::Pool>);

impl crate::upstream::LivePools for Pools {
    fn pools(&self) -> Vec<(crate::config::PoolConfig, Arc<crate::upstream::Pool>)> {
        vec![(self.0.clone(), self.1.clone())]
    }
    fn mcp_path(&self, _: usize) -> String {
        "/mcp".into()
    }
}

/// A secret file that blocks its reader (a hung mount) is read again beside the runtime
/// thread of the credentials service, which goes on (before: the thread, and the token
/// refreshes spawned on it, waited as long as the file); once it is written, it is taken.
#[test]
fn a_secret_file_that_blocks_never_holds_the_service_thread() {
    let dir = std::env::temp_dir().join(format!("mcpgw-cred-hung-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("secret");
    std::fs::write(&file, "one").unwrap();
    let yaml = format!(
        "pools: {{ p: {{ backends: [127.0.0.1:9], upstream-auth: {{ headers: {{ x-api-key: {{ file: {} }} }} }} }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n",
        file.display()
    );
    let cfg = crate::config::parse(&yaml).unwrap().pools[0].clone();
    let pool = Arc::new(crate::upstream::Pool::new(&cfg));
    blocking_file::fifo("cred-hung", Some(&file));
    let events = pingora_prometheus::prometheus::IntCounterVec::new(
        pingora_prometheus::prometheus::Opts::new("t", "t"),
        &["pool", "event"],
    )
    .unwrap();
    let service = CredentialsService::new(Arc::new(Pools(cfg, pool.clone())), events);
    let took = blocking_file::timer_beside(&file, "two", async move { service.round() });
    assert!(took.is_some_and(|t| t < Duration::from_secs(1)), "{took:?}");
    let mut req = RequestHeader::build("POST", b"/mcp", None).unwrap();
    pool.credentials.apply(&mut req);
    assert_eq!(req.headers["x-api-key"], "two");
    let _ = std::fs::remove_dir_all(dir);
}

/// A read of a hung file outlasts the fetch that asked for it, holding the file's turn
/// until it ends: the next fetch waits its timeout for the turn, reading nothing more.
#[tokio::test]
async fn a_hung_secret_file_holds_one_read() {
    let fifo = blocking_file::fifo("cred-turn", None);
    let source = SecretSource::File(fifo.clone());
    let timeout = Duration::from_millis(100);
    for _ in 0..2 {
        let failed = read_secret_off_runtime(&source, timeout).await.unwrap_err();
        assert!(failed.ends_with("was not read within 100ms"), "{failed}");
        assert!(turn(&fifo).try_lock().is_err(), "the first read holds it");
    }
    std::fs::write(&fifo, "x").unwrap();
    let freed = async {
        while turn(&fifo).try_lock().is_err() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), freed)
        .await
        .unwrap();
    std::fs::remove_file(&fifo).unwrap();
    std::fs::write(&fifo, "y\n").unwrap();
    assert_eq!(
        read_secret_off_runtime(&source, timeout).await.unwrap(),
        "y"
    );
    let _ = std::fs::remove_dir_all(fifo.parent().unwrap());
}

/// A pool's `token-exchange` (its endpoint unreachable: nothing here fetches).
fn token_exchange() -> crate::config::TokenExchange {
    use crate::config::{ApiKeyCallers, ClientAuth, ClientCredentials, OAuthClient};
    crate::config::TokenExchange {
        own: ClientCredentials {
            client: OAuthClient {
                token_url: "http://127.0.0.1:9/token".into(),
                client_id: "gw".into(),
                client_secret: SecretSource::Env("X".into()),
                auth: ClientAuth::Basic,
                timeout: Duration::from_secs(1),
            },
            scope: None,
            audience: Some("a".into()),
            resource: None,
        },
        api_key_callers: ApiKeyCallers::Refuse,
        actor: true,
        per_caller: 2,
        callers: 8,
    }
}

/// A request the gateway builds on its own (`request::own`) is made for the caller handed to
/// it: a pool exchanging callers' tokens takes that caller's exchanged token for it, and has
/// none for a request made for nobody (no task-local fills the gap).
#[test]
fn a_request_of_the_gateways_own_takes_the_token_of_the_caller_it_is_made_for() {
    let te = token_exchange();
    let auth = UpstreamAuth {
        headers: vec![],
        client_credentials: None,
        token_exchange: Some(te),
    };
    let credentials = Credentials::load("p", &auth);
    let alice = Arc::new(crate::auth::Principal {
        id: "i|alice".into(),
        subject: "alice".into(),
        scopes: vec![],
        claims: Default::default(),
    });
    let mut client = http::Extensions::new();
    client.insert(alice.clone());
    client.insert(crate::auth::Credentials(vec![(
        http::header::AUTHORIZATION,
        http::HeaderValue::from_static("Bearer alices-token"),
    )]));
    let exchanges = credentials.exchanges.as_ref().unwrap();
    exchanges
        .source_for(Some(&alice), Some("alices-token"))
        .unwrap()
        .fetched("for-alice");
    let host = http::HeaderValue::from_static("b:80");
    let target = crate::upstream::request::Target {
        path: "/mcp",
        host: &host,
    };
    let own = |caller: &crate::auth::Caller| {
        crate::upstream::request::own(http::Method::POST, target, None, None, 2, caller).unwrap()
    };
    let for_alice = own(&crate::auth::Caller::of(&client));
    let source = credentials.source_for(&for_alice).unwrap().unwrap();
    assert_eq!(source.header().unwrap(), "Bearer for-alice");
    let for_nobody = own(&crate::auth::Caller::default());
    assert_eq!(
        credentials.source_for(&for_nobody).err(),
        Some(crate::upstream::exchange::NoSubject::NoToken)
    );
}

/// A reload that leaves a pool's `token-exchange` as it was keeps every caller's exchanged
/// token (they were all dropped: each caller's next request an exchange, all at once); one
/// that changes it starts afresh.
#[test]
fn a_reload_keeps_the_exchanged_tokens_of_an_unchanged_pool() {
    let te = token_exchange();
    let auth = |te: &crate::config::TokenExchange| UpstreamAuth {
        headers: vec![],
        client_credentials: None,
        token_exchange: Some(te.clone()),
    };
    let alice = crate::auth::Principal {
        id: "i|alice".into(),
        subject: "alice".into(),
        scopes: vec![],
        claims: Default::default(),
    };
    let exchanged = |c: &Credentials, bearer: &str| {
        let source = c
            .exchanges
            .as_ref()
            .unwrap()
            .source_for(Some(&alice), Some(bearer));
        source.unwrap().header()
    };
    let before = Credentials::load("p", &auth(&te));
    let x = before.exchanges.as_ref().unwrap();
    x.source_for(Some(&alice), Some("t1"))
        .unwrap()
        .fetched("for-t1");
    x.source_for(Some(&alice), Some("t2"))
        .unwrap()
        .fetched("for-t2");

    let after = Credentials::load("p", &auth(&te));
    after.carry_over(&before, &auth(&te));
    assert_eq!(exchanged(&after, "t1").unwrap(), "Bearer for-t1");
    assert_eq!(exchanged(&after, "t2").unwrap(), "Bearer for-t2");
    assert_eq!(exchanged(&after, "t3"), None, "no token for another");

    let mut changed = te.clone();
    changed.own.audience = Some("b".into());
    let other = Credentials::load("p", &auth(&changed));
    other.carry_over(&before, &auth(&changed));
    assert_eq!(exchanged(&other, "t1"), None);
}

/// Credentials made after others were dropped (a reload) are told apart from them, though
/// they may live where the dropped ones did: a head the old ones applied is applied again.
#[test]
fn credentials_made_after_a_reload_never_count_a_head_as_theirs() {
    std::env::set_var("MCPGW_TEST_CREDENTIALS_ID", "s");
    let auth = UpstreamAuth {
        headers: vec![SecretHeader {
            name: "x-api-key".into(),
            source: SecretSource::Env("MCPGW_TEST_CREDENTIALS_ID".into()),
            prefix: String::new(),
        }],
        client_credentials: None,
        token_exchange: None,
    };
    let mut req = RequestHeader::build("POST", b"/mcp", None).unwrap();
    let before = Box::new(Credentials::load("p", &auth));
    before.apply(&mut req);
    assert!(before.applied(&req, None));
    let id = before.id();
    drop(before);
    for _ in 0..8 {
        let after = Box::new(Credentials::load("p", &auth));
        assert_ne!(after.id(), id);
        assert!(!after.applied(&req, None));
    }
}

#[test]
fn a_client_never_chooses_a_credential_header_and_a_rotated_file_is_read_again() {
    let dir = std::env::temp_dir().join(format!("mcpgw-cred-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("token");
    std::fs::write(&file, "one\n").unwrap();
    let creds = Credentials::load(
        "p",
        &UpstreamAuth {
            headers: vec![header("x-api-key", &file)],
            client_credentials: None,
            token_exchange: None,
        },
    );
    let mut req = RequestHeader::build("POST", b"/mcp", None).unwrap();
    req.insert_header("X_Api_Key", "mine").unwrap();
    req.append_header("x-api-key", "mine too").unwrap();
    creds.apply(&mut req);
    let got: Vec<_> = req
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_bytes()))
        .collect();
    assert_eq!(got, vec![("x-api-key", &b"Bearer one"[..])]);
    assert!(format!("{req:?}").contains("Sensitive"), "{req:?}");
    assert!(!format!("{req:?}").contains("Bearer one"));

    std::fs::write(&file, "two").unwrap();
    assert_eq!(creds.refresh(), (true, vec![]));
    assert!(!creds.refresh().0, "unchanged");
    let mut req = RequestHeader::build("POST", b"/mcp", None).unwrap();
    creds.apply(&mut req);
    assert_eq!(req.headers["x-api-key"], "Bearer two");

    // removed midway through a rotation: the last value stays, the error says where
    std::fs::remove_file(&file).unwrap();
    let (changed, problems) = creds.refresh();
    assert!(!changed);
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].to_string().contains("header `x-api-key`: file"),
        "{}",
        problems[0]
    );
    assert!(!problems[0].to_string().contains("two"));
    let mut req = RequestHeader::build("POST", b"/mcp", None).unwrap();
    creds.apply(&mut req);
    assert_eq!(req.headers["x-api-key"], "Bearer two");
    let _ = std::fs::remove_dir_all(dir);
}

/// What the console shows of a pool's credentials names each header and where its secret is
/// read from, and says when a read failed, but never holds a secret.
#[test]
fn the_status_names_sources_and_failures_but_never_a_value() {
    let dir = std::env::temp_dir().join(format!("mcpgw-cred-status-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("secret");
    std::fs::write(&file, "s3cret-value").unwrap();
    let yaml = format!(
        "pools: {{ p: {{ backends: [127.0.0.1:9], upstream-auth: {{ headers: {{ x-api-key: {{ file: {} }} }} }} }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n",
        file.display()
    );
    let cfg = crate::config::parse(&yaml).unwrap().pools[0].clone();
    let creds = Credentials::load("p", &cfg.upstream_auth);
    let status = creds.status();
    assert_eq!(status.headers, vec![("x-api-key".to_owned(), "file", None)]);
    assert_eq!((status.token, status.exchanges), (None, None));
    std::fs::remove_file(&file).unwrap();
    creds.refresh_logged("p");
    let status = creds.status();
    let problem = status.headers[0].2.as_deref().unwrap_or("");
    assert!(!problem.is_empty(), "an unreadable secret is said");
    assert!(!format!("{status:?}").contains("s3cret-value"));
    let _ = std::fs::remove_dir_all(dir);
}
