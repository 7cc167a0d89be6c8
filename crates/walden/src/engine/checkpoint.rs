//! Checkpoints (docs/recovery.md rule 5) and the cow-mode map checkpoints that free
//! space part way.

use std::sync::atomic::Ordering;

use super::{lock, Inner};
use crate::buffer::Fetch;
use crate::catalog::Catalog;
use crate::control::{checkpoint_path, CheckpointData, Control};
use crate::error::{Error, Result};
use crate::store::{Protection, SpacePressure};
use crate::vfs::write_file_atomically;
use crate::wal::payload::Payload;
use crate::wal::record::{CheckpointRecord, CHECKPOINT};
use crate::wal::retention::{Holder, Retention};
use crate::wal::{WalCompression, WalPosition};

/// How many pages a checkpoint marks to move down in the data file at most (cow: 32 MiB
/// of 8 KiB pages), so that one checkpoint's extra writes stay bounded.
const MOVE_DOWN_PER_CHECKPOINT: usize = 4096;

pub(super) struct CheckpointState {
    pub(super) seq: u64,
    /// Redo position of the last complete checkpoint.
    pub(super) redo: WalPosition,
    /// `Stats::wal_bytes_written` at that redo point (0 for one before this process).
    pub(super) redo_written: u64,
    pub(super) last_millis: u64,
    pub(super) generation: u64,
}

impl Inner {
    /// Cow mode: when many rewritten locations wait for a checkpoint, make the map
    /// durable now (in the calling thread, unless a checkpoint is already running), so
    /// that a long statement cannot grow the data file much past its live pages.
    pub(super) fn relieve_space(&self) {
        let pressure = self.store.space_pressure();
        let guard = match pressure {
            SpacePressure::None => return,
            // Another thread is checkpointing: it will free the space.
            SpacePressure::Soft => match self.checkpoint.try_lock() {
                Ok(g) => g,
                Err(_) => return,
            },
            // Too much waits: hold this writer back until the space is freed.
            SpacePressure::Hard => lock(&self.checkpoint),
        };
        let mut cp = guard;
        if self.poison.is_set() || self.store.space_pressure() == SpacePressure::None {
            return;
        }
        let redo = cp.redo;
        let r = self.map_checkpoint(&mut cp, redo);
        let _ = guard_unless_full(&self.poison, r);
    }

    pub(super) fn set_wal_compression(&self, codec: WalCompression) -> Result<()> {
        // Under the checkpoint lock: checkpoints write the control file too.
        let cp = lock(&self.checkpoint);
        self.poison.check()?;
        self.wal.set_compression(codec);
        let control = Control {
            checkpoint_seq: cp.seq,
            generation: cp.generation,
            wal_compression: codec,
            ..self.control
        };
        let r = control.write(&self.vfs, &self.dir);
        self.poison.guard(r)
    }

    /// A fuzzy checkpoint (docs/recovery.md, rule 5): writers keep going throughout.
    pub(super) fn checkpoint(&self) -> Result<()> {
        let mut cp = lock(&self.checkpoint);
        self.poison.check()?;
        let r = self.checkpoint_locked(&mut cp);
        guard_unless_full(&self.poison, r)
    }

