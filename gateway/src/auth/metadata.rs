//! OAuth 2.0 Protected Resource Metadata (RFC 9728): the document clients read to find the
//! authorization server, served at `/.well-known/oauth-protected-resource` and at the
//! path-suffixed form (`/.well-known/oauth-protected-resource/mcp` for the resource
//! `https://gw.example.com/mcp`), and the URL a 401 names in `WWW-Authenticate`.

use crate::config::AuthConfig;
use bytes::Bytes;

/// The well-known prefix of the metadata document.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The metadata document and where it lives.
pub struct Metadata {
    /// The absolute URL of the document (path-suffixed form), for `resource_metadata`.
    pub url: String,
    document: Bytes,
}

impl Metadata {
    /// The document for `config`.
    pub fn new(config: &AuthConfig) -> Metadata {
        let mut doc = serde_json::json!({
            "resource": config.resource,
            "authorization_servers": config.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !config.scopes_supported.is_empty() {
            doc["scopes_supported"] = config.scopes_supported.clone().into();
        }
        if let Some(jwt) = &config.jwt {
            if let crate::config::JwksSource::Url(url) = &jwt.jwks {
                doc["jwks_uri"] = url.clone().into();
            }
        }
        Metadata {
            url: url_for(&config.resource),
            document: Bytes::from(serde_json::to_vec_pretty(&doc).unwrap_or_default()),
        }
    }

    /// The document, when `path` is the well-known path or a path-suffixed form of it.
    pub fn document_for(&self, path: &str) -> Option<Bytes> {
        let rest = path.strip_prefix(WELL_KNOWN)?;
        (rest.is_empty() || rest.starts_with('/')).then(|| self.document.clone())
    }
}

/// The path-suffixed metadata URL of a resource (RFC 9728 §3.1): the well-known segment goes
/// between the origin and the resource's path.
pub fn url_for(resource: &str) -> String {
    let (scheme, rest) = resource.split_once("://").unwrap_or(("https", resource));
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = path
        .split(['?', '#'])
        .next()
        .unwrap_or("")
        .trim_end_matches('/');
    format!("{scheme}://{authority}{WELL_KNOWN}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_puts_the_well_known_segment_before_the_resource_path() {
        assert_eq!(
            url_for("https://gw.example.com/mcp"),
            "https://gw.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            url_for("http://127.0.0.1:8080"),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn the_document_is_served_at_the_well_known_path_and_its_suffixed_forms_only() {
        let config = AuthConfig {
            resource: "https://gw.example.com/mcp".into(),
            authorization_servers: vec!["https://idp.example.com".into()],
            scopes_supported: vec!["tools".into()],
            jwt: None,
            api_keys: None,
        };
        let m = Metadata::new(&config);
        let doc: serde_json::Value =
            serde_json::from_slice(&m.document_for(WELL_KNOWN).unwrap()).unwrap();
        assert_eq!(doc["resource"], "https://gw.example.com/mcp");
        assert_eq!(doc["authorization_servers"][0], "https://idp.example.com");
        assert_eq!(doc["scopes_supported"][0], "tools");
        assert!(m.document_for(&format!("{WELL_KNOWN}/mcp")).is_some());
        assert!(m.document_for(&format!("{WELL_KNOWN}-evil")).is_none());
        assert!(m.document_for("/mcp").is_none());
    }
}
