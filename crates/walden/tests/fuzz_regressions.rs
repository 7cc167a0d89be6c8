//! Every input the fuzz targets (`fuzz/`, scripts/fuzz.sh) found a panic with, kept in
//! `fuzz/regressions/<target>/` and run again here through the very checks the targets
//! make (`walden::fuzzing`): WAL records (slot and delete runs whose length overflowed),
//! pages (a page that passes as an index page read through slotted-page readers), the
//! control and checkpoint files. What could go wrong: the bug a fuzzer found coming back.
#![allow(clippy::unwrap_used)]

use std::path::Path;

fn inputs(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    paths.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

#[test]
fn wal_record_inputs_decode_or_fail() {
    let all = inputs("wal_record");
    assert!(all.len() >= 3, "the kept inputs are missing");
    all.iter().for_each(|d| walden::fuzzing::wal_record(d));
}

#[test]
fn page_inputs_read_within_the_page() {
    let all = inputs("page");
    assert!(!all.is_empty(), "the kept inputs are missing");
    all.iter().for_each(|d| walden::fuzzing::page(d));
}

#[test]
fn control_file_inputs_read_or_fail() {
    inputs("control_files")
        .iter()
        .for_each(|d| walden::fuzzing::control_files(d));
}
