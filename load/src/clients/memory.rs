//! `mcp-load clients`' memory parts: N clients held idle, on a listen stream or on a GET
//! stream, and the proxy's RSS and descriptors before and after.

use super::*;

/// Idle clients opened at once (and warm-up connections): few, so that the upstream
/// connections their calls take are few and already pooled when the base is read.
const OPEN_AT: usize = 8;

/// The pid whose memory and descriptors count (nginx's worker, once forked).
pub(super) async fn serving(px: &Proxy) -> u32 {
    for _ in 0..100 {
        if let Some(pid) = px.serving_pid() {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the proxy has no serving process");
}

/// One 2026-07-28 call on a fresh connection; the connection if answered with a result.
async fn called(target: SocketAddr, k: usize) -> Option<TcpStream> {
    let req = raw::stateless_call(&target.to_string(), k as u64, 0);
    let mut s = raw::connect(target, k).await.ok()?;
    let a = raw::exchange(&mut s, &req, true).await.ok()?;
    (a.status == 200 && a.result).then_some(s)
}

/// A `subscriptions/listen` stream on a fresh connection, once its first event came.
async fn listening(target: SocketAddr, k: usize) -> Option<TcpStream> {
    let req = raw::stateless_listen(&target.to_string(), k as u64);
    let mut s = raw::connect(target, k).await.ok()?;
    let got = tokio::time::timeout(Duration::from_secs(10), raw::first_event(&mut s, &req));
    (got.await.ok()?.ok()? == 200).then_some(s)
}

/// A session's GET stream on a fresh connection, once its head came.
async fn getting(target: SocketAddr, k: usize, sid: &str) -> Option<TcpStream> {
    let req = raw::session_get(&target.to_string(), sid);
    let mut s = raw::connect(target, k).await.ok()?;
    let got = tokio::time::timeout(Duration::from_secs(10), raw::exchange(&mut s, &req, false));
    (got.await.ok()?.ok()?.status == 200).then_some(s)
}

/// Memory and descriptors of `kind` holding `ctx.args.clients` clients of `held`.
pub(super) async fn memory(ctx: &Ctx, kind: Kind, held: Held, run: usize) -> Mem {
    let n = ctx.args.clients;
    let legacy = held == Held::Get;
    let backend = fake::start(
        1,
        fake::Shape {
            legacy,
            tools: 1,
            answer_bytes: 16,
        },
    )
    .await;
    let addr = backend.addrs[0];
    let yaml = if legacy {
        format!(
            "sessions:\n  max: 2000000\nlimits:\n  max-connections-per-client: 1000000\n\
             pools:\n  pods: {{ backends: [{addr}], era: legacy, max-idle-connections: 4096 }}\n\
             routes:\n  - {{ path: /mcp, mode: stateful, pool: pods }}\n"
        )
    } else {
        format!(
            "limits:\n  max-connections-per-client: 1000000\n\
             pools:\n  pods: {{ backends: [{addr}] }}\n\
             routes:\n  - {{ path: /mcp, mode: stateless, pool: pods }}\n"
        )
    };
    let tag = format!("{}-{}-{run}", held.part(), kind.label().replace(' ', "-"));
    // clients and upstream connections, with room
    let px = proxy(ctx, kind, &tag, addr, 2 * n + 1024, &yaml).await;
    let pid = serving(&px).await;
    let target = px.addr;
    // Warm-up on OPEN_AT connections at once (first-use allocations, and as many upstream
    // connections in the proxy's pool as opening the idle clients OPEN_AT at a time takes),
    // closed before the base is read.
    let mut warm = tokio::task::JoinSet::new();
    for k in 0..if legacy { 0 } else { OPEN_AT } {
        warm.spawn(async move {
            if let Some(mut s) = called(target, k).await {
                for i in 0..3u64 {
                    let req = raw::stateless_call(&target.to_string(), 100 + i, 0);
                    let _ = raw::exchange(&mut s, &req, true).await;
                }
            }
        });
    }
    while warm.join_next().await.is_some() {}
    let mut sids: Vec<String> = Vec::new();
    match held {
        Held::Idle => {}
        Held::Listen => {
            for k in 0..4 {
                drop(listening(target, k).await);
            }
        }
        Held::Get => {
            // N sessions for the streams, 4 more for the warm-up's streams (a held upstream
            // stream outlives its client's GET in the gateway)
            sids = conns::all_sessions(target, n + 4).await;
            for (k, sid) in sids.iter().rev().take(4).enumerate() {
                drop(getting(target, k, sid).await);
            }
            sids.truncate(sids.len().saturating_sub(4));
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let base = Stats::of(pid);
    let clients = match held {
        Held::Idle => conns::open_many_at(n, OPEN_AT, move |k| called(target, k)).await,
        Held::Listen => conns::open_many_at(n, 64, move |k| listening(target, k)).await,
        Held::Get => {
            let sids = Arc::new(sids);
            let count = sids.len();
            conns::open_many_at(count, 64, move |k| {
                let sids = sids.clone();
                async move { getting(target, k, &sids[k]).await }
            })
            .await
        }
    };
    tokio::time::sleep(Duration::from_secs_f64(ctx.args.settle)).await;
    let loaded = Stats::of(pid);
    let m = Mem {
        kind,
        held_what: held,
        run,
        asked: n,
        held: clients.len(),
        base_rss_kib: base.rss_kib,
        loaded_rss_kib: loaded.rss_kib,
        base_fds: base.fds,
        loaded_fds: loaded.fds,
    };
    drop(clients);
    drop(px);
    drop(backend);
    // the proxy's sockets gone before the next one starts
    tokio::time::sleep(Duration::from_millis(300)).await;
    m
}
