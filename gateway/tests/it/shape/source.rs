//! Just enough of Rust's lexical grammar to read the module paths out of a source file:
//! comments and string and character literals blanked (line numbers kept), the rest cut into
//! tokens, inline `mod name { .. }` blocks followed, and every `crate::`, `super::` and `self::`
//! path (a `use` tree's branches each on its own) resolved to segments from the crate root.

/// One path into the crate, as written at `line`.
#[derive(Debug)]
pub struct Reference {
    pub line: usize,
    /// The path from the crate root: modules, then possibly an item.
    pub to: Vec<String>,
}

/// `src` with every comment, string literal and character literal replaced by spaces
/// (newlines kept, so line numbers stay true).
pub fn code_only(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, s: &[char]| {
        out.extend(s.iter().map(|&ch| if ch == '\n' { '\n' } else { ' ' }))
    };
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(i + k).copied().unwrap_or('\0');
        let end = if at(0) == '/' && at(1) == '/' {
            Some(
                c[i..]
                    .iter()
                    .position(|&ch| ch == '\n')
                    .map_or(c.len(), |p| i + p),
            )
        } else if at(0) == '/' && at(1) == '*' {
            let (mut j, mut depth) = (i, 0);
            while j < c.len() {
                if c[j] == '/' && c.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if c[j] == '*' && c.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            Some(j)
        } else if let Some(j) = (i == 0 || !ident(c[i - 1]))
            .then(|| raw_string_end(&c, i))
            .flatten()
        {
            Some(j)
        } else if at(0) == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            Some((j + 1).min(c.len()))
        } else if at(0) == '\'' && at(1) == '\\' {
            // an escape: the escaped character itself may be a quote (`'\''`)
            let close = c
                .get(i + 3..)
                .and_then(|r| r.iter().position(|&ch| ch == '\''));
            Some(close.map_or(c.len(), |p| i + 3 + p + 1))
        } else if at(0) == '\'' && at(2) == '\'' {
            Some(i + 3)
        } else {
            None
        };
        match end {
            Some(j) => {
                blank(&mut out, &c[i..j]);
                i = j;
            }
            _ => {
                out.push(c[i]);
                i += 1;
            }
        }
    }
    out
}

