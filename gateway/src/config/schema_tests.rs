//! The shipped schema matches the code, every example config validates against it, and it
//! catches what an editor should flag (unknown keys, wrong types, unknown named values).

use super::schema::{schema, schema_text, SHIPPED_PATH};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&schema()).unwrap_or_else(|e| panic!("the schema is invalid: {e}"))
}

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("not YAML: {e}\n{text}"))
}

fn problems(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
    validator
        .iter_errors(value)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn the_shipped_schema_matches_the_config_types() {
    let shipped = std::fs::read_to_string(repo(SHIPPED_PATH)).unwrap_or_default();
    assert!(
        shipped == schema_text(),
        "{SHIPPED_PATH} is out of date with the config types: run \
         `mcp-gateway schema > {SHIPPED_PATH}` (or `cargo run -p mcp-gateway -- schema > {SHIPPED_PATH}`)"
    );
}

#[test]
fn every_example_config_validates_against_the_schema() {
    let validator = validator();
    let mut seen = 0;
    for entry in std::fs::read_dir(repo("config")).unwrap() {
        let path = entry.unwrap().path();
        if !path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let found = problems(&validator, &yaml(&text));
        assert!(found.is_empty(), "{}: {found:#?}", path.display());
        assert!(
            text.lines().next().is_some_and(
                |l| l.starts_with("# yaml-language-server: $schema=../docs/config.schema.json")
            ),
            "{} should start with the yaml-language-server schema line",
            path.display()
        );
        seen += 1;
    }
    assert!(seen >= 3, "expected the example configs");
}

#[test]
fn the_schema_flags_unknown_keys_wrong_types_and_unknown_values() {
    let validator = validator();
    let bad = yaml(
        "colour: blue\nthreads: many\npools: { p: { backends: [127.0.0.1:1], balance: fastest, extra: 1 } }\nroutes: [ { path: /mcp, pool: p, mode: sticky, rules: [ { match: { nam: x } } ] } ]\n",
    );
    let found = problems(&validator, &bad).join("\n");
    for at in [
        "colour",
        "/threads",
        "/pools/p/balance",
        "extra",
        "/routes/0/mode",
        "nam",
    ] {
        assert!(found.contains(at), "{at} not flagged in:\n{found}");
    }
    let good =
        yaml("pools: { p: { backends: [127.0.0.1:1] } }\nroutes: [ { path: /mcp, pool: p } ]\n");
    assert_eq!(problems(&validator, &good), Vec::<String>::new());
}
