//! The interop matrix's expected results: one table ([`EXPECTED`]), the single source of truth.
//! The matrix test (`tests/tests/it/interop_matrix.rs`) fails on any cell that does something
//! else, and the unit tests below fail when `docs/interoperability.md`'s matrix (the table and
//! the sentence that counts its cells) says anything other than this table. They start no peer,
//! so they run on every `cargo test`: `cargo test -p mcp-gateway-tests --lib interop::`. When the
//! table changes, the failure message prints the doc's new table to paste.

use super::{Client, Server, CLIENTS, ELICIT_SESSIONS, ELICIT_TOOLS};
use std::fmt::Write as _;

/// What a cell must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// List, call with progress, end the session, having negotiated this protocol version.
    Works(&'static str),
    /// Negotiate this protocol version, list, then get this many tool calls answered whose
    /// server asked the client something (each in a new session, called as soon as it is
    /// connected), end the sessions.
    Answers(&'static str, usize),
    /// Be refused at connect with this JSON-RPC code.
    Refused(i64),
}

impl Expect {
    /// The cell as the doc's table shows it (the form [`super::Outcome`] prints for a result).
    pub fn cell(self) -> String {
        match self {
            Expect::Works(protocol) => format!("✓ {protocol}"),
            Expect::Answers(protocol, n) => format!("✓ {protocol} ({n} answered)"),
            Expect::Refused(code) => format!("{code}"),
        }
    }
}

/// The JSON-RPC code a stateless route answers when its backend opens a session.
pub const SESSION_REQUIRED: i64 = -32007;
/// Calls answered in an elicit server cell: [`ELICIT_SESSIONS`] new sessions per tool.
pub const ELICIT_ANSWERS: usize = ELICIT_SESSIONS * ELICIT_TOOLS.len();

const LEGACY: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";
const L: Expect = Expect::Works(LEGACY);
const M: Expect = Expect::Works(MODERN);
const LA: Expect = Expect::Answers(LEGACY, ELICIT_ANSWERS);
const MA: Expect = Expect::Answers(MODERN, ELICIT_ANSWERS);
const NO: Expect = Expect::Refused(SESSION_REQUIRED);

/// The expected result of every cell: per server (in [`SERVERS`] order) and route mode (in
/// [`MODES`] order), one cell per client in [`CLIENTS`] order (Python 1.30.0, Python 2.3.0
/// auto, Python 2.3.0 legacy, TypeScript 1.32.2).
///
/// A session-keeping server behind a stateless route refuses every client that needs a session
/// (-32007). The 2.3.0 auto client's `server/discover` probe succeeds on every stateless route:
/// natively on the 2.3.0 servers, through the reverse era bridge (pooled backend sessions) on
/// the session-only ones, and on `auto` routes in front of session-only servers it takes the
/// bridge too. Through the other modes every elicit server call gets the client's answer (the
/// bridged 2.3.0 auto client's too, as `input_required` rounds).
pub const EXPECTED: [(Server, &str, [Expect; 4]); 15] = [
    (Server::FastMcp1, "stateful", [L, L, L, L]),
    (Server::FastMcp1, "stateless", [NO, M, NO, NO]),
    (Server::FastMcp1, "auto", [L, M, L, L]),
    (Server::Stateless2, "stateful", [L, M, L, L]),
    (Server::Stateless2, "stateless", [L, M, L, L]),
    (Server::Stateless2, "auto", [L, M, L, L]),
    (Server::Sessions2, "stateful", [L, M, L, L]),
    (Server::Sessions2, "stateless", [NO, M, NO, NO]),
    (Server::Sessions2, "auto", [L, M, L, L]),
    (Server::Everything, "stateful", [L, L, L, L]),
    (Server::Everything, "stateless", [NO, M, NO, NO]),
    (Server::Everything, "auto", [L, M, L, L]),
    (Server::Elicit, "stateful", [LA, LA, LA, LA]),
    (Server::Elicit, "stateless", [NO, MA, NO, NO]),
    (Server::Elicit, "auto", [LA, MA, LA, LA]),
];

/// What the cell of `client` on `server` behind a `mode` route must do.
pub fn expected(client: Client, server: Server, mode: &str) -> Expect {
    let (_, _, cells) = EXPECTED
        .iter()
        .find(|(s, m, _)| *s == server && *m == mode)
        .unwrap_or_else(|| panic!("no expected row for {server:?} behind {mode}"));
    let column = CLIENTS.iter().position(|c| *c == client).expect("a client");
    cells[column]
}

/// A Markdown table in the doc's layout: a row per server and mode, a column per client.
pub fn markdown<'a>(rows: impl IntoIterator<Item = (Server, &'a str, Vec<String>)>) -> String {
    let mut out = String::from("| server | route mode |");
    for c in CLIENTS {
        let _ = write!(out, " {} |", c.label());
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---|".repeat(CLIENTS.len()));
    out.push('\n');
    for (server, mode, cells) in rows {
        let _ = write!(out, "| {} | {mode} |", server.label());
        for cell in cells {
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out
}

/// The doc's matrix table, rendered from [`EXPECTED`].
pub fn expected_table() -> String {
    markdown(
        EXPECTED
            .iter()
            .map(|(server, mode, cells)| (*server, *mode, cells.map(Expect::cell).to_vec())),
    )
}

/// The doc's sentence that counts the cells, computed from [`EXPECTED`].
pub fn expected_summary() -> String {
    let cells: Vec<(Server, Expect)> = EXPECTED
        .iter()
        .flat_map(|(server, _, cells)| cells.iter().map(move |e| (*server, *e)))
        .collect();
    let works = cells
        .iter()
        .filter(|(_, e)| !matches!(e, Expect::Refused(_)))
        .count();
    let elicit = cells
        .iter()
        .filter(|(s, e)| *s == Server::Elicit && matches!(e, Expect::Answers(..)))
        .count();
    let answered: usize = cells
        .iter()
        .map(|(_, e)| match e {
            Expect::Answers(_, n) => *n,
            _ => 0,
        })
        .sum();
    let refused = cells.len() - works;
    format!(
        "{} cells: {works} work ({elicit} of them on the elicit server, with {answered}\nserver requests answered in all) and {refused} are refused with {SESSION_REQUIRED}",
        cells.len()
    )
}

#[cfg(test)]
mod tests {
    use super::super::{MODES, SERVERS};
    use super::*;

    fn doc() -> String {
        let path = crate::harness::workspace().join("docs/interoperability.md");
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn the_table_has_one_row_per_server_and_mode_in_order() {
        let order: Vec<(Server, &str)> = SERVERS
            .iter()
            .flat_map(|s| MODES.iter().map(move |m| (*s, *m)))
            .collect();
        let rows: Vec<(Server, &str)> = EXPECTED.iter().map(|(s, m, _)| (*s, *m)).collect();
        assert_eq!(rows, order);
    }

    #[test]
    fn the_table_refuses_exactly_the_clients_that_need_a_session_behind_a_stateless_route() {
        for (server, mode, cells) in EXPECTED {
            for (client, expect) in CLIENTS.iter().zip(cells) {
                let refused = mode == "stateless"
                    && server != Server::Stateless2
                    && *client != Client::Py2Auto;
                assert_eq!(
                    matches!(expect, Expect::Refused(SESSION_REQUIRED)),
                    refused,
                    "{client:?} on {server:?} behind {mode}: {expect:?}"
                );
                let elicit = matches!(expect, Expect::Answers(_, ELICIT_ANSWERS));
                assert_eq!(
                    elicit,
                    server == Server::Elicit && !refused,
                    "{client:?} on {server:?} behind {mode}: {expect:?}"
                );
            }
        }
    }

    #[test]
    fn the_docs_matrix_table_is_the_expected_table() {
        let doc = doc();
        let want = expected_table();
        let header = want.lines().next().expect("a header");
        let start = doc
            .find(header)
            .unwrap_or_else(|| panic!("docs/interoperability.md has no table headed {header}"));
        let got: String = doc[start..]
            .lines()
            .take_while(|l| l.starts_with('|'))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(
            got == want,
            "docs/interoperability.md's matrix differs from tests/src/interop/expected.rs \
             (EXPECTED); the table it should have:\n\n{want}"
        );
    }

    #[test]
    fn the_docs_cell_counts_are_the_expected_tables() {
        let summary = expected_summary();
        // the doc wraps its prose: compare with line breaks as spaces
        let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat(&doc()).contains(&flat(&summary)),
            "docs/interoperability.md does not say: {summary}"
        );
    }
}
