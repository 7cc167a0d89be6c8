//! The `walden` binary as a user runs it: what could go wrong is output that scripts cannot
//! parse, wrong figures, a WAL dump that misses records, leftover temporary directories, or
//! an error that panics instead of printing one line and exiting 1.

use std::path::Path;
use std::process::{Output, Stdio};

use walden::{Column, ColumnType, Database, Options, Schema, Value, WalCompression};

mod support;
use support::{run, walden};

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8")
}

fn parse_object(line: &str) -> serde_json::Map<String, serde_json::Value> {
    match serde_json::from_str(line) {
        Ok(serde_json::Value::Object(map)) => map,
        other => panic!("not a JSON object: {line:?} ({other:?})"),
    }
}

fn u64_field(map: &serde_json::Map<String, serde_json::Value>, key: &str) -> u64 {
    map.get(key)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or_else(|| panic!("field {key:?} missing or not an unsigned integer in {map:?}"))
}

#[test]
fn bench_insert_json_for_every_mode() {
    for mode in ["cow", "full-page", "none"] {
        let child = walden()
            .args([
                "bench", "insert", "--rows", "20000", "--json", "--mode", mode,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the walden binary starts");
        let pid = child.id();
        let out = child.wait_with_output().expect("bench finishes");
        assert!(out.status.success(), "{mode}: {out:?}");
        let text = stdout(&out);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{mode}: exactly one JSON object: {text:?}");
        let map = parse_object(lines[0]);
        let keys: Vec<&str> = map.keys().map(String::as_str).take(7).collect();
        assert_eq!(
            keys,
            [
                "mode",
                "wal_compression",
                "rows",
                "seconds",
                "rows_per_sec",
                "wal_bytes",
                "raw_row_bytes"
            ]
        );
        assert_eq!(map.get("mode").and_then(|v| v.as_str()), Some(mode));
        assert_eq!(u64_field(&map, "rows"), 20_000);
        assert_eq!(u64_field(&map, "raw_row_bytes"), 2_480_000);
        assert!(u64_field(&map, "wal_bytes") > 0, "{map:?}");
        assert!(u64_field(&map, "data_file_bytes") > 0, "{map:?}");
        let seconds = map.get("seconds").and_then(serde_json::Value::as_f64);
        assert!(seconds.is_some_and(|s| s > 0.0), "{map:?}");
        assert_no_bench_dir_left(pid);
    }
}

/// The benchmark's database lives in `walden-bench-<pid>-<nanos>` and must be gone.
fn assert_no_bench_dir_left(pid: u32) {
    let prefix = format!("walden-bench-{pid}-");
    let entries = std::fs::read_dir(std::env::temp_dir()).expect("temp dir is readable");
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with(&prefix), "left behind: {name}");
    }
}

/// A small database made with the library: one table, 1000 rows in one transaction.
fn make_database(dir: &Path) {
    let opts = Options {
        background: false,
        ..Options::default()
    };
    let db = Database::create(dir, opts).expect("create");
    let schema = Schema::new(vec![
        Column::not_null("id", ColumnType::Int8),
        Column::new("name", ColumnType::Text),
    ]);
    db.create_table("t", schema).expect("create table");
    let rows: Vec<Vec<Value>> = (0..1000)
        .map(|i| vec![Value::Int8(i), Value::Text(format!("row {i}"))])
        .collect();
    let mut tx = db.begin();
    tx.insert_many("t", &rows).expect("insert");
    tx.commit().expect("commit");
}

