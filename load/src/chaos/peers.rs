//! The real peers a chaos run needs, checked before anything starts: the SDK client loops'
//! venvs and script, and with `--backends real` FastMCP's venv and the TypeScript SDK's
//! `node_modules`. A run without them would report loads that never ran; it is refused up
//! front instead, naming what is missing and how to install it.

use std::path::Path;

/// What `args` needs under `root` (the repository) that is not there: one line each.
pub fn missing(root: &Path, sdk_legacy: usize, sdk_modern: usize, real: bool) -> Vec<String> {
    let mut needed: Vec<(&str, &str)> = Vec::new();
    if sdk_legacy > 0 || sdk_modern > 0 {
        needed.push(("tests/peers/repl_client.py", "the SDK client loops' driver"));
    }
    if sdk_legacy > 0 || real {
        needed.push((
            ".venv-mcp1/bin/python",
            "mcp 1.30.0 (legacy SDK clients, FastMCP backends)",
        ));
    }
    if sdk_modern > 0 {
        needed.push((
            ".venv-mcp2/bin/python",
            "mcp 2.3.0 (2026-07-28 SDK clients)",
        ));
    }
    if real {
        needed.push((
            "tests/peers/node/node_modules",
            "the TypeScript SDK v2 server",
        ));
    }
    needed
        .into_iter()
        .filter(|(path, _)| !root.join(path).exists())
        .map(|(path, what)| format!("{} ({what})", root.join(path).display()))
        .collect()
}

/// The refusal for `missing` peers.
pub fn refusal(missing: &[String]) -> String {
    format!(
        "chaos: peers missing, the run would not measure them:\n  {}\ninstall them with `scripts/setup-peers` (from the repository root), or run without them \
         (`--sdk-legacy 0 --sdk-modern 0 --backends mock`)",
        missing.join("\n  ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_clone_lacks_the_venvs_and_says_how_to_install_them() {
        let root = std::env::temp_dir().join(format!("chaos-peers-{}", std::process::id()));
        std::fs::create_dir_all(root.join("tests/peers")).unwrap();
        std::fs::write(root.join("tests/peers/repl_client.py"), "").unwrap();
        let m = missing(&root, 2, 0, false);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].contains(".venv-mcp1/bin/python"), "{m:?}");
        let m = missing(&root, 2, 2, true);
        assert_eq!(m.len(), 3, "{m:?}");
        assert!(refusal(&m).contains("scripts/setup-peers"));
        assert!(
            missing(&root, 0, 0, false).is_empty(),
            "mock only needs no peer"
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
