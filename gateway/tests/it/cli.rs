//! The `mcp-gateway` command line: `validate` lists every problem with its key path.
//! (Being an integration test of this package also makes cargo build the binary that the
//! integration crate in `tests/` runs.)

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
}

#[test]
fn validate_says_ok_for_every_example_config() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../config");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let out = bin().arg("validate").arg(&path).output().unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("OK"));
    }
}

#[test]
fn validate_lists_every_problem_and_exits_1() {
    let path = std::env::temp_dir().join(format!("mcpgw-bad-{}.yaml", std::process::id()));
    std::fs::write(
        &path,
        "listen: nowhere\npools: { p: { backends: [] } }\nroutes: [ { path: /mcp, pool: q } ]\n",
    )
    .unwrap();
    let out = bin().arg("validate").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    for key in ["listen:", "pools.p.backends:", "routes[0].pool:"] {
        assert!(err.contains(key), "missing {key} in:\n{err}");
    }
    assert!(err.contains("3 problem(s)"), "{err}");
}

#[test]
fn schema_prints_the_shipped_config_schema() {
    let out = bin().arg("schema").output().unwrap();
    assert!(out.status.success());
    let shipped =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/config.schema.json");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        std::fs::read_to_string(shipped).unwrap(),
        "run `mcp-gateway schema > docs/config.schema.json`"
    );
}

#[test]
fn capture_says_which_file_it_cannot_read_and_exits_1() {
    let out = bin()
        .arg("capture")
        .arg("/nonexistent/capture.jsonl")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/capture.jsonl"));
}
