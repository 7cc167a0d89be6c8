//! The `Vfs` and `VfsFile` implementations of the simulator: every call takes the one
//! state lock and runs as one operation on the simulated disk.

use super::path::normalize;
use super::state::{SimLockState, State};
use super::{lock_state, SimVfs};
use crate::vfs::{FileLock, LockMode, OpenMode, Vfs, VfsFile};
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

impl Vfs for SimVfs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        let name = normalize(path);
        let (inode, epoch) = self.lock().open(&name, mode)?;
        // The handle is built after the lock is released: its Drop takes the lock.
        Ok(Arc::new(SimFile {
            state: Arc::clone(&self.state),
            inode,
            epoch,
            name,
            read_only: mode == OpenMode::ReadOnly,
        }))
    }

    fn try_lock(&self, path: &Path, mode: LockMode) -> io::Result<Option<Box<dyn FileLock>>> {
        let name = normalize(path);
        let mut state = self.lock();
        state.check_power()?;
        let epoch = state.epoch;
        let exclusive = mode == LockMode::Exclusive;
        let held = state
            .locks
            .get(&name)
            .filter(|l| l.epoch == epoch && l.holders > 0)
            .copied();
        let next = match held {
            None => SimLockState {
                epoch,
                exclusive,
                holders: 1,
            },
            Some(l) if !l.exclusive && !exclusive => SimLockState {
                holders: l.holders + 1,
                ..l
            },
            Some(_) => return Ok(None),
        };
        state.locks.insert(name.clone(), next);
        drop(state);
        Ok(Some(Box::new(SimLock {
            state: Arc::clone(&self.state),
            name,
            epoch,
        })))
    }

    fn lock_holder(&self, path: &Path) -> Option<u32> {
        let state = self.lock();
        let l = state.locks.get(&normalize(path))?;
        (l.epoch == state.epoch && l.exclusive).then(std::process::id)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let name = normalize(path);
        let state = self.lock();
        state.check_power()?;
        Ok(state.names.contains_key(&name) || state.dir_exists(&name))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.lock().rename(&normalize(from), &normalize(to))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.lock().remove(&normalize(path))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.lock().sync_dir(&normalize(dir))
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.lock().create_dir_all(&normalize(dir))
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.lock().list_dir(&normalize(dir))
    }
}

/// A held simulated lock; dropping it releases it (unless a restart already did).
struct SimLock {
    state: Arc<Mutex<State>>,
    name: String,
    epoch: u64,
}

impl FileLock for SimLock {}

impl Drop for SimLock {
    fn drop(&mut self) {
        let mut state = lock_state(&self.state);
        if let Some(l) = state.locks.get_mut(&self.name) {
            if l.epoch == self.epoch {
                l.holders = l.holders.saturating_sub(1);
            }
        }
    }
}

/// A handle on a simulated file, valid for the boot epoch it was opened in.
pub(super) struct SimFile {
    state: Arc<Mutex<State>>,
    pub(super) inode: u64,
    pub(super) epoch: u64,
    /// The name the file was opened under, for per-name write accounting.
    pub(super) name: String,
    /// Opened with `OpenMode::ReadOnly`: writes fail.
    read_only: bool,
}

fn read_only_error() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, "file opened read-only")
}

impl SimFile {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock_state(&self.state)
    }
}

impl VfsFile for SimFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.lock().read(self.epoch, self.inode, buf, offset)
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if self.read_only {
            return Err(read_only_error());
        }
        self.lock().write(self, buf, offset)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.lock().sync_data(self.epoch, self.inode)
    }

    fn preallocate(&self, len_bytes: u64) -> io::Result<()> {
        if self.read_only {
            return Err(read_only_error());
        }
        self.lock().preallocate(self.epoch, self.inode, len_bytes)
    }

    fn len(&self) -> io::Result<u64> {
        self.lock().len(self.epoch, self.inode)
    }

    fn truncate(&self, len_bytes: u64) -> io::Result<()> {
        if self.read_only {
            return Err(read_only_error());
        }
        self.lock().truncate(self, len_bytes)
    }
}

impl Drop for SimFile {
    fn drop(&mut self) {
        let mut state = self.lock();
        // Handles of an older epoch were already forgotten by the restart.
        if state.epoch != self.epoch {
            return;
        }
        if let Some(node) = state.inodes.get_mut(&self.inode) {
            node.open_handles = node.open_handles.saturating_sub(1);
        }
        state.collect(self.inode);
    }
}
