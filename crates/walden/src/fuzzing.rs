//! What the fuzz targets of the engine check (`fuzz/`, scripts/fuzz.sh), here so that
//! the inputs they found are run again by the same code in the tests
//! (`tests/fuzz_regressions.rs`): each takes any bytes and must not panic.

use std::path::Path;
use std::sync::Arc;

use crate::control::{checkpoint_path, CheckpointData, Control};
use crate::index_page::IndexPage;
use crate::page::PageRef;
use crate::vfs::{OpenMode, SimVfs, Vfs};

/// A WAL record as recovery and waldump read it: a record (described) or an error.
pub fn wal_record(data: &[u8]) {
    if let Ok(rec) = crate::owners::owners().decode(data, 0) {
        assert!(rec.len as usize <= data.len());
        let _ = crate::owners::owners().describe(&rec);
    }
}

/// A 4 KiB page of `data` (then zeros) as read from the data file: one that passes
/// `validate` is read at every slot, and as an index page at every item and its high
/// key, within its bytes.
pub fn page(data: &[u8]) {
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
            let _ = ix.high_key();
        }
    }
}

/// `data` in place of the control file and of a checkpoint file, read as an open reads
/// them: the file or an error naming it.
pub fn control_files(data: &[u8]) {
    let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new(1));
    let dir = Path::new("db");
    if vfs.create_dir_all(dir).is_err() {
        return;
    }
    for path in [dir.join("control"), checkpoint_path(dir, 1)] {
        if let Ok(f) = vfs.open(&path, OpenMode::CreateNew) {
            let _ = f.write_all_at(data, 0);
        }
    }
    let _ = Control::read(&vfs, dir);
    let _ = CheckpointData::read(&vfs, dir, 1);
}
