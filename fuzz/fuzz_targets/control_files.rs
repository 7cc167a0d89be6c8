//! The control file and a checkpoint file (with its catalog) as an open reads them:
//! any bytes in their place give the file or an error naming it, never a panic.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use walden::control::{checkpoint_path, CheckpointData, Control};
use walden::vfs::{OpenMode, SimVfs, Vfs};

fuzz_target!(|data: &[u8]| {
    let sim = SimVfs::new(1);
    let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
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
});
