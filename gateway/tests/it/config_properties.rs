//! Property tests (proptest) for the config loader: fed arbitrary text and mutated example
//! configs, it never panics. (The protocol's parsers have theirs in the `mcp-wire` crate.)
//!
//! `cargo test` runs a bounded number of cases (64 per property, or `PROPTEST_CASES`).

use proptest::prelude::*;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(64);
    ProptestConfig::with_cases(cases)
}

fn mutate(bytes: &mut Vec<u8>, edits: &[(usize, u8, u8)]) {
    for &(at, what, byte) in edits {
        if bytes.is_empty() {
            bytes.push(byte);
            continue;
        }
        let at = at % bytes.len();
        match what % 3 {
            0 => bytes[at] = byte,
            1 => bytes.insert(at, byte),
            _ => {
                bytes.remove(at);
            }
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_config_loader_never_panics_on_arbitrary_text(text in "\\PC{0,200}") {
        let _ = mcp_gateway::config::parse(&text);
    }

    #[test]
    fn the_config_loader_never_panics_on_mutated_examples(
        which in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<usize>(), any::<u8>(), prop::sample::select(b"{}[]:-, \n#*&!|>'\"0aZ".to_vec())), 1..6),
    ) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../config");
        let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        let mut bytes = std::fs::read(which.get(&files)).unwrap();
        mutate(&mut bytes, &edits);
        let _ = mcp_gateway::config::parse(&String::from_utf8_lossy(&bytes));
    }
}
