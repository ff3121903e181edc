//! A pool's `tool-pinning` ([governance.md](../../../docs/governance.md#tool-pinning)): the
//! file form (a mode, or a map), its validation, and the operator's pins file read and checked
//! at load and reload (a malformed one is a config problem naming its line and field).

use super::problems::{Problems, Unknown};
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// `tool-pinning`: `off` (default), `record` or `enforce`, or the map form.
#[derive(Debug, Deserialize, JsonSchema, Clone)]
#[serde(untagged)]
pub enum FileToolPinning {
    /// `off`, `record` or `enforce`.
    #[schemars(extend("enum" = ["off", "record", "enforce"]))]
    Mode(String),
    /// The map form.
    Map(FileToolPinningMap),
}

/// The map form of `tool-pinning`.
#[derive(Debug, Deserialize, JsonSchema, Clone, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileToolPinningMap {
    /// off (default), record or enforce.
    #[schemars(extend("enum" = ["off", "record", "enforce", null]))]
    pub mode: Option<String>,
    /// A tool the pool did not have before is pinned as it comes instead of waiting for an approval. Default false.
    pub allow_new_tools: Option<bool>,
    /// The operator's pins: JSON lines `{"name": ..., "fingerprint": "sha256:<hex>"}`. Default: none (trust on first use).
    pub pins_file: Option<PathBuf>,
    /// Where the pins and approvals are kept across restarts when `sessions.store` is memory. Default: `tool-pins.<pool>.json` beside the config file (a relative path, this one's or `pins-file`'s, is read from the config file's directory).
    pub state_file: Option<PathBuf>,
    /// Most tools pinned in the pool; more are left out in enforce mode. Default 1000.
    pub max_tools: Option<usize>,
    /// Largest canonical definition pinned, in bytes; a larger one is left out in enforce mode. Default 65536.
    pub max_definition_bytes: Option<usize>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// What the gateway does with the tool definitions of a pool's lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PinMode {
    /// Nothing (the default).
    #[default]
    Off,
    /// A new or changed definition is audited and counted; nothing else changes.
    Record,
    /// A new or changed definition is quarantined until an operator approves it.
    Enforce,
}

impl PinMode {
    /// Its name in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            PinMode::Off => "off",
            PinMode::Record => "record",
            PinMode::Enforce => "enforce",
        }
    }
}

/// One pin of the operator's pins file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePin {
    /// The tool's name.
    pub name: String,
    /// `sha256:<64 lowercase hex>`.
    pub fingerprint: String,
}

/// A pool's `tool-pinning`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolPinning {
    /// The mode. Default off.
    pub mode: PinMode,
    /// A new tool is pinned as it comes. Default false.
    pub allow_new_tools: bool,
    /// The operator's pins file and what it said at load; `None`: trust on first use.
    pub pins_file: Option<(PathBuf, Vec<FilePin>)>,
    /// Where the pins are kept with the memory store.
    pub state_file: PathBuf,
    /// Most tools pinned. Default 1000.
    pub max_tools: usize,
    /// Largest canonical definition pinned. Default 64 KiB.
    pub max_definition_bytes: usize,
}

impl ToolPinning {
    /// Off, with the defaults.
    pub fn off(pool: &str) -> ToolPinning {
        ToolPinning {
            mode: PinMode::Off,
            allow_new_tools: false,
            pins_file: None,
            state_file: default_state_file(pool),
            max_tools: 1000,
            max_definition_bytes: 64 * 1024,
        }
    }
}

/// The default state file of `pool`.
fn default_state_file(pool: &str) -> PathBuf {
    PathBuf::from(format!("tool-pins.{pool}.json"))
}

/// Validates `pools.<pool>.tool-pinning`; relative paths are read from `base` (the config
/// file's directory) when the config came from a file.
pub(super) fn validate(
    p: &mut Problems,
    (at, pool): (&str, &str),
    given: Option<&FileToolPinning>,
    base: Option<&Path>,
) -> ToolPinning {
    let at = format!("{at}.tool-pinning");
    let within = |path: &Path| match base {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path.to_path_buf(),
    };
    let mut out = ToolPinning::off(pool);
    if given.is_none() {
        return out;
    }
    out.state_file = within(&out.state_file);
    let map = match given {
        None => return out,
        Some(FileToolPinning::Mode(m)) => {
            out.mode = mode(p, &at, m);
            return out;
        }
        Some(FileToolPinning::Map(map)) => map,
    };
    p.unknown(
        &at,
        &map.unknown,
        "mode, allow-new-tools, pins-file, state-file, max-tools, max-definition-bytes",
    );
    out.mode = map
        .mode
        .as_deref()
        .map_or(PinMode::Off, |m| mode(p, &format!("{at}.mode"), m));
    out.allow_new_tools = map.allow_new_tools.unwrap_or(false);
    out.max_tools = p.at_least_one(&format!("{at}.max-tools"), map.max_tools, 1000);
    out.max_definition_bytes = p.at_least_one(
        &format!("{at}.max-definition-bytes"),
        map.max_definition_bytes,
        64 * 1024,
    );
    if let Some(state) = &map.state_file {
        out.state_file = within(state);
    }
    if let Some(path) = map.pins_file.as_deref().map(within) {
        let at = format!("{at}.pins-file");
        match read_pins(&path, out.max_tools) {
            Ok(pins) => out.pins_file = Some((path, pins)),
            Err(why) => p.add(at, why),
        }
    }
    out
}