    fn checkpoint_locked(&self, cp: &mut CheckpointState) -> Result<()> {
        // Read before the redo point is fixed: every transaction below it has ended, so
        // all its records lie before the redo point (docs/recovery.md rule 26).
        let ended_below = self.txns.horizon();
        let redo = {
            let _fence = self.commit_fence.write().unwrap_or_else(|e| e.into_inner());
            self.wal.begin_checkpoint()?
        };
        let redo_written = self.stats.wal_bytes_written.load(Ordering::Relaxed);
        let next_xid = self.txns.next_xid();
        // The checkpoint's record, durable before its file exists: recovery from this
        // checkpoint insists on finding it, which tells a log that lost WAL from one
        // that ends where the checkpoint left it (docs/recovery.md rule 16).
        let mut payload = Vec::new();
        CheckpointRecord {
            redo_lsn: redo.lsn,
            next_xid,
        }
        .encode_payload(&mut payload);
        let appended = self.wal.append(CHECKPOINT, 0, &payload, None)?;
        self.wal.flush(appended.end_lsn, true)?;
        // In cow mode a rewritten page's old location stays taken until a checkpoint
        // that no longer references it completes. Writing every dirty page before one
        // completes would need twice the space of the pages written; so when many
        // locations wait, a map-only checkpoint (same redo point as the last complete
        // one) frees them part way.
        let prev_redo = cp.redo;
        self.pool.flush_all_with(&mut || {
            if self.store.space_pressure() != SpacePressure::None {
                self.map_checkpoint(cp, prev_redo)?;
            }
            Ok(())
        })?;
        // A write or fsync may have failed in another thread meanwhile: then nothing
        // more may be written (docs/recovery.md rule 20). Checked before each step.
        self.poison.check()?;
        self.clog
            .write_out(&self.vfs, &self.stats, self.control.database_id, redo.lsn)
            .map_err(full_disk)?;
        let undo_start = self.write_checkpoint(cp, redo, next_xid)?;
        // Pages freed before this redo point, when no transaction of before the free
        // runs any more, can go to new relations (docs/recovery.md rule 26).
        let ready = self.store.release_free_pages(redo.lsn, ended_below);
        if !ready.is_empty() {
            // Nothing reads such a page again: a new owner's page making overwrites it.
            // Its frame and location go before a new owner can take it.
            self.pool.discard(&ready);
            self.store.forget_locations(&ready);
            self.store.make_ready(&ready);
        }
        let given_back = self.store.trim(self.pool.room_wanted())?;
        self.stats
            .data_bytes_given_back
            .fetch_add(given_back, Ordering::Relaxed);
        // Cow: pages in the file's free end move down when next written, so that a
        // later checkpoint can cut it (`PageStore::pages_to_move_down`).
        // Best effort: a page that cannot be read now stays where it is.
        for page in self.store.pages_to_move_down(MOVE_DOWN_PER_CHECKPOINT) {
            if let Ok(pinned) = self.pool.fetch(page, Fetch::Read) {
                drop(pinned.write());
            }
        }
        cp.redo = redo;
        cp.redo_written = redo_written;
        cp.last_millis = self.clock.now_millis();
        lock(&self.undo_writers).last_redo = redo;
        let retention = Retention::default()
            .hold(Holder::Redo, redo.segment_no)
            .hold(Holder::UndoStart, undo_start.segment_no);
        if let Some(keep_from) = retention.keep_from() {
            self.wal.recycle_before(keep_from)?;
        }
        self.txns.set_checkpointed_xid(ended_below);
        self.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Makes the current page map durable under a new checkpoint file with the redo
    /// point of the last complete checkpoint, so that locations freed since the last
    /// capture can be reused. Valid because every page the map points at is durable and
    /// consistent with the WAL, and redo skips what a page already holds.
    pub(super) fn map_checkpoint(&self, cp: &mut CheckpointState, redo: WalPosition) -> Result<()> {
        let next_xid = self.txns.next_xid();
        self.write_checkpoint(cp, redo, next_xid).map(|_| ())
    }

    /// Captures and writes the map (cow), syncs the data file, writes the checkpoint file
    /// and points the control file at it, then frees what no checkpoint references now.
    /// Returns the undo start it recorded.
    fn write_checkpoint(
        &self,
        cp: &mut CheckpointState,
        redo: WalPosition,
        next_xid: u64,
    ) -> Result<WalPosition> {
        // Read after the redo point is fixed: a writer that registers later logs its
        // first change after the redo point (docs/recovery.md rule 22).
        let undo_start = self.undo_start(redo);
        self.poison.check()?;
        let mut capture =
            (self.control.protection == Protection::Cow).then(|| self.store.capture_map());
        let chunk_locations = match &mut capture {
            Some(c) => self.store.write_map(c)?,
            None => Vec::new(),
        };
        self.poison.check()?;
        // Read before the sync: another thread's eviction may extend the file after it,
        // and only what the sync covered is sure to survive a crash (the open compares
        // the file with this length).
        let data_file_bytes = self.store.file_len_bytes();
        self.store.sync()?;
        let seq = cp.seq + 1;
        let bytes = {
            // Under the catalog's lock, which a drop holds while it frees its pages:
            // a dropped relation is in the catalog or its pages are in the free list.
            // The free list is read after the relations' page lists (`encode_with_free`).
            let cat = self.catalog.read().unwrap_or_else(|e| e.into_inner());
            let free = || self.store.free_page_list();
            let data = CheckpointData {
                seq,
                database_id: self.control.database_id,
                redo,
                undo_start,
                next_xid,
                next_page: self.store.next_page_no(),
                data_file_bytes,
                chunk_locations,
                catalog: Catalog::default(),
            };
            data.encode_with(&cat, &free)
        };
        // The catalog's page lists name every page whose first record (`heap_init`,
        // a B-tree page) was appended before they were read, possibly after the redo
        // point and not yet durable: make those records durable before the file that
        // lists the pages can be read, or recovery would find a listed page that neither
        // the data file nor the log holds (docs/recovery.md rule 8, step 5a).
        self.wal.flush_all()?;
        let name = format!("checkpoint.{seq:016x}");
        self.poison.check()?;
        write_file_atomically(&self.vfs, &self.dir, &name, &bytes).map_err(full_disk)?;
        self.poison.check()?;
        let control = Control {
            checkpoint_seq: seq,
            generation: cp.generation,
            wal_compression: self.wal.compression(),
            ..self.control
        };
        control.write(&self.vfs, &self.dir).map_err(full_disk)?;
        // Two atomic file replacements: a file sync and a directory sync each.
        self.stats.other_fsyncs.fetch_add(4, Ordering::Relaxed);
        if let Some(c) = capture {
            self.store.checkpoint_complete(c);
        }
        if cp.seq > 0 {
            let old = checkpoint_path(&self.dir, cp.seq);
            let _ = self.vfs.remove(&old);
        }
        cp.seq = seq;
        Ok(undo_start)
    }
}

/// A checkpoint, control or transaction-status file that found no room (ENOSPC) as
/// `DiskFull`: each is written whole under a temporary name and renamed into place, so
/// the one before stays whole, and the checkpoint in force references nothing this one
/// wrote so far (docs/recovery.md rule 20).
fn full_disk(e: Error) -> Error {
    match e {
        Error::Io { path, source } if source.raw_os_error() == Some(libc::ENOSPC) => {
            Error::DiskFull {
                path,
                bytes: 0,
                source,
            }
        }
        other => other,
    }
}

/// The poison's guard, but for `DiskFull`: a checkpoint that found no room for its
/// files leaves the last checkpoint in force and fences nothing (a later one retries).
fn guard_unless_full(poison: &crate::poison::Poison, r: Result<()>) -> Result<()> {
    match r {
        Err(e @ Error::DiskFull { .. }) => Err(e),
        r => poison.guard(r),
    }
}
