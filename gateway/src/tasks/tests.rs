use super::*;

fn record(backend: &str, principal: Option<&str>) -> TaskRecord {
    TaskRecord {
        pool: "p".into(),
        backend: backend.parse().unwrap(),
        principal: principal.map(Arc::from),
        owner: principal.unwrap_or("peer:-").into(),
        expires_ms: 0,
        generation: None,
        ended: false,
        member: None,
    }
}

/// Two pods each number their tasks `task-1`: bob's and alice's handles are two records,
/// each leading to its own pod; carol, who has none, is told "unknown" without reaching
/// either (before, the later handle replaced the earlier: bob's task became unknown to
/// him, or alice was sent to bob's pod).
#[tokio::test]
async fn one_id_on_two_pods_is_two_records_each_reaching_its_own() {
    let tasks = Tasks::new(
        None,
        crate::metrics::scratch(metrics::TaskMetrics::register),
    );
    let cfg = TasksConfig::default();
    let (bob, alice, carol): (Arc<str>, Arc<str>, Arc<str>) =
        ("i|bob".into(), "i|alice".into(), "i|carol".into());
    assert!(tasks.learn(
        &cfg,
        "/mcp",
        "task-1",
        None,
        record("127.0.0.1:1", Some("i|bob"))
    ));
    assert!(tasks.learn(
        &cfg,
        "/mcp",
        "task-1",
        None,
        record("127.0.0.1:2", Some("i|alice"))
    ));
    let pod = |who: &Arc<str>| {
        let tasks = tasks.clone();
        let who = who.clone();
        async move {
            match tasks
                .find(&cfg, "/mcp", "task-1", Some(&who))
                .await
                .unwrap()
            {
                Found::Mine(r) => Some(r.backend.port()),
                _ => None,
            }
        }
    };
    assert_eq!(pod(&bob).await, Some(1));
    assert_eq!(pod(&alice).await, Some(2));
    assert_eq!(
        tasks
            .find(&cfg, "/mcp", "task-1", Some(&carol))
            .await
            .unwrap(),
        Found::Foreign
    );
    assert_eq!(
        tasks
            .find(&cfg, "/mcp", "task-2", Some(&carol))
            .await
            .unwrap(),
        Found::Unknown
    );
    assert_eq!(
        tasks
            .find(&cfg, "/other", "task-1", Some(&bob))
            .await
            .unwrap(),
        Found::Unknown,
        "scoped by route"
    );
    // bob's task ending marks his record, not alice's
    tasks.ended("/mcp", "task-1", Some(&bob));
    let mine = |who| tasks.local.get(&key("/mcp", Some(who), "task-1"), 0);
    assert!(mine(&bob).unwrap().unwrap().ended);
    assert!(!mine(&alice).unwrap().unwrap().ended);
}

/// A shared store in memory, counting its reads.
#[derive(Default)]
struct Counted {
    records: std::sync::Mutex<std::collections::HashMap<String, TaskRecord>>,
    gets: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl TaskStore for Counted {
    async fn put_task(&self, key: &str, r: &TaskRecord, _: Duration) -> Result<(), StoreError> {
        self.records.lock().unwrap().insert(key.into(), r.clone());
        Ok(())
    }
    async fn get_task(&self, key: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.gets.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(self.records.lock().unwrap().get(key).cloned())
    }
}

fn gets(store: &Counted) -> usize {
    store.gets.swap(0, std::sync::atomic::Ordering::SeqCst)
}

/// Records another replica wrote are kept here within the configured bounds (they were put
/// with no bound at all: a caller naming its tasks one after another through this replica
/// grew its map past `max-per-principal` and `max-records`).
#[tokio::test]
async fn records_read_from_the_shared_store_are_kept_within_the_bounds() {
    let store = Arc::new(Counted::default());
    let tasks = Tasks::new(
        Some(store.clone()),
        crate::metrics::scratch(metrics::TaskMetrics::register),
    );
    let cfg = TasksConfig {
        max_records: 3,
        max_per_principal: 2,
        ..Default::default()
    };
    let bob: Arc<str> = "i|bob".into();
    let mut r = record("127.0.0.1:1", Some("i|bob"));
    r.expires_ms = u64::MAX;
    for i in 0..5 {
        let k = key("/mcp", Some(&bob), &format!("task-{i}"));
        store.put_task(&k, &r, Duration::ZERO).await.unwrap();
    }
    for i in 0..5 {
        let id = format!("task-{i}");
        let found = tasks.find(&cfg, "/mcp", &id, Some(&bob)).await.unwrap();
        assert!(matches!(found, Found::Mine(_)), "{id}");
    }
    assert_eq!(tasks.local.len(), 2, "bob's share");
}

/// An unknown id asked for again and again: the first request reads the shared store twice
/// around the wait for a write under way (and once for a claim), each next one once (and
/// once for a claim), without the wait; a record written since is still found at once.
#[tokio::test]
async fn an_unknown_id_asked_for_again_waits_and_reads_once() {
    let store = Arc::new(Counted::default());
    let tasks = Tasks::new(
        Some(store.clone()),
        crate::metrics::scratch(metrics::TaskMetrics::register),
    );
    let cfg = TasksConfig::default();
    let bob: Arc<str> = "i|bob".into();
    let find = || tasks.find(&cfg, "/mcp", "task-1", Some(&bob));
    assert_eq!(find().await.unwrap(), Found::Unknown);
    assert_eq!(gets(&store), 3);
    for _ in 0..3 {
        let asked = std::time::Instant::now();
        assert_eq!(find().await.unwrap(), Found::Unknown);
        assert!(asked.elapsed() < SHARED_WRITE_WAIT, "no wait");
        assert_eq!(gets(&store), 2);
    }
    let mut r = record("127.0.0.1:1", Some("i|bob"));
    r.expires_ms = u64::MAX;
    let k = key("/mcp", Some(&bob), "task-1");
    store.put_task(&k, &r, Duration::ZERO).await.unwrap();
    assert!(matches!(find().await.unwrap(), Found::Mine(_)));
    assert_eq!(gets(&store), 1);
    // another id still gets its wait
    let other = tasks.find(&cfg, "/mcp", "task-2", Some(&bob)).await;
    assert_eq!(other.unwrap(), Found::Unknown);
    assert_eq!(gets(&store), 3);
}

#[test]
fn no_principal_ends_where_an_id_begins() {
    let a: Arc<str> = "a\n1".into();
    let b: Arc<str> = "a".into();
    assert_ne!(key("s", Some(&a), "x"), key("s", Some(&b), "1\nx"));
    assert_ne!(key("s", None, "x"), claim_key("s", "x"));
}
