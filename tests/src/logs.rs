//! Reading a gateway's log as an operator would: the JSON lines written by a gateway started
//! with [`crate::Gateway::start_logging_to`], and the ones above INFO among them.

use std::path::Path;

/// One log line: its level, target and message.
#[derive(Debug, Clone)]
pub struct Line {
    /// `ERROR`, `WARN`, `INFO`, `DEBUG` or `TRACE`.
    pub level: String,
    /// The tracing target (pingora's records: the `log` target).
    pub target: String,
    /// The message.
    pub message: String,
    /// The whole line.
    pub raw: String,
}

/// Every line of the log file (a line that is not JSON is kept with level `UNPARSED`, so a
/// panic message or stray print cannot hide).
pub fn read(path: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|raw| match serde_json::from_str::<serde_json::Value>(raw) {
            Ok(v) => Line {
                level: v["level"].as_str().unwrap_or("UNPARSED").to_owned(),
                target: v["fields"]["log.target"]
                    .as_str()
                    .or(v["target"].as_str())
                    .unwrap_or("")
                    .to_owned(),
                message: v["fields"]["message"].as_str().unwrap_or("").to_owned(),
                raw: raw.to_owned(),
            },
            Err(_) => Line {
                level: "UNPARSED".into(),
                target: String::new(),
                message: raw.to_owned(),
                raw: raw.to_owned(),
            },
        })
        .collect()
}

/// The lines above INFO (WARN, ERROR, and anything not JSON).
pub fn above_info(path: &Path) -> Vec<Line> {
    read(path)
        .into_iter()
        .filter(|l| !matches!(l.level.as_str(), "INFO" | "DEBUG" | "TRACE"))
        .collect()
}

/// The lines above INFO as text, for an assertion message (the first 20).
pub fn show(lines: &[Line]) -> String {
    let mut out: Vec<String> = lines.iter().take(20).map(|l| l.raw.clone()).collect();
    if lines.len() > 20 {
        out.push(format!("... and {} more", lines.len() - 20));
    }
    out.join("\n")
}
