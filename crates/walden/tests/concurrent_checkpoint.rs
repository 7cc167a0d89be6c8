//! Checkpoints concurrent with writers (what the background checkpointer does): what could
//! go wrong is a checkpoint that makes an acknowledged commit unrecoverable, lets a reader
//! see a stale copy of a page it is writing, or trips over the WAL writer recycling
//! segments. The deterministic tests hold the checkpointer thread at one exact call (a
//! gated file layer over `SimVfs`) while the test thread acts; the stress tests run writer
//! threads against a checkpoint loop.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use walden::vfs::{CrashMode, SimVfs};
use walden::*;

mod support;
use support::{
    id_text_schema, int8_schema, opts, opts_on, small_pool, sorted_ids, sorted_int8_pairs,
    wal_segment, with_pool, Gate, GateVfs, Hold, DIR, TABLE,
};

/// The name of the thread the gate holds calls of.
const CHECKPOINTER: &str = "checkpointer";

/// Runs `db.checkpoint()` on a thread named for the gate.
fn spawn_checkpoint<'s>(
    s: &'s std::thread::Scope<'s, '_>,
    db: &'s Database,
) -> std::thread::ScopedJoinHandle<'s, Result<(), Error>> {
    std::thread::Builder::new()
        .name(CHECKPOINTER.into())
        .spawn_scoped(s, move || db.checkpoint())
        .unwrap()
}

/// Four threads commit one-row inserts (each row holds its transaction's xid) while the
/// main thread checkpoints; then the process stops (no close) and the database is
/// reopened. Returns the acknowledged xids the reopened database does not show.
fn lost_after_concurrent_checkpoints(protection: Protection, seed: u64) -> Vec<u64> {
    let vfs = SimVfs::new(seed);
    let o = || with_pool(opts(&vfs, protection), 8192, 8192);
    let db = Database::create(DIR, o()).unwrap();
    db.create_table(TABLE, int8_schema("xid")).unwrap();
    let acked = Mutex::new(BTreeSet::new());
    let done = AtomicU64::new(0);
    let mut checkpoints = 0;
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (db, acked, done) = (&db, &acked, &done);
            s.spawn(move || {
                for _ in 0..500 {
                    let mut tx = db.begin();
                    let xid = tx.xid();
                    tx.insert(TABLE, &[Value::Int8(xid as i64)]).unwrap();
                    tx.commit().unwrap();
                    acked.lock().unwrap().insert(xid);
                }
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
        while done.load(Ordering::SeqCst) < 4 {
            db.checkpoint().unwrap();
            checkpoints += 1;
        }
    });
    let acked = acked.into_inner().unwrap();
    let visible = |db: &Database| -> BTreeSet<u64> {
        db.begin()
            .scan(TABLE)
            .unwrap()
            .into_iter()
            .map(|(_, r)| match r[0] {
                Value::Int8(x) => x as u64,
                _ => panic!("unexpected row {r:?}"),
            })
            .collect()
    };
    assert_eq!(visible(&db), acked, "before the restart");
    drop(db);
    vfs.restart(CrashMode::DropUnsynced);
    let db = Database::open(DIR, o()).unwrap();
    let lost: Vec<u64> = acked.difference(&visible(&db)).copied().collect();
    eprintln!(
        "{protection:?} seed {seed}: {} acknowledged, {checkpoints} checkpoints, lost {lost:?}",
        acked.len()
    );
    lost
}

