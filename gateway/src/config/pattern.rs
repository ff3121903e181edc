//! A glob on an MCP method or name (routing rules, tool timeouts, the per-tool rate), compiled
//! once by validation: the internal config holds the matcher, so nothing downstream compiles
//! (or `expect`s) a glob again. A literal `/` is no separator (`*` matches it).

use globset::{GlobBuilder, GlobMatcher};

/// A compiled glob; equal when written the same.
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    matcher: GlobMatcher,
}

impl Pattern {
    /// Compiles `source`; the error says why it is no glob.
    pub fn new(source: &str) -> Result<Pattern, globset::Error> {
        let glob = GlobBuilder::new(source).literal_separator(false).build()?;
        Ok(Pattern {
            source: source.to_owned(),
            matcher: glob.compile_matcher(),
        })
    }

    /// Whether `value` matches.
    pub fn is_match(&self, value: &str) -> bool {
        self.matcher.is_match(value)
    }

    /// The glob as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Pattern) -> bool {
        self.source == other.source
    }
}

impl Eq for Pattern {}
