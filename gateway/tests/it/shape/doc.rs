//! The two tables of docs/architecture.md the shape checks read: the floors ("Floors: which way
//! imports point": a floor number and the modules on it) and the module table (who owns what,
//! and what each module never does).

/// One module (or sub-module) named in the floors table.
#[derive(Debug)]
pub struct Row {
    pub floor: u32,
    /// As the table writes it: `proxy/`, `state.rs`, `bridge/config.rs`.
    pub entry: String,
    /// Its module path: `["bridge", "config"]`.
    pub path: Vec<String>,
}

/// The floors table.
pub struct Floors {
    pub rows: Vec<Row>,
}

impl Floors {
    /// The most specific row a module path (or an item path) falls in.
    pub fn row_of(&self, path: &[String]) -> Option<&Row> {
        self.rows
            .iter()
            .filter(|r| path.starts_with(&r.path))
            .max_by_key(|r| r.path.len())
    }
}

/// `src/`-relative module path of an entry as the docs write it (`bridge/`, `state.rs`).
pub fn module_path(entry: &str) -> Vec<String> {
    let entry = entry.strip_suffix('/').unwrap_or(entry);
    let entry = entry.strip_suffix(".rs").unwrap_or(entry);
    entry.split('/').map(str::to_owned).collect()
}

/// The words between backticks in `cell`.
pub fn backticked(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// `cell` without its parenthesized remarks (which may name modules that are not on the row).
fn outside_parentheses(cell: &str) -> String {
    let mut depth = 0usize;
    cell.chars()
        .filter(|&c| {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                _ => return depth == 0,
            }
            false
        })
        .collect()
}

/// The cells of every body row of the first table from the line that starts with `from` on (a
/// heading above the table, or the table's own header).
fn table<'a>(doc: &'a str, from: &str) -> Vec<Vec<&'a str>> {
    let mut lines = doc.lines().skip_while(|l| !l.starts_with(from));
    let rows: Vec<&str> = lines
        .by_ref()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .collect();
    rows.iter()
        .skip(2) // the header and the |---| line
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect()
        })
        .collect()
}

/// The floors table of `doc`.
pub fn floors(doc: &str) -> Floors {
    let mut rows = Vec::new();
    for cells in table(doc, "## Floors") {
        let floor: u32 = cells[0]
            .parse()
            .unwrap_or_else(|_| panic!("floors table: `{}` is not a floor number", cells[0]));
        for entry in backticked(&outside_parentheses(cells[1])) {
            if let Some(twice) = rows.iter().find(|r: &&Row| r.entry == entry) {
                panic!(
                    "floors table: `{entry}` is on floor {} and on floor {floor}",
                    twice.floor
                );
            }
            rows.push(Row {
                floor,
                entry: entry.to_owned(),
                path: module_path(entry),
            });
        }
    }
    assert!(!rows.is_empty(), "docs/architecture.md has no floors table");
    Floors { rows }
}

/// The module table of `doc`: each row's backticked module names and its "never does" cell.
pub fn never_does(doc: &str) -> Vec<(Vec<&str>, &str)> {
    let rows: Vec<(Vec<&str>, &str)> = table(doc, "| module |")
        .into_iter()
        .map(|cells| (backticked(cells[0]), cells.last().copied().unwrap_or("")))
        .collect();
    assert!(!rows.is_empty(), "docs/architecture.md has no module table");
    rows
}

/// The crate table of `doc`: each crate (`mcp-wire/`) and its "depends on" cell.
pub fn crates(doc: &str) -> Vec<(&str, &str)> {
    table(doc, "| crate |")
        .into_iter()
        .filter_map(|cells| Some((*backticked(cells[0]).first()?, *cells.last()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::floors;

    const DOC: &str = "# A\n\n## Floors: x\n\nprose\n\n| floor | modules |\n|---|---|\n\
        | 2 | `proxy/`, `state.rs` (all of `x.rs`) |\n| 0 | `proxy/tls.rs`, `sync.rs` |\n\nafter\n";

    #[test]
    fn the_most_specific_row_wins() {
        let f = floors(DOC);
        let path = |p: &str| p.split("::").map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(f.row_of(&path("proxy::tls::Cert")).unwrap().floor, 0);
        assert_eq!(f.row_of(&path("proxy::mod_x")).unwrap().entry, "proxy/");
        assert_eq!(f.row_of(&path("state")).unwrap().floor, 2);
        assert!(f.row_of(&path("other")).is_none());
        assert!(
            f.row_of(&path("x")).is_none(),
            "a module named in a remark is not on the row"
        );
    }
}
