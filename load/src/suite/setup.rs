//! The paths the suite measures: who proxies (nothing, nginx, L4, bare pingora, mcp-gateway
//! and its routes), to which backends, in which dialect.

use super::procs::BackendKind;
use crate::mcp::Dialect;

/// How the load reaches the backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// Straight to the (only) backend.
    Direct,
    /// nginx round robin (per request).
    Nginx,
    /// nginx stream (TCP) random per connection, like kube-proxy behind a Service.
    L4Random,
    /// A pingora proxy that only picks the one backend: the framework's floor.
    BarePingora,
    /// mcp-gateway, a `stateful` route.
    GatewayStateful,
    /// mcp-gateway, a `stateless` route.
    GatewayStateless,
    /// mcp-gateway, a `stateful` route whose sessions live in Redis.
    GatewayStatefulRedis,
}

/// A path through the system: who proxies, what backends, which dialect.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    pub(super) via: Via,
    pub(super) backend: BackendKind,
    pub(super) dialect: Dialect,
    /// mcp-gateway paths: the baseline binary instead of the measured one.
    pub(super) baseline: bool,
}

impl Setup {
    pub(super) const NGINX_LEGACY: Setup = Setup {
        via: Via::Nginx,
        backend: BackendKind::MockLegacy,
        dialect: Dialect::Legacy,
        baseline: false,
    };
    pub(super) const L4_LEGACY: Setup = Setup {
        via: Via::L4Random,
        backend: BackendKind::MockLegacy,
        dialect: Dialect::Legacy,
        baseline: false,
    };
    pub(super) const GATEWAY_LEGACY: Setup = Setup {
        via: Via::GatewayStateful,
        backend: BackendKind::MockLegacy,
        dialect: Dialect::Legacy,
        baseline: false,
    };
    pub(super) const GATEWAY_STATELESS: Setup = Setup {
        via: Via::GatewayStateless,
        backend: BackendKind::MockStateless,
        dialect: Dialect::Stateless,
        baseline: false,
    };

    pub(super) fn with_backend(self, backend: BackendKind) -> Setup {
        Setup { backend, ..self }
    }

    /// For tables.
    pub fn label(&self) -> String {
        let dialect = match self.dialect {
            Dialect::Legacy => "legacy",
            Dialect::Stateless => "stateless",
            Dialect::SessionPerCall => "session-per-call",
        };
        let via = match self.via {
            Via::Direct => "direct",
            Via::Nginx => "nginx round robin",
            Via::L4Random => "L4 random per connection (kube-proxy-like)",
            Via::BarePingora => "bare pingora",
            Via::GatewayStateful => "mcp-gateway stateful",
            Via::GatewayStateless => "mcp-gateway stateless",
            Via::GatewayStatefulRedis => "mcp-gateway stateful, Redis store",
        };
        let baseline = if self.baseline { " (baseline)" } else { "" };
        format!("{dialect} via {via}{baseline}")
    }

    pub(super) fn slug(&self) -> String {
        self.label().replace(['(', ')'], "").replace(' ', "-")
    }
}