fn mode(p: &mut Problems, at: &str, mode: &str) -> PinMode {
    match mode {
        "off" => PinMode::Off,
        "record" => PinMode::Record,
        "enforce" => PinMode::Enforce,
        other => {
            p.add(at, format!("unknown `{other}` (off, record, enforce)"));
            PinMode::Off
        }
    }
}

/// Reads a pins file: the problem names its line and field.
fn read_pins(path: &Path, max_tools: usize) -> Result<Vec<FilePin>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_pins(&text, max_tools).map_err(|why| format!("{}: {why}", path.display()))
}

/// Parses a pins file's text: JSON lines `{"name": ..., "fingerprint": "sha256:<hex>"}` (more
/// fields, such as the `definition` the admin API's export writes, are allowed and not read;
/// blank lines and lines starting with `#` are skipped).
pub fn parse_pins(text: &str, max_tools: usize) -> Result<Vec<FilePin>, String> {
    let mut pins: Vec<FilePin> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("line {n}: not JSON ({e})"))?;
        let Some(obj) = v.as_object() else {
            return Err(format!("line {n}: not a JSON object"));
        };
        let name = match obj.get("name") {
            Some(serde_json::Value::String(s)) if !s.is_empty() => s.clone(),
            Some(_) => return Err(format!("line {n}: field `name` must be a non-empty string")),
            None => return Err(format!("line {n}: field `name` is missing")),
        };
        let fingerprint = match obj.get("fingerprint") {
            Some(serde_json::Value::String(s)) if is_fingerprint(s) => s.clone(),
            Some(_) => {
                return Err(format!(
                    "line {n}: field `fingerprint` must be `sha256:` and 64 lowercase hex digits"
                ))
            }
            None => return Err(format!("line {n}: field `fingerprint` is missing")),
        };
        if pins.iter().any(|p| p.name == name) {
            return Err(format!("line {n}: field `name`: `{name}` is pinned twice"));
        }
        if pins.len() >= max_tools {
            return Err(format!("line {n}: more pins than max-tools ({max_tools})"));
        }
        pins.push(FilePin { name, fingerprint });
    }
    Ok(pins)
}

/// Whether `s` is `sha256:` and 64 lowercase hex digits.
pub fn is_fingerprint(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FP: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn a_pins_file_is_read_line_by_line_skipping_comments() {
        let text = format!("# pins\n\n{{\"name\":\"a\",\"fingerprint\":\"{FP}\"}}\n");
        let pins = parse_pins(&text, 10).unwrap();
        assert_eq!(pins.len(), 1);
        assert_eq!(pins[0].name, "a");
    }

    #[test]
    fn a_malformed_pins_file_names_the_line_and_the_field() {
        let bad = [
            ("{\"name\":\"a\"", "line 1: not JSON"),
            ("[1]", "line 1: not a JSON object"),
            ("{\"fingerprint\":\"x\"}", "line 1: field `name` is missing"),
            ("{\"name\":7}", "line 1: field `name` must be"),
            ("{\"name\":\"a\"}", "line 1: field `fingerprint` is missing"),
            (
                "{\"name\":\"a\",\"fingerprint\":\"sha256:ABC\"}",
                "line 1: field `fingerprint` must be",
            ),
        ];
        for (text, want) in bad {
            let got = parse_pins(&format!("{text}\n"), 10).unwrap_err();
            assert!(got.starts_with(want), "{text}: {got}");
        }
        let twice = format!(
            "{{\"name\":\"a\",\"fingerprint\":\"{FP}\"}}\n# c\n{{\"name\":\"a\",\"fingerprint\":\"{FP}\"}}"
        );
        assert!(parse_pins(&twice, 10)
            .unwrap_err()
            .starts_with("line 3: field `name`"));
    }
}
