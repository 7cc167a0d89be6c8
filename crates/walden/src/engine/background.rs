//! The background thread: checkpoints by WAL volume and time, flushes asynchronous
//! commits.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{lock, Inner};
use crate::options::CHECKPOINT_RECORD_FACTOR;
use crate::store::SpacePressure;

impl Inner {
    /// Checkpoints by WAL volume and by time; flushes asynchronous commits.
    pub(super) fn background_loop(&self) {
        let mut ticks = 0u64;
        while !self.shutdown.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
            ticks += 1;
            if self.poison.is_set() {
                continue;
            }
            if !self.synchronous_commit && ticks.is_multiple_of(5) {
                let _ = self.wal.flush_all();
            }
            let due = {
                let cp = lock(&self.checkpoint);
                let written = self.stats.wal_bytes_written.load(Ordering::Relaxed);
                let records = self.wal.insert_lsn().saturating_sub(cp.redo.lsn);
                written.saturating_sub(cp.redo_written) >= self.checkpoint_wal_bytes
                    || records
                        >= self
                            .checkpoint_wal_bytes
                            .saturating_mul(CHECKPOINT_RECORD_FACTOR)
                    || self.clock.now_millis().saturating_sub(cp.last_millis)
                        >= self.checkpoint_interval_millis
            };
            if due {
                let _ = self.checkpoint();
            } else if self.store.space_pressure() != SpacePressure::None {
                let mut cp = lock(&self.checkpoint);
                let redo = cp.redo;
                let r = self.map_checkpoint(&mut cp, redo);
                let _ = self.poison.guard(r);
            }
        }
    }
}
