//! The two tables of docs/architecture.md the shape checks read: the floors ("Floors: which way
//! imports point": a floor number and the modules on it) and the module table (who owns what,
//! and what each module never does).

/// One module (or sub-module) named in the floors table.
#[derive(Debug)]
pub struct Row {
    pub floor: u32,
    /// As the table writes it: `proxy/`, `state.rs`, `bridge/config.rs`.
    pub entry: String,
}

/// The floors table.
pub struct Floors {
    pub rows: Vec<Row>,
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
        | 2 | `proxy/`, `state.rs` (all of `x.rs`) |\n| 0 | `sync.rs` |\n\nafter\n";

    #[test]
    fn a_floor_row_names_its_modules_and_not_those_in_remarks() {
        let f = floors(DOC);
        let rows: Vec<(u32, &str)> = f.rows.iter().map(|r| (r.floor, r.entry.as_str())).collect();
        assert_eq!(rows, [(2, "proxy/"), (2, "state.rs"), (0, "sync.rs")]);
    }
}
