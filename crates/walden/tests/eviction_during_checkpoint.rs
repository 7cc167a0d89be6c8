//! Eviction racing a checkpoint: what could go wrong is a checkpoint that completes while
//! an evicting thread has already cleared a frame's dirty bit but not yet written the page,
//! so the checkpoint neither writes the page nor waits for it, takes a redo point past the
//! page's changes, and a crash then loses acknowledged commits.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use walden::vfs::{CrashMode, SimVfs};
use walden::*;

mod support;
use support::{opts, opts_on, small_pool, Gate, GateVfs, Hold, DIR};

/// The thread whose first write to the data file the gate holds.
const EVICTOR: &str = "evictor";

fn schema() -> Schema {
    Schema::new(vec![
        Column::not_null("id", ColumnType::Int8),
        Column::not_null("pad", ColumnType::Text),
    ])
}

/// Fills the pool with dirty pages of committed rows of `t`; a thread named `EVICTOR`
/// then inserts into `u`, which must evict one of them, and is held just before the
/// eviction's data-file write. A checkpoint runs to completion meanwhile; then power is
/// lost. Returns the ids of `t` visible after recovery (or the error), and how many
/// were acknowledged.
fn evict_during_checkpoint(protection: Protection) -> (Result<usize, Error>, usize) {
    let sim = SimVfs::new(11);
    // The checkpoint waits for the held write, so the evictor goes on only when its hold
    // times out: the test takes that long.
    let gate = Arc::new(Gate::new(EVICTOR, Duration::from_secs(20)));
    let vfs = GateVfs::over(&sim, &gate);
    let db = Database::create(DIR, small_pool(opts_on(vfs.clone(), protection))).unwrap();
    db.create_table("t", schema()).unwrap();
    db.create_table("u", schema()).unwrap();
    // About 40 pages of rows: the pool ends up holding 16 dirty pages of them.
    let pad = "x".repeat(200);
    let n = 40 * (4096 / 240);
    let mut tx = db.begin();
    tx.insert_many(
        "t",
        (0..n as i64).map(|i| vec![Value::Int8(i), Value::Text(pad.clone())]),
    )
    .unwrap();
    tx.commit().unwrap();
    gate.arm(Hold::WriteTo(Path::new(DIR).join("data")));
    std::thread::scope(|s| {
        let evictor = std::thread::Builder::new()
            .name(EVICTOR.into())
            .spawn_scoped(s, || {
                let mut tx = db.begin();
                let _ = tx.insert("u", &[Value::Int8(0), Value::Text("u".into())]);
            })
            .unwrap();
        assert!(gate.wait_holding(), "the evictor never wrote a page");
        // The frame being evicted is no longer marked dirty: the checkpoint skips it.
        db.checkpoint().unwrap();
        sim.crash_now();
        gate.release();
        evictor.join().unwrap();
    });
    drop(db);
    sim.restart(CrashMode::DropUnsynced);
    let db = match Database::open(DIR, small_pool(opts(&sim, protection))) {
        Ok(db) => db,
        Err(e) => return (Err(e), n),
    };
    let r = db.begin().scan("t").map(|rows| rows.len());
    (r, n)
}

#[test]
fn checkpoint_waits_for_an_eviction_write_in_flight_cow() {
    let (visible, acked) = evict_during_checkpoint(Protection::Cow);
    assert_eq!(visible.map_err(|e| e.to_string()), Ok(acked));
}

#[test]
fn checkpoint_waits_for_an_eviction_write_in_flight_full_page() {
    let (visible, acked) = evict_during_checkpoint(Protection::FullPage);
    assert_eq!(visible.map_err(|e| e.to_string()), Ok(acked));
}
