//! The admin listener: `/healthz` (process alive), `/readyz` (every pool has a backend not
//! marked failed) and `/metrics` (Prometheus text format).

use crate::metrics::Metrics;
use crate::state::State;
use arc_swap::ArcSwap;
use async_trait::async_trait;
use http::Response;
use pingora::apps::http_app::ServeHttp;
use pingora::protocols::http::ServerSession;
use pingora_prometheus::prometheus::{Encoder, Registry, TextEncoder};
use std::sync::Arc;

/// The admin HTTP application.
pub struct AdminApp {
    state: Arc<ArcSwap<State>>,
    registry: Registry,
    metrics: Metrics,
}

impl AdminApp {
    /// Serves the given state and metrics.
    pub fn new(state: Arc<ArcSwap<State>>, registry: Registry, metrics: Metrics) -> AdminApp {
        AdminApp {
            state,
            registry,
            metrics,
        }
    }

    /// Copies live backend counters into their gauges (done at scrape time, off the hot path).
    fn refresh_gauges(&self) {
        let state = self.state.load();
        for pool in &state.pools {
            for b in pool.backends().iter() {
                let labels = [pool.name.as_str(), b.label.as_str()];
                self.metrics
                    .backend_inflight
                    .with_label_values(&labels)
                    .set(b.inflight() as i64);
                self.metrics
                    .backend_up
                    .with_label_values(&labels)
                    .set(i64::from(!b.is_failed()));
                self.metrics
                    .sessions_active
                    .with_label_values(&labels)
                    .set(b.sessions() as i64);
            }
        }
    }

    fn metrics_text(&self) -> Vec<u8> {
        self.refresh_gauges();
        let mut out = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        out
    }
}

fn reply(status: u16, content_type: &str, body: Vec<u8>) -> Response<Vec<u8>> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .header("content-length", body.len())
        .body(body)
        .expect("valid response")
}

#[async_trait]
impl ServeHttp for AdminApp {
    async fn response(&self, session: &mut ServerSession) -> Response<Vec<u8>> {
        let path = session.req_header().uri.path().to_owned();
        match path.as_str() {
            "/healthz" => reply(200, "text/plain", b"ok\n".to_vec()),
            "/readyz" => {
                let state = self.state.load();
                let not_ready: Vec<&str> = state
                    .pools
                    .iter()
                    .filter(|p| !p.any_ready())
                    .map(|p| p.name.as_str())
                    .collect();
                if not_ready.is_empty() {
                    reply(200, "text/plain", b"ready\n".to_vec())
                } else {
                    let body = format!(
                        "not ready: no reachable backend in pool(s) {}\n",
                        not_ready.join(", ")
                    );
                    reply(503, "text/plain", body.into_bytes())
                }
            }
            "/metrics" => reply(200, "text/plain; version=0.0.4", self.metrics_text()),
            _ => reply(
                404,
                "text/plain",
                b"admin endpoints: /healthz /readyz /metrics\n".to_vec(),
            ),
        }
    }
}