/// Where a raw string (`r"..."`, `r#"..."#`, `br"..."`, `cr"..."`) that starts at `i` ends.
fn raw_string_end(c: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if matches!(c.get(j), Some('b' | 'c')) {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = c[j..].iter().take_while(|&&ch| ch == '#').count();
    j += hashes;
    if c.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < c.len() {
        if c[j] == '"'
            && c[j + 1..]
                .iter()
                .take(hashes)
                .filter(|&&ch| ch == '#')
                .count()
                == hashes
        {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(c.len())
}

#[derive(Debug, PartialEq)]
enum Tok {
    Ident(String),
    Colons,
    Open,
    Close,
    Comma,
    Other(char),
}

/// The tokens of code-only text, each with its line.
fn tokens(code: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = code.chars().collect();
    let mut toks = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let tok = if ch.is_ascii_digit() {
                Tok::Other('0')
            } else {
                Tok::Ident(word)
            };
            toks.push((tok, line));
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            toks.push((Tok::Colons, line));
            i += 2;
        } else {
            let tok = match ch {
                '{' => Tok::Open,
                '}' => Tok::Close,
                ',' => Tok::Comma,
                other => Tok::Other(other),
            };
            toks.push((tok, line));
            i += 1;
        }
    }
    toks
}

fn is(tok: Option<&(Tok, usize)>, want: &Tok) -> bool {
    tok.is_some_and(|(t, _)| t == want)
}

fn ident(tok: Option<&(Tok, usize)>) -> Option<&str> {
    match tok {
        Some((Tok::Ident(s), _)) => Some(s),
        _ => None,
    }
}

/// Every path into the crate that `src` (the file of module `module`) writes, where the crate
/// is called `root` (`crate`; `mcp_gateway` in `main.rs`, the binary, whose own `crate::` is not
/// the library). Besides `crate::`, `super::` and `self::` paths, a path that starts with a
/// child module the file declares (`mod x;` .. `x::y`) or with a name a `use` of the file
/// brought in (`use crate::a::B;` .. `B::new`) is a path into the crate too.
pub fn references(src: &str, module: &[String], root: &str) -> Vec<Reference> {
    both_passes(src, module, root)
        .into_iter()
        .map(|(r, _)| r)
        .collect()
}

/// The names the `use` statements of `src` bring in, each with the crate path it stands for
/// (`use crate::a::B as C;` is `C` for `a::B`).
pub fn used_names(src: &str, module: &[String], root: &str) -> Vec<(String, Vec<String>)> {
    both_passes(src, module, root)
        .into_iter()
        .filter_map(|(r, local)| Some((local?, r.to)))
        .collect()
}

/// Every path of `src`, each with the name a `use` gives it: a first pass for the names the
/// `use` statements bring in, then every path with them known.
fn both_passes(src: &str, module: &[String], root: &str) -> Vec<(Reference, Option<String>)> {
    let toks = tokens(&code_only(src));
    let children: Vec<&str> = (0..toks.len().saturating_sub(2))
        .filter(|&i| ident(toks.get(i)) == Some("mod") && is(toks.get(i + 2), &Tok::Other(';')))
        .filter_map(|i| ident(toks.get(i + 1)))
        .collect();
    let names: Vec<(String, Vec<String>)> = scan(&toks, module, root, &children, &[])
        .into_iter()
        .filter_map(|(r, local)| Some((local?, r.to)))
        .collect();
    scan(&toks, module, root, &children, &names)
}

/// One pass of [`references`]; each path with the name a `use` gives it in the file, if any.
fn scan(
    toks: &[(Tok, usize)],
    module: &[String],
    root: &str,
    children: &[&str],
    names: &[(String, Vec<String>)],
) -> Vec<(Reference, Option<String>)> {
    let mut out = Vec::new();
    // inline modules: (name, the brace depth inside it)
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    for i in 0..toks.len() {
        match &toks[i].0 {
            Tok::Open => {
                depth += 1;
                if i >= 2 && ident(toks.get(i - 2)) == Some("mod") {
                    if let Some(name) = ident(toks.get(i - 1)) {
                        inline.push((name.to_owned(), depth));
                    }
                }
                continue;
            }
            Tok::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                continue;
            }
            _ => {}
        }
        let Some(word) = ident(toks.get(i)) else {
            continue;
        };
        let before = i.checked_sub(1).and_then(|p| toks.get(p));
        let starts_path = !is(before, &Tok::Colons)
            && !is(before, &Tok::Other('$'))
            && is(toks.get(i + 1), &Tok::Colons);
        if !starts_path || in_visibility(toks, i) {
            continue;
        }
        let here: Vec<String> = module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(n, _)| n.clone()))
            .collect();
        let (mut base, mut j) = match word {
            w if w == root => (Vec::new(), i + 2),
            "self" => (here.clone(), i + 2),
            "super" => (here[..here.len().saturating_sub(1)].to_vec(), i + 2),
            // `x::y` with `mod x;` here: the child's own segment is read as the path's first
            w if inline.is_empty() && children.contains(&w) => (here.clone(), i),
            w => match names.iter().find(|(n, _)| n == w) {
                Some((_, path)) => (path.clone(), i + 2),
                None => continue,
            },
        };
        if word == "super" {
            while ident(toks.get(j)) == Some("super") && is(toks.get(j + 1), &Tok::Colons) {
                base.pop();
                j += 2;
            }
        }
        let is_use = ident(before) == Some("use");
        let mut leaves = Vec::new();
        tree(toks, j, base, toks[i].1, &mut leaves);
        out.extend(
            leaves
                .into_iter()
                .map(|(to, line, local)| (Reference { line, to }, local.filter(|_| is_use))),
        );
    }
    out
}

/// Whether the path at `toks[i]` is the module of a `pub(in path)` visibility: it names an
/// ancestor the item is visible in, and imports nothing from it.
fn in_visibility(toks: &[(Tok, usize)], i: usize) -> bool {
    i >= 3
        && ident(toks.get(i - 1)) == Some("in")
        && is(toks.get(i - 2), &Tok::Other('('))
        && ident(toks.get(i - 3)) == Some("pub")
}

