//! `tool-pinning` read from a whole config: its forms, its problems, a malformed pins file.
use crate::config::{PinMode, ToolPinning};
use std::path::PathBuf;

fn pinning(yaml_pin: &str) -> Result<ToolPinning, Vec<String>> {
    let yaml = format!(
        "pools:\n  p: {{ backends: [127.0.0.1:9001], tool-pinning: {yaml_pin} }}\nroutes:\n  - {{ path: /mcp, pool: p }}\n"
    );
    crate::config::parse(&yaml)
        .map(|c| c.pools[0].tool_pinning.clone())
        .map_err(|e| {
            e.into_iter()
                .map(|e| format!("{}: {}", e.path, e.message))
                .collect()
        })
}

#[test]
fn tool_pinning_takes_a_mode_or_a_map_and_is_off_by_default() {
    assert_eq!(pinning("record").unwrap().mode, PinMode::Record);
    let map =
        pinning("{ mode: enforce, allow-new-tools: true, max-tools: 5, state-file: /tmp/x.json }")
            .unwrap();
    assert_eq!(map.mode, PinMode::Enforce);
    assert!(map.allow_new_tools);
    assert_eq!(map.max_tools, 5);
    assert_eq!(map.state_file, PathBuf::from("/tmp/x.json"));
    let yaml =
        "pools:\n  p: { backends: [127.0.0.1:9001] }\nroutes:\n  - { path: /mcp, pool: p }\n";
    let off = crate::config::parse(yaml).unwrap();
    assert_eq!(off.pools[0].tool_pinning, ToolPinning::off("p"));
}

#[test]
fn each_bad_tool_pinning_value_is_named_with_its_key() {
    let e = pinning("strict").unwrap_err();
    assert_eq!(
        e,
        ["pools.p.tool-pinning: unknown `strict` (off, record, enforce)"]
    );
    let e = pinning("{ mode: strict, max-tools: 0, colour: red }").unwrap_err();
    assert!(
        e.iter()
            .any(|e| e.starts_with("pools.p.tool-pinning.mode: unknown `strict`")),
        "{e:?}"
    );
    assert!(
        e.iter()
            .any(|e| e.starts_with("pools.p.tool-pinning.max-tools: must be at least 1")),
        "{e:?}"
    );
    assert!(
        e.iter()
            .any(|e| e.starts_with("pools.p.tool-pinning.colour: unknown key")),
        "{e:?}"
    );
}

#[test]
fn a_malformed_pins_file_is_a_config_problem_naming_the_file_line_and_field() {
    let dir = std::env::temp_dir().join(format!("mcpgw-pins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("pins.jsonl");
    std::fs::write(
        &path,
        "# ok\n{\"name\": \"a\", \"fingerprint\": \"md5:1\"}\n",
    )
    .unwrap();
    let e = pinning(&format!(
        "{{ mode: enforce, pins-file: {} }}",
        path.display()
    ))
    .unwrap_err();
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].starts_with("pools.p.tool-pinning.pins-file: "),
        "{e:?}"
    );
    assert!(
        e[0].contains("pins.jsonl: line 2: field `fingerprint` must be"),
        "{e:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
