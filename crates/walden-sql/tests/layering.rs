//! The SQL layer's modules stay in one direction: every `crate::…` path in a module of
//! crates/walden-sql/src names a module of its own layer or of a lower one, in the order
//! the SQL layer table of docs/ARCHITECTURE.md gives (between its `sql-layering: begin`
//! and `sql-layering: end` markers). What could go wrong: an expression that calls the
//! planner, a planner that reaches into a statement or the session, and with it a circle
//! that makes every file depend on every other. A new module must be placed in the table.
//!
//! A module is a top-level name: `dml.rs` and `dml/upsert.rs` are both `dml`. `super::`
//! paths are not checked: they stay inside their module (a folder's files, a file's
//! tests).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Imports that go up today, as (module, the higher module it imports, the change that
/// removes it). Keep this short; an entry nobody needs any more fails the test.
const KNOWN_EXCEPTIONS: &[(&str, &str, &str)] = &[];

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The text between `<!-- sql-layering: begin -->` and `<!-- sql-layering: end -->`.
fn layer_table() -> String {
    let doc = crate_dir().join("../../docs/ARCHITECTURE.md");
    let text = std::fs::read_to_string(&doc).expect("docs/ARCHITECTURE.md");
    let start = text
        .find("<!-- sql-layering: begin -->")
        .expect("a `<!-- sql-layering: begin -->` marker in docs/ARCHITECTURE.md");
    let end = text
        .find("<!-- sql-layering: end -->")
        .expect("a `<!-- sql-layering: end -->` marker");
    assert!(
        start < end,
        "the SQL layer table's markers are out of order"
    );
    text[start..end].to_string()
}