/// Reads a path (or a `use` tree) from `toks[i]` on, below `prefix`; pushes each complete path
/// with the line of its last segment. Returns the index after it.
fn tree(
    toks: &[(Tok, usize)],
    mut i: usize,
    mut prefix: Vec<String>,
    mut line: usize,
    out: &mut Vec<(Vec<String>, usize, Option<String>)>,
) -> usize {
    if is(toks.get(i), &Tok::Open) {
        i += 1;
        while i < toks.len() && !is(toks.get(i), &Tok::Close) {
            let next = tree(toks, i, prefix.clone(), toks[i].1, out);
            if next == i {
                break;
            }
            i = next;
            if is(toks.get(i), &Tok::Comma) {
                i += 1;
            }
        }
        return i + 1;
    }
    while let Some(seg) = ident(toks.get(i)) {
        line = toks[i].1;
        i += 1;
        if seg != "self" {
            prefix.push(seg.to_owned());
        }
        if !is(toks.get(i), &Tok::Colons) {
            break;
        }
        i += 1;
        if is(toks.get(i), &Tok::Open) {
            return tree(toks, i, prefix, line, out);
        }
    }
    let mut local = prefix.last().cloned();
    if is(toks.get(i), &Tok::Other('*')) {
        local = None;
        i += 1;
    }
    if ident(toks.get(i)) == Some("as") {
        local = ident(toks.get(i + 1)).map(str::to_owned);
        i += 2;
    }
    out.push((prefix, line, local));
    i
}

#[cfg(test)]
mod tests {
    use super::{code_only, references};

    fn paths(src: &str, module: &[&str]) -> Vec<(usize, String)> {
        let module: Vec<String> = module.iter().map(|s| s.to_string()).collect();
        references(src, &module, "crate")
            .into_iter()
            .map(|r| (r.line, r.to.join("::")))
            .collect()
    }

    #[test]
    fn comments_strings_and_chars_are_blanked_and_lines_kept() {
        let src = "a // crate::x\n/* crate::y\n */ \"crate::z\" r#\"crate::w\"# '{' '\\'' b\n";
        let code = code_only(src);
        assert!(!code.contains("crate"), "{code}");
        assert_eq!(code.lines().count(), src.lines().count());
        assert_eq!(
            code.split_whitespace().collect::<Vec<_>>(),
            ["a", "b"],
            "{code:?}"
        );
    }

    #[test]
    fn a_lifetime_is_not_taken_for_a_character() {
        let code = code_only("fn f<'a>(x: &'a str) -> crate::y::Z {}");
        assert!(code.contains("crate::y::Z"), "{code}");
    }

    #[test]
    fn every_branch_of_a_use_tree_is_a_path_on_its_own_line() {
        let src = "use crate::{\n    a::b::{C, d::E},\n    f,\n};\nfn g() { crate::h::i(); }";
        assert_eq!(
            paths(src, &["m"]),
            vec![
                (2, "a::b::C".into()),
                (2, "a::b::d::E".into()),
                (3, "f".into()),
                (5, "h::i".into())
            ]
        );
    }

    #[test]
    fn super_and_self_resolve_from_the_inline_module_they_are_written_in() {
        let src = "use super::x;\nmod tests {\n    use super::super::y::Z;\n}\nuse self::w;";
        assert_eq!(
            paths(src, &["a", "b"]),
            vec![
                (1, "a::x".into()),
                (3, "a::y::Z".into()),
                (5, "a::b::w".into())
            ]
        );
    }

    #[test]
    fn a_declared_child_and_a_used_name_start_paths_into_the_crate() {
        let src = "mod child;\nuse crate::a::B as C;\nfn f() { child::g(); C::new(); other::h(); }";
        assert_eq!(
            paths(src, &["m"]),
            vec![
                (2, "a::B".into()),
                (3, "m::child::g".into()),
                (3, "a::B::new".into())
            ]
        );
        let names = super::used_names(src, &["m".to_owned()], "crate");
        assert_eq!(
            names,
            vec![("C".to_owned(), vec!["a".to_owned(), "B".to_owned()])]
        );
    }

    #[test]
    fn macro_crate_paths_and_visibility_are_not_paths() {
        let src = "pub(crate) fn f() { $crate::x::y(); }\npub(super) struct S;";
        assert!(paths(src, &["m"]).is_empty());
    }

    #[test]
    fn the_module_of_a_pub_in_visibility_is_not_a_path() {
        let src = "pub(in crate::a) struct S;\npub(in super::super) fn f() -> crate::b::C {}";
        assert_eq!(paths(src, &["a", "x", "y"]), vec![(2, "b::C".into())]);
    }
}
