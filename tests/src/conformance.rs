//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, pinned in
//! tests/peers/node) run against a server directly and through the gateway, compared check for
//! check: 0.1.16 for the 2025-11-25 era, and 0.2.0-alpha.12 (`conformance-2026`, `--suite all`)
//! for the 2026-07-28 era and the Tasks extension.

use crate::harness::{node, workspace};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

/// Status (`SUCCESS`, `FAILURE`, `WARNING`, ...) of every check, by (scenario, check id).
pub type Results = BTreeMap<(String, String), String>;

/// The scenarios in which the server sends requests of its own (elicitation, sampling) while a
/// tool call is open: the ones a lost server-initiated request (issue 17) shows in.
pub const SERVER_INITIATED: [&str; 4] = [
    "tools-call-elicitation",
    "tools-call-sampling",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
];

/// Runs `conformance server --url URL` (every scenario of the default suite), writing its
/// per-scenario `checks.json` files under `out`, and reads them back.
pub async fn run(url: &str, out: &Path) -> Results {
    let _ = std::fs::remove_dir_all(out);
    suite(LEGACY_SUITE, url, out, &[]).await
}

/// Runs the 2026-07-28 suite (`conformance-2026`, 0.2.0-alpha.12) with `--suite all`: every
/// server scenario, the pending and draft ones and the extensions' (the Tasks extension's)
/// included.
pub async fn run_2026(url: &str, out: &Path) -> Results {
    let _ = std::fs::remove_dir_all(out);
    suite(
        SUITE_2026,
        url,
        out,
        &["--suite", "all", "--timeout", "15000"],
    )
    .await
}

/// The suites' packages under tests/peers/node/node_modules.
const LEGACY_SUITE: &str = "@modelcontextprotocol/conformance";
const SUITE_2026: &str = "conformance-2026";

/// Runs each of `scenarios` `times` times (`--scenario S`, one suite process each, under
/// `out/S-k`); the checks of repetition `k` are keyed by scenario `S#k`, so two result sets
/// compare repetition for repetition and a flaky check cannot hide behind a lucky run.
pub async fn run_repeated(url: &str, out: &Path, scenarios: &[&str], times: usize) -> Results {
    let _ = std::fs::remove_dir_all(out);
    let mut results = Results::new();
    for k in 0..times {
        for scenario in scenarios {
            let dir = out.join(format!("{scenario}-{k}"));
            for ((s, id), status) in suite(LEGACY_SUITE, url, &dir, &["--scenario", scenario]).await
            {
                results.insert((format!("{s}#{k}"), id), status);
            }
        }
    }
    results
}

async fn suite(package: &str, url: &str, out: &Path, args: &[&str]) -> Results {
    std::fs::create_dir_all(out).expect("conformance output dir");
    let cli = workspace()
        .join("tests/peers/node/node_modules")
        .join(package)
        .join("dist/index.js");
    let run = tokio::process::Command::new(node())
        .arg(cli)
        .args(["server", "--url", url])
        .args(args)
        .arg("-o")
        .arg(out)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    // The suite exits non-zero when any check fails: the checks files tell which.
    let output = tokio::time::timeout(Duration::from_secs(300), run)
        .await
        .expect("conformance suite finished within 5 minutes")
        .expect("run the conformance suite");
    let results = read(out);
    assert!(
        !results.is_empty(),
        "the conformance suite ({args:?}) wrote no checks for {url}:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    results
}

/// Reads `<out>/server-<scenario>-<timestamp>/checks.json`.
fn read(out: &Path) -> Results {
    let mut results = Results::new();
    for entry in std::fs::read_dir(out).expect("read output dir").flatten() {
        let dir = entry.file_name().to_string_lossy().into_owned();
        let Some(scenario) = scenario_of(&dir) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(entry.path().join("checks.json")) else {
            continue;
        };
        let checks: Vec<serde_json::Value> =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{dir}/checks.json: {e}"));
        // a scenario may report several checks under one id: the second is `id#2`, and so on
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for check in checks {
            let id = check["id"].as_str().unwrap_or("?").to_owned();
            let n = seen.entry(id.clone()).or_insert(0);
            *n += 1;
            let id = match *n {
                1 => id,
                n => format!("{id}#{n}"),
            };
            let status = check["status"].as_str().unwrap_or("?").to_owned();
            results.insert((scenario.to_owned(), id), status);
        }
    }
    results
}

/// `server-tools-call-simple-text-2026-11-30T06-31-01-376Z` → `tools-call-simple-text`.
fn scenario_of(dir: &str) -> Option<&str> {
    let rest = dir.strip_prefix("server-")?;
    // The timestamp suffix is `-YYYY-MM-DDTHH-MM-SS-mmmZ`: 25 characters.
    rest.len()
        .checked_sub(25)
        .filter(|&i| rest.as_bytes().get(i) == Some(&b'-'))
        .map(|i| &rest[..i])
}

/// (passed, failed, other) counts.
pub fn counts(results: &Results) -> (usize, usize, usize) {
    let passed = results.values().filter(|s| *s == "SUCCESS").count();
    let failed = results.values().filter(|s| *s == "FAILURE").count();
    (passed, failed, results.len() - passed - failed)
}

/// Every check whose status differs between two runs (or that only one run has).
pub fn differences(direct: &Results, through: &Results) -> Vec<String> {
    let mut keys: Vec<_> = direct.keys().chain(through.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let (d, t) = (direct.get(k), through.get(k));
            (d != t).then(|| format!("{}/{}: direct {d:?}, through the gateway {t:?}", k.0, k.1))
        })
        .collect()
}

/// A Markdown summary: one line per run with its counts.
pub fn summary(server: &str, runs: &[(&str, &Results)]) -> String {
    let mut out = String::new();
    for (how, results) in runs {
        let (p, f, o) = counts(results);
        let _ = writeln!(
            out,
            "| {server} | {how} | {} | {p} | {f} | {o} |",
            results.len()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::scenario_of;

    #[test]
    fn scenario_names_come_from_output_dirs() {
        assert_eq!(
            scenario_of("server-tools-call-simple-text-2026-11-30T06-31-01-376Z"),
            Some("tools-call-simple-text")
        );
        assert_eq!(
            scenario_of("server-ping-2026-11-30T06-31-01-318Z"),
            Some("ping")
        );
        assert_eq!(scenario_of("client-ping-2026-11-30T06-31-01-318Z"), None);
        assert_eq!(scenario_of("server-x"), None);
    }
}
