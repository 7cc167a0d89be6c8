//! One simulated file's bytes: what reads see, what is durable, and the writes in between,
//! with what a power loss does to those writes.

use super::fault::CrashMode;
use crate::rng::SimRng;
use crate::vfs::SECTOR_SIZE_BYTES;
use std::io;

/// The largest file the simulator holds. Larger writes fail with EFBIG instead of trying
/// to allocate, so that a bogus offset computed from corrupt data cannot exhaust memory.
const MAX_FILE_SIZE_BYTES: u64 = 1 << 30;

/// One write not yet made durable.
#[derive(Debug, Clone)]
pub(super) struct PendingWrite {
    pub(super) offset: usize,
    pub(super) bytes: Vec<u8>,
    /// A truncation to `offset` instead of a write (`bytes` empty).
    pub(super) truncate: bool,
}

#[derive(Debug, Default)]
pub(super) struct Inode {
    /// What survives a power loss.
    pub(super) durable: Vec<u8>,
    /// What reads see: `durable` with every write of `pending` applied in order.
    pub(super) current: Vec<u8>,
    /// Writes since the last `sync_data`, oldest first.
    pub(super) pending: Vec<PendingWrite>,
    /// Live handles of the current boot epoch; the inode is kept while any exist even
    /// if no name refers to it, as an unlinked but open file is on Unix.
    pub(super) open_handles: u64,
}

/// The byte range `[offset, offset + len)` as indices, or EFBIG if it ends past the
/// simulator's size limit.
pub(super) fn checked_range(offset: u64, len: usize) -> io::Result<(usize, usize)> {
    let too_big = || io::Error::from_raw_os_error(libc::EFBIG);
    let end = u64::try_from(len)
        .ok()
        .and_then(|len| offset.checked_add(len))
        .filter(|&end| end <= MAX_FILE_SIZE_BYTES)
        .ok_or_else(too_big)?;
    let start = usize::try_from(offset).map_err(|_| too_big())?;
    let end = usize::try_from(end).map_err(|_| too_big())?;
    Ok((start, end))
}

/// Writes `bytes` at `offset`, zero-filling any gap past the end.
fn write_into(target: &mut Vec<u8>, offset: usize, bytes: &[u8]) {
    let end = offset + bytes.len();
    if target.len() < end {
        target.resize(end, 0);
    }
    target[offset..end].copy_from_slice(bytes);
}

impl Inode {
    /// Records a write: visible now, durable only after `sync_data`.
    pub(super) fn write(&mut self, offset: usize, bytes: &[u8]) {
        // A write of nothing changes nothing, not even the length (as pwrite).
        if bytes.is_empty() {
            return;
        }
        write_into(&mut self.current, offset, bytes);
        self.pending.push(PendingWrite {
            offset,
            bytes: bytes.to_vec(),
            truncate: false,
        });
    }

    /// Records a truncation: visible now, durable only after `sync_data`.
    pub(super) fn truncate(&mut self, len: usize) {
        self.current.truncate(len);
        self.pending.push(PendingWrite {
            offset: len,
            bytes: Vec::new(),
            truncate: true,
        });
    }

    /// Applies one pending write (or truncation) to the durable image.
    fn apply(durable: &mut Vec<u8>, write: &PendingWrite) {
        if write.truncate {
            durable.truncate(write.offset);
        } else {
            write_into(durable, write.offset, &write.bytes);
        }
    }

    pub(super) fn sync(&mut self) {
        for write in std::mem::take(&mut self.pending) {
            Self::apply(&mut self.durable, &write);
        }
        // The invariant makes this a no-op; it is kept so that a broken invariant cannot
        // leave reads and the durable image disagreeing on the length.
        self.durable.resize(self.current.len(), 0);
    }

    /// Applies a power loss to the pending writes, then starts the new boot from what is
    /// durable.
    pub(super) fn crash(&mut self, mode: CrashMode, rng: &mut SimRng) {
        for write in std::mem::take(&mut self.pending) {
            let fate = match mode {
                CrashMode::Random => match rng.below(3) {
                    0 => CrashMode::DropUnsynced,
                    1 => CrashMode::KeepUnsynced,
                    _ => CrashMode::TearUnsynced,
                },
                other => other,
            };
            match fate {
                CrashMode::KeepUnsynced => Self::apply(&mut self.durable, &write),
                // A truncation is kept or lost whole.
                CrashMode::TearUnsynced if write.truncate => {
                    if rng.below(2) == 0 {
                        Self::apply(&mut self.durable, &write);
                    }
                }
                CrashMode::TearUnsynced => self.tear(&write, rng),
                CrashMode::DropUnsynced | CrashMode::Random => {}
            }
        }
        self.current = self.durable.clone();
        self.open_handles = 0;
    }

    /// Lets each sector-aligned piece of `write` survive with probability 1/2.
    fn tear(&mut self, write: &PendingWrite, rng: &mut SimRng) {
        // The sector size is a small constant, so the conversion cannot truncate.
        let sector = SECTOR_SIZE_BYTES as usize;
        let end = write.offset + write.bytes.len();
        let mut start = write.offset;
        while start < end {
            let piece_end = ((start / sector + 1) * sector).min(end);
            if rng.below(2) == 0 {
                let from = start - write.offset;
                let to = piece_end - write.offset;
                write_into(&mut self.durable, start, &write.bytes[from..to]);
            }
            start = piece_end;
        }
    }
}
