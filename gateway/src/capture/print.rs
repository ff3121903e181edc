//! `mcp-gateway capture FILE…`: a capture file printed for people: one heading line per
//! request, then its bodies as indented JSON.

use serde_json::Value;
use std::io::{BufRead, Write};

fn text<'a>(record: &'a Value, key: &str) -> &'a str {
    record.get(key).and_then(Value::as_str).unwrap_or("-")
}

/// One record, readably.
pub fn format_record(record: &Value) -> String {
    let number = |key: &str| record.get(key).map_or("-".to_string(), Value::to_string);
    let mut out = format!(
        "{time}  {route}  {http} {method}{name}  -> {status} {outcome}  {latency} ms  in {req} B, out {resp} B  session {session}  backend {backend}\n",
        time = text(record, "time"),
        route = text(record, "route"),
        http = text(record, "http"),
        method = text(record, "method"),
        name = record
            .get("name")
            .and_then(Value::as_str)
            .map(|n| format!(" {n}"))
            .unwrap_or_default(),
        status = number("status"),
        outcome = text(record, "outcome"),
        latency = number("latency_ms"),
        req = number("request_bytes"),
        resp = number("response_bytes"),
        session = text(record, "session"),
        backend = text(record, "backend"),
    );
    for key in ["request", "response"] {
        let Some(body) = record.get(key) else {
            continue;
        };
        let pretty = serde_json::to_string_pretty(body).unwrap_or_default();
        out.push_str(&format!("  {key}:\n"));
        for line in pretty.lines() {
            out.push_str("    ");
            out.push_str(line);
            out.push('\n');
        }
    }
    let streamed = record
        .get("response_bytes")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        > 0;
    if record.get("response").is_none() && streamed {
        out.push_str("  response: streamed through, not recorded\n");
    }
    out
}

/// Prints every record of `reader` to `out`; a line that is not a record is printed as it is,
/// marked. Returns the number of records.
pub fn print_file(reader: impl BufRead, out: &mut impl Write) -> std::io::Result<usize> {
    let mut n = 0;
    for line in reader.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(&line) {
            Ok(record) if record.is_object() => {
                out.write_all(format_record(&record).as_bytes())?;
                n += 1;
            }
            _ => writeln!(out, "(not a capture record) {line}")?,
        }
    }
    Ok(n)
}
