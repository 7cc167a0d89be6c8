//! Temporary files: where a statement's sorts and groupings put what does not fit in
//! `work_mem`, as PostgreSQL's `pgsql_tmp`. They live in the database's `tmp/`
//! directory, one file per user (a sort's runs, a grouping's partitions), written
//! through the file layer like every other byte, and removed when their user drops
//! them. They carry nothing recovery needs: no WAL, no fsync, and whatever a crash
//! leaves in `tmp/` is deleted when the database opens (docs/recovery.md rule 22b). A
//! failed write fails the statement that made it, not the database: these bytes are
//! not the database's, so the rule that refuses writes after a failed write does not
//! apply to them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::stats::Stats;
use crate::vfs::{OpenMode, Vfs, VfsFile};

/// The directory of temporary files, emptied when the database opens.
pub const TEMP_DIR: &str = "tmp";

/// Where a database's temporary files are made. A handle: clones (one per transaction
/// and statement) share it, and its counter of names.
#[derive(Clone)]
pub struct TempSpace(Arc<Space>);

struct Space {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    stats: Arc<Stats>,
    next: AtomicU64,
}

impl std::fmt::Debug for TempSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TempSpace")
            .field("dir", &self.0.dir)
            .finish()
    }
}

impl TempSpace {
    /// The temporary space in `dir`; files a previous run left there are deleted (one
    /// that cannot be stays, and its name is never made again: names count on from
    /// the largest left).
    pub(crate) fn open(vfs: Arc<dyn Vfs>, dir: PathBuf, stats: Arc<Stats>) -> TempSpace {
        let mut next = 0;
        for name in vfs.list_dir(&dir).unwrap_or_default() {
            if vfs.remove(&dir.join(&name)).is_err() {
                if let Ok(n) = u64::from_str_radix(&name, 16) {
                    next = next.max(n.saturating_add(1));
                }
            }
        }
        TempSpace(Arc::new(Space {
            vfs,
            dir,
            stats,
            next: AtomicU64::new(next),
        }))
    }

    /// A new, empty temporary file, removed when the handle is dropped.
    pub fn create(&self) -> Result<TempFile> {
        let s = &self.0;
        let n = s.next.fetch_add(1, Ordering::Relaxed);
        let path = s.dir.join(format!("{n:016x}"));
        let fail = |source| Error::TempFile {
            path: path.clone(),
            op: "create",
            source,
        };
        s.vfs.create_dir_all(&s.dir).map_err(fail)?;
        // Names are never reused within a run, and a file left from an earlier one
        // is only ever read within what this handle wrote.
        let file = s.vfs.open(&path, OpenMode::CreateOrOpen).map_err(fail)?;
        s.stats.temp_files.fetch_add(1, Ordering::Relaxed);
        Ok(TempFile {
            vfs: s.vfs.clone(),
            path,
            file,
            len: 0,
            stats: s.stats.clone(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.0.dir
    }
}

/// One temporary file, written at its end and read anywhere; deleted on drop.
pub struct TempFile {
    vfs: Arc<dyn Vfs>,
    path: PathBuf,
    file: Arc<dyn VfsFile>,
    len: u64,
    stats: Arc<Stats>,
}

impl std::fmt::Debug for TempFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TempFile")
            .field("path", &self.path)
            .field("len", &self.len)
            .finish()
    }
}

impl TempFile {
    /// Writes `bytes` at the end and returns where they start. On an error the file's
    /// length is unchanged: what was written past it is never read.
    pub fn append(&mut self, bytes: &[u8]) -> Result<u64> {
        let at = self.len;
        self.file
            .write_all_at(bytes, at)
            .map_err(|source| Error::TempFile {
                path: self.path.clone(),
                op: "write",
                source,
            })?;
        self.len += bytes.len() as u64;
        self.stats
            .temp_bytes
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(at)
    }

    /// Reads `buf.len()` bytes at `offset`, which must lie within what was appended.
    /// The bytes are the caller's to check (they came from disk).
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let fail = |source| Error::TempFile {
            path: self.path.clone(),
            op: "read",
            source,
        };
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|end| end > self.len)
        {
            return Err(fail(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "{} bytes at {offset} lie past its end ({})",
                    buf.len(),
                    self.len
                ),
            )));
        }
        self.file.read_exact_at(buf, offset).map_err(fail)
    }

    /// Bytes appended so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        // A file that cannot be removed now is removed at the next open.
        let _ = self.vfs.remove(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::{FaultKind, FaultOps, SimVfs};

    fn space(vfs: &SimVfs) -> (TempSpace, Arc<Stats>) {
        let stats = Arc::new(Stats::default());
        let vfs: Arc<dyn Vfs> = Arc::new(vfs.clone());
        (
            TempSpace::open(vfs, PathBuf::from("tmp"), stats.clone()),
            stats,
        )
    }

    #[test]
    fn files_are_written_read_counted_and_removed() {
        let vfs = SimVfs::new(1);
        let (space, stats) = space(&vfs);
        let mut f = space.create().unwrap();
        assert_eq!(f.append(b"hello").unwrap(), 0);
        assert_eq!(f.append(b" world").unwrap(), 5);
        let mut buf = [0u8; 5];
        f.read_at(6, &mut buf).unwrap();
        assert_eq!(&buf, b"world");
        let e = f.read_at(7, &mut buf).unwrap_err();
        assert!(e.to_string().contains("past its end"), "{e}");
        assert_eq!(stats.temp_files.load(Ordering::Relaxed), 1);
        assert_eq!(stats.temp_bytes.load(Ordering::Relaxed), 11);
        let path = f.path().to_path_buf();
        assert!(vfs.exists(&path).unwrap());
        drop(f);
        assert!(!vfs.exists(&path).unwrap());
    }

    #[test]
    fn files_left_by_a_previous_run_are_deleted_at_open() {
        let vfs = SimVfs::new(1);
        let (first, _) = space(&vfs);
        let f = first.create().unwrap();
        std::mem::forget(f);
        assert_eq!(vfs.list_dir(Path::new("tmp")).unwrap().len(), 1);
        let _again = space(&vfs);
        assert!(vfs.list_dir(Path::new("tmp")).unwrap().is_empty());
    }

    #[test]
    fn a_failed_write_is_an_error_naming_the_file_and_keeps_the_length() {
        let vfs = SimVfs::new(1);
        let (space, _) = space(&vfs);
        let mut f = space.create().unwrap();
        f.append(b"abc").unwrap();
        vfs.fail_nth(1, FaultOps::Write, FaultKind::Enospc);
        let e = f.append(&[7u8; 10_000]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("could not write temporary file tmp/"),
            "{e}"
        );
        assert_eq!(f.len(), 3);
        let mut buf = [0u8; 3];
        f.read_at(0, &mut buf).unwrap();
        assert_eq!(&buf, b"abc");
    }
}
