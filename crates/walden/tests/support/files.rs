//! Where test databases live: the directory on the simulated file layer, its WAL segment
//! files, and temporary directories on the real file system.

use std::path::{Path, PathBuf};

/// The database directory of tests on the simulated file layer.
pub const DIR: &str = "db";

/// WAL segment `no` of the database in [`DIR`].
pub fn wal_segment(no: u64) -> PathBuf {
    Path::new(DIR).join("wal").join(format!("{no:016x}"))
}

/// A directory under the system's temporary directory, named for the test and this
/// process, empty at first (a leftover of an earlier run is removed, but the directory is
/// not created) and removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("walden-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
