//! The crate's layout keeps its flow: no module imports one that imports it back. Modules are
//! compared with their siblings (the files and folders of one folder; a folder counts with
//! everything under it), so a circle between two folders shows as well as one between two
//! files. A folder's `mod.rs` and its own children are not siblings: a parent re-exports its
//! children and they use its types, by design.
//!
//! Read from the source text, without a parser: `use` trees (braces expanded) and inline
//! `crate::`, `super::` and `self::` paths, outside comments and the `tests` module at the end
//! of a file. `STEPTOP_LAYOUT_SRC=DIR` checks another tree (an older checkout, say).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module by its path from the crate root (`["input", "tail"]`).
type Module = Vec<String>;

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let root = std::env::var_os("STEPTOP_LAYOUT_SRC").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        PathBuf::from,
    );
    let files = modules(&root);
    assert!(
        files.len() > 50,
        "found only {} modules in {root:?}",
        files.len()
    );
    let mut edges = BTreeSet::new();
    for (module, path) in &files {
        let text = code_of(&std::fs::read_to_string(path).expect("read a source file"));
        for target in paths_in(&text)
            .iter()
            .filter_map(|p| resolve(module, p, &files))
        {
            if &target != module {
                edges.insert((module.clone(), target));
            }
        }
    }
    let circles = circles(&files, &edges);
    assert!(
        circles.is_empty(),
        "modules that import each other (each line: a circle, then the imports in it):\n{}",
        circles.join("\n")
    );
}

/// Every module file under `root` (main.rs and build.rs are not modules of the library).
/// A file or folder name used in more than one place names one thing, seen from each layer
/// that handles it (the GPUs as probed, modelled and drawn). A name that comes back with a
/// second meaning (`event` for TensorBoard's record and for the follower's notice, say) makes
/// a newcomer open the wrong file: it fails here until it is renamed or its one meaning is
/// written down below.
const SHARED_NAMES: &[(&str, &str)] = &[
    (
        "baseline",
        "a finished run shown beside a live one (--baseline)",
    ),
    ("breakdown", "where a step's time goes"),
    ("cluster", "steptop cluster: the command and its table"),
    ("code", "the trainer's Python code from its sampled stacks"),
    ("compare", "steptop compare: the command and its comparison"),
    (
        "config",
        "the config file: read, its diagnosis tables, `steptop config`",
    ),
    ("events", "what a log says happened (OOM, NaN, crashes)"),
    ("gpu", "the GPUs"),
    ("host", "the machine from /proc"),
    ("html", "a self-contained HTML page of a sink's output"),
    ("probe", "the hardware readings and `steptop probe`"),
    (
        "replay",
        "steptop replay: finished files as a live run's messages",
    ),
    ("report", "steptop report: the command and its output"),
    ("stacks", "the trainer's sampled Python stacks"),
    ("stages", "the logged forward stages of a timing block"),
    ("text", "a sink's output as aligned text for a terminal"),
];

#[test]
fn a_name_used_twice_means_one_thing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut seen: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read a source folder") {
            let path = entry.expect("a folder entry").path();
            let name = if path.is_dir() {
                stack.push(path.clone());
                path.file_name()
            } else {
                path.file_stem()
            };
            let name = name.expect("a named entry").to_string_lossy().into_owned();
            if name != "mod" {
                seen.entry(name).or_default().push(path);
            }
        }
    }
    let unexplained: Vec<String> = seen
        .iter()
        .filter(|(name, places)| {
            places.len() > 1 && !SHARED_NAMES.iter().any(|(shared, _)| shared == name)
        })
        .map(|(name, places)| format!("{name}: {places:?}"))
        .collect();
    assert!(
        unexplained.is_empty(),
        "names used in more than one place without one meaning written down:\n{}",
        unexplained.join("\n")
    );
}

fn modules(root: &Path) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read a source folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let rel = path.strip_prefix(root).expect("under the root");
            let name = rel.to_string_lossy();
            let Some(stem) = name.strip_suffix(".rs") else {
                continue;
            };
            if stem == "main" || stem == "build" {
                continue;
            }
            let mut module: Module = stem.split('/').map(String::from).collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                module.pop();
            }
            out.insert(module, path);
        }
    }
    out
}

