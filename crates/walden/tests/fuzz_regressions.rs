//! Every input the fuzz targets (`fuzz/`, scripts/fuzz.sh) found a panic with, kept in
//! `fuzz/regressions/<target>/` and run again here through what the engine's targets
//! call: WAL records (a slot run's length that overflowed), pages (a page that passes
//! as an index page read through slotted-page readers), the control and checkpoint files.
//! What could go wrong: the bug a fuzzer found coming back.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use walden::control::{checkpoint_path, CheckpointData, Control};
use walden::index_page::IndexPage;
use walden::page::PageRef;
use walden::vfs::{OpenMode, SimVfs, Vfs};

fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, Vec<u8>)> = entries
        .flatten()
        .map(|e| (e.path(), std::fs::read(e.path()).unwrap()))
        .collect();
    out.sort();
    out
}

#[test]
fn wal_record_inputs_decode_or_fail() {
    let all = inputs("wal_record");
    assert!(!all.is_empty(), "the kept inputs are missing");
    for (path, data) in all {
        if let Ok(rec) = walden::owners::owners().decode(&data, 0) {
            assert!(rec.len as usize <= data.len(), "{}", path.display());
            let _ = walden::owners::owners().describe(&rec);
        }
    }
}

#[test]
fn page_inputs_read_within_the_page() {
    let all = inputs("page");
    assert!(!all.is_empty(), "the kept inputs are missing");
    for (_, data) in all {
        let mut page = vec![0u8; 4096];
        let n = data.len().min(page.len());
        page[..n].copy_from_slice(&data[..n]);
        let p = PageRef(&page);
        if p.validate().is_ok() {
            for slot in 0..p.slot_count() {
                let _ = p.tuple_ref(slot);
                let _ = p.tuple(slot);
            }
            let ix = IndexPage(&page);
            if ix.validate().is_ok() {
                for i in 0..ix.count() {
                    let _ = ix.item(i);
                }
            }
        }
    }
}

#[test]
fn control_file_inputs_read_or_fail() {
    for (_, data) in inputs("control_files") {
        let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new(1));
        let dir = Path::new("db");
        vfs.create_dir_all(dir).unwrap();
        for path in [dir.join("control"), checkpoint_path(dir, 1)] {
            let f = vfs.open(&path, OpenMode::CreateNew).unwrap();
            f.write_all_at(&data, 0).unwrap();
        }
        let _ = Control::read(&vfs, dir);
        let _ = CheckpointData::read(&vfs, dir, 1);
    }
}
