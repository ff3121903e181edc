//! What every part of validation shares: the list of problems found so far (each with its key
//! path) and the unknown keys of a mapping. A leaf, so the file structs and each section's
//! validation import it without importing each other.

use serde::de::IgnoredAny;
use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;

/// Unknown keys of one mapping, reported by validation.
pub type Unknown = BTreeMap<String, IgnoredAny>;

/// Every problem found, in order.
#[derive(Default)]
pub(crate) struct Problems(pub(crate) Vec<ConfigError>);

impl Problems {
    pub(crate) fn add(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(ConfigError {
            path: path.into(),
            message: message.into(),
        });
    }

    /// A count at `path`: `value`, or `default` when it is not given; 0 is a problem (and reads
    /// as the default).
    pub(crate) fn at_least_one<N>(&mut self, path: &str, value: Option<N>, default: N) -> N
    where
        N: Copy + PartialEq + From<u8>,
    {
        match value {
            Some(n) if n == N::from(0) => {
                self.add(path, "must be at least 1");
                default
            }
            Some(n) => n,
            None => default,
        }
    }

    pub(crate) fn unknown(&mut self, path: &str, unknown: &Unknown, known: &str) {
        for key in unknown.keys() {
            let at = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            self.add(at, format!("unknown key (known keys: {known})"));
        }
    }

    pub(super) fn addr(&mut self, path: &str, value: &str) -> Option<SocketAddr> {
        match value.parse() {
            Ok(addr) => Some(addr),
            Err(_) => {
                self.add(path, format!("`{value}` is not an IP:port address"));
                None
            }
        }
    }

    /// Compiles a glob, or notes why it is none.
    pub(super) fn pattern(&mut self, path: String, glob: &str) -> Option<super::pattern::Pattern> {
        match super::pattern::Pattern::new(glob) {
            Ok(pattern) => Some(pattern),
            Err(e) => {
                self.add(path, format!("bad glob `{glob}`: {}", e.kind()));
                None
            }
        }
    }
}

/// One problem in a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Key path, e.g. `routes[0].rules[1].pool`.
    pub path: String,
    /// What is wrong, for a person.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}
