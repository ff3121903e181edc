//! Configuration: the YAML file format (`file`), its validation into the typed [`Config`]
//! (`internal`), and loading from disk.

mod advertise;
mod audit;
mod auth;
pub(crate) mod bridge;
pub(crate) mod cache;
mod capture;
mod file;
mod hardening;
mod interceptors;
mod internal;
mod load;
mod member_names;
mod mode;
mod notices;
mod pattern;
mod pools;
pub(crate) mod problems;
mod route_auth;
mod routes;
pub mod schema;
mod sentinel;
mod sessions;
pub(crate) mod tasks;
pub(crate) mod tool_pinning;
#[cfg(test)]
mod tool_pinning_tests;
mod tracing;
pub(crate) mod upstream_auth;
mod validate;
mod virtual_server;

pub use advertise::Advertise;
pub use audit::{AuditConfig, DEFAULT_AUDIT_REDACT};
pub use auth::{
    ApiKeysConfig, AuthConfig, AuthzRule, IdentityHeaders, JwksSource, JwtConfig, ListenTls,
    PoolTls, Require, RouteAuth, DEFAULT_JWKS_FETCH_TIMEOUT,
};
pub use bridge::{BridgeConfig, ParkedBounds, PooledSessions};
pub use capture::{CaptureConfig, DEFAULT_REDACT};
pub use file::FileConfig;
pub use hardening::{AdminToken, ClientTimeouts, LOOPBACK_HOSTS, LOOPBACK_ORIGINS};
pub use interceptors::{
    InterceptorServerConfig, DEFAULT_LIST_TTL_MS, DEFAULT_MAX_LISTED, DEFAULT_MAX_PAYLOAD_BYTES,
    DEFAULT_TIMEOUT_MS as DEFAULT_INTERCEPTOR_TIMEOUT_MS,
};
pub use internal::{
    default_not_found, Balance, Config, ConfigError, Discovery, DualBackends, EraSetting,
    HealthCheck, Limits, NameMatch, NotFoundRule, PathMatch, PoolConfig, Rate, RouteConfig,
    RouteLimits, RuleConfig, SessionConfig, DEFAULT_LISTEN, DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_MERGED_LIST_BYTES,
};
pub use load::{load, parse};
pub use member_names::{static_collisions, Filter, Kind, Member, Prefix, MAX_NAME_CHARS};
pub use mode::Mode;
pub use notices::notices;
pub use pattern::{fold, Pattern};
pub use sentinel::SentinelConfig;
pub use sessions::{RedisConfig, ResumeConfig, StoreConfig};
pub use tool_pinning::{FilePin, PinMode, ToolPinning};
pub use tracing::{OtlpProtocol, TracingConfig};
pub use upstream_auth::{
    ApiKeyCallers, ClientAuth, ClientCredentials, OAuthClient, SecretHeader, SecretSource,
    TokenExchange, UpstreamAuth,
};
pub use virtual_server::{MemberConfig, VirtualServer, DEFAULT_SEPARATOR};

#[cfg(test)]
mod audit_tests;
#[cfg(test)]
mod bridge_section_tests;
#[cfg(test)]
mod schema_tests;
#[cfg(test)]
mod tests;
