//! `mcp-load clients`' CPU part: each proxy's CPU time per request over a closed loop of
//! prebuilt calls against the Rust mock.

use super::*;

/// CPU per request of `kind` (a 2026-07-28 call on a stateless route, or with `legacy` a call
/// in a legacy session on a stateful one), closed loop against the Rust mock.
pub(super) async fn cpu(ctx: &Ctx, kind: Kind, legacy: bool, run: usize) -> Cpu {
    let p = &ctx.programs;
    let backend_kind = if legacy {
        BackendKind::MockLegacy
    } else {
        BackendKind::MockStateless
    };
    let backend = Backend::start(p, backend_kind, "pod-0", 0).await;
    let dialect = if legacy { "legacy" } else { "stateless" };
    let tag = format!("cpu-{dialect}-{}-{run}", kind.label().replace(' ', "-"));
    let mode = if legacy { "stateful" } else { "stateless" };
    // the gateway as `mcp-load suite --only overhead` runs it
    let yaml = format!(
        "pools:\n  pods: {{ backends: [{}], failure-cooldown-ms: 1000 }}\n\
         routes:\n  - {{ path: /mcp, mode: {mode}, pool: pods }}\n",
        backend.addr
    );
    let px = proxy(ctx, kind, &tag, backend.addr, 4096, &yaml).await;
    let target = px.addr;
    let host = target.to_string();
    // the requests, built once: a legacy call names one of 20 sessions opened through the
    // proxy (nginx and bare pingora pass the backend's ids through)
    let requests: Vec<Vec<u8>> = if legacy {
        let sids = conns::all_sessions(target, 20).await;
        assert!(
            !sids.is_empty(),
            "no legacy session opened via {}",
            kind.label()
        );
        sids.iter()
            .map(|sid| raw::session_call(&host, sid, 1, 0))
            .collect()
    } else {
        vec![raw::stateless_call(&host, 1, 0)]
    };
    let requests = Arc::new(requests);
    let _ = closed_loop(target, &requests, ctx.args.concurrency, 1.0).await;
    let pid = px.pid().expect("the proxy runs");
    // the other core's processes (this one: the load generator), without their children
    let others = [backend.pid().unwrap_or(0), std::process::id()];
    let own_ticks = |p: u32| Stats::of(p).cpu_ticks as f64 / 100.0;
    let before = procs::cpu_seconds(pid).unwrap_or(0.0);
    let others_before = others.map(own_ticks);
    let result = closed_loop(
        target,
        &requests,
        ctx.args.concurrency,
        ctx.args.cpu_seconds,
    )
    .await;
    let after = procs::cpu_seconds(pid).unwrap_or(before);
    let others_after = others.map(own_ticks);
    let cpu_s = after - before;
    let per = |i: usize| (others_after[i] - others_before[i]) * 1e6 / result.ok.max(1) as f64;
    drop(px);
    drop(backend);
    Cpu {
        kind,
        legacy,
        run,
        ok: result.ok,
        failed: result.failed,
        rps: result.ok as f64 / result.seconds.max(1e-9),
        cpu_s,
        busy: cpu_s / result.seconds.max(1e-9),
        us_per_req: cpu_s * 1e6 / result.ok.max(1) as f64,
        backend_us: per(0),
        generator_us: per(1),
    }
}

/// What a closed loop did.
struct Looped {
    ok: u64,
    failed: u64,
    seconds: f64,
}

/// `concurrency` connections, each sending `requests[k % len]` and reading its answer, one at a
/// time, for `secs`: a lean generator (the requests built once, one buffer per connection, the
/// answer checked for a 200 and a `"result"` only), so that the other core's work per call
/// (generator and backend) stays below the pinned proxy's and the proxy is what is busy.
async fn closed_loop(
    target: SocketAddr,
    requests: &Arc<Vec<Vec<u8>>>,
    concurrency: usize,
    secs: f64,
) -> Looped {
    let started = tokio::time::Instant::now();
    let deadline = started + Duration::from_secs_f64(secs);
    let mut workers = tokio::task::JoinSet::new();
    for k in 0..concurrency {
        let requests = requests.clone();
        workers.spawn(async move {
            let req = &requests[k % requests.len()];
            let (mut ok, mut failed) = (0u64, 0u64);
            let Ok(mut s) = raw::connect(target, k).await else {
                return (0, 1);
            };
            let mut buf = vec![0u8; 64 * 1024];
            while tokio::time::Instant::now() < deadline {
                let answered =
                    tokio::time::timeout(Duration::from_secs(10), one_call(&mut s, req, &mut buf));
                match answered.await {
                    Ok(Ok(Some(true))) => ok += 1,
                    Ok(Ok(Some(false))) => failed += 1,
                    // closed before any byte of the answer: a kept-alive connection the proxy
                    // ended (nginx after `keepalive_requests`), sent again on a fresh one
                    Ok(Ok(None)) => match raw::connect(target, k).await {
                        Ok(fresh) => s = fresh,
                        Err(_) => break,
                    },
                    _ => {
                        failed += 1;
                        match raw::connect(target, k).await {
                            Ok(fresh) => s = fresh,
                            Err(_) => break,
                        }
                    }
                }
            }
            (ok, failed)
        });
    }
    let (mut ok, mut failed) = (0, 0);
    while let Some(r) = workers.join_next().await {
        if let Ok((o, f)) = r {
            ok += o;
            failed += f;
        }
    }
    Looped {
        ok,
        failed,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// Sends `req` on `s` and reads its whole answer into `buf` (`Content-Length` or chunked);
/// whether it was a 200 with a JSON-RPC result, `None` when the connection was closed before
/// the answer began.
pub(super) async fn one_call(
    s: &mut TcpStream,
    req: &[u8],
    buf: &mut [u8],
) -> std::io::Result<Option<bool>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if s.write_all(req).await.is_err() {
        return Ok(None);
    }
    let mut have = 0;
    let mut head_end = None;
    let mut length: Option<usize> = None;
    loop {
        if have == buf.len() {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        let n = match s.read(&mut buf[have..]).await {
            Ok(0) | Err(_) if have == 0 => return Ok(None),
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => n,
            Err(e) => return Err(e),
        };
        have += n;
        if head_end.is_none() {
            let Some(at) = fake::find(&buf[..have], b"\r\n\r\n") else {
                continue;
            };
            head_end = Some(at + 4);
            let head = String::from_utf8_lossy(&buf[..at]).to_ascii_lowercase();
            length = fake::header(&head, "content-length").and_then(|v| v.parse().ok());
        }
        let end = head_end.unwrap_or(0);
        let complete = match length {
            Some(len) => have >= end + len,
            None => buf[..have].ends_with(b"0\r\n\r\n"),
        };
        if complete {
            let status_ok = buf.starts_with(b"HTTP/1.1 200");
            return Ok(Some(
                status_ok && fake::find(&buf[end..have], b"\"result\"").is_some(),
            ));
        }
    }
}
