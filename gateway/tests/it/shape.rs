//! The shape docs/architecture.md describes, checked against the tree, so the doc and the code
//! cannot drift apart: every `crate::` path in `gateway/src` points down the floors of its
//! "Floors" table (or along one floor, without circles), every module of `gateway/src` is on a
//! floor, the modules its module table says never use pingora types name no pingora path, and
//! `mcp-wire` depends only on the crates listed here (so "no pingora, tokio or clock" is kept by
//! its `Cargo.toml` and by this list). The tables are data: placing a module is one edit there.

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

/// The module a file of `gateway/src` is: `a/b.rs` and `a/b/mod.rs` are `a::b`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut path: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if path.last().is_some_and(|l| l == "mod" || l == "lib") {
        path.pop();
    }
    path
}

/// `gateway/src/x.rs` as the failure messages write it.
fn shown(file: &Path) -> String {
    let rel = file.strip_prefix(repo()).unwrap_or(file);
    rel.display().to_string()
}

/// Every path into the crate written in `gateway/src` (`lib.rs`, the root, aside).
fn gateway_references() -> Vec<(PathBuf, source::Reference)> {
    let src = repo().join("gateway/src");
    let mut out = Vec::new();
    for file in rust_files(&src) {
        let module = module_of(&src, &file);
        if module.is_empty() {
            continue;
        }
        // the binary is a crate of its own: there the library is `mcp_gateway`
        let root = if module == ["main"] {
            "mcp_gateway"
        } else {
            "crate"
        };
        for r in source::references(&read(&file), &module, root) {
            out.push((file.clone(), r));
        }
    }
    out
}

#[test]
fn every_module_of_the_gateway_is_on_a_floor_and_every_floor_entry_exists() {
    let floors = doc::floors(&architecture());
    let src = repo().join("gateway/src");
    let mut problems = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let module = name.strip_suffix(".rs").unwrap_or(&name).to_owned();
        if name == "lib.rs" || !(path.is_dir() || name.ends_with(".rs")) {
            continue;
        }
        if floors.row_of(&[module]).is_none() {
            problems.push(format!("gateway/src/{name} is on no floor"));
        }
    }
    for row in &floors.rows {
        if !src.join(&row.entry).exists() {
            problems.push(format!(
                "floor {}: `{}` is not in gateway/src",
                row.floor, row.entry
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "docs/architecture.md, \"Floors: which way imports point\", and gateway/src disagree \
         (add the module to the table, or take the row out):\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn no_module_imports_a_module_on_a_higher_floor() {
    let floors = doc::floors(&architecture());
    let mut upward = Vec::new();
    for (file, r) in gateway_references() {
        let (Some(from), Some(to)) = (floors.row_of(&r.from), floors.row_of(&r.to)) else {
            if floors.row_of(&r.from).is_some() {
                upward.push(format!(
                    "{}:{}: `crate::{}` is in no module of the floors table",
                    shown(&file),
                    r.line,
                    r.to.join("::")
                ));
            }
            continue; // a file on no floor: the test above names it
        };
        if to.floor > from.floor {
            upward.push(format!(
                "{}:{}: `crate::{}` is on floor {} (`{}`), above this file's floor {} (`{}`)",
                shown(&file),
                r.line,
                r.to.join("::"),
                to.floor,
                to.entry,
                from.floor,
                from.entry
            ));
        }
    }
    assert!(
        upward.is_empty(),
        "imports that point up the floors of docs/architecture.md (\"Floors: which way imports \
         point\"); give the lower module a narrow handle, move the shared part down, or place \
         the module on another floor in the table:\n  {}",
        upward.join("\n  ")
    );
}

#[test]
fn the_modules_of_one_floor_import_each_other_without_circles() {
    let floors = doc::floors(&architecture());
    // entry -> entries of the same floor it imports, with one place that does
    let mut edges: BTreeMap<&str, BTreeMap<&str, String>> = BTreeMap::new();
    for (file, r) in gateway_references() {
        let (Some(from), Some(to)) = (floors.row_of(&r.from), floors.row_of(&r.to)) else {
            continue;
        };
        if from.floor == to.floor && from.entry != to.entry {
            edges
                .entry(&from.entry)
                .or_default()
                .entry(&to.entry)
                .or_insert_with(|| format!("{}:{}", shown(&file), r.line));
        }
    }
    // depth-first: a node met again while still on the path closes a circle
    fn visit<'a>(
        node: &'a str,
        edges: &BTreeMap<&'a str, BTreeMap<&'a str, String>>,
        path: &mut Vec<&'a str>,
        done: &mut Vec<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(at) = path.iter().position(|n| *n == node) {
            return Some(path[at..].iter().copied().chain([node]).collect());
        }
        if done.contains(&node) {
            return None;
        }
        path.push(node);
        for next in edges.get(node).into_iter().flat_map(|e| e.keys()) {
            if let Some(circle) = visit(next, edges, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.push(node);
        None
    }
    let (mut path, mut done) = (Vec::new(), Vec::new());
    for node in edges.keys() {
        if let Some(circle) = visit(node, &edges, &mut path, &mut done) {
            let steps: Vec<String> = circle
                .windows(2)
                .map(|w| format!("`{}` -> `{}` ({})", w[0], w[1], edges[w[0]][w[1]]))
                .collect();
            panic!("an import circle on one floor:\n  {}", steps.join("\n  "));
        }
    }
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
