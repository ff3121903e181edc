//! The files of `gateway/src` as the compiler finds them (from `lib.rs`, by their `mod`
//! declarations, `#[path]` attributes included) and the file each path written in them lands
//! in: the deepest module the path names, and, when that module only brought the item in with
//! a `use` (a re-export, or a parent's import its children reach through `super::`), the file
//! the `use` points to. That is what a file depends on: an import circle is a circle of these.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::source;

/// One file of the crate.
pub struct File {
    pub path: PathBuf,
    /// Its module path (`["session", "store", "memory"]`; `["main"]` for the binary).
    pub module: Vec<String>,
    /// What its `use` statements bring in: local name -> crate path.
    names: Vec<(String, Vec<String>)>,
    /// Every path into the crate it writes.
    pub references: Vec<source::Reference>,
}

/// The crate's files, found from its root.
pub struct Files {
    pub files: Vec<File>,
    by_module: BTreeMap<Vec<String>, usize>,
}

/// `mod name;` declarations of a source file, each with its `#[path]` if it has one.
fn declared(src: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut path = None;
    for mut line in src.lines().map(str::trim) {
        if line.starts_with("//") {
            continue;
        }
        while line.starts_with("#[") {
            if let Some(rest) = line.strip_prefix("#[path = \"") {
                path = rest.split('"').next().map(str::to_owned);
            }
            line = line.split_once(']').map_or("", |(_, rest)| rest.trim());
        }
        if line.is_empty() {
            continue;
        }
        let decl = ["pub(crate) mod ", "pub(super) mod ", "pub mod ", "mod "]
            .iter()
            .find_map(|p| line.strip_prefix(p));
        if let Some(name) = decl.and_then(|d| d.strip_suffix(';')) {
            out.push((name.trim().to_owned(), path.take()));
        } else {
            path = None;
        }
    }
    out
}

impl Files {
    /// Every file of the crate whose root is `src/lib.rs`, with `src/main.rs` (the binary, a
    /// crate of its own that names the library `lib_name`).
    pub fn read(src: &Path, lib_name: &str) -> Files {
        let mut found: Vec<(PathBuf, Vec<String>)> = Vec::new();
        let mut todo = vec![(src.join("lib.rs"), Vec::<String>::new())];
        while let Some((file, module)) = todo.pop() {
            let text = super::read(&file);
            let dir = file.parent().unwrap().to_path_buf();
            let own_dir = match file.file_stem().and_then(|s| s.to_str()) {
                Some("lib" | "mod" | "main") => dir.clone(),
                Some(stem) => dir.join(stem),
                None => dir.clone(),
            };
            for (name, path) in declared(&text) {
                let child = match path {
                    Some(p) => dir.join(p),
                    None if own_dir.join(format!("{name}.rs")).is_file() => {
                        own_dir.join(format!("{name}.rs"))
                    }
                    None => own_dir.join(&name).join("mod.rs"),
                };
                let mut m = module.clone();
                m.push(name);
                todo.push((child, m));
            }
            found.push((file, module));
        }
        let main = src.join("main.rs");
        let mut files = Vec::new();
        let mut by_module = BTreeMap::new();
        for (path, module) in found {
            let text = super::read(&path);
            by_module.insert(module.clone(), files.len());
            files.push(File {
                names: source::used_names(&text, &module, "crate"),
                references: source::references(&text, &module, "crate"),
                path,
                module,
            });
        }
        if main.is_file() {
            let text = super::read(&main);
            let module = vec!["main".to_owned()];
            files.push(File {
                names: Vec::new(),
                references: source::references(&text, &module, lib_name),
                path: main,
                module,
            });
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        by_module = files
            .iter()
            .enumerate()
            .filter(|(_, f)| f.module != ["main"])
            .map(|(i, f)| (f.module.clone(), i))
            .collect();
        Files { files, by_module }
    }

    /// The file a crate path lands in (see the module's header), if it is in the crate.
    pub fn resolve(&self, to: &[String]) -> Option<usize> {
        let mut to = to.to_vec();
        for _ in 0..16 {
            let (len, &file) = (0..=to.len())
                .rev()
                .find_map(|n| self.by_module.get(&to[..n]).map(|f| (n, f)))?;
            let Some(item) = to.get(len) else {
                return Some(file);
            };
            match self.files[file].names.iter().find(|(n, _)| n == item) {
                Some((_, path)) if path.as_slice() != to.as_slice() => {
                    to = path.iter().chain(&to[len + 1..]).cloned().collect();
                }
                _ => return Some(file),
            }
        }
        None
    }

    /// file -> the files it imports, each with the first line that does.
    pub fn edges(&self) -> Vec<BTreeMap<usize, usize>> {
        let mut edges = vec![BTreeMap::new(); self.files.len()];
        for (i, f) in self.files.iter().enumerate() {
            for r in &f.references {
                if let Some(to) = self.resolve(&r.to) {
                    if to != i {
                        edges[i].entry(to).or_insert(r.line);
                    }
                }
            }
        }
        edges
    }
}

/// The strongly connected components of more than one file (Tarjan's algorithm): each is a
/// set of files that import each other, directly or around a circle.
pub fn circles(edges: &[BTreeMap<usize, usize>]) -> Vec<Vec<usize>> {
    struct Walk<'a> {
        edges: &'a [BTreeMap<usize, usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(w: &mut Walk, v: usize) {
        w.index[v] = Some(w.next);
        w.low[v] = w.next;
        w.next += 1;
        w.stack.push(v);
        w.on_stack[v] = true;
        for &u in w.edges[v].keys() {
            match w.index[u] {
                None => {
                    visit(w, u);
                    w.low[v] = w.low[v].min(w.low[u]);
                }
                Some(ui) if w.on_stack[u] => w.low[v] = w.low[v].min(ui),
                Some(_) => {}
            }
        }
        if Some(w.low[v]) == w.index[v] {
            let mut scc = Vec::new();
            while let Some(u) = w.stack.pop() {
                w.on_stack[u] = false;
                scc.push(u);
                if u == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                w.out.push(scc);
            }
        }
    }
    let n = edges.len();
    let mut w = Walk {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if w.index[v].is_none() {
            visit(&mut w, v);
        }
    }
    w.out
}

/// One circle through the files of `scc`, as `a -> b -> a` (a shortest way back to the first).
pub fn one_circle(edges: &[BTreeMap<usize, usize>], scc: &[usize]) -> Vec<usize> {
    let start = scc[0];
    // breadth-first from start's successors back to start, inside the component
    let mut came_from: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &u in edges[v].keys().filter(|u| scc.contains(u)) {
            if u == start {
                let mut path = vec![v];
                let mut at = v;
                while at != start {
                    at = came_from[&at];
                    path.push(at);
                }
                path.reverse();
                path.push(start);
                return path;
            }
            if let std::collections::btree_map::Entry::Vacant(e) = came_from.entry(u) {
                e.insert(v);
                queue.push_back(u);
            }
        }
    }
    scc.to_vec()
}