#[test]
fn waldump_lists_records_and_stats() {
    let dir = tempfile::tempdir().expect("temp dir");
    make_database(dir.path());
    let path = dir.path().to_str().expect("temp path is UTF-8");

    let out = run(&["waldump", path]);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    let inserts: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" heap_insert ") || l.contains(" undo_insert "))
        .collect();
    let rows: u64 = inserts
        .iter()
        .map(|l| {
            let after = l
                .split(" rows ")
                .nth(1)
                .expect("an insert record shows rows");
            let n = after.split(' ').next().unwrap_or_default();
            n.parse::<u64>().expect("row count is a number")
        })
        .sum();
    assert_eq!(rows, 1000, "every inserted row is in some insert record");
    assert!(text.lines().all(|l| l.starts_with("lsn ")
        || l.starts_with("end of log at lsn ")
        || l.starts_with("-- ")));
    assert!(
        text.lines().filter(|l| l.ends_with(" commit")).count() >= 2,
        "create table and insert both commit: {text}"
    );
    assert!(
        text.lines()
            .last()
            .is_some_and(|l| l.starts_with("end of log at lsn ")),
        "{text}"
    );

    let out = run(&["waldump", path, "--stats"]);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    let count_of = |kind: &str| -> Option<u64> {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(kind))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
    };
    assert_eq!(
        count_of("undo_insert"),
        Some(inserts.len() as u64),
        "the default table kind is undo: {text}"
    );
    let total = count_of("total").expect("a total line");
    assert!(total > inserts.len() as u64, "{text}");
    assert!(text
        .lines()
        .any(|l| l.starts_with("total") && l.ends_with("100.00%")));
}

/// After checkpoints have recycled segments, the lowest-numbered segment can hold an old
/// stretch of log that ends early; the dump must still reach the live end of the log.
#[test]
fn waldump_after_recycling_reaches_the_live_log() {
    let dir = tempfile::tempdir().expect("temp dir");
    let opts = Options {
        background: false,
        segment_size_bytes: 2 << 20,
        // Uncompressed, so that these rows fill segments.
        wal_compression: WalCompression::Off,
        ..Options::default()
    };
    let db = Database::create(dir.path(), opts).expect("create");
    let schema = Schema::new(vec![Column::new("pad", ColumnType::Text)]);
    db.create_table("t", schema).expect("create table");
    let row = vec![Value::Text("p".repeat(1000))];
    // Six segments of log, a checkpoint that recycles them, then two more segments (which
    // reuse spare segments under new numbers, leaving gaps).
    for i in 0..8 {
        let mut tx = db.begin();
        tx.insert_many("t", (0..2000).map(|_| &row))
            .expect("insert");
        tx.commit().expect("commit");
        if i == 5 {
            db.checkpoint().expect("checkpoint");
        }
    }
    // A last small commit: its record ends the durable log.
    let mut tx = db.begin();
    tx.insert("t", &row).expect("insert");
    let last_xid = tx.xid();
    tx.commit().expect("commit");
    let end_lsn = db.wal_insert_lsn();
    drop(db);
    let segments = std::fs::read_dir(dir.path().join("wal"))
        .expect("wal dir")
        .count();
    assert!(segments > 1, "the test needs several segments");

    let out = run(&["waldump", dir.path().to_str().expect("UTF-8 path")]);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    let last = text.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(&format!("end of log at lsn {end_lsn} ")),
        "{last:?}, expected the end at {end_lsn}"
    );
    let last_record = text
        .lines()
        .rev()
        .find(|l| l.starts_with("lsn "))
        .unwrap_or_default();
    let len = walden::wal::record::record_len(last_xid, 0) as u64;
    assert_eq!(
        last_record,
        format!("lsn {} len {len} xid {last_xid} commit", end_lsn - len)
    );
}

