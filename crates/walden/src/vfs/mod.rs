//! The file layer: the one trait through which every byte of Walden's I/O passes.
//!
//! Two implementations: [`RealVfs`] (std::fs and libc on Linux) and [`SimVfs`], an
//! in-memory file system for tests that keeps, per file, what is durable and what is only
//! written, and on a simulated power loss drops, keeps or tears (at 512-byte sectors) the
//! unsynced writes. It can also fail the Nth call with EIO or ENOSPC.

mod real;
mod sim;

pub use real::RealVfs;
pub use sim::{CrashMode, FaultKind, FaultOps, SimStats, SimVfs};

use std::io;
use std::path::Path;
use std::sync::Arc;

/// Size of the unit the disk is assumed to write atomically (see docs/format.md).
pub const SECTOR_SIZE_BYTES: u64 = 512;

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// The file must exist; open it for reading and writing.
    Existing,
    /// Create the file if it is missing (the new name is durable only after `sync_dir`).
    CreateOrOpen,
    /// Create a new file; fail with `AlreadyExists` if one is there.
    CreateNew,
    /// The file must exist; open it for reading only (tools that inspect a database
    /// without changing it, also on a read-only file system). Writes fail.
    ReadOnly,
}

/// How an advisory lock is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// Many holders at once, none exclusive (read-only tools).
    Shared,
    /// One holder, no shared ones (an open database).
    Exclusive,
}

/// An advisory lock, held until dropped.
pub trait FileLock: Send + Sync {}

/// An open file. Positioned reads and writes only; no shared cursor.
pub trait VfsFile: Send + Sync {
    /// Reads `buf.len()` bytes at `offset`. A read past the end of the file returns
    /// `UnexpectedEof`: callers never get a short read silently.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes all of `buf` at `offset`, extending the file if needed.
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Makes every write so far durable (fdatasync).
    fn sync_data(&self) -> io::Result<()>;
    /// Reserves space so that the file is at least `len_bytes` long (fallocate).
    fn preallocate(&self, len_bytes: u64) -> io::Result<()>;
    /// Current length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Shrinks the file to `len_bytes` (ftruncate); a longer length is an error. The new
    /// length is durable only after `sync_data`: a power loss before may keep the old one.
    fn truncate(&self, len_bytes: u64) -> io::Result<()>;
    /// Asks the system to start writing a range back now (sync_file_range WRITE): no
    /// durability promise, it only shortens a later `sync_data`. Default: nothing.
    fn start_writeback(&self, _offset: u64, _len: u64) {}
    /// True when the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
}

/// A file system: names, directories and opening files.
pub trait Vfs: Send + Sync {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>>;
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Atomically replaces `to` with `from` (durable after `sync_dir` of the parent).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Names of the entries of a directory (files only), sorted.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Takes an advisory lock on the file `path` (created if missing, except for a
    /// shared lock, which needs the file to exist) for as long as the returned guard
    /// lives. `Ok(None)`: another holder, in this process or another, has a lock that
    /// conflicts. An exclusive holder's process id is written into the file, for
    /// `lock_holder`.
    fn try_lock(&self, path: &Path, mode: LockMode) -> io::Result<Option<Box<dyn FileLock>>>;
    /// The process id of the exclusive holder of the lock on `path`, if known.
    fn lock_holder(&self, path: &Path) -> Option<u32>;
}

/// Writes `name` in `dir` by way of `name.tmp`, so that a crash leaves the old or the new
/// file, never a mix.
pub fn write_file_atomically(
    vfs: &Arc<dyn Vfs>,
    dir: &Path,
    name: &str,
    bytes: &[u8],
) -> crate::error::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let path = dir.join(name);
    let io_tmp = |e| crate::error::Error::io(&tmp, e);
    if vfs.exists(&tmp).map_err(io_tmp)? {
        vfs.remove(&tmp).map_err(io_tmp)?;
    }
    let f = vfs.open(&tmp, OpenMode::CreateNew).map_err(io_tmp)?;
    f.write_all_at(bytes, 0).map_err(io_tmp)?;
    f.sync_data().map_err(io_tmp)?;
    vfs.rename(&tmp, &path)
        .map_err(|e| crate::error::Error::io(&path, e))?;
    vfs.sync_dir(dir)
        .map_err(|e| crate::error::Error::io(dir, e))?;
    Ok(())
}
