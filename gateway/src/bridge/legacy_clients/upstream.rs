//! Where a bridged request goes: balanced on its own over the backends that serve bridged
//! requests, by the attempt engine (`Pick::Among`: a refused connection tries the next; a
//! lost one only when the request is safe to repeat), and the `server/discover` result each
//! backend gave, reused for later `initialize`s.

use super::limits::{DISCOVER_REUSE, DISCOVER_TTL_MAX};
use super::serves::serves_bridged;
use crate::config::DualBackends;
use crate::error::GatewayError;
use crate::upstream::attempt::{Engine, Pick, Step};
use crate::upstream::client::{CallError, Exchange};
use crate::upstream::request::{self, Target};
use crate::upstream::{Backend, Pool};
use bytes::Bytes;
use dashmap::DashMap;
use mcp_wire::headers::LAST_EVENT_ID;
use mcp_wire::translate::request::ModernRequest;
use pingora::http::RequestHeader;
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A request on its way: the exchange (response head read) and the backend answering it.
pub(super) struct Sent {
    pub(super) exchange: Exchange,
    pub(super) backend: Arc<Backend>,
}

/// Where bridged requests of one route go.
#[derive(Clone, Copy)]
pub(super) struct Upstream<'a> {
    pub(super) engine: &'a Engine,
    pub(super) pool: &'a Arc<Pool>,
    pub(super) dual: DualBackends,
    /// The client's request head (end-to-end headers, the caller for identity headers).
    pub(super) client: &'a RequestHeader,
    /// Upstream path.
    pub(super) path: &'a str,
}

impl Upstream<'_> {
    fn head(
        &self,
        backend: &Backend,
        req: &ModernRequest,
        params: &[(String, String)],
    ) -> Result<RequestHeader, GatewayError> {
        let target = Target {
            path: self.path,
            host: &backend.host_header,
        };
        let mut head = request::forwarded(self.client, target, None, Some(req.body.len()))?;
        request::identify(&mut head, self.pool);
        head.remove_header(LAST_EVENT_ID);
        let bad = |h: &str| GatewayError::internal(format!("cannot set {h} upstream"));
        head.insert_header("accept", "application/json, text/event-stream")
            .map_err(|_| bad("accept"))?;
        // always a JSON POST, whatever the client's own request was (a GET feeds a listen)
        head.insert_header("content-type", "application/json")
            .map_err(|_| bad("content-type"))?;
        for (name, value) in &req.headers {
            head.insert_header(*name, value.as_str())
                .map_err(|_| bad(name))?;
        }
        // the legacy client's own `Mcp-Param-*` (unchecked) never go up; the call's mirrored
        // arguments do
        request::param_headers(&mut head, params)?;
        Ok(head)
    }

    /// Sends `req` to a bridged backend, within the pool's `retries`.
    pub(super) async fn send(
        &self,
        req: &ModernRequest,
        repeatable: bool,
    ) -> Result<Sent, GatewayError> {
        self.send_with(req, &[], repeatable).await
    }

    /// Sends `req` with the `Mcp-Param-*` headers `params` (a `tools/call`'s mirrored
    /// arguments) to a bridged backend, within the pool's `retries`.
    pub(super) async fn send_with(
        &self,
        req: &ModernRequest,
        params: &[(String, String)],
        repeatable: bool,
    ) -> Result<Sent, GatewayError> {
        let body = &Bytes::from(req.body.clone());
        let dual = self.dual;
        let bridged = move |b: &Backend| serves_bridged(b, dual);
        let (engine, pool) = (self.engine, self.pool);
        let mut tried = Vec::new();
        let pick = Pick::Among(&bridged);
        engine
            .each_backend(pool, pick, &mut tried, |backend| {
                Box::pin(async move {
                    let head = match self.head(&backend, req, params) {
                        Ok(head) => head,
                        Err(e) => return Step::Stop(e),
                    };
                    match engine
                        .send(pool, &backend, &head, body.clone(), repeatable)
                        .await
                    {
                        Ok(exchange) => Step::Done(Sent { exchange, backend }),
                        Err(CallError::Connect(_)) => Step::Unreachable,
                        Err(CallError::Lost(_)) => Step::lost(repeatable),
                        Err(CallError::Credentials(e)) => Step::Stop(*e),
                    }
                })
            })
            .await
    }
}

