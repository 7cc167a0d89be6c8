//! Crash simulation: what could go wrong is a lost acknowledged commit, a visible
//! uncommitted change, or a torn page returning wrong data, after a crash at any write or
//! sync. Heap tables in every protection mode; undo tables (in-place changes rolled back
//! from the WAL after a crash) in `cow` and `full-page`. WALDEN_CRASH_ITERS sets the crash
//! points per run (CI default 2,000).
#![allow(clippy::unwrap_used)]

use walden::crashsim::{run, CrashConfig};
use walden::{Protection, TableKind};

mod support;
use support::env_u64;

fn iterations() -> u64 {
    env_u64("WALDEN_CRASH_ITERS", 2000)
}

fn check(protection: Protection, kind: TableKind, seed: u64) {
    let report = run(&CrashConfig {
        protection,
        kind,
        seed,
        iterations: iterations(),
        // Every mode with each codec: the databases of the run take turns.
        compression: None,
    });
    eprintln!("{report:?}");
    assert_eq!(report.kind, kind.name());
    assert_eq!(report.crash_points, iterations());
    assert!(report.recoveries >= report.crash_points);
    assert!(report.committed_checked > 0);
    assert_eq!(report.committed_lost, 0, "{:?}", report.failures);
    assert_eq!(report.uncommitted_visible, 0, "{:?}", report.failures);
    assert_eq!(report.wrong_results, 0, "{:?}", report.failures);
    if protection != Protection::None {
        assert_eq!(report.torn_pages_detected, 0);
    }
}

#[test]
fn crash_cow() {
    check(Protection::Cow, TableKind::Heap, 1);
}

#[test]
fn crash_full_page() {
    check(Protection::FullPage, TableKind::Heap, 2);
}

#[test]
fn crash_none() {
    check(Protection::None, TableKind::Heap, 3);
}

#[test]
fn crash_cow_undo() {
    check(Protection::Cow, TableKind::Undo, 4);
}

#[test]
fn crash_full_page_undo() {
    check(Protection::FullPage, TableKind::Undo, 5);
}
