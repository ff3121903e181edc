//! Admission control in front of the backends, answered in JSON-RPC (never by dropping
//! connections): concurrency caps (gateway and route; requests in flight and open SSE streams),
//! token buckets per client identity and per client and tool. (Sessions per client are
//! counted by the session table, with the identity computed here.)
//! Limits are keyed by identity (an API-key header, else the client IP), not by session, so
//! re-initializing does not reset them.

pub mod metrics;

use crate::config::{Limits, Rate, RouteConfig};
use crate::error::GatewayError;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A concurrency cap and its live count.
#[derive(Debug)]
struct Cap {
    limit: usize,
    used: Arc<AtomicUsize>,
}

impl Cap {
    fn new(limit: Option<usize>) -> Option<Cap> {
        limit.map(|limit| Cap {
            limit,
            used: Arc::new(AtomicUsize::new(0)),
        })
    }

    fn take(&self) -> Option<Slot> {
        let prev = self.used.fetch_add(1, Ordering::AcqRel);
        if prev >= self.limit {
            self.used.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Slot(self.used.clone()))
    }
}

/// One taken unit of a cap, given back on drop.
#[derive(Debug)]
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The slots a request holds while it runs.
#[derive(Debug, Default)]
pub struct Permit {
    _slots: Vec<Slot>,
}

struct RouteCaps {
    inflight: Option<Cap>,
    streams: Option<Cap>,
}

struct Bucket {
    rate: Rate,
    limiter: DefaultKeyedRateLimiter<String>,
}

/// One cell a nanosecond, the shortest period governor counts in: the quota of a rate above
/// 10^9 a second, whose period rounds down to zero.
const ONE_A_NANOSECOND: Quota = Quota::per_second(NonZeroU32::MIN.saturating_add(999_999_999));

impl Bucket {
    fn new(rate: Rate) -> Bucket {
        // governor works in whole cells per period: express fractional rates as one cell
        // every 1/rate seconds.
        let period = Duration::from_secs_f64(1.0 / rate.per_second);
        let quota = Quota::with_period(period)
            .unwrap_or(ONE_A_NANOSECOND)
            .allow_burst(NonZeroU32::new(rate.burst).unwrap_or(NonZeroU32::MIN));
        Bucket {
            rate,
            limiter: RateLimiter::keyed(quota),
        }
    }

    fn check(&self, key: String, scope: &str) -> Result<(), GatewayError> {
        self.limiter.check_key(&key).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            GatewayError::rate_limited(scope, self.rate.per_second, wait)
        })
    }
}

/// Admission state for one running config.
pub struct Admission {
    identity_header: Option<http::HeaderName>,
    gateway: RouteCaps,
    routes: Vec<RouteCaps>,
    rate: Option<Bucket>,
    tool_rate: Option<(Bucket, Vec<crate::config::Pattern>)>,
    /// Whether any limit needs the client identity (skips computing it otherwise).
    needs_identity: bool,
}

impl Admission {
    /// Builds the limiters of a validated config.
    pub fn new(limits: &Limits, routes: &[RouteConfig]) -> Admission {
        let tool_rate =
            (limits.tool_rate.as_ref()).map(|(rate, tools)| (Bucket::new(*rate), tools.clone()));
        Admission {
            identity_header: limits
                .client_id_header
                .as_ref()
                .and_then(|h| http::HeaderName::from_bytes(h.as_bytes()).ok()),
            gateway: RouteCaps {
                inflight: Cap::new(limits.max_inflight),
                streams: Cap::new(limits.max_streams),
            },
            routes: routes
                .iter()
                .map(|r| RouteCaps {
                    inflight: Cap::new(r.limits.max_inflight),
                    streams: Cap::new(r.limits.max_streams),
                })
                .collect(),
            needs_identity: limits.rate.is_some()
                || tool_rate.is_some()
                || limits.max_sessions_per_client.is_some(),
            rate: limits.rate.map(Bucket::new),
            tool_rate,
        }
    }

    /// The client identity: the configured header's value, else the client IP. `None` when no
    /// limit is keyed by identity.
    pub fn identity(
        &self,
        headers: &http::HeaderMap,
        client_ip: Option<std::net::IpAddr>,
    ) -> Option<Arc<str>> {
        if !self.needs_identity {
            return None;
        }
        let from_header = self
            .identity_header
            .as_ref()
            .and_then(|h| headers.get(h))
            .and_then(|v| v.to_str().ok())
            .map(|v| format!("key:{v}"));
        Some(
            from_header
                .unwrap_or_else(|| {
                    format!(
                        "ip:{}",
                        client_ip.map_or_else(|| "-".to_owned(), |ip| ip.to_string())
                    )
                })
                .into(),
        )
    }

    /// Admits one request on `route`: concurrency caps (streams for `stream` requests, in-flight
    /// otherwise) and the client's rate.
    pub fn admit(
        &self,
        route: usize,
        identity: Option<&str>,
        stream: bool,
    ) -> Result<Permit, GatewayError> {
        let mut slots = Vec::new();
        let scopes = [("gateway", &self.gateway), ("route", &self.routes[route])];
        for (scope, caps) in scopes {
            let (cap, what) = if stream {
                (&caps.streams, "streams")
            } else {
                (&caps.inflight, "inflight")
            };
            if let Some(cap) = cap {
                slots.push(
                    cap.take()
                        .ok_or_else(|| GatewayError::overloaded(scope, what, cap.limit))?,
                );
            }
        }
        if let (Some(bucket), Some(id)) = (&self.rate, identity) {
            bucket.check(id.to_owned(), "client")?;
        }
        Ok(Permit { _slots: slots })
    }

    /// Whether a per-tool rate is configured (requests without MCP headers must then be read
    /// to learn their tool).
    pub fn has_tool_rate(&self) -> bool {
        self.tool_rate.is_some()
    }

    /// Checks the per-tool rate of `tool` for this client.
    pub fn admit_tool(&self, identity: Option<&str>, tool: &str) -> Result<(), GatewayError> {
        match (&self.tool_rate, identity) {
            (Some((bucket, tools)), Some(id)) if tools.iter().any(|t| t.is_match(tool)) => bucket
                .check(format!("{id}\u{0}{tool}"), "tool")
                .map_err(|e| e.with("tool", tool)),
            _ => Ok(()),
        }
    }

    /// The concurrency caps in use now: `(route index, or None for the gateway's own; what:
    /// inflight or streams; used; limit)`, for operators.
    pub fn usage(&self) -> Vec<(Option<usize>, &'static str, usize, usize)> {
        let scopes = std::iter::once((None, &self.gateway))
            .chain(self.routes.iter().enumerate().map(|(i, c)| (Some(i), c)));
        let mut out = Vec::new();
        for (scope, caps) in scopes {
            for (cap, what) in [(&caps.inflight, "inflight"), (&caps.streams, "streams")] {
                if let Some(cap) = cap {
                    out.push((scope, what, cap.used.load(Ordering::Relaxed), cap.limit));
                }
            }
        }
        out
    }

    /// Forgets idle rate-limiter keys (run periodically).
    pub fn prune(&self) {
        if let Some(b) = &self.rate {
            b.limiter.retain_recent();
        }
        if let Some((b, _)) = &self.tool_rate {
            b.limiter.retain_recent();
        }
    }
}

#[cfg(test)]
mod tests;
