//! The settings of a database (`Options`).

use std::sync::Arc;

use crate::catalog::TableKind;
use crate::clock::{Clock, RealClock};
use crate::page::DEFAULT_PAGE_SIZE;
use crate::store::Protection;
use crate::vfs::{RealVfs, Vfs};
use crate::wal::WalCompression;

/// A checkpoint is due after `checkpoint_wal_bytes` written to the WAL files, or after
/// this many times as many bytes of records: the first bounds the log's disk space, the
/// second what redo replays after a crash (compressed, the log on disk is typically 10
/// to 40 times smaller than its records).
pub const CHECKPOINT_RECORD_FACTOR: u64 = 8;

/// Settings of a database. Those marked "at creation" are stored in the control file and
/// ignored when opening an existing database.
#[derive(Clone)]
pub struct Options {
    /// At creation: 4096, 8192 (default), 16384 or 32768.
    pub page_size: usize,
    /// At creation: torn-page protection (default `cow`).
    pub protection: Protection,
    /// At creation: WAL segment size (default 16 MiB).
    pub segment_size_bytes: u64,
    /// Buffer pool capacity (default 256 MiB).
    pub buffer_pool_bytes: u64,
    /// Wait for the WAL to be durable at commit (default true).
    pub synchronous_commit: bool,
    /// Checkpoint after this much WAL written to the WAL files since the last one's redo
    /// point (compressed frames, what the log takes on disk: PostgreSQL's max_wal_size;
    /// default 1 GiB), or after `CHECKPOINT_RECORD_FACTOR` times as many bytes of
    /// records (what redo would replay after a crash).
    pub checkpoint_wal_bytes: u64,
    /// Checkpoint after this long (default 300 s).
    pub checkpoint_interval_secs: u64,
    /// Run the background checkpointer and WAL flusher (default true).
    pub background: bool,
    /// The kind of a table created without naming one (default `undo`: in place, the
    /// least WAL and no table growth on update; README.md, "Defaults").
    pub default_table_kind: TableKind,
    /// Most undo the undo log may hold at once, in memory and in files (default
    /// unbounded); a change that would need more fails with `Error::UndoFull`.
    pub undo_limit_bytes: u64,
    /// Undo kept in memory (default 256 MiB); older undo is written to files in the
    /// database's `undo` directory and read back when needed.
    pub undo_memory_bytes: u64,
    /// A transaction's list of the rows it changed in undo tables (8 bytes a row, for
    /// rollback) kept in memory; past it the list goes to a temporary file (default
    /// 16 MiB: two million rows).
    pub txn_undo_memory_bytes: u64,
    /// Codec of the WAL frames written (default zstd); any codec reads any log.
    pub wal_compression: WalCompression,
    /// The operator's way out (`walden recover --accept-data-loss`, like PostgreSQL's
    /// pg_resetwal): open after damage that a normal open refuses — the log is cut
    /// where it is damaged, later segments are set aside as `*.lost`, unreadable
    /// transaction statuses count as not committed — and say what was dropped in the
    /// recovery report and in `data-loss.log`. Default false; never set it to get past
    /// an error you have not read.
    pub accept_data_loss: bool,
    pub vfs: Arc<dyn Vfs>,
    pub clock: Arc<dyn Clock>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            page_size: DEFAULT_PAGE_SIZE,
            protection: Protection::Cow,
            segment_size_bytes: 16 << 20,
            buffer_pool_bytes: 256 << 20,
            synchronous_commit: true,
            checkpoint_wal_bytes: 1 << 30,
            checkpoint_interval_secs: 300,
            background: true,
            default_table_kind: TableKind::Undo,
            undo_limit_bytes: u64::MAX,
            undo_memory_bytes: 256 << 20,
            txn_undo_memory_bytes: 16 << 20,
            wal_compression: WalCompression::default(),
            accept_data_loss: false,
            vfs: Arc::new(RealVfs),
            clock: Arc::new(RealClock::default()),
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("page_size", &self.page_size)
            .field("protection", &self.protection)
            .field("segment_size_bytes", &self.segment_size_bytes)
            .field("buffer_pool_bytes", &self.buffer_pool_bytes)
            .field("synchronous_commit", &self.synchronous_commit)
            .field("default_table_kind", &self.default_table_kind)
            .field("undo_limit_bytes", &self.undo_limit_bytes)
            .field("undo_memory_bytes", &self.undo_memory_bytes)
            .field("txn_undo_memory_bytes", &self.txn_undo_memory_bytes)
            .field("wal_compression", &self.wal_compression)
            .finish_non_exhaustive()
    }
}
