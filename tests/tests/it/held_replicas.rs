//! Issue 24: held streams (`sessions.hold-streams`, on by default) with several replicas sharing
//! Redis. One replica at a time holds a session's backend GET (the stream lease in the store);
//! a client GET on another replica reads its events live through Redis, with the gateway's
//! event ids, and resumes after `Last-Event-ID` on any replica; a holder that dies is taken
//! over after its lease expires. Against the TypeScript SDK 1.32.2 servers of
//! `tests/peers/node/` (`elicit_server.mjs`: server requests on the GET stream only;
//! `ticker_server.mjs`: notifications on it, and what its GETs saw), the TypeScript and
//! Python 1.30.0 clients, Rust legacy mocks, and Debian's redis-server; three replicas SIGKILLed
//! and restarted one by one under an open client GET. Needs
//! `scripts/setup-peers`.

use crate::elicit::{race, ElicitServer, RaceClient};
use mcp_gateway_tests::machine;
use mcp_gateway_tests::redis::RedisServer;
use mcp_gateway_tests::rr_proxy::RrProxy;
use mcp_gateway_tests::ticker::{open_stream, Event, TickerServer};
use mcp_gateway_tests::{assert_eventually, Gateway, MockServer, Request};
use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const V: &str = "2025-11-25";

/// A gateway config with the Redis store and one stateful route to `backend` (hold-streams
/// left at its default).
fn config(redis: &RedisServer, backend: &str) -> String {
    format!(
        "sessions:\n  store: redis\n  redis: {{ urls: [\"{}\"], key-prefix: \"held:\" }}\npools:\n  p: {{ backends: [{backend}] }}\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: p }}\n",
        redis.url()
    )
}

