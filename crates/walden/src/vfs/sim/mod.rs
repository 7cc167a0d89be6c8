//! The simulated file layer: an in-memory file system that keeps, per file, what is durable
//! and what is only written, loses power on command (dropping, keeping or tearing unsynced
//! writes at 512-byte sectors) and fails chosen calls with EIO or ENOSPC, all replayable
//! from a seed.
//!
//! The model, in brief:
//! - A file is an inode holding `durable` bytes (what survives a power loss), `current`
//!   bytes (what reads see) and the `pending` writes since its last `sync_data`. The
//!   invariant is that applying `pending` in order onto `durable` gives `current`.
//! - Names map to inodes twice: the current names, changed by create, rename and remove,
//!   and the durable names, which catch up for one directory at a time on `sync_dir`.
//!   A file whose directory was never synced vanishes on a crash, as on a real disk.
//! - Directories are plain strings that exist once `create_dir_all` named them or a file
//!   lives in them; they are never lost.
//! - Every mutating call (write, sync, preallocate, rename, remove, sync_dir, an open that
//!   creates) is counted. Calls rejected for their arguments (a missing file, a write past
//!   the size limit) change nothing and are not counted, so the count names exactly the
//!   calls that reached the "disk".

mod fault;
mod file;
mod inode;
mod path;
mod state;

pub use fault::{CrashMode, FaultKind, FaultOps};

use fault::ScheduledFault;
use inode::PendingWrite;
use path::{is_under, normalize};
use state::State;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Counts of successful calls, for tests that measure I/O.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimStats {
    /// Successful `write_all_at` calls.
    pub writes: u64,
    /// Bytes passed to successful `write_all_at` calls (preallocation not included).
    pub bytes_written: u64,
    /// Successful `sync_data` calls.
    pub syncs: u64,
    /// Successful `sync_dir` calls.
    pub dir_syncs: u64,
}

/// An in-memory file system that can lose power and fail calls. Clones share one state.
#[derive(Clone)]
pub struct SimVfs {
    state: Arc<Mutex<State>>,
}

