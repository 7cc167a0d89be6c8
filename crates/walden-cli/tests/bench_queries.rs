//! `walden bench queries` as a user runs it, small: the three queries on Walden, SQLite
//! and (when installed) PostgreSQL, whose results the benchmark checks against Walden's —
//! a wrong join, grouping or top 10 fails it — and its table printed, with no scratch
//! directory left behind.
#![allow(clippy::unwrap_used)]

mod support;
use support::run;

#[test]
fn bench_queries_checks_every_engine_against_walden() {
    let before: Vec<_> = scratch_dirs();
    let out = run(&[
        "bench",
        "queries",
        "--orders",
        "5000",
        "--customers",
        "700",
        "--lookups",
        "300",
        "--runs",
        "1",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for line in [
        "point joins",
        "join + GROUP BY over 10%",
        "join, top 10 by amount",
    ] {
        assert!(stdout.contains(line), "{line} missing:\n{stdout}");
    }
    assert!(stdout.contains("sqlite (s)"), "{stdout}");
    if !stderr.contains("PostgreSQL not found") {
        assert!(stdout.contains("walden / postgres"), "{stdout}");
    } else {
        eprintln!("PostgreSQL 15 is not installed: only SQLite was compared");
    }
    assert_eq!(
        scratch_dirs(),
        before,
        "a scratch directory was left behind"
    );
}

fn scratch_dirs() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("walden-bench-queries-"))
        })
        .collect();
    v.sort();
    v
}