/// Module → layer index (0 the lowest), from the table's `layer: module module …` lines,
/// and the layers' names (each the folder of src that holds its modules).
fn layers() -> (BTreeMap<String, usize>, Vec<String>) {
    let mut map = BTreeMap::new();
    let mut names = Vec::new();
    for line in layer_table().lines().skip(1) {
        let Some((layer, modules)) = line.split_once(':') else {
            continue;
        };
        for m in modules.split_whitespace() {
            assert!(
                map.insert(m.to_string(), names.len()).is_none(),
                "{m} is listed twice"
            );
        }
        names.push(layer.trim().to_string());
    }
    assert!(
        names.len() > 5,
        "the SQL layer table has {} layers",
        names.len()
    );
    (map, names)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a source file belongs to, and the layer folder it lies in: a layer's
/// folder holds its modules (`planning/select/block.rs` → `select` in `planning`), and
/// a layer named for its main module keeps that module's own files beside the others
/// (`session/dispatch.rs` → `session`, `session/copy/to.rs` → `copy`, both in `session`).
fn module_of<'n>(
    src: &Path,
    file: &Path,
    layer_of: impl Fn(&str) -> Option<&'n str>,
) -> (String, String) {
    let rel = file.strip_prefix(src).expect("under src");
    let parts: Vec<String> = rel
        .components()
        .map(|c| {
            c.as_os_str()
                .to_str()
                .expect("UTF-8")
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    let folder = parts[0].clone();
    let module = match parts.get(1) {
        Some(m) if layer_of(m) == Some(folder.as_str()) => m.clone(),
        _ => folder.clone(),
    };
    (module, folder)
}

/// Code without comments (line comments, doc comments; block comments are not used).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn name_at(text: &str) -> String {
    text.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The names each `crate::` path starts with: `crate::select::Catalog` → `select`,
/// `crate::{a, b::{c, d}}` → `a`, `b`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            names.push(name_at(rest));
            continue;
        };
        // The group's top-level items, each up to a comma at depth 0.
        let mut depth = 0;
        let mut item_start = 0;
        for (at, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    names.push(name_at(&group[item_start..at]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    names.push(name_at(&group[item_start..at]));
                    item_start = at + 1;
                }
                _ => {}
            }
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

/// Items `lib.rs` re-exports at the crate root (`pub use error::{code, SqlError};`),
/// and the module each comes from: `crate::SqlError` is a path into `error`.
fn root_items() -> BTreeMap<String, String> {
    let lib = std::fs::read_to_string(crate_dir().join("src/lib.rs")).expect("lib.rs");
    let mut items = BTreeMap::new();
    for statement in code_of(&lib).split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        // `pub use {base::value, …}`: modules by their own names, which the table lists.
        if path.starts_with('{') {
            continue;
        }
        let (module, rest) = path.split_once("::").expect("pub use module::item");
        let rest = rest.trim_start_matches('{').trim_end_matches('}');
        for item in rest.split(',') {
            let name = name_at(item);
            if !name.is_empty() {
                items.insert(name, module.trim().to_string());
            }
        }
    }
    assert!(!items.is_empty(), "lib.rs re-exports nothing");
    items
}

#[test]
fn no_module_imports_a_higher_layer() {
    let (layers, names) = layers();
    let root = root_items();
    let src = crate_dir().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut violations = Vec::new();
    let mut used_exceptions = Vec::new();
    let mut modules = Vec::new();
    for file in &files {
        let (module, folder) = module_of(&src, file, |m| layers.get(m).map(|&l| names[l].as_str()));
        if module == "lib" {
            continue;
        }
        if names.contains(&module) && !layers.contains_key(&module) {
            // A layer's folder's mod.rs: it declares the layer's modules, and imports none.
            let code = code_of(&std::fs::read_to_string(file).expect("read"));
            assert!(
                crate_paths(&code).is_empty(),
                "{}: a layer's mod.rs only declares its modules",
                file.display()
            );
            continue;
        }
        let Some(&own) = layers.get(&module) else {
            panic!("module `{module}` is not in docs/ARCHITECTURE.md's SQL layer table");
        };
        assert_eq!(
            names[own],
            folder,
            "{}: module `{module}` is in the `{}` layer, so it lives in src/{}/",
            file.display(),
            names[own],
            names[own]
        );
        modules.push(module.clone());
        let code = code_of(&std::fs::read_to_string(file).expect("read"));
        for name in crate_paths(&code) {
            // A module is named by its own name (`crate::select`, which lib.rs
            // re-exports), not through its layer's folder (`crate::planning::select`).
            assert!(
                !names.contains(&name) || layers.contains_key(&name),
                "{}: `crate::{name}::…` goes through a layer's folder; name the module itself",
                file.display()
            );
            let target = root.get(&name).cloned().unwrap_or_else(|| name.clone());
            let Some(&theirs) = layers.get(&target) else {
                panic!(
                    "{}: `crate::{name}` is neither a module in the SQL layer table nor a root item",
                    file.display()
                );
            };
            if theirs <= own {
                continue;
            }
            if KNOWN_EXCEPTIONS
                .iter()
                .any(|(from, to, _)| *from == module && *to == target)
            {
                used_exceptions.push((module.clone(), target));
                continue;
            }
            violations.push(format!(
                "{} (layer of `{module}`) imports `crate::{name}` (layer of `{target}`, higher)",
                file.display()
            ));
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
    // An exception nobody needs any more must go, so that the layer it hid is checked.
    for (from, to, why) in KNOWN_EXCEPTIONS {
        assert!(
            used_exceptions.iter().any(|(f, t)| f == from && t == to),
            "the exception {from} → {to} ({why}) is no longer needed: remove it"
        );
    }
    // The table names only modules there are, so that it stays true.
    for m in layers.keys() {
        assert!(
            modules.contains(m),
            "the SQL layer table lists `{m}`, which is no module of crates/walden-sql/src"
        );
    }
}

#[test]
fn the_checker_sees_upward_paths() {
    let code = code_of(
        "use crate::{expr, bind::{Binder, Scope},\n  guard::Guard};\n// crate::session\nlet x = crate::select::eval(crate::value::f());",
    );
    assert_eq!(
        crate_paths(&code),
        vec!["expr", "bind", "guard", "select", "value"]
    );
    assert_eq!(
        root_items().get("SqlError").map(String::as_str),
        Some("error")
    );
}