impl SimVfs {
    /// An empty file system whose crash decisions are drawn from `seed`.
    pub fn new(seed: u64) -> SimVfs {
        SimVfs {
            state: Arc::new(Mutex::new(State::new(seed))),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock_state(&self.state)
    }

    /// Schedules a power loss at the `n`-th mutating call from now. That call does not
    /// take effect (a write is left pending, to be torn, kept or dropped by `restart`),
    /// and it and every later call fail with "simulated power loss". `n == 0` loses
    /// power at once.
    pub fn crash_after_ops(&self, n: u64) {
        let mut state = self.lock();
        if n == 0 {
            state.power_lost = true;
            state.crash_at_op = None;
        } else {
            state.crash_at_op = Some(state.ops.saturating_add(n));
        }
    }

    /// Loses power now: every call fails until `restart`.
    pub fn crash_now(&self) {
        let mut state = self.lock();
        state.power_lost = true;
        state.crash_at_op = None;
    }

    /// True between a power loss and the next `restart`.
    pub fn power_lost(&self) -> bool {
        self.lock().power_lost
    }

    /// Boots again after a power loss (or simulates one now if power was never lost):
    /// unsynced writes meet their fate under `mode`, reads and names return to what was
    /// durable, and handles opened before become stale. A fault scheduled with
    /// `fail_nth` that has not fired yet stays scheduled.
    pub fn restart(&self, mode: CrashMode) {
        self.lock().restart(mode);
    }

    /// Makes the `n`-th call from now among those matching `ops` fail with `kind` and
    /// have no effect. One-shot; a later call replaces a fault that has not fired yet.
    /// `n == 0` is taken as 1 (the next matching call).
    pub fn fail_nth(&self, n: u64, ops: FaultOps, kind: FaultKind) {
        self.lock().fault = Some(ScheduledFault {
            countdown: n.max(1),
            ops,
            kind,
            under: None,
        });
    }

    /// As `fail_nth` for writes (`write_all_at`) to files under `dir` alone: the `n`-th
    /// such write from now fails with `kind`.
    pub fn fail_nth_write_under(&self, dir: &Path, n: u64, kind: FaultKind) {
        let mut prefix = dir.to_string_lossy().into_owned();
        if !prefix.ends_with('/') {
            prefix.push('/');
        }
        self.lock().fault = Some(ScheduledFault {
            countdown: n.max(1),
            ops: FaultOps::Write,
            kind,
            under: Some(prefix),
        });
    }

    /// Makes the simulated device hold at most `bytes` (None: no limit): a write or a
    /// preallocation that would grow the files' total length past it fails with
    /// ENOSPC and has no effect, as on a full file system; rewrites in place and
    /// truncations always succeed, and space freed is usable again.
    pub fn set_capacity(&self, bytes: Option<u64>) {
        self.lock().capacity = bytes;
    }

    /// The bytes the files hold now (their total length).
    pub fn bytes_used(&self) -> u64 {
        self.lock().bytes_used()
    }

    /// How many scheduled faults have fired so far.
    pub fn faults_injected(&self) -> u64 {
        self.lock().faults_injected
    }

    /// Mutating calls so far, counted as `crash_after_ops` counts them.
    pub fn ops_count(&self) -> u64 {
        self.lock().ops
    }

    /// Counts of successful writes and syncs so far (never reset by `restart`).
    pub fn stats(&self) -> SimStats {
        self.lock().stats.clone()
    }

    /// Bytes passed to successful writes through handles opened at `prefix` or below it
    /// (whole path components: `db/wal` covers `db/wal/1` but not `db/wal2`).
    pub fn bytes_written_with_prefix(&self, prefix: &Path) -> u64 {
        let prefix = normalize(prefix);
        self.lock()
            .bytes_by_name
            .iter()
            .filter(|(name, _)| is_under(name, &prefix))
            .map(|(_, bytes)| bytes)
            .sum()
    }

    /// What a read of the whole file would see now, or `None` if no such file.
    pub fn file_contents(&self, path: &Path) -> Option<Vec<u8>> {
        let state = self.lock();
        let inode = state.names.get(&normalize(path))?;
        state.inodes.get(inode).map(|node| node.current.clone())
    }

    /// XORs the byte at `offset` with `xor` both in what reads see and in what is
    /// durable, as bit rot would. False if there is no such file or byte.
    pub fn corrupt_byte(&self, path: &Path, offset: u64, xor: u8) -> bool {
        let mut state = self.lock();
        let Some(&inode) = state.names.get(&normalize(path)) else {
            return false;
        };
        let Some(node) = state.inodes.get_mut(&inode) else {
            return false;
        };
        let Ok(at) = usize::try_from(offset) else {
            return false;
        };
        let Some(byte) = node.current.get_mut(at) else {
            return false;
        };
        *byte ^= xor;
        let flipped = *byte;
        if let Some(byte) = node.durable.get_mut(at) {
            *byte ^= xor;
        }
        // Pending writes are flipped too, so that a later sync or crash keeps the damage.
        let mut covered = false;
        for write in &mut node.pending {
            if let Some(byte) = at
                .checked_sub(write.offset)
                .and_then(|i| write.bytes.get_mut(i))
            {
                *byte ^= xor;
                covered = true;
            }
        }
        if !covered && at >= node.durable.len() {
            // The byte lies in a zero-filled gap that only a pending write's extension
            // created; record it so that syncing it keeps the damage.
            node.pending.push(PendingWrite {
                offset: at,
                bytes: vec![flipped],
                truncate: false,
            });
        }
        true
    }

    /// Cuts the file to `len` bytes, both in what reads see and in what is durable. False
    /// if there is no such file or it is shorter than `len`.
    pub fn truncate_file(&self, path: &Path, len: u64) -> bool {
        let mut state = self.lock();
        let Some(&inode) = state.names.get(&normalize(path)) else {
            return false;
        };
        let Some(node) = state.inodes.get_mut(&inode) else {
            return false;
        };
        let Ok(len) = usize::try_from(len) else {
            return false;
        };
        if len > node.current.len() {
            return false;
        }
        node.current.truncate(len);
        node.durable.truncate(len);
        node.pending.retain_mut(|write| {
            write.bytes.truncate(len.saturating_sub(write.offset));
            !write.bytes.is_empty()
        });
        true
    }
}

fn lock_state(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // No code panics while holding the lock, but a poisoned lock must not turn one test
    // failure into a cascade of panics in Drop.
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl fmt::Debug for SimVfs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("SimVfs")
            .field("epoch", &state.epoch)
            .field("ops", &state.ops)
            .field("power_lost", &state.power_lost)
            .field("files", &state.names.len())
            .finish()
    }
}

// The unit tests (in `vfs/tests.rs`) take the file layer's names from here through
// `use super::*`, as they did when the simulator was one file.
#[cfg(test)]
use {
    super::{OpenMode, Vfs, VfsFile, SECTOR_SIZE_BYTES},
    std::{collections::BTreeSet, io},
};

#[cfg(test)]
#[path = "../tests.rs"]
mod tests;