/// `server/discover` results by backend, with when they stop being reused. Bounded: a put
/// drops every expired entry (a backend replaced by discovery or a reload leaves with its
/// result's [`DISCOVER_TTL_MAX`] at the latest), and past [`DISCOVERED_MAX`] entries
/// the one closest to expiry makes room.
#[derive(Default)]
pub(in crate::bridge) struct Discovered(DashMap<SocketAddr, (Instant, Value)>);

/// Most backends whose `server/discover` result is kept at once (far more than any pool list).
pub(super) const DISCOVERED_MAX: usize = 1024;

impl Discovered {
    /// A result of `backend` still fresh, if any; else a backend of the pool's that has one.
    pub(super) fn get(&self, members: &[Arc<Backend>]) -> Option<Value> {
        let now = Instant::now();
        members.iter().find_map(|b| {
            let entry = self.0.get(&b.addr)?;
            (entry.0 > now).then(|| entry.1.clone())
        })
    }

    /// Keeps `backend`'s result for its `ttlMs` capped at [`DISCOVER_TTL_MAX`], or
    /// [`DISCOVER_REUSE`] when that is 0 or absent. Puts happen on misses only (once
    /// per backend per TTL), so the sweep costs nothing on the hot path.
    pub(super) fn put(&self, backend: SocketAddr, result: Value) {
        let ttl = reuse_for(mcp_wire::translate::result::ttl_ms(&result));
        let now = Instant::now();
        self.0
            .retain(|addr, (until, _)| *until > now && *addr != backend);
        while self.0.len() >= DISCOVERED_MAX {
            let soonest = self.0.iter().min_by_key(|e| e.value().0).map(|e| *e.key());
            match soonest {
                Some(addr) => self.0.remove(&addr),
                None => break,
            };
        }
        self.0.insert(backend, (now + ttl, result));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.len()
    }
}

/// How long a result with `ttl_ms` is reused: 0 or none is [`DISCOVER_REUSE`], past
/// [`DISCOVER_TTL_MAX`] is that (a server's `ttlMs` is a hint, not a lease on memory).
fn reuse_for(ttl_ms: Option<u64>) -> Duration {
    ttl_ms
        .filter(|ms| *ms > 0)
        .map_or(DISCOVER_REUSE, Duration::from_millis)
        .min(DISCOVER_TTL_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_servers_ttl_is_capped_and_zero_means_the_default() {
        assert_eq!(reuse_for(None), DISCOVER_REUSE);
        assert_eq!(reuse_for(Some(0)), DISCOVER_REUSE);
        assert_eq!(reuse_for(Some(1_500)), Duration::from_millis(1_500));
        assert_eq!(reuse_for(Some(u64::MAX)), DISCOVER_TTL_MAX);
        let d = Discovered::default();
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        d.put(addr, json!({"ttlMs": u64::MAX, "capabilities": {}}));
        let until = d.0.get(&addr).unwrap().0;
        assert!(until <= Instant::now() + DISCOVER_TTL_MAX);
    }

    #[test]
    fn backends_replaced_one_after_another_do_not_grow_the_cache() {
        let d = Discovered::default();
        // a result that is already stale when the next backend's comes (ttlMs 1, then expired)
        for port in 1..=50u16 {
            let addr: SocketAddr = ([127, 0, 0, 1], port).into();
            d.0.insert(addr, (Instant::now(), json!({})));
        }
        d.put("127.0.0.1:9999".parse().unwrap(), json!({"ttlMs": 1000}));
        assert_eq!(
            d.len(),
            1,
            "expired results of departed backends are dropped"
        );
        // fresh results of ever new backends: bounded by DISCOVERED_MAX
        for port in 1..=(DISCOVERED_MAX as u16 + 100) {
            d.put(([127, 0, 0, 2], port).into(), json!({"ttlMs": 60_000}));
        }
        assert_eq!(d.len(), DISCOVERED_MAX);
    }
}