/// `waldump --stats` reads a compressed log and tells the logical log from the physical.
#[test]
fn waldump_stats_on_a_compressed_log() {
    for codec in [WalCompression::Zstd, WalCompression::Lz4] {
        let dir = tempfile::tempdir().expect("temp dir");
        let opts = Options {
            background: false,
            wal_compression: codec,
            ..Options::default()
        };
        let db = Database::create(dir.path(), opts).expect("create");
        let schema = Schema::new(vec![
            Column::new("n", ColumnType::Int4),
            Column::new("pad", ColumnType::Text),
        ]);
        db.create_table("t", schema).expect("create table");
        let mut tx = db.begin();
        let rows: Vec<Vec<Value>> = (0..20_000)
            .map(|i| vec![Value::Int4(i), Value::Text("x".repeat(100))])
            .collect();
        tx.insert_many("t", &rows).expect("insert");
        tx.commit().expect("commit");
        let written = db.stats().wal_bytes_written;
        drop(db);
        let out = run(&[
            "waldump",
            "--stats",
            dir.path().to_str().expect("UTF-8 path"),
        ]);
        assert!(out.status.success(), "{out:?}");
        let text = stdout(&out);
        let frames = text
            .lines()
            .find(|l| l.starts_with("frames "))
            .unwrap_or_else(|| panic!("no frames line: {text}"));
        let number_after = |key: &str| -> u64 {
            let at = frames
                .find(key)
                .unwrap_or_else(|| panic!("{key} in {frames}"))
                + key.len();
            frames[at..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect::<String>()
                .parse()
                .expect("a number")
        };
        let compressed = number_after(&format!("{} ", codec.name()));
        let logical = number_after("logical ");
        let physical = number_after("physical ");
        assert!(compressed > 0, "{frames}");
        assert!(logical > 20_000 * 100, "{frames}");
        assert!(physical * 5 < logical, "{codec}: {frames}");
        assert!(physical <= written, "{frames}: {written} written");
        assert!(
            text.lines()
                .any(|l| l.starts_with("heap_insert") || l.starts_with("undo_insert")),
            "{text}"
        );
    }
}

#[test]
fn waldump_of_a_missing_directory_is_one_line_and_exit_1() {
    let out = run(&["waldump", "/nonexistent"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let err = String::from_utf8(out.stderr).expect("stderr is UTF-8");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err:?}");
    assert!(lines[0].starts_with("walden: "), "{err:?}");
    assert!(lines[0].contains("/nonexistent"), "names the path: {err:?}");
}

#[test]
fn crashtest_short_run_passes() {
    let out = run(&["crashtest", "--iters", "20", "--mode", "cow", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "one object for one mode: {text:?}");
    let map = parse_object(lines[0]);
    assert_eq!(map.get("mode").and_then(|v| v.as_str()), Some("cow"));
    assert_eq!(u64_field(&map, "seed"), 1);
    assert_eq!(u64_field(&map, "crash_points"), 20);
    assert!(u64_field(&map, "committed_checked") > 0, "{map:?}");
    assert!(u64_field(&map, "recoveries") >= 20, "{map:?}");
    for key in [
        "committed_lost",
        "uncommitted_visible",
        "wrong_results",
        "torn_pages_detected",
    ] {
        assert_eq!(u64_field(&map, key), 0, "{key}: {map:?}");
    }
}

#[test]
fn bench_seed_json_reports_undo_for_undo_tables() {
    let out = run(&[
        "bench",
        "seed",
        "--rows",
        "500",
        "--postgres",
        "off",
        "--configs",
        "heap/cow,undo/cow,undo/full-page",
        "--format",
        "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout(&out)).expect("a JSON array");
    assert_eq!(rows.len(), 3 * 6);
    for row in &rows {
        let map = row.as_object().expect("an object");
        let config = map["config"].as_str().expect("config");
        let statement = map["statement"].as_str().expect("statement");
        for key in [
            "wal_bytes",
            "page_images",
            "data_bytes_written",
            "table_bytes",
        ] {
            u64_field(map, key);
        }
        let undo = u64_field(map, "undo_bytes");
        if config == "heap/cow" {
            assert_eq!(undo, 0, "{map:?}");
        }
        if config.starts_with("undo/") && statement == "update_all" {
            // The old value of b for each of the 501 rows, at least.
            assert!(undo > 501 * 4, "{map:?}");
        }
    }
}

/// There is no trust over TCP: the old `--trust` flag is refused (pointing at
/// `--trust-local`), and the help says TCP clients always authenticate.
#[test]
fn serve_has_no_trust_over_tcp() {
    let out = run(&["serve", "--trust", "unused-dir"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("unexpected argument '--trust'") && stderr.contains("--trust-local"),
        "{stderr}"
    );
    let help = stdout(&run(&["serve", "--help"]));
    assert!(
        help.contains("--trust-local") && help.contains("TCP clients always authenticate"),
        "{help}"
    );
    assert!(!Path::new("unused-dir").exists());
}
