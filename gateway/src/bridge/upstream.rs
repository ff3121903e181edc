//! Where a bridged request goes: balanced on its own over the backends that serve bridged
//! requests (a refused connection tries the next; a lost one only when the request is safe
//! to repeat), and the `server/discover` result each backend gave, reused for later
//! `initialize`s.

use super::serves_bridged;
use crate::config::DualBackends;
use crate::error::GatewayError;
use crate::mcp::bridge::request::ModernRequest;
use crate::mcp::headers::LAST_EVENT_ID;
use crate::upstream::attempt::Engine;
use crate::upstream::client::{CallError, Exchange};
use crate::upstream::request::{self, Target};
use crate::upstream::{Backend, Pool};
use bytes::Bytes;
use dashmap::DashMap;
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
    /// The next backend for a bridged request, not in `tried`, by the pool's balancing.
    fn pick(&self, tried: &[SocketAddr]) -> Option<Arc<Backend>> {
        let mut exclude = tried.to_vec();
        exclude.extend(
            self.pool
                .backends()
                .iter()
                .filter(|b| !serves_bridged(b, self.dual))
                .map(|b| b.addr),
        );
        self.pool.select(&exclude)
    }

    fn head(&self, backend: &Backend, req: &ModernRequest) -> Result<RequestHeader, GatewayError> {
        let target = Target {
            path: self.path,
            host: &backend.host,
        };
        let mut head = request::forwarded(self.client, target, None, Some(req.body.len()))?;
        request::identify(&mut head, &self.pool.identity);
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
        Ok(head)
    }

    /// Sends `req` to a bridged backend, within the pool's `retries`.
    pub(super) async fn send(
        &self,
        req: &ModernRequest,
        repeatable: bool,
    ) -> Result<Sent, GatewayError> {
        let body = Bytes::from(req.body.clone());
        let mut tried = Vec::new();
        while tried.len() <= self.pool.retries {
            let Some(backend) = self.pick(&tried) else {
                break;
            };
            tried.push(backend.addr);
            let head = self.head(&backend, req)?;
            match self
                .engine
                .send(self.pool, &backend, &head, body.clone(), repeatable)
                .await
            {
                Ok(exchange) => return Ok(Sent { exchange, backend }),
                Err(CallError::Connect(_)) => continue,
                Err(CallError::Lost(_)) if repeatable => continue,
                Err(CallError::Lost(_)) => {
                    return Err(GatewayError::backend_lost(&self.pool.name, &backend.label))
                }
            }
        }
        Err(GatewayError::unavailable(&self.pool.name, tried.len()))
    }
}

/// `server/discover` results by backend, with when they stop being reused.
#[derive(Default)]
pub(super) struct Discovered(DashMap<SocketAddr, (Instant, Value)>);

impl Discovered {
    /// A result of `backend` still fresh, if any; else a backend of the pool's that has one.
    pub(super) fn get(&self, members: &[Arc<Backend>]) -> Option<Value> {
        let now = Instant::now();
        members.iter().find_map(|b| {
            let entry = self.0.get(&b.addr)?;
            (entry.0 > now).then(|| entry.1.clone())
        })
    }

    /// Keeps `backend`'s result for its `ttlMs`, or [`super::DISCOVER_REUSE`] when that is 0
    /// or absent.
    pub(super) fn put(&self, backend: SocketAddr, result: Value) {
        let ttl = crate::mcp::bridge::result::ttl_ms(&result)
            .filter(|ms| *ms > 0)
            .map_or(super::DISCOVER_REUSE, Duration::from_millis);
        self.0.insert(backend, (Instant::now() + ttl, result));
    }
}
