//! A glob on an MCP method or name (routing rules, tool timeouts, the per-tool rate), compiled
//! once by validation: the internal config holds the matcher, so nothing downstream compiles
//! (or `expect`s) a glob again. A literal `/` is no separator (`*` matches it).
//!
//! Matching compares exact code points, unless a route asks for `name-match: folded`: then its
//! name globs are compiled folded ([`fold`]: NFKC, then lowercase) and each name is folded
//! before it is matched. An exact pattern never folds anything.

use globset::{Glob, GlobBuilder, GlobMatcher};

/// A compiled glob; equal when written the same.
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    /// The glob compiled (folded when `folded`), for sets of patterns ([`Pattern::glob`]).
    glob: Glob,
    matcher: GlobMatcher,
    /// Compiled folded: a value is folded before it is matched.
    folded: bool,
}

/// A name or URI folded for `name-match: folded`: Unicode NFKC (fullwidth `ＡＤＭＩＮ` becomes
/// `ADMIN`, ligatures and compatibility forms their plain letters), then lowercase.
pub fn fold(value: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    value.nfkc().collect::<String>().to_lowercase()
}

impl Pattern {
    /// Compiles `source`; the error says why it is no glob.
    pub fn new(source: &str) -> Result<Pattern, globset::Error> {
        let glob = GlobBuilder::new(source).literal_separator(false).build()?;
        Ok(Pattern {
            source: source.to_owned(),
            matcher: glob.compile_matcher(),
            glob,
            folded: false,
        })
    }

    /// The same glob matching folded names ([`fold`]): compiled once, from the folded glob.
    pub fn folded(&self) -> Pattern {
        let source = fold(&self.source);
        match GlobBuilder::new(&source).literal_separator(false).build() {
            Ok(glob) => Pattern {
                source: self.source.clone(),
                matcher: glob.compile_matcher(),
                glob,
                folded: true,
            },
            // folding made it no glob (it cannot, in practice): stay exact
            Err(_) => self.clone(),
        }
    }

    /// Whether `value` matches (folded first when the pattern is).
    pub fn is_match(&self, value: &str) -> bool {
        if self.folded {
            self.matcher.is_match(fold(value))
        } else {
            self.matcher.is_match(value)
        }
    }

    /// The glob as matched (folded when the pattern is), to build a `globset::GlobSet` of
    /// many patterns: a value given to that set must be folded first when the pattern is.
    pub fn glob(&self) -> &Glob {
        &self.glob
    }

    /// Whether values are folded ([`fold`]) before they are matched.
    pub fn is_folded(&self) -> bool {
        self.folded
    }

    /// The glob as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Pattern) -> bool {
        self.source == other.source && self.folded == other.folded
    }
}

impl Eq for Pattern {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_patterns_compare_code_points_and_folded_ones_fold_both_sides() {
        let exact = Pattern::new("admin_*").unwrap();
        for other in [
            "\u{ff21}\u{ff24}\u{ff2d}\u{ff29}\u{ff2e}_delete",
            "Admin_Delete",
            "ADMIN_x",
        ] {
            assert!(!exact.is_match(other), "{other}");
        }
        assert!(exact.is_match("admin_delete"));
        let folded = exact.folded();
        for same in [
            "\u{ff21}\u{ff24}\u{ff2d}\u{ff29}\u{ff2e}_delete",
            "Admin_Delete",
            "ADMIN_x",
            "admin_",
        ] {
            assert!(folded.is_match(same), "{same}");
        }
        assert!(!folded.is_match("administrator"));
        // a glob written in capitals matches its lowercase names once folded
        assert!(Pattern::new("Files://*")
            .unwrap()
            .folded()
            .is_match("files://A"));
        assert_eq!(fold("\u{fb01}le"), "file");
    }
}
