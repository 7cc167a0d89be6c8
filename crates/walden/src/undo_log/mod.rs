//! The undo log: per-transaction records of opaque bytes (the undo-table code owns
//! their meaning), appended, read back by pointer, and discarded once no snapshot and
//! no running transaction needs them. `segments` is the store: recent undo in memory,
//! older undo spilled to files past a memory budget (docs/recovery.md: undo needs no WAL
//! of its own; the WAL carries what crash rollback needs).

mod segments;

pub use segments::{SegmentedUndoLog, SpillDir};

use crate::error::Result;
use crate::stats::TxnStats;

/// A store of undo records.
pub trait UndoLog: Send + Sync {
    /// Appends `record` for transaction `xid` and returns its pointer (never 0, which
    /// means "no undo"); fails with `Error::UndoFull`, appending nothing, past the
    /// limit.
    fn append(&self, xid: u64, record: &[u8], stats: &mut TxnStats) -> Result<u64>;
    /// The record at `ptr`, or why it cannot be read (discarded, cut short).
    fn read(&self, ptr: u64) -> std::result::Result<Vec<u8>, String>;
    /// Drops records of transactions that ended before `horizon()` (the oldest xid a
    /// snapshot may see as running; asked only when there is something to drop).
    fn discard(&self, horizon: &mut dyn FnMut() -> u64);
    /// Keeps `xid`'s records until the database is reopened (its rollback could not
    /// finish, so readers still need them).
    fn keep_unresolved(&self, xid: u64);
    /// Bytes held now, in memory and in files.
    fn live_bytes(&self) -> u64;
    /// Of those, bytes in files.
    fn spilled_bytes(&self) -> u64;
    /// The budget of undo kept in memory (`undo_memory`); older undo goes to files.
    fn memory(&self) -> u64;
    fn set_memory(&self, bytes: u64);
    /// The bound on `live_bytes`.
    fn limit(&self) -> u64;
    fn set_limit(&self, bytes: u64);
}
