//! The engine's layers stay in one direction: every `crate::…` path in a module of
//! crates/walden/src names a module of its own layer or of a lower one, in the order the
//! layer table of docs/ARCHITECTURE.md gives (between its `layering: begin` and
//! `layering: end` markers). A new module must be placed in that table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Imports that go up today, each with the change that removes it. Keep this short.
const KNOWN_EXCEPTIONS: &[(&str, &str, &str)] = &[];

/// Items `lib.rs` re-exports at the crate root, and the module each comes from.
const ROOT_ITEMS: &[(&str, &str)] = &[
    ("RowId", "error"),
    ("Error", "error"),
    ("Result", "error"),
    ("TableKind", "catalog"),
    ("Database", "engine"),
    ("Options", "engine"),
    ("Reader", "engine"),
    ("RecoveryReport", "engine"),
    ("RowAction", "engine"),
    ("Rows", "engine"),
    ("Transaction", "engine"),
    ("Interval", "calendar"),
    ("Json", "jsonb"),
    ("Column", "schema"),
    ("ColumnType", "schema"),
    ("KeyOrder", "schema"),
    ("Row", "schema"),
    ("RowShape", "schema"),
    ("Schema", "schema"),
    ("Value", "schema"),
    ("StatsSnapshot", "stats"),
    ("TxnStats", "stats"),
    ("Protection", "store"),
    ("TempFile", "temp"),
    ("TempSpace", "temp"),
    ("WalCompression", "wal"),
];

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Module → layer index, from docs/ARCHITECTURE.md.
fn layers() -> BTreeMap<String, usize> {
    let doc = crate_dir().join("../../docs/ARCHITECTURE.md");
    let text = std::fs::read_to_string(&doc).expect("docs/ARCHITECTURE.md");
    let start = text
        .find("<!-- layering: begin -->")
        .expect("a `<!-- layering: begin -->` marker in docs/ARCHITECTURE.md");
    let end = text
        .find("<!-- layering: end -->")
        .expect("a `<!-- layering: end -->` marker");
    let mut map = BTreeMap::new();
    let mut index = 0;
    for line in text[start..end].lines().skip(1) {
        let Some((_, modules)) = line.split_once(':') else {
            continue;
        };
        for m in modules.split_whitespace() {
            assert!(
                map.insert(m.to_string(), index).is_none(),
                "{m} is listed twice"
            );
        }
        index += 1;
    }
    assert!(index > 3, "the layer table has {index} layers");
    map
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

/// The top-level module a source file belongs to (`wal/writer.rs` → `wal`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let first = rel.components().next().expect("a component");
    let name = first.as_os_str().to_str().expect("UTF-8");
    name.trim_end_matches(".rs").to_string()
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

/// The names each `crate::` path starts with: `crate::wal::Wal` → `wal`, `crate::{a, b}`
/// → `a`, `b`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let close = group.find('}').expect("closed group");
            for part in group[..close].split(',') {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    names.push(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            names.push(name);
        }
    }
    names
}

#[test]
fn no_module_imports_a_higher_layer() {
    let layers = layers();
    let root: BTreeMap<&str, &str> = ROOT_ITEMS.iter().copied().collect();
    let src = crate_dir().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    let mut used_exceptions = Vec::new();
    for file in &files {
        let module = module_of(&src, file);
        if module == "lib" {
            continue;
        }
        let Some(&own) = layers.get(&module) else {
            panic!("module `{module}` is not in docs/ARCHITECTURE.md's layer table");
        };
        let code = code_of(&std::fs::read_to_string(file).expect("read"));
        for name in crate_paths(&code) {
            let target = match root.get(name.as_str()) {
                Some(m) => m.to_string(),
                None => name.clone(),
            };
            let Some(&theirs) = layers.get(&target) else {
                panic!(
                    "{}: `crate::{name}` is neither a module in the layer table nor a known root item",
                    file.display()
                );
            };
            if theirs > own {
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
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
    // An exception nobody needs any more must go, so that the layer it hid is checked.
    for (from, to, why) in KNOWN_EXCEPTIONS {
        assert!(
            used_exceptions.iter().any(|(f, t)| f == from && t == to),
            "the exception {from} → {to} ({why}) is no longer needed: remove it"
        );
    }
}

#[test]
fn the_checker_sees_upward_paths() {
    let code =
        code_of("use crate::{wal, buffer::Fetch};\n// crate::engine\nlet x = crate::engine::y;");
    assert_eq!(crate_paths(&code), vec!["wal", "buffer", "engine"]);
}