/// `initialize` declaring elicitation (so the stream is held before `initialized` is
/// answered) through `init`, `notifications/initialized` through `note`.
async fn open_session(init: &Gateway, note: &Gateway) -> String {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{V}","capabilities":{{"elicitation":{{}}}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    );
    let resp = Request::post("/mcp", body)
        .header("Accept", "application/json, text/event-stream")
        .send(init.addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let sid = resp.head.header("mcp-session-id").unwrap().to_owned();
    let initialized = Request::post(
        "/mcp",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .header("Accept", "application/json, text/event-stream")
    .header("Mcp-Session-Id", &sid)
    .header("MCP-Protocol-Version", V);
    assert_eq!(initialized.send(note.addr).await.status(), 202);
    sid
}

fn session_get(sid: &str, last_event_id: Option<&str>) -> Request {
    let req = Request::session_stream(sid).header("MCP-Protocol-Version", V);
    match last_event_id {
        Some(id) => req.header("Last-Event-ID", id),
        None => req,
    }
}

#[tokio::test]
async fn two_replicas_open_one_backend_get_for_a_session_and_both_clients_read_it() {
    let redis = RedisServer::start().await;
    let mock = MockServer::legacy("a", 0, V).await;
    let yaml = config(&redis, &mock.addr.to_string());
    let (a, b) = (Gateway::start(&yaml).await, Gateway::start(&yaml).await);
    // initialize on a, initialized on b: b holds the stream before it answers
    let sid = open_session(&a, &b).await;
    let gets = || {
        mock.requests()
            .iter()
            .filter(|r| r.head.method == "GET")
            .count()
    };
    assert_eq!(
        gets(),
        1,
        "the stream was held by b before initialized was answered"
    );
    // client GETs on a (which does not hold it) and on b (which does): one backend GET still
    let (sa, _ra) = open_stream(session_get(&sid, None), a.addr).await;
    let (sb, _rb) = open_stream(session_get(&sid, None), b.addr).await;
    assert_eq!((sa, sb), (200, 200));
    // a relays b's stream through Redis: its reader waits in XREAD BLOCK, and comes round
    // once (where a reader that found nothing looks for the lease, to take the stream over)
    assert_eventually!(
        Duration::from_secs(10),
        redis.blocked_clients() >= 1,
        "a's relay reads the held stream on Redis"
    );
    let reads = redis.command_calls("xread");
    assert_eventually!(
        Duration::from_secs(10),
        redis.command_calls("xread") > reads,
        "a's relay came round to another read"
    );
    assert_eq!(
        gets(),
        1,
        "two replicas never open two backend GETs for one session"
    );
    assert_eq!(b.metric("mcpgw_held_streams").await, 1.0);
    assert_eq!(a.metric("mcpgw_held_streams").await, 0.0);
}

/// Redis, the TypeScript SDK server of issue 17, two replicas and a front that sends each
/// request to the other replica than the last (so a client's GET and its POSTs land on
/// different replicas); `runs` sessions per tool, each calling at once. Asserts 0 stalls.
async fn alternating_replicas(client: RaceClient, runs: u32) {
    let _machine = machine::shared().await;
    let redis = RedisServer::start().await;
    let server = ElicitServer::start(3000).await;
    let yaml = config(&redis, &server.addr());
    let replicas = [Gateway::start(&yaml).await, Gateway::start(&yaml).await];
    let front = RrProxy::start(&[replicas[0].addr, replicas[1].addr]).await;
    let mut bad = Vec::new();
    for tool in ["ask", "sample"] {
        let r = race(client, &front.url("/mcp"), runs, 2500, tool).await;
        let mut ms = r.ms.clone();
        ms.sort_unstable();
        println!(
            "{} through two replicas, {tool}: {}/{} stalls, median {} ms, max {} ms, failures {:?}",
            client.label(),
            r.stalls,
            r.runs,
            ms.get(ms.len() / 2).copied().unwrap_or(0),
            ms.last().copied().unwrap_or(0),
            r.failures
        );
        if r.stalls > 0 || r.runs != u64::from(runs) {
            bad.push(format!(
                "{tool}: {} of {} stalled: {:?}",
                r.stalls, r.runs, r.failures
            ));
        }
    }
    // the client GETs really landed on the replica that did not hold the stream (the one
    // that answered `notifications/initialized` holds it), or on both
    let mut by_slot: BTreeMap<(Option<usize>, String), usize> = BTreeMap::new();
    for served in front.log() {
        let what = served.rpc.clone().unwrap_or(served.method.clone());
        *by_slot.entry((served.slot, what)).or_default() += 1;
    }
    println!("front: {by_slot:?}");
    let count = |slot: usize, what: &str| {
        by_slot
            .get(&(Some(slot), what.to_owned()))
            .copied()
            .unwrap_or(0)
    };
    let cross: usize = [0, 1]
        .iter()
        .filter(|s| count(**s, "notifications/initialized") == 0)
        .map(|s| count(*s, "GET"))
        .sum();
    assert!(
        cross > 0 || (count(0, "GET") > 0 && count(1, "GET") > 0),
        "no client GET on a replica other than the holder: {by_slot:?}"
    );
    assert!(bad.is_empty(), "{}: {}", client.label(), bad.join("\n"));
}

#[tokio::test]
async fn server_requests_reach_a_typescript_client_whose_get_and_posts_alternate_between_two_replicas(
) {
    alternating_replicas(RaceClient::Ts, 50).await;
}

#[tokio::test]
async fn server_requests_reach_a_python_1_30_client_whose_get_and_posts_alternate_between_two_replicas(
) {
    alternating_replicas(RaceClient::Py1, 50).await;
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The tick number of a `notifications/message` event, if it is one.
fn tick(event: &Event) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(&event.data).ok()?;
    v["params"]["data"]["tick"].as_u64()
}

/// The holder SIGKILLed under a client GET; the client resumes on the other replica. With an
/// event store at the backend, nothing at all is lost (the new holder resumes the backend's
/// stream from its own id).
async fn sigkilled_holder(event_store: bool) {
    let _machine = machine::shared().await;
    let redis = RedisServer::start().await;
    let args: &[&str] = if event_store { &["--event-store"] } else { &[] };
    let ticker = TickerServer::start_with(args).await;
    let yaml = config(&redis, &ticker.addr.to_string());
    let holder = Gateway::start(&yaml).await;
    let other = Gateway::start(&yaml).await;
    let sid = open_session(&holder, &holder).await;
    let (status, mut events) = open_stream(session_get(&sid, None), holder.addr).await;
    assert_eq!(status, 200);
    // 200 ticks, one every 20 ms (50 events/s), asked for on the other replica
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ticks","arguments":{"count":200,"interval_ms":20}}}"#;
    let resp = Request::post("/mcp", call)
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", V)
        .send(other.addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let mut seen: Vec<u64> = Vec::new();
    let mut last_id = None;
    while seen.len() < 20 {
        let event = tokio::time::timeout(Duration::from_secs(5), events.recv())
            .await
            .expect("ticks on the holder's stream")
            .expect("the stream is open");
        last_id = event.id.clone().or(last_id);
        seen.extend(tick(&event));
    }
    // the holder dies; the client reconnects at once to the other replica
    let killed_ms = now_ms();
    let killed = Instant::now();
    drop(holder);
    drop(events);
    let last_id = last_id.expect("gateway event ids");
    let (status, mut events) = open_stream(session_get(&sid, Some(&last_id)), other.addr).await;
    assert_eq!(status, 200);
    let mut first_after: Option<Duration> = None;
    loop {
        match tokio::time::timeout(Duration::from_secs(10), events.recv()).await {
            Ok(Some(event)) => {
                if let Some(n) = tick(&event) {
                    first_after.get_or_insert(killed.elapsed());
                    seen.push(n);
                    if n == 200 {
                        break;
                    }
                }
            }
            Ok(None) => panic!("the resumed stream ended after ticks {seen:?}"),
            Err(_) => panic!("no tick for 10 s; ticks so far {seen:?}"),
        }
    }
    let stats = ticker.stats().await;
    let gets = stats["gets"].as_array().unwrap();
    assert_eq!(gets.len(), 2, "one GET per holder: {gets:?}");
    assert_eq!(stats["max_concurrent_gets"], 1, "never two GETs at once");
    assert_eq!(stats["refused_gets"], 0);
    let reopened_ms = gets[1]["opened_ms"].as_u64().unwrap();
    let ticks = stats["ticks"].as_array().unwrap();
    // every tick the backend sent after the takeover reached the client, once
    let after: Vec<u64> = ticks
        .iter()
        .filter(|t| t["at_ms"].as_u64().unwrap() > reopened_ms && t["open"] == true)
        .map(|t| t["n"].as_u64().unwrap())
        .collect();
    let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
    for n in &seen {
        *counts.entry(*n).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, c)| **c > 1).collect();
    assert!(twice.is_empty(), "events delivered twice: {twice:?}");
    let missing: Vec<_> = after.iter().filter(|n| !counts.contains_key(n)).collect();
    assert!(
        missing.is_empty(),
        "events after the takeover missing: {missing:?}"
    );
    let unheld = ticks.iter().filter(|t| t["open"] == false).count();
    println!(
        "takeover (event store: {event_store}): backend GET reopened {} ms after the SIGKILL, first event on the resumed GET after {} ms; {unheld} events sent while nobody held the stream",
        reopened_ms.saturating_sub(killed_ms),
        first_after.unwrap_or_default().as_millis()
    );
    let resumed = if event_store { "true" } else { "false" };
    let takeovers = format!("mcpgw_held_stream_takeovers_total{{resumed=\"{resumed}\"}}");
    assert_eq!(other.metric(&takeovers).await, 1.0, "{takeovers}");
    assert!(
        reopened_ms - killed_ms < 5000,
        "taken over within the lease (3 s) and a read"
    );
    if event_store {
        // the backend replayed what it sent while nobody held the stream: every tick, once
        let lost: Vec<u64> = (1..=200).filter(|n| !counts.contains_key(n)).collect();
        assert!(
            lost.is_empty(),
            "ticks lost despite the backend's event store: {lost:?}"
        );
    }
}

#[tokio::test]
async fn a_sigkilled_holder_is_taken_over_and_the_resumed_get_gets_every_later_event_once() {
    sigkilled_holder(false).await;
}

#[tokio::test]
async fn a_sigkilled_holder_of_a_backend_with_an_event_store_is_taken_over_without_losing_an_event()
{
    sigkilled_holder(true).await;
}

/// Reads ticks from the client GET of `sid` on `gw` until tick `until` or the stream ends;
/// records them in `seen` and the last event id in `last_id`. Whether `until` came.
async fn read_ticks(
    events: &mut tokio::sync::mpsc::UnboundedReceiver<Event>,
    seen: &mut Vec<u64>,
    last_id: &mut Option<String>,
    until: u64,
) -> bool {
    loop {
        match tokio::time::timeout(Duration::from_secs(10), events.recv()).await {
            Ok(Some(event)) => {
                *last_id = event.id.clone().or(last_id.take());
                if let Some(n) = tick(&event) {
                    seen.push(n);
                    if n >= until {
                        return true;
                    }
                }
            }
            Ok(None) => return false,
            Err(_) => panic!("no event for 10 s; ticks so far {seen:?}"),
        }
    }
}

#[tokio::test]
async fn three_replicas_restarted_one_by_one_lose_no_event_sent_while_a_holder_existed() {
    let _machine = machine::shared().await;
    let redis = RedisServer::start().await;
    let ticker = TickerServer::start().await;
    let yaml = config(&redis, &ticker.addr.to_string());
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(Some(Gateway::start(&yaml).await));
    }
    let addr = |replicas: &[Option<Gateway>], i: usize| replicas[i].as_ref().unwrap().addr;
    // held by replica 0; the client's GET on replica 1
    let first = replicas[0].as_ref().unwrap();
    let sid = open_session(first, first).await;
    let mut on = 1;
    let (_, mut events) = open_stream(session_get(&sid, None), addr(&replicas, on)).await;
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ticks","arguments":{"count":1500,"interval_ms":20}}}"#;
    let resp = Request::post("/mcp", call)
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", V)
        .send(addr(&replicas, 2))
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let (mut seen, mut last_id) = (Vec::new(), None);
    let mut kills = Vec::new();
    for restarted in 0..3 {
        // a few ticks flow, then replica `restarted` is killed and started again (replica 0
        // holds the stream first; then each restart kills the holder, which is also where the
        // client's GET is)
        let until = seen.last().copied().unwrap_or(0) + 10;
        let mut flowing = read_ticks(&mut events, &mut seen, &mut last_id, until).await;
        drop(replicas[restarted].take()); // SIGKILL
        kills.push(now_ms());
        replicas[restarted] = Some(Gateway::start(&yaml).await);
        if restarted == on {
            flowing = false;
        }
        // the client's GET broke with its replica: it reconnects to the next one with its
        // last event id; the stream goes on once a replica took it over
        let until = seen.last().copied().unwrap_or(0) + 10;
        loop {
            if !flowing {
                on = (on + 1) % 3;
                let id = last_id.clone().expect("gateway event ids");
                let get = session_get(&sid, Some(&id));
                let (status, rx) = open_stream(get, addr(&replicas, on)).await;
                assert_eq!(status, 200);
                events = rx;
            }
            flowing = read_ticks(&mut events, &mut seen, &mut last_id, until).await;
            if flowing {
                break;
            }
        }
    }
    drop(events);
    let stats = ticker.stats().await;
    assert_eq!(
        stats["max_concurrent_gets"], 1,
        "never two GETs at once: {stats:?}"
    );
    assert_eq!(stats["refused_gets"], 0);
    let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
    for n in &seen {
        *counts.entry(*n).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, c)| **c > 1).collect();
    assert!(twice.is_empty(), "events delivered twice: {twice:?}");
    // every tick sent while a holder's GET was open (up to the last one read), except in the
    // instant of a SIGKILL (the dying holder had it and could not pass it on)
    let last = *seen.last().unwrap();
    let dying = |at: u64| kills.iter().any(|k| at + 50 >= *k && at <= k + 100);
    let ticks = stats["ticks"].as_array().unwrap();
    let expected: Vec<u64> = ticks
        .iter()
        .filter(|t| t["open"] == true && t["n"].as_u64().unwrap() <= last)
        .filter(|t| !dying(t["at_ms"].as_u64().unwrap()))
        .map(|t| t["n"].as_u64().unwrap())
        .collect();
    let missing: Vec<_> = expected
        .iter()
        .filter(|n| !counts.contains_key(n))
        .collect();
    let unheld = ticks
        .iter()
        .filter(|t| t["open"] == false && t["n"].as_u64().unwrap() <= last)
        .count();
    println!(
        "three restarts: {} ticks read, {unheld} sent while nobody held the stream, {} GETs at the backend",
        seen.len(),
        stats["gets"].as_array().unwrap().len()
    );
    println!(
        "SIGKILLs at {kills:?} (ms); the backend's GETs: {}",
        stats["gets"]
    );
    assert!(
        missing.is_empty(),
        "events sent while a holder existed, missing: {missing:?}"
    );
}
