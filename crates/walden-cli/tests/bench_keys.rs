//! `walden bench keys` as a user runs it, small: what could go wrong is a part that runs
//! fewer statements than asked or loses rows, WAL that is not counted (zero for a part
//! that writes), sizes that are not read, JSON that scripts cannot parse, or a temporary
//! database left behind.

use serde_json::{Map, Value};

mod support;
use support::{run, walden};

const PARTS: [&str; 4] = ["load", "update_uniform", "update_skewed", "lookup"];

fn u64_field(row: &Map<String, Value>, key: &str) -> u64 {
    row.get(key)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("field {key:?} missing or not an unsigned integer in {row:?}"))
}

fn str_field<'a>(row: &'a Map<String, Value>, key: &str) -> &'a str {
    row.get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("field {key:?} missing or not a string in {row:?}"))
}

#[test]
fn bench_keys_json_on_walden_and_sqlite() {
    let child = walden()
        .args([
            "bench",
            "keys",
            "--rows",
            "2000",
            "--updates",
            "2000",
            "--lookups",
            "2000",
            "--configs",
            "default,sqlite",
            "--postgres",
            "off",
            "--format",
            "json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the walden binary starts");
    let pid = child.id();
    let out = child.wait_with_output().expect("bench finishes");
    assert!(out.status.success(), "{out:?}");
    // Its databases lived in `walden-bench-<pid>-<nanos>` and must be gone.
    let prefix = format!("walden-bench-{pid}-");
    for entry in std::fs::read_dir(std::env::temp_dir())
        .expect("temp dir")
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with(&prefix), "left behind: {name}");
    }
    let text = String::from_utf8(out.stdout).expect("stdout is UTF-8");
    let rows: Vec<Map<String, Value>> = match serde_json::from_str(&text) {
        Ok(Value::Array(rows)) => rows
            .into_iter()
            .map(|row| match row {
                Value::Object(map) => map,
                other => panic!("not an object: {other:?}"),
            })
            .collect(),
        other => panic!("not a JSON array: {other:?} in {text}"),
    };
    // Configurations, then key types, then parts, in the order they ran.
    let mut expected = Vec::new();
    for (engine, config) in [("walden", "default"), ("sqlite", "sqlite")] {
        for key in ["bigserial", "uuid"] {
            for part in PARTS {
                expected.push((engine, config, key, part));
            }
        }
    }
    let got: Vec<(&str, &str, &str, &str)> = rows
        .iter()
        .map(|row| {
            (
                str_field(row, "engine"),
                str_field(row, "config"),
                str_field(row, "key_type"),
                str_field(row, "part"),
            )
        })
        .collect();
    assert_eq!(got, expected);

    for row in &rows {
        let what = format!("{row:?}");
        assert_eq!(u64_field(row, "statements"), 2000, "{what}");
        assert_eq!(u64_field(row, "rows"), 2000, "{what}");
        let seconds = row.get("seconds").and_then(Value::as_f64);
        assert!(seconds.is_some_and(|s| s > 0.0), "{what}");
        assert!(u64_field(row, "table_bytes") > 0, "{what}");
        let writes = str_field(row, "part") != "lookup";
        let wal_bytes = u64_field(row, "wal_bytes");
        let logical = u64_field(row, "wal_logical_bytes");
        match str_field(row, "engine") {
            "walden" => {
                // The key index is apart from the table; the default (cow) logs no images.
                assert!(u64_field(row, "index_bytes") > 0, "{what}");
                assert_eq!(u64_field(row, "page_images"), 0, "{what}");
                // The default table kind is undo: updates append undo, inserts do not.
                let updates = str_field(row, "part").starts_with("update");
                assert_eq!(u64_field(row, "undo_bytes") > 0, updates, "{what}");
                if str_field(row, "part") == "load" {
                    // Every row adds a key to the primary key's B-tree.
                    let index_wal = u64_field(row, "index_wal_bytes");
                    assert!(index_wal > 2000 * 8 && index_wal < logical, "{what}");
                }
                if writes {
                    // 2,000 rows of an int and an 8- or 16-byte key take at least
                    // 2,000 records of some bytes each.
                    assert!(logical > 2000 * 8, "{what}");
                    assert!(wal_bytes > 0, "{what}");
                }
            }
            _ => {
                // SQLite's table is its key's B-tree; its WAL is whole pages.
                assert_eq!(u64_field(row, "index_bytes"), 0, "{what}");
                assert_eq!(u64_field(row, "undo_bytes"), 0, "{what}");
                assert_eq!(row.get("index_wal_bytes"), Some(&Value::Null), "{what}");
                assert_eq!(wal_bytes, logical, "{what}");
                if writes {
                    let frames = u64_field(row, "page_images");
                    assert!(frames > 0, "{what}");
                    assert!(wal_bytes >= frames * (4096 + 24), "{what}");
                } else {
                    assert_eq!(wal_bytes, 0, "{what}");
                }
            }
        }
    }
    // A uuid key is twice a bigint's width: its index (Walden) or table (SQLite) is bigger.
    let size = |config: &str, key: &str, field: &str| {
        rows.iter()
            .find(|r| {
                str_field(r, "config") == config
                    && str_field(r, "key_type") == key
                    && str_field(r, "part") == "load"
            })
            .map(|r| u64_field(r, field))
    };
    assert!(size("default", "uuid", "index_bytes") > size("default", "bigserial", "index_bytes"));
    assert!(size("sqlite", "uuid", "table_bytes") > size("sqlite", "bigserial", "table_bytes"));
}

#[test]
fn bench_keys_refuses_an_unknown_configuration() {
    let out = run(&[
        "bench",
        "keys",
        "--configs",
        "heap/none",
        "--postgres",
        "off",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim_end(),
        "walden: bench keys: unknown configuration \"heap/none\"; known: default, heap/cow, \
         undo/cow, heap/full-page, postgres/fpw-on, postgres/fpw-off, sqlite"
    );
}
