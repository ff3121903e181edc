//! The JSON Schema of the config file, generated from the file structs (`schemars`), printed
//! by `mcp-gateway schema` and shipped as `docs/config.schema.json` for editor completion.
//! It describes the file's shape (keys, types, the named values of `mode`, `balance`,
//! `store`); what only validation can tell (addresses, globs, references between pools and
//! routes) stays with `mcp-gateway validate`.

use super::FileConfig;

/// Where the shipped schema lives, relative to the repository root.
pub const SHIPPED_PATH: &str = "docs/config.schema.json";

/// The schema as a JSON value.
pub fn schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(FileConfig);
    schema.insert(
        "title".into(),
        serde_json::Value::String("mcp-gateway config".into()),
    );
    schema.to_value()
}

/// The schema as the shipped file holds it: pretty JSON and a final newline.
pub fn schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&schema()).unwrap_or_default();
    text.push('\n');
    text
}
