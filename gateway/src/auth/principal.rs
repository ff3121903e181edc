//! An authenticated caller: `issuer|subject` for a token, `key:NAME` for an API key, with its
//! scopes and claims.

use serde_json::{Map, Value};
use std::sync::Arc;

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    /// Stable identity: `issuer|subject` (token) or `key:NAME` (API key).
    pub id: Arc<str>,
    /// The token's `sub`, or the key's name.
    pub subject: String,
    /// Scopes granted (`scope`, space separated, or `scp`).
    pub scopes: Vec<String>,
    /// Every claim of the token (empty for a key).
    pub claims: Map<String, Value>,
}

impl Principal {
    /// Whether the principal holds `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// The string values of a claim: a string, or the strings of an array (or, for `scope`,
    /// the granted scopes).
    pub fn claim_values(&self, name: &str) -> Vec<&str> {
        if name == "scope" || name == "scp" {
            return self.scopes.iter().map(String::as_str).collect();
        }
        match self.claims.get(name) {
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            Some(Value::Bool(b)) => vec![if *b { "true" } else { "false" }],
            _ => Vec::new(),
        }
    }
}