/// Every acknowledged commit survives a restart, whatever checkpoints ran meanwhile.
///
/// The hazard (seen before the commit fence existed): a commit sets its clog bit only
/// after its commit record is durable, so a checkpoint could take its redo point after the
/// record and write the clog before the bit was set; after a crash neither the `xact` file
/// nor the replayed WAL would hold the commit. `Clog::write_out` also used to clear the
/// dirty range for bits set while it was writing.
#[test]
fn acknowledged_commits_survive_concurrent_checkpoints() {
    let mut failures = Vec::new();
    for protection in [Protection::Cow, Protection::FullPage, Protection::None] {
        for seed in 0..5 {
            let lost = lost_after_concurrent_checkpoints(protection, seed);
            if !lost.is_empty() {
                failures.push((protection, seed, lost));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "acknowledged commits lost: {failures:?}"
    );
}

/// Four writers add 1 to random rows of a 100-row table (many 4 KiB pages of versions)
/// through a 16-page pool while the main thread checkpoints. Every snapshot must show each
/// row exactly once, and at the end the values must add up to the committed updates.
/// Returns the first inconsistency seen.
fn eviction_race(protection: Protection, limit: Duration) -> Option<String> {
    let vfs = SimVfs::new(7);
    let db = Database::create(DIR, small_pool(opts(&vfs, protection))).unwrap();
    let schema = Schema::new(vec![
        Column::not_null("id", ColumnType::Int8),
        Column::not_null("n", ColumnType::Int8),
    ]);
    db.create_table(TABLE, schema).unwrap();
    let mut tx = db.begin();
    tx.insert_many(
        TABLE,
        (0..100).map(|i| vec![Value::Int8(i), Value::Int8(0)]),
    )
    .unwrap();
    tx.commit().unwrap();
    let stop = AtomicBool::new(false);
    let committed = AtomicU64::new(0);
    let start = Instant::now();
    let sum = |rows: &[(RowId, Row)]| -> Result<i64, String> {
        let mut ids = BTreeSet::new();
        let mut total = 0;
        for (rid, r) in rows {
            let (Value::Int8(id), Value::Int8(v)) = (&r[0], &r[1]) else {
                return Err(format!("unexpected row {r:?}"));
            };
            if !ids.insert(*id) {
                let all: Vec<_> = rows
                    .iter()
                    .filter(|(_, x)| x[0] == r[0])
                    .map(|(a, x)| (*a, x[1].clone()))
                    .collect();
                return Err(format!(
                    "row {id} visible twice ({} rows) {rid:?} {all:?}",
                    rows.len()
                ));
            }
            total += v;
        }
        if ids.len() != 100 {
            return Err(format!("{} rows visible", ids.len()));
        }
        Ok(total)
    };
    let found = std::thread::scope(|s| {
        let writers: Vec<_> = (0..4u64)
            .map(|t| {
                let (db, stop, committed) = (&db, &stop, &committed);
                s.spawn(move || -> Option<String> {
                    let mut x = t + 1;
                    while !stop.load(Ordering::SeqCst) {
                        let mut tx = db.begin();
                        let rows = match tx.scan(TABLE) {
                            Ok(rows) => rows,
                            Err(e) => return Some(format!("scan failed: {e}")),
                        };
                        if let Err(e) = sum(&rows) {
                            return Some(e);
                        }
                        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                        let (rid, row) = &rows[(x >> 33) as usize % rows.len()];
                        let Value::Int8(v) = row[1] else {
                            unreachable!()
                        };
                        match tx.update(TABLE, *rid, &[row[0].clone(), Value::Int8(v + 1)]) {
                            Ok(_) => {}
                            Err(Error::SerializationFailure) | Err(Error::Deadlock) => continue,
                            Err(e) => return Some(format!("update failed: {e}")),
                        }
                        if let Err(e) = tx.commit() {
                            return Some(format!("commit failed: {e}"));
                        }
                        committed.fetch_add(1, Ordering::SeqCst);
                    }
                    None
                })
            })
            .collect();
        let mut found = None;
        while found.is_none() && start.elapsed() < limit && !writers.iter().any(|w| w.is_finished())
        {
            if let Err(e) = db.checkpoint() {
                found = Some(format!("checkpoint failed: {e}"));
            }
        }
        stop.store(true, Ordering::SeqCst);
        let from_writers = writers.into_iter().find_map(|w| w.join().unwrap());
        found.or(from_writers)
    });
    let found = found.or_else(|| {
        let rows = db.begin().scan(TABLE).ok()?;
        let n = committed.load(Ordering::SeqCst) as i64;
        match sum(&rows) {
            Ok(total) if total == n => None,
            Ok(total) => Some(format!("{n} updates committed, values add up to {total}")),
            Err(e) => Some(e),
        }
    });
    eprintln!(
        "{protection:?}: {found:?} after {:?} and {} updates",
        start.elapsed(),
        committed.load(Ordering::SeqCst)
    );
    found
}

/// The hazard (seen when `flush_all_with` did not pin the frame it writes): a scan shows a
/// row twice, a committed update vanishes, or a read fails with `CorruptPage`, because a
/// concurrent `fetch` evicts the frame being written and re-reads the old page from disk
/// (see `page_being_checkpointed_is_never_read_stale` for the deterministic form).
#[test]
fn checkpoint_racing_with_eviction_keeps_every_update() {
    let mut failures = Vec::new();
    for protection in [Protection::Cow, Protection::FullPage, Protection::None] {
        if let Some(f) = eviction_race(protection, Duration::from_secs(10)) {
            failures.push((protection, f));
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

/// Without concurrent checkpoints the same workload through the same small pool is
/// exact: the failure above needs the race.
#[test]
fn eviction_without_concurrent_checkpoints_keeps_every_update() {
    let vfs = SimVfs::new(8);
    let db = Database::create(DIR, small_pool(opts(&vfs, Protection::Cow))).unwrap();
    let schema = Schema::new(vec![
        Column::not_null("id", ColumnType::Int8),
        Column::not_null("n", ColumnType::Int8),
    ]);
    db.create_table(TABLE, schema).unwrap();
    let mut tx = db.begin();
    tx.insert_many(
        TABLE,
        (0..100).map(|i| vec![Value::Int8(i), Value::Int8(0)]),
    )
    .unwrap();
    tx.commit().unwrap();
    let mut expected: BTreeMap<i64, i64> = (0..100).map(|i| (i, 0)).collect();
    for n in 0..3000u64 {
        let mut tx = db.begin();
        let rows = tx.scan(TABLE).unwrap();
        let seen: BTreeMap<i64, i64> = rows
            .iter()
            .map(|(_, r)| match (&r[0], &r[1]) {
                (Value::Int8(id), Value::Int8(v)) => (*id, *v),
                _ => panic!("unexpected row {r:?}"),
            })
            .collect();
        assert_eq!(rows.len(), 100, "after {n} updates");
        assert_eq!(seen, expected, "after {n} updates");
        let (rid, row) = &rows[(n * 37 % 100) as usize];
        let Value::Int8(id) = row[0] else {
            unreachable!()
        };
        let v = expected[&id] + 1;
        tx.update(TABLE, *rid, &[Value::Int8(id), Value::Int8(v)])
            .unwrap();
        tx.commit().unwrap();
        expected.insert(id, v);
        if n % 500 == 499 {
            db.checkpoint().unwrap();
        }
    }
    drop(db);
    vfs.restart(CrashMode::DropUnsynced);
    let db = Database::open(DIR, small_pool(opts(&vfs, Protection::Cow))).unwrap();
    let seen: BTreeMap<i64, i64> = sorted_int8_pairs(&db, TABLE).into_iter().collect();
    assert_eq!(seen, expected);
}

/// Deterministic form of the clog race: a transaction commits while a checkpoint is
/// writing the `xact` file. If `Clog::write_out` forgot that the new bit was not in what
/// it wrote and that xid is the last of its 512-byte block (xid 2047), no later checkpoint
/// would rewrite the block, and once a checkpoint's redo point passed the commit record,
/// recovery could not find the commit.
#[test]
fn commit_during_a_checkpoints_clog_write_survives() {
    let vfs = SimVfs::new(21);
    let gate = Arc::new(Gate::new(CHECKPOINTER, Duration::from_secs(10)));
    let o = || {
        with_pool(
            opts_on(GateVfs::over(&vfs, &gate), Protection::Cow),
            8192,
            1024,
        )
    };
    let db = Database::create(DIR, o()).unwrap();
    db.create_table(TABLE, int8_schema("id")).unwrap();
    // Read-only transactions take xids without touching the clog.
    loop {
        let tx = db.begin();
        let xid = tx.xid();
        tx.commit().unwrap();
        if xid == 2046 {
            break;
        }
    }
    let mut t1 = db.begin();
    assert_eq!(
        t1.xid(),
        2047,
        "the last xid of the clog's first 512-byte block"
    );
    t1.insert(TABLE, &[Value::Int8(1)]).unwrap();
    gate.arm(Hold::WriteTo(Path::new(DIR).join("xact.tmp")));
    std::thread::scope(|s| {
        let checkpoint = spawn_checkpoint(s, &db);
        assert!(gate.wait_holding(), "the checkpoint never wrote the clog");
        // The checkpoint is writing the clog; the commit is acknowledged meanwhile.
        t1.commit().unwrap();
        gate.release();
        checkpoint.join().unwrap().unwrap();
    });
    let mut t2 = db.begin();
    assert_eq!(t2.xid(), 2048);
    t2.insert(TABLE, &[Value::Int8(2)]).unwrap();
    t2.commit().unwrap();
    db.checkpoint().unwrap();
    assert_eq!(sorted_ids(&db, TABLE), vec![1, 2]);
    drop(db);
    vfs.restart(CrashMode::DropUnsynced);
    let db = Database::open(DIR, o()).unwrap();
    assert_eq!(
        sorted_ids(&db, TABLE),
        vec![1, 2],
        "an acknowledged commit was lost"
    );
}

/// Deterministic form of the eviction race: the checkpoint is held while it writes the
/// first dirty page (already marked clean); meanwhile scans through a 16-page pool must not
/// evict that frame and read the old page again from the data file.
#[test]
fn page_being_checkpointed_is_never_read_stale() {
    let vfs = SimVfs::new(22);
    let gate = Arc::new(Gate::new(CHECKPOINTER, Duration::from_secs(10)));
    let db = Database::create(
        DIR,
        small_pool(opts_on(GateVfs::over(&vfs, &gate), Protection::Cow)),
    )
    .unwrap();
    let schema = id_text_schema("pad");
    db.create_table(TABLE, schema).unwrap();
    let row = |id: i64, pad: &str| vec![Value::Int8(id), Value::Text(pad.repeat(200))];
    let mut tx = db.begin();
    let ids = tx
        .insert_many(TABLE, (0..600).map(|i| row(i, "a")))
        .unwrap();
    tx.commit().unwrap();
    assert!(
        ids.last().unwrap().page > 30,
        "the table must be twice the pool"
    );
    db.checkpoint().unwrap();
    let check = |when: &str| {
        let mut tx = db.begin();
        let rows = tx.scan(TABLE).unwrap();
        let fives: Vec<&Row> = rows
            .iter()
            .map(|(_, r)| r)
            .filter(|r| r[0] == Value::Int8(5))
            .collect();
        assert_eq!(rows.len(), 600, "{when}: rows visible");
        assert_eq!(
            fives,
            vec![&row(5, "b")],
            "{when}: versions of row 5 visible"
        );
    };
    // One committed update: its old page and its new version's page are dirty, and the
    // only dirty pages (a scan now would evict and write them itself).
    let mut tx = db.begin();
    tx.update(TABLE, ids[5], &row(5, "b")).unwrap();
    tx.commit().unwrap();
    gate.arm(Hold::WriteTo(Path::new(DIR).join("data")));
    let scans = std::thread::scope(|s| {
        let checkpoint = spawn_checkpoint(s, &db);
        assert!(gate.wait_holding(), "the checkpoint never wrote a page");
        let scans = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check("first scan during the checkpoint");
            check("second scan during the checkpoint");
        }));
        gate.release();
        let _ = checkpoint.join();
        scans
    });
    if let Err(p) = scans {
        std::panic::resume_unwind(p);
    }
    check("after the checkpoint");
}

/// Deterministic form of the segment recycling race: the checkpoint lists the WAL
/// directory, then the writer switches to a new segment by renaming a spare, then the
/// checkpoint must not put the renamed spare back on the spare list from a stale listing
/// (the next switch would rename a file that no longer exists).
#[test]
fn segment_recycled_during_a_checkpoint_is_not_reused_twice() {
    let vfs = SimVfs::new(23);
    let gate = Arc::new(Gate::new(CHECKPOINTER, Duration::from_secs(10)));
    let db = Database::create(
        DIR,
        with_pool(
            opts_on(GateVfs::over(&vfs, &gate), Protection::Cow),
            8192,
            1024,
        ),
    )
    .unwrap();
    db.create_table(TABLE, id_text_schema("pad")).unwrap();
    let mut next = 0i64;
    let mut insert_batch = |db: &Database| -> Result<(), Error> {
        let mut tx = db.begin();
        tx.insert_many(
            TABLE,
            (next..next + 10).map(|i| vec![Value::Int8(i), Value::Text("p".repeat(1000))]),
        )?;
        next += 10;
        tx.commit()
    };
    // Three segments, then a checkpoint whose redo point is in the third: the first two
    // become spares.
    while vfs.file_contents(&wal_segment(3)).is_none() {
        insert_batch(&db).unwrap();
    }
    db.checkpoint().unwrap();
    gate.arm(Hold::ListThenWaitForRename(Path::new(DIR).join("wal")));
    std::thread::scope(|s| {
        let checkpoint = spawn_checkpoint(s, &db);
        assert!(
            gate.wait_holding(),
            "the checkpoint never listed the WAL directory"
        );
        let renames = gate.renames();
        while gate.renames() == renames {
            insert_batch(&db).unwrap();
        }
        checkpoint.join().unwrap().unwrap();
    });
    // Two more segment switches.
    let start = db.wal_insert_lsn();
    while db.wal_insert_lsn() - start < 5 << 20 {
        if let Err(e) = insert_batch(&db) {
            panic!(
                "write failed after {} bytes of WAL: {e}",
                db.wal_insert_lsn() - start
            );
        }
    }
    assert!(!db.is_poisoned());
    assert_eq!(sorted_ids(&db, TABLE).len() as i64, next);
}