/// The text that imports: comments and the trailing `tests` module removed.
fn code_of(text: &str) -> String {
    let text = text
        .find("#[cfg(test)]\nmod tests")
        .map_or(text, |at| &text[..at]);
    text.lines()
        .map(|l| l.find("//").map_or(l, |at| &l[..at]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every module path the code names: the paths of its `use` trees, expanded, and the paths
/// written inline from `crate`, `super` or `self`.
fn paths_in(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = find_word(rest, "use ") {
        let tree = &rest[at + 4..];
        let end = tree.find(';').unwrap_or(tree.len());
        let compact: String = tree[..end].chars().filter(|c| !c.is_whitespace()).collect();
        out.extend(expand(&compact));
        rest = &tree[end..];
    }
    for start in ["crate::", "super::", "self::"] {
        let mut rest = code;
        while let Some(at) = find_word(rest, start) {
            let path: String = rest[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            rest = &rest[at + path.len().max(1)..];
            out.push(path);
        }
    }
    out
}

/// `word` where no identifier character comes right before it.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(word) {
        let at = from + i;
        let before = text[..at].chars().next_back();
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// `a::{b, c::{d, self}}` as `a::b`, `a::c::d` and `a::c`.
fn expand(tree: &str) -> Vec<String> {
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap_or(tree).to_string()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
        .into_iter()
        .filter(|item| !item.is_empty())
        .flat_map(expand)
        .map(|item| match item.as_str() {
            "self" => prefix.trim_end_matches("::").to_string(),
            _ => format!("{prefix}{item}"),
        })
        .collect()
}

/// The deepest module a path named from `module` reaches, if it names one of the crate's.
fn resolve(module: &Module, path: &str, files: &BTreeMap<Module, PathBuf>) -> Option<Module> {
    let mut segments = path.split("::").filter(|s| !s.is_empty()).peekable();
    let mut at: Module = match *segments.peek()? {
        "crate" => {
            segments.next();
            Vec::new()
        }
        "super" | "self" => {
            let mut at = module.clone();
            while let Some(&s) = segments.peek() {
                match s {
                    "super" => at.pop(),
                    "self" => None,
                    _ => break,
                };
                segments.next();
            }
            at
        }
        // A child module named directly (`use panes::Pane` inside `ui`).
        first => {
            let mut child = module.clone();
            child.push(first.to_string());
            if !files.contains_key(&child) {
                return None;
            }
            module.clone()
        }
    };
    for s in segments {
        at.push(s.to_string());
        if !files.contains_key(&at) {
            at.pop();
            break;
        }
    }
    Some(at)
}

/// Per folder, the groups of its children that reach one another through imports, each
/// with the imports that close it.
fn circles(files: &BTreeMap<Module, PathBuf>, edges: &BTreeSet<(Module, Module)>) -> Vec<String> {
    let folders: BTreeSet<Module> = files
        .keys()
        .filter(|m| !m.is_empty())
        .map(|m| m[..m.len() - 1].to_vec())
        .collect();
    let mut out = Vec::new();
    for folder in &folders {
        let n = folder.len();
        let child = |m: &Module| (m.len() > n && m[..n] == folder[..]).then(|| m[n].clone());
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            if let (Some(x), Some(y)) = (child(a), child(b))
                && x != y
            {
                graph.entry(x).or_default().insert(y);
            }
        }
        // Two children are in one circle when each reaches the other.
        let reach = |from: &String| {
            let (mut seen, mut todo) = (BTreeSet::new(), vec![from.clone()]);
            while let Some(x) = todo.pop() {
                for y in graph.get(&x).into_iter().flatten() {
                    if seen.insert(y.clone()) {
                        todo.push(y.clone());
                    }
                }
            }
            seen
        };
        let mut placed = BTreeSet::new();
        for x in graph.keys() {
            if placed.contains(x) {
                continue;
            }
            let from_x = reach(x);
            let group: BTreeSet<String> = from_x
                .iter()
                .filter(|y| reach(y).contains(x))
                .cloned()
                .collect();
            if group.is_empty() {
                continue;
            }
            placed.extend(group.iter().cloned());
            let inside: Vec<String> = edges
                .iter()
                .filter(|(a, b)| {
                    child(a).is_some_and(|x| group.contains(&x))
                        && child(b).is_some_and(|y| group.contains(&y))
                        && child(a) != child(b)
                })
                .map(|(a, b)| format!("{} -> {}", a.join("::"), b.join("::")))
                .collect();
            let place = if folder.is_empty() {
                "crate".to_string()
            } else {
                folder.join("/")
            };
            out.push(format!(
                "in {place}: {:?}\n    {}",
                group,
                inside.join("\n    ")
            ));
        }
    }
    out
}
