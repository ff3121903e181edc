//! The shape of the code, read from the code: no two files and no two folders of `gateway/src`
//! import each other, even around a circle (both graphs computed from every `crate::`,
//! `super::` and `self::` path, with no table of exceptions); the "Floors" table of
//! docs/architecture.md is the layering those imports make (each folder one floor above the
//! highest it imports), so the doc follows the code and never the other way round; the modules
//! its module table says never use pingora types name no pingora path; and `mcp-wire` depends
//! only on the crates listed here (so "no pingora, tokio or clock" is kept by its `Cargo.toml`
//! and by this list).

mod doc;
mod files;
mod pure;
mod source;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn architecture() -> String {
    read(&repo().join("docs/architecture.md"))
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// `gateway/src/x.rs` as the failure messages write it.
fn shown(file: &Path) -> String {
    let rel = file.strip_prefix(repo()).unwrap_or(file);
    rel.display().to_string()
}

#[test]
fn no_two_files_of_the_gateway_import_each_other_even_around_a_circle() {
    let circles = file_circles("gateway/src", "mcp_gateway");
    assert!(
        circles.is_empty(),
        "{} import circles between the files of gateway/src (move what both sides need to a \
         leaf file, or let one side hand the other a narrow handle):\n  {}",
        circles.len(),
        circles.join("\n  ")
    );
}

#[test]
fn no_two_files_of_mcp_wire_import_each_other_even_around_a_circle() {
    let circles = file_circles("mcp-wire/src", "mcp_wire");
    assert!(
        circles.is_empty(),
        "{} import circles between the files of mcp-wire/src:\n  {}",
        circles.len(),
        circles.join("\n  ")
    );
}

/// Each import circle between the files of the crate at `dir` (its root `lib.rs`), described
/// with one way around it.
fn file_circles(dir: &str, lib_name: &str) -> Vec<String> {
    let files = files::Files::read(&repo().join(dir), lib_name);
    assert!(files.files.len() > 10, "found {} files", files.files.len());
    let edges = files.edges();
    files::circles(&edges)
        .iter()
        .map(|scc| {
            let circle = files::one_circle(&edges, scc);
            let steps: Vec<String> = circle
                .windows(2)
                .map(|w| {
                    format!(
                        "{}:{} -> {}",
                        shown(&files.files[w[0]].path),
                        edges[w[0]][&w[1]],
                        shown(&files.files[w[1]].path)
                    )
                })
                .collect();
            format!(
                "{} files import each other ({}), for one:\n    {}",
                scc.len(),
                scc.iter()
                    .map(|&f| shown(&files.files[f].path))
                    .collect::<Vec<_>>()
                    .join(", "),
                steps.join("\n    ")
            )
        })
        .collect()
}

/// A request carries the one config snapshot it started with: the running state is loaded in
/// `proxy/mod.rs` `new_ctx` and nowhere on a request's way (a member request of a virtual
/// server, a task's request, a handler). Loading it again would let one request read two
/// configs: a member resolving its pool's index in a newer snapshot than its parent's route
/// (another pool's backends and credentials after a reload).
#[test]
fn a_request_reads_the_snapshot_it_started_with_and_never_loads_another() {
    let src = repo().join("gateway/src");
    let mut found = Vec::new();
    for dir in [
        "handlers",
        "forward",
        "virtual_servers",
        "tasks",
        "classify",
        "request/ctx.rs",
        "proxy",
    ] {
        let path = src.join(dir);
        let files = if path.is_dir() {
            rust_files(&path)
        } else {
            vec![path]
        };
        for f in files {
            let code = source::code_only(&read(&f));
            for (n, line) in code.lines().enumerate() {
                let loads = line.contains("state.load") || line.contains("state.load_full");
                let allowed = shown(&f) == "gateway/src/proxy/mod.rs"
                    && line.contains("RequestCtx::new(self.state.load_full())");
                if loads && !allowed {
                    found.push(format!("{}:{}: {}", shown(&f), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the running state loaded on a request's way (take the request's `ctx.state`):\n  {}",
        found.join("\n  ")
    );
}

/// The files of a module as the module table names it (`auth/`, `admin.rs`, `metrics.rs` with
/// its `metrics/`), or of a crate of the workspace (`mcp-wire/`).
fn files_of(module: &str) -> Option<Vec<PathBuf>> {
    let src = repo().join("gateway/src");
    let dir = src.join(module.strip_suffix(".rs").unwrap_or(module));
    let mut files = Vec::new();
    if module.ends_with(".rs") && src.join(module).is_file() {
        files.push(src.join(module));
    }
    if dir.is_dir() {
        files.extend(rust_files(&dir));
    } else if files.is_empty() && module.ends_with('/') && repo().join(module).is_dir() {
        files.extend(rust_files(&repo().join(module)));
    }
    (!files.is_empty()).then_some(files)
}

#[test]
fn modules_the_doc_says_never_use_pingora_types_name_no_pingora_path() {
    let doc = architecture();
    let mut checked = 0;
    let mut found = Vec::new();
    for (modules, never) in doc::never_does(&doc) {
        if !never.contains("pingora types") {
            continue;
        }
        for module in modules {
            let files = files_of(module).unwrap_or_else(|| {
                panic!(
                    "docs/architecture.md's module table names `{module}`, which is neither in \
                     gateway/src nor a crate of the workspace"
                )
            });
            for f in files {
                checked += 1;
                let code = source::code_only(&read(&f));
                for (n, line) in code.lines().enumerate() {
                    let words = line.split(|c: char| !(c.is_alphanumeric() || c == '_'));
                    if words
                        .into_iter()
                        .any(|w| w == "pingora" || w.starts_with("pingora_"))
                    {
                        found.push(format!("{}:{}: {}", shown(&f), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        checked > 0,
        "the module table says of no module that it never uses pingora types"
    );
    assert!(
        found.is_empty(),
        "docs/architecture.md's module table says these modules never use pingora types:\n  {}",
        found.join("\n  ")
    );
}

/// The folder of `gateway/src` a file belongs to: its first module name (`session` for
/// `session/store/redis/mod.rs`, `admin` for `admin.rs`), `main` for the binary.
fn folder_of(file: &files::File) -> String {
    file.module
        .first()
        .cloned()
        .unwrap_or_else(|| "lib".to_owned())
}

/// The folders of `gateway/src` and the folders each imports, computed from the code's own
/// imports (every `crate::`, `super::` and `self::` path, resolved through re-exports as the
/// file graph is): folder -> folder it imports -> one line that does.
fn folder_graph() -> (Vec<String>, Vec<BTreeMap<usize, String>>) {
    let files = files::Files::read(&repo().join("gateway/src"), "mcp_gateway");
    let mut names: Vec<String> = files.files.iter().map(folder_of).collect();
    names.sort();
    names.dedup();
    let index = |n: &str| names.iter().position(|x| x == n).unwrap();
    let mut edges = vec![BTreeMap::new(); names.len()];
    for (i, targets) in files.edges().iter().enumerate() {
        let from = index(&folder_of(&files.files[i]));
        for (&j, &line) in targets {
            let to = index(&folder_of(&files.files[j]));
            if from != to {
                edges[from]
                    .entry(to)
                    .or_insert_with(|| format!("{}:{line}", shown(&files.files[i].path)));
            }
        }
    }
    (names, edges)
}

#[test]
fn no_two_folders_of_the_gateway_import_each_other_even_around_a_circle() {
    let (names, edges) = folder_graph();
    let plain: Vec<BTreeMap<usize, usize>> = edges
        .iter()
        .map(|e| e.keys().map(|&k| (k, 0)).collect())
        .collect();
    let circles: Vec<String> = files::circles(&plain)
        .iter()
        .map(|scc| {
            let circle = files::one_circle(&plain, scc);
            let steps: Vec<String> = circle
                .windows(2)
                .map(|w| {
                    format!(
                        "{}/ -> {}/ ({})",
                        names[w[0]], names[w[1]], edges[w[0]][&w[1]]
                    )
                })
                .collect();
            format!(
                "{} folders import each other ({}), for one:\n    {}",
                scc.len(),
                scc.iter()
                    .map(|&f| format!("{}/", names[f]))
                    .collect::<Vec<_>>()
                    .join(", "),
                steps.join("\n    ")
            )
        })
        .collect();
    assert!(
        circles.is_empty(),
        "{} import circles between the folders of gateway/src (move what both sides need down \
         to the lower folder, or let one side hand the other a narrow handle):\n  {}",
        circles.len(),
        circles.join("\n  ")
    );
}

/// The floor of each folder of `gateway/src`, from the code's imports: 0 for a folder that
/// imports no other, else one above the highest folder it imports. (The folder graph has no
/// circle, which the test above holds, so every folder has one.) Keyed as the docs write a
/// module: `session/`, `state.rs`.
fn computed_floors() -> BTreeMap<String, u32> {
    let (names, edges) = folder_graph();
    fn floor(
        n: usize,
        edges: &[BTreeMap<usize, String>],
        memo: &mut [Option<u32>],
        depth: usize,
    ) -> u32 {
        if let Some(f) = memo[n] {
            return f;
        }
        assert!(depth <= edges.len(), "the folder graph has a circle");
        let f = edges[n]
            .keys()
            .map(|&m| floor(m, edges, memo, depth + 1) + 1)
            .max()
            .unwrap_or(0);
        memo[n] = Some(f);
        f
    }
    let mut memo = vec![None; names.len()];
    let src = repo().join("gateway/src");
    let mut out = BTreeMap::new();
    for (i, name) in names.iter().enumerate() {
        if name == "lib" {
            continue; // the root declares every module; it is no floor's
        }
        let entry = if src.join(name).is_dir() {
            format!("{name}/")
        } else {
            format!("{name}.rs")
        };
        out.insert(entry, floor(i, &edges, &mut memo, 0));
    }
    out
}

/// The floors table of docs/architecture.md describes the code as it is: each folder of
/// `gateway/src` on the floor its imports put it (computed above), none missing, none extra.
/// The code decides; a failure prints the table to paste.
#[test]
fn the_floors_table_of_the_docs_is_the_layering_the_imports_make() {
    let computed = computed_floors();
    let documented: BTreeMap<String, u32> = doc::floors(&architecture())
        .rows
        .into_iter()
        .map(|r| (r.entry, r.floor))
        .collect();
    if computed != documented {
        let top = computed.values().copied().max().unwrap_or(0);
        let rows: Vec<String> = (0..=top)
            .rev()
            .map(|f| {
                let on: Vec<String> = computed
                    .iter()
                    .filter(|(_, &g)| g == f)
                    .map(|(e, _)| format!("`{e}`"))
                    .collect();
                format!("| {f} | {} |", on.join(", "))
            })
            .collect();
        let differ: Vec<String> = computed
            .keys()
            .chain(documented.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .filter(|e| computed.get(*e) != documented.get(*e))
            .map(|e| {
                format!(
                    "{e}: code {:?}, docs {:?}",
                    computed.get(e),
                    documented.get(e)
                )
            })
            .collect();
        panic!(
            "docs/architecture.md's floors table is not the layering of the code's imports:\n  {}\n\
             the table the imports make (remarks in parentheses may follow a module):\n{}",
            differ.join("\n  "),
            rows.join("\n")
        );
    }
}

/// Every client-facing answer is written by the one sender: outside `forward/` (relaying,
/// errors), `downstream/` (the client and the writer every other answer calls,
/// `downstream/answer.rs`), `proxy/` (pingora's own phases) and the admin listener (the admin
/// API and the console), no file builds a response head or writes to a client (test code
/// aside). A new path that answers a client calls down into the writer, so what every answer
/// passes is added once.
#[test]
fn only_the_one_sender_writes_a_response_head_or_body() {
    let src = repo().join("gateway/src");
    let allowed = ["forward", "downstream", "proxy", "admin", "console"];
    let mut found = Vec::new();
    for f in rust_files(&src) {
        let rel = f.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let top = top.strip_suffix(".rs").unwrap_or(&top);
        let name = rel.file_name().unwrap().to_string_lossy();
        if allowed.contains(&top) || name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let code = source::code_only(&read(&f));
        for (n, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break; // a file's test module comes last
            }
            let writes = [
                ".write_response_header(",
                ".write_response_body(",
                "ResponseHeader::build(",
            ];
            if writes.iter().any(|w| line.contains(w)) {
                found.push(format!("{}:{}: {}", shown(&f), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "{} places outside forward/, downstream/, proxy/ and the admin listener write an answer \
         (call `downstream::answer` instead):\n  {}",
        found.len(),
        found.join("\n  ")
    );
}
