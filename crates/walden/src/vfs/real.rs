//! The real file layer: `Vfs` over std::fs and libc on Unix (positioned I/O, fdatasync,
//! fallocate, directory fsync).

use super::{FileLock, LockMode, OpenMode, Vfs, VfsFile};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// The operating system's file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealVfs;

/// An open file. `File` positioned I/O (`pread`/`pwrite`) needs no shared cursor, so the
/// handle can be used from many threads without a lock.
#[derive(Debug)]
struct RealFile {
    file: File,
}

impl VfsFile for RealFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        // std's read_exact_at already retries short reads and reports EOF as UnexpectedEof.
        self.file.read_exact_at(buf, offset)
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn preallocate(&self, len_bytes: u64) -> io::Result<()> {
        preallocate_file(&self.file, len_bytes)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn truncate(&self, len_bytes: u64) -> io::Result<()> {
        let len = self.file.metadata()?.len();
        if len_bytes > len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("truncate to {len_bytes} bytes would grow a {len}-byte file"),
            ));
        }
        self.file.set_len(len_bytes)
    }

    #[cfg(target_os = "linux")]
    fn start_writeback(&self, offset: u64, len: u64) {
        use std::os::unix::io::AsRawFd;
        let (Ok(off), Ok(n)) = (
            libc::off64_t::try_from(offset),
            libc::off64_t::try_from(len),
        ) else {
            return;
        };
        // SAFETY: the descriptor belongs to `self.file`, alive for the call; the call reads
        // no memory of ours. A failure only means no early writeback: ignored.
        unsafe {
            libc::sync_file_range(self.file.as_raw_fd(), off, n, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
}

/// Reserves blocks with fallocate so later writes cannot fail for lack of space. File
/// systems without fallocate get a plain size extension instead, which gives the length
/// but not the reservation.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn preallocate_file(file: &File, len_bytes: u64) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;

    let len = libc::off_t::try_from(len_bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("preallocation of {len_bytes} bytes exceeds off_t"),
        )
    })?;
    if len == 0 {
        // fallocate rejects a zero length with EINVAL; there is nothing to reserve.
        return Ok(());
    }
    loop {
        // SAFETY: the descriptor belongs to `file`, which outlives the call; fallocate
        // reads no memory of ours.
        let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => return extend_to(file, len_bytes),
            _ => return Err(err),
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn preallocate_file(file: &File, len_bytes: u64) -> io::Result<()> {
    extend_to(file, len_bytes)
}

/// Grows the file to `len_bytes` if it is shorter; never shrinks it.
fn extend_to(file: &File, len_bytes: u64) -> io::Result<()> {
    if file.metadata()?.len() < len_bytes {
        file.set_len(len_bytes)?;
    }
    Ok(())
}

impl Vfs for RealVfs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        match mode {
            OpenMode::ReadOnly => {
                options.write(false);
            }
            OpenMode::Existing => {}
            OpenMode::CreateOrOpen => {
                options.create(true);
            }
            OpenMode::CreateNew => {
                options.create_new(true);
            }
        }
        let file = options.open(path)?;
        Ok(Arc::new(RealFile { file }))
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        // A directory's entries reach the disk only through an fsync of the directory
        // itself; fsyncing the files in it does not cover their names.
        File::open(dir)?.sync_all()
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    fn try_lock(&self, path: &Path, mode: LockMode) -> io::Result<Option<Box<dyn FileLock>>> {
        let mut options = OpenOptions::new();
        match mode {
            // A shared holder only reads: it works on a read-only file system too.
            LockMode::Shared => options.read(true),
            LockMode::Exclusive => options.read(true).write(true).create(true),
        };
        let mut file = options.open(path)?;
        // flock(2) locks belong to the open file description, so a second open of the
        // same file in this process conflicts too, as a second process would.
        let taken = match mode {
            LockMode::Shared => file.try_lock_shared(),
            LockMode::Exclusive => file.try_lock(),
        };
        match taken {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => return Ok(None),
            Err(fs::TryLockError::Error(e)) => return Err(e),
        }
        if mode == LockMode::Exclusive {
            file.set_len(0)?;
            writeln!(file, "{}", std::process::id())?;
        }
        Ok(Some(Box::new(RealLock { _file: file })))
    }

    fn lock_holder(&self, path: &Path) -> Option<u32> {
        fs::read_to_string(path).ok()?.trim().parse().ok()
    }
}

/// An flock(2) lock, released when the file is closed.
struct RealLock {
    _file: File,
}

impl FileLock for RealLock {}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // A failed unwrap in a test is a failed test.
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::time::{SystemTime, UNIX_EPOCH};

    /// A fresh directory under the system temp dir, removed when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> TempDir {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            let dir = std::env::temp_dir().join(format!(
                "walden-realvfs-{tag}-{}-{nanos}",
                std::process::id()
            ));
            fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn round_trip() {
        let tmp = TempDir::new("round-trip");
        let vfs = RealVfs;
        let dir = tmp.0.join("db");
        vfs.create_dir_all(&dir).unwrap();
        let a = dir.join("a");

        let err = vfs.open(&a, OpenMode::Existing).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);

        let file = vfs.open(&a, OpenMode::CreateNew).unwrap();
        assert!(file.is_empty().unwrap());
        file.write_all_at(b"hello", 0).unwrap();
        file.write_all_at(b"world", 10).unwrap();
        file.sync_data().unwrap();
        assert_eq!(file.len().unwrap(), 15);
        let mut buf = [0u8; 15];
        file.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"hello\0\0\0\0\0world");

        let mut past_end = [0u8; 4];
        let err = file.read_exact_at(&mut past_end, 13).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);

        let err = vfs.open(&a, OpenMode::CreateNew).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);

        file.preallocate(4096).unwrap();
        assert_eq!(file.len().unwrap(), 4096);
        // Preallocating less than the length never shrinks the file.
        file.preallocate(100).unwrap();
        assert_eq!(file.len().unwrap(), 4096);
        file.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"hello\0\0\0\0\0world");
        drop(file);

        let b = dir.join("b");
        vfs.rename(&a, &b).unwrap();
        vfs.sync_dir(&dir).unwrap();
        assert!(!vfs.exists(&a).unwrap());
        assert!(vfs.exists(&b).unwrap());
        vfs.create_dir_all(&dir.join("sub")).unwrap();
        let c = vfs.open(&dir.join("c"), OpenMode::CreateOrOpen).unwrap();
        c.write_all_at(b"x", 0).unwrap();
        assert_eq!(vfs.list_dir(&dir).unwrap(), vec!["b", "c"]);

        let reopened = vfs.open(&b, OpenMode::Existing).unwrap();
        let mut head = [0u8; 5];
        reopened.read_exact_at(&mut head, 0).unwrap();
        assert_eq!(&head, b"hello");

        vfs.remove(&b).unwrap();
        assert!(!vfs.exists(&b).unwrap());
        assert_eq!(vfs.list_dir(&dir).unwrap(), vec!["c"]);
        let err = vfs.remove(&b).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
