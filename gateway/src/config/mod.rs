//! Configuration: the YAML file format (`file`), its validation into the typed [`Config`]
//! (`internal`), and loading from disk.

mod advertise;
mod auth;
pub(crate) mod bridge;
mod capture;
mod file;
mod hardening;
mod internal;
mod member_names;
mod notices;
mod pattern;
mod pools;
pub(crate) mod problems;
mod route_auth;
pub mod schema;
mod sentinel;
mod sessions;
pub(crate) mod tasks;
mod tracing;
pub(crate) mod upstream_auth;
mod validate;
mod virtual_server;

pub use advertise::Advertise;
pub use auth::{
    ApiKeysConfig, AuthConfig, AuthzRule, IdentityHeaders, JwksSource, JwtConfig, ListenTls,
    PoolTls, Require, RouteAuth, DEFAULT_JWKS_FETCH_TIMEOUT,
};
pub use bridge::{BridgeConfig, ParkedBounds, PooledSessions};
pub use capture::{CaptureConfig, DEFAULT_REDACT};
pub use file::FileConfig;
pub use hardening::{AdminToken, ClientTimeouts, LOOPBACK_HOSTS, LOOPBACK_ORIGINS};
pub use internal::*;
pub use member_names::{static_collisions, Filter, Kind, Member, Prefix, MAX_NAME_CHARS};
pub use notices::notices;
pub use pattern::{fold, Pattern};
pub use sessions::{RedisConfig, ResumeConfig, SentinelConfig};
pub use tracing::{OtlpProtocol, TracingConfig};
pub use upstream_auth::{
    ApiKeyCallers, ClientAuth, ClientCredentials, OAuthClient, SecretHeader, SecretSource,
    TokenExchange, UpstreamAuth,
};
pub use virtual_server::{MemberConfig, VirtualServer, DEFAULT_SEPARATOR};

/// Parses and validates YAML text. Syntax errors come back as one problem at `(file)`.
pub fn parse(yaml: &str) -> Result<Config, Vec<ConfigError>> {
    let file: FileConfig = serde_saphyr::from_str(yaml).map_err(|e| {
        vec![ConfigError {
            path: "(file)".into(),
            message: e.to_string(),
        }]
    })?;
    Config::from_file(file)
}

/// Reads, parses and validates a config file.
pub fn load(path: &std::path::Path) -> Result<Config, Vec<ConfigError>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        vec![ConfigError {
            path: "(file)".into(),
            message: format!("cannot read {}: {e}", path.display()),
        }]
    })?;
    parse(&text)
}

#[cfg(test)]
mod bridge_section_tests;
#[cfg(test)]
mod schema_tests;
#[cfg(test)]
mod tests;
