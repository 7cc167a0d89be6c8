//! The transaction-status log: two bits per transaction id (in progress, committed,
//! aborted), kept whole in memory and written to the file `xact` at each checkpoint.
//!
//! The file is written in place without checksums. That is safe because every status
//! change after the checkpoint's redo point is in the WAL (commit and abort records) and
//! redo of a status change is idempotent; a torn write can only leave each 512-byte
//! sector old or new (the sector-atomicity assumption of docs/format.md), and both are
//! states that redo completes. Only bits of xids below the checkpointed `next_xid` are
//! trusted from the file.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};

use crate::error::{Error, Result};
use crate::stats::Stats;
use crate::vfs::{OpenMode, Vfs};

/// The status of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XidStatus {
    InProgress = 0,
    Committed = 1,
    Aborted = 2,
}

struct ClogState {
    bits: Vec<u8>,
    /// Lowest byte changed since the last write-out.
    dirty_from: Option<usize>,
}

/// Transaction status bits. Guarded by the RwLock.
pub struct Clog {
    path: PathBuf,
    state: RwLock<ClogState>,
}

impl Clog {
    /// Loads `xact` (missing or short files read as all in-progress); bits of xids at or
    /// above `next_xid` are cleared because the file may hold them from a torn future.
    pub fn load(vfs: &Arc<dyn Vfs>, dir: &Path, next_xid: u64) -> Result<Clog> {
        let path = dir.join("xact");
        let mut bits = Vec::new();
        if vfs.exists(&path).map_err(|e| Error::io(&path, e))? {
            let f = vfs
                .open(&path, OpenMode::Existing)
                .map_err(|e| Error::io(&path, e))?;
            let len = f.len().map_err(|e| Error::io(&path, e))?;
            let want = next_xid.div_ceil(4).min(len);
            bits = vec![0u8; want as usize];
            f.read_exact_at(&mut bits, 0)
                .map_err(|e| Error::io(&path, e))?;
        }
        let clog = Clog {
            path,
            state: RwLock::new(ClogState {
                bits,
                dirty_from: None,
            }),
        };
        clog.clear_from(next_xid);
        Ok(clog)
    }

    fn clear_from(&self, xid: u64) {
        let mut st = self.state.write().unwrap_or_else(|e| e.into_inner());
        let byte = (xid / 4) as usize;
        if byte < st.bits.len() {
            for x in xid..(byte as u64 + 1) * 4 {
                let sh = (x % 4) * 2;
                st.bits[byte] &= !(3 << sh);
            }
            st.bits.truncate(byte + 1);
        }
    }

    pub fn get(&self, xid: u64) -> XidStatus {
        let st = self.state.read().unwrap_or_else(|e| e.into_inner());
        match st.bits.get((xid / 4) as usize) {
            Some(b) => match (b >> ((xid % 4) * 2)) & 3 {
                1 => XidStatus::Committed,
                2 => XidStatus::Aborted,
                _ => XidStatus::InProgress,
            },
            None => XidStatus::InProgress,
        }
    }

    pub fn set(&self, xid: u64, status: XidStatus) {
        let mut st = self.state.write().unwrap_or_else(|e| e.into_inner());
        let byte = (xid / 4) as usize;
        if st.bits.len() <= byte {
            st.bits.resize(byte + 1, 0);
        }
        let sh = (xid % 4) * 2;
        st.bits[byte] = (st.bits[byte] & !(3 << sh)) | ((status as u8) << sh);
        st.dirty_from = Some(st.dirty_from.map_or(byte, |d| d.min(byte)));
    }

    /// Writes the changed part of the file and syncs it (at a checkpoint). Bits set
    /// while it writes stay marked dirty for the next checkpoint.
    pub fn write_out(&self, vfs: &Arc<dyn Vfs>, stats: &Stats) -> Result<()> {
        let (from, bytes) = {
            let mut st = self.state.write().unwrap_or_else(|e| e.into_inner());
            let Some(dirty) = st.dirty_from.take() else {
                return Ok(());
            };
            let from = dirty - dirty % 512;
            (from, st.bits[from.min(st.bits.len())..].to_vec())
        };
        let r = self.write_bytes(vfs, stats, from, &bytes);
        if r.is_err() {
            let mut st = self.state.write().unwrap_or_else(|e| e.into_inner());
            st.dirty_from = Some(st.dirty_from.map_or(from, |d| d.min(from)));
        }
        r
    }

    fn write_bytes(
        &self,
        vfs: &Arc<dyn Vfs>,
        stats: &Stats,
        from: usize,
        bytes: &[u8],
    ) -> Result<()> {
        let io = |e| Error::io(&self.path, e);
        let f = vfs.open(&self.path, OpenMode::CreateOrOpen).map_err(io)?;
        f.write_all_at(bytes, from as u64).map_err(io)?;
        f.sync_data().map_err(io)?;
        stats.other_fsyncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}
