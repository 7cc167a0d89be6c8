//! What can go wrong in the simulated file layer: the fates of unsynced writes at a power
//! loss, and the one-shot I/O faults a test schedules.

use std::io;

/// What happens to unsynced writes when power is lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Every unsynced write is lost.
    DropUnsynced,
    /// Every unsynced write reached the disk.
    KeepUnsynced,
    /// Each unsynced write is cut at 512-byte sector boundaries and each piece survives
    /// with probability 1/2.
    TearUnsynced,
    /// Each unsynced write independently gets one of the three fates above.
    Random,
}

/// Which calls an injected fault applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultOps {
    /// `read_exact_at`.
    Read,
    /// `write_all_at` and `preallocate`.
    Write,
    /// `sync_data` and `sync_dir`.
    Sync,
    /// All of the above.
    Any,
}

/// The error an injected fault returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// EIO: the device failed.
    Eio,
    /// ENOSPC: the device is full.
    Enospc,
}

/// The class of a call, for fault matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OpClass {
    Read,
    Write,
    Sync,
}

impl FaultOps {
    pub(super) fn matches(self, class: OpClass) -> bool {
        match self {
            FaultOps::Any => true,
            FaultOps::Read => class == OpClass::Read,
            FaultOps::Write => class == OpClass::Write,
            FaultOps::Sync => class == OpClass::Sync,
        }
    }
}

impl FaultKind {
    pub(super) fn to_error(self) -> io::Error {
        match self {
            FaultKind::Eio => io::Error::from_raw_os_error(libc::EIO),
            FaultKind::Enospc => io::Error::from_raw_os_error(libc::ENOSPC),
        }
    }
}

/// A one-shot fault waiting for its call.
#[derive(Debug, Clone)]
pub(super) struct ScheduledFault {
    /// Matching calls still to come before the one that fails, counting that one: the
    /// fault fires on the call that brings this to zero.
    pub(super) countdown: u64,
    pub(super) ops: FaultOps,
    pub(super) kind: FaultKind,
    /// Only writes to files whose name starts with this match (`fail_nth_under`).
    pub(super) under: Option<String>,
}
