//! Loading: YAML text, or a file read from disk, parsed and validated into a [`Config`] (a
//! syntax error is one problem at `(file)`).

use super::file::FileConfig;
use super::internal::{Config, ConfigError};

/// Parses and validates YAML text. Syntax errors come back as one problem at `(file)`.
pub fn parse(yaml: &str) -> Result<Config, Vec<ConfigError>> {
    parse_from(yaml, None)
}

/// [`parse`], for a file in `base`.
fn parse_from(yaml: &str, base: Option<&std::path::Path>) -> Result<Config, Vec<ConfigError>> {
    let mut file: FileConfig = serde_saphyr::from_str(yaml).map_err(|e| {
        vec![ConfigError {
            path: "(file)".into(),
            message: e.to_string(),
        }]
    })?;
    file.base_dir = base.map(std::path::Path::to_path_buf);
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
    parse_from(&text, path.parent())
}
