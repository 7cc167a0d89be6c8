//! Fault injection: what could go wrong is a database that carries on after a failed write
//! or fsync (and so may lose or invent data), that loses an acknowledged commit, or that
//! makes visible rows of a transaction that never committed. Every scenario counts the
//! faults it injected, so a scenario whose fault never fired fails instead of passing.
//! Every scenario runs on a heap table and on an undo table.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::Path;

use walden::vfs::{CrashMode, FaultKind, FaultOps, SimVfs};
use walden::*;

mod support;
use support::{id_text_schema, padded_row, small_pool, table_opts, DIR, TABLE};

const TABLE_KINDS: [TableKind; 2] = [TableKind::Heap, TableKind::Undo];

fn errno(kind: FaultKind) -> i32 {
    match kind {
        FaultKind::Eio => libc::EIO,
        FaultKind::Enospc => libc::ENOSPC,
    }
}

/// The ids of the visible rows, checking each row's payload on the way.
fn ids(db: &Database) -> Result<BTreeSet<i64>, Error> {
    let mut out = BTreeSet::new();
    for (_, r) in db.begin().scan(TABLE)? {
        let Value::Int8(id) = r[0] else {
            panic!("unexpected row {r:?}")
        };
        assert_eq!(r, padded_row(id, 200));
        assert!(out.insert(id), "row {id} seen twice");
    }
    Ok(out)
}

/// Asserts that `e` is the injected fault: an I/O error with the injected errno on a file
/// of the database.
fn assert_injected(e: &Error, kind: FaultKind, context: &str) {
    match e {
        Error::Io { path, source } => {
            assert_eq!(source.raw_os_error(), Some(errno(kind)), "{context}: {e}");
            assert!(path.starts_with(DIR), "{context}: {e}");
        }
        other => panic!("{context}: expected Error::Io, got {other:?}"),
    }
}

/// Asserts that the database refuses writes of every kind, naming the first failure.
fn assert_refuses_writes(db: &Database, first: &Error, next_id: i64, context: &str) {
    assert!(db.is_poisoned(), "{context}");
    let cause_is_first = |e: &Error| match e {
        Error::Poisoned { cause } => cause == &first.to_string(),
        _ => false,
    };
    let mut tx = db.begin();
    match tx.insert(TABLE, &padded_row(next_id, 200)) {
        Err(e) => assert!(cause_is_first(&e), "{context}: insert: {e:?}"),
        Ok(id) => {
            // Nothing was logged yet; the commit must refuse.
            let e = tx.commit().unwrap_err();
            panic!("{context}: insert into a poisoned database succeeded ({id}); commit: {e:?}");
        }
    }
    drop(tx);
    let e = db.checkpoint().unwrap_err();
    assert!(cause_is_first(&e), "{context}: checkpoint: {e:?}");
    let e = db.vacuum(TABLE).unwrap_err();
    assert!(cause_is_first(&e), "{context}: vacuum: {e:?}");
    let e = db
        .create_table("other", id_text_schema("payload"))
        .unwrap_err();
    assert!(cause_is_first(&e), "{context}: create_table: {e:?}");
}

/// The outcome of running transactions until the scheduled fault fired.
struct Outcome {
    /// Ids of acknowledged commits.
    acked: BTreeSet<i64>,
    /// Ids of the transaction whose commit returned an error (in doubt).
    in_doubt: BTreeSet<i64>,
    first_error: Error,
}

/// Commits transactions of three rows each until one call fails. Rows of a transaction
/// whose insert failed are simply dropped: that transaction never committed.
fn commit_until_error(db: &Database, acked: &mut BTreeSet<i64>, next_id: &mut i64) -> Outcome {
    for _ in 0..500 {
        let batch: Vec<i64> = (*next_id..*next_id + 3).collect();
        *next_id += 3;
        let mut tx = db.begin();
        let inserted = batch
            .iter()
            .try_for_each(|&id| tx.insert(TABLE, &padded_row(id, 200)).map(|_| ()));
        if let Err(e) = inserted {
            return Outcome {
                acked: acked.clone(),
                in_doubt: BTreeSet::new(),
                first_error: e,
            };
        }
        match tx.commit() {
            Ok(()) => acked.extend(batch),
            Err(e) => {
                return Outcome {
                    acked: acked.clone(),
                    in_doubt: batch.into_iter().collect(),
                    first_error: e,
                }
            }
        }
    }
    panic!("the scheduled fault never fired in 500 transactions");
}

/// One scenario: acknowledged commits, a fault at the `k`-th matching call, the database
/// refusing writes, a crash, and recovery with every acknowledged row.
fn write_fault_scenario(
    protection: Protection,
    table: TableKind,
    k: u64,
    ops: FaultOps,
    kind: FaultKind,
    mode: CrashMode,
) {
    let context = format!("{protection:?} {table} k={k} {ops:?} {kind:?} {mode:?}");
    let vfs = SimVfs::new(k * 31 + 7);
    let db = Database::create(DIR, small_pool(table_opts(&vfs, protection, table))).unwrap();
    db.create_table(TABLE, id_text_schema("payload")).unwrap();
    assert_eq!(db.table_kind(TABLE).unwrap(), table);
    let mut acked = BTreeSet::new();
    let mut next_id = 0i64;
    for _ in 0..20 {
        let mut tx = db.begin();
        for _ in 0..3 {
            tx.insert(TABLE, &padded_row(next_id, 200)).unwrap();
            acked.insert(next_id);
            next_id += 1;
        }
        tx.commit().unwrap();
    }
    assert_eq!(vfs.faults_injected(), 0);

    vfs.fail_nth(k, ops, kind);
    let out = commit_until_error(&db, &mut acked, &mut next_id);
    assert_eq!(vfs.faults_injected(), 1, "{context}");
    assert_injected(&out.first_error, kind, &context);
    assert_refuses_writes(&db, &out.first_error, next_id, &context);
    // Reads still work, and the failed commit counts as aborted in this process.
    assert_eq!(ids(&db).unwrap(), out.acked, "{context}");
    match db.close() {
        Err(Error::Poisoned { cause }) => assert_eq!(cause, out.first_error.to_string()),
        other => panic!("{context}: close: expected Poisoned, got {other:?}"),
    }

    vfs.restart(mode);
    let db = Database::open(DIR, small_pool(table_opts(&vfs, protection, table))).unwrap();
    assert!(!db.is_poisoned());
    let found = ids(&db).unwrap();
    let with_doubt: BTreeSet<i64> = out.acked.union(&out.in_doubt).copied().collect();
    assert!(
        found == out.acked || found == with_doubt,
        "{context}: recovered {} rows, acknowledged {}, in doubt {:?}; missing {:?}, extra {:?}",
        found.len(),
        out.acked.len(),
        out.in_doubt,
        out.acked.difference(&found).collect::<Vec<_>>(),
        found.difference(&with_doubt).collect::<Vec<_>>(),
    );
    // The reopened database writes again.
    let mut tx = db.begin();
    tx.insert(TABLE, &padded_row(next_id, 200)).unwrap();
    tx.commit().unwrap();
    let mut expected = found;
    expected.insert(next_id);
    assert_eq!(ids(&db).unwrap(), expected, "{context}");
    db.close().unwrap();
    assert_eq!(vfs.faults_injected(), 1, "{context}");
}

#[test]
fn failed_wal_write_or_fsync_poisons_and_loses_nothing_acknowledged() {
    for table in TABLE_KINDS {
        for ops in [FaultOps::Write, FaultOps::Sync] {
            for kind in [FaultKind::Eio, FaultKind::Enospc] {
                for k in [1, 2, 3, 5, 8, 13] {
                    write_fault_scenario(
                        Protection::Cow,
                        table,
                        k,
                        ops,
                        kind,
                        CrashMode::DropUnsynced,
                    );
                }
            }
        }
    }
}

#[test]
fn failed_fsync_with_unsynced_writes_kept_or_torn() {
    // A failed fsync may still have put the frame on disk: the in-doubt commit may then
    // be recovered, but only whole.
    for table in TABLE_KINDS {
        for mode in [
            CrashMode::KeepUnsynced,
            CrashMode::TearUnsynced,
            CrashMode::Random,
        ] {
            for k in [1, 4, 9] {
                write_fault_scenario(
                    Protection::Cow,
                    table,
                    k,
                    FaultOps::Sync,
                    FaultKind::Eio,
                    mode,
                );
            }
        }
    }
}

#[test]
fn write_faults_in_every_protection_mode() {
    for table in TABLE_KINDS {
        for protection in [Protection::FullPage, Protection::None] {
            for ops in [FaultOps::Write, FaultOps::Sync] {
                for k in [1, 3, 7] {
                    write_fault_scenario(
                        protection,
                        table,
                        k,
                        ops,
                        FaultKind::Eio,
                        CrashMode::DropUnsynced,
                    );
                }
            }
        }
    }
}

/// A fault at each write or sync of a checkpoint in turn, until a checkpoint gets through
/// without reaching the fault: the checkpoint fails with the fault, the database refuses
/// writes, and a reopen finds every acknowledged row.
#[test]
fn failed_checkpoint_poisons_and_loses_nothing() {
    for table in TABLE_KINDS {
        failed_checkpoint_poisons_and_loses_nothing_on(table);
    }
}

fn failed_checkpoint_poisons_and_loses_nothing_on(table: TableKind) {
    for protection in [Protection::Cow, Protection::FullPage, Protection::None] {
        for ops in [FaultOps::Write, FaultOps::Sync] {
            let mut fired = 0;
            for k in 1..200 {
                let context = format!("{protection:?} {table} checkpoint k={k} {ops:?}");
                let vfs = SimVfs::new(k);
                let db =
                    Database::create(DIR, small_pool(table_opts(&vfs, protection, table))).unwrap();
                db.create_table(TABLE, id_text_schema("payload")).unwrap();
                let mut acked = BTreeSet::new();
                for b in 0..30i64 {
                    let mut tx = db.begin();
                    let batch: Vec<Row> =
                        (3 * b..3 * b + 3).map(|id| padded_row(id, 200)).collect();
                    tx.insert_many(TABLE, &batch).unwrap();
                    tx.commit().unwrap();
                    acked.extend(3 * b..3 * b + 3);
                }
                // Dirty pages, an update chain and a delete for the checkpoint to write.
                let mut tx = db.begin();
                let all = tx.scan(TABLE).unwrap();
                tx.delete(TABLE, all[0].0).unwrap();
                tx.commit().unwrap();
                acked.remove(&0);
                vfs.fail_nth(k, ops, FaultKind::Eio);
                match db.checkpoint() {
                    Ok(()) => {
                        assert_eq!(vfs.faults_injected(), 0, "{context}");
                        assert!(
                            fired > 3,
                            "{context}: only {fired} fault points in a checkpoint"
                        );
                        break;
                    }
                    Err(e) => {
                        fired += 1;
                        assert_eq!(vfs.faults_injected(), 1, "{context}");
                        assert_injected(&e, FaultKind::Eio, &context);
                        assert_refuses_writes(&db, &e, 1000, &context);
                    }
                }
                drop(db);
                vfs.restart(CrashMode::Random);
                let db =
                    Database::open(DIR, small_pool(table_opts(&vfs, protection, table))).unwrap();
                assert_eq!(ids(&db).unwrap(), acked, "{context}");
            }
            eprintln!("{protection:?} {table} {ops:?}: {fired} fault points in one checkpoint");
        }
    }
}

/// A fault during recovery makes the open fail with the fault; opening again succeeds.
#[test]
fn failed_open_can_be_retried() {
    for table in TABLE_KINDS {
        failed_open_can_be_retried_on(table);
    }
}

fn failed_open_can_be_retried_on(table: TableKind) {
    for ops in [FaultOps::Write, FaultOps::Sync, FaultOps::Read] {
        let mut fired = 0;
        for k in 1..400 {
            let context = format!("{table} open k={k} {ops:?}");
            let vfs = SimVfs::new(k);
            let db = Database::create(DIR, small_pool(table_opts(&vfs, Protection::Cow, table)))
                .unwrap();
            db.create_table(TABLE, id_text_schema("payload")).unwrap();
            let mut acked = BTreeSet::new();
            for b in 0..20i64 {
                let mut tx = db.begin();
                let batch: Vec<Row> = (3 * b..3 * b + 3).map(|id| padded_row(id, 200)).collect();
                tx.insert_many(TABLE, &batch).unwrap();
                tx.commit().unwrap();
                acked.extend(3 * b..3 * b + 3);
            }
            drop(db);
            vfs.restart(CrashMode::DropUnsynced);
            vfs.fail_nth(k, ops, FaultKind::Eio);
            match Database::open(DIR, small_pool(table_opts(&vfs, Protection::Cow, table))) {
                Ok(db) => {
                    assert_eq!(vfs.faults_injected(), 0, "{context}");
                    assert!(fired > 3, "{context}: only {fired} fault points in an open");
                    assert_eq!(ids(&db).unwrap(), acked, "{context}");
                    eprintln!("{table} {ops:?}: {fired} fault points in one open");
                    break;
                }
                Err(e) => {
                    fired += 1;
                    assert_eq!(vfs.faults_injected(), 1, "{context}");
                    assert_injected(&e, FaultKind::Eio, &context);
                }
            }
            vfs.restart(CrashMode::Random);
            let db =
                Database::open(DIR, small_pool(table_opts(&vfs, Protection::Cow, table))).unwrap();
            assert_eq!(ids(&db).unwrap(), acked, "{context}");
        }
        assert!(fired > 0, "{table} {ops:?}: no fault fired");
    }
}

/// A failed page read is an `Io` error for that read only: it does not poison the
/// database, the same read succeeds afterwards, and writes go on.
#[test]
fn failed_page_read_is_an_io_error_and_does_not_poison() {
    for table in TABLE_KINDS {
        failed_page_read_is_an_io_error_and_does_not_poison_on(table);
    }
}

fn failed_page_read_is_an_io_error_and_does_not_poison_on(table: TableKind) {
    for kind in [FaultKind::Eio, FaultKind::Enospc] {
        let vfs = SimVfs::new(99);
        let db =
            Database::create(DIR, small_pool(table_opts(&vfs, Protection::Cow, table))).unwrap();
        db.create_table(TABLE, id_text_schema("payload")).unwrap();
        let mut tx = db.begin();
        let rows: Vec<Row> = (0..2000).map(|id| padded_row(id, 200)).collect();
        tx.insert_many(TABLE, &rows).unwrap();
        tx.commit().unwrap();
        db.checkpoint().unwrap();
        // 2000 rows of ~230 bytes are over a hundred 4 KiB pages: far more than the 16
        // frames of the pool, so the scan must read from the data file.
        for k in [1u64, 10, 50] {
            let injected = vfs.faults_injected();
            vfs.fail_nth(k, FaultOps::Read, kind);
            let mut tx = db.begin();
            match tx.scan(TABLE) {
                Err(Error::Io { path, source }) => {
                    assert_eq!(path, Path::new(DIR).join("data"));
                    assert_eq!(source.raw_os_error(), Some(errno(kind)));
                }
                other => panic!(
                    "{table} k={k}: expected Error::Io, got {:?}",
                    other.map(|v| v.len())
                ),
            }
            drop(tx);
            assert_eq!(vfs.faults_injected(), injected + 1);
            assert!(!db.is_poisoned(), "a failed read must not fence writes");
            assert_eq!(ids(&db).unwrap(), (0..2000).collect::<BTreeSet<i64>>());
        }
        let mut tx = db.begin();
        tx.insert(TABLE, &padded_row(5000, 200)).unwrap();
        tx.commit().unwrap();
        db.checkpoint().unwrap();
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
        let db = Database::open(DIR, small_pool(table_opts(&vfs, Protection::Cow, table))).unwrap();
        let mut expected: BTreeSet<i64> = (0..2000).collect();
        expected.insert(5000);
        assert_eq!(ids(&db).unwrap(), expected);
    }
}

/// A read fault while a writer fetches a page fails that statement only; the
/// transaction's earlier rows still commit, and nothing half-done becomes visible.
#[test]
fn failed_page_read_inside_a_write_fails_only_that_statement() {
    for table in TABLE_KINDS {
        failed_page_read_inside_a_write_fails_only_that_statement_on(table);
    }
}

fn failed_page_read_inside_a_write_fails_only_that_statement_on(table: TableKind) {
    let vfs = SimVfs::new(100);
    let db = Database::create(DIR, small_pool(table_opts(&vfs, Protection::Cow, table))).unwrap();
    db.create_table(TABLE, id_text_schema("payload")).unwrap();
    let mut tx = db.begin();
    let rows: Vec<Row> = (0..2000).map(|id| padded_row(id, 200)).collect();
    let ids_of = tx.insert_many(TABLE, &rows).unwrap();
    tx.commit().unwrap();
    db.checkpoint().unwrap();
    let mut tx = db.begin();
    tx.insert(TABLE, &padded_row(3000, 200)).unwrap();
    // The first row's page was evicted long ago: updating it must read it.
    vfs.fail_nth(1, FaultOps::Read, FaultKind::Eio);
    match tx.update(TABLE, ids_of[0], &padded_row(0, 200)) {
        Err(Error::Io { source, .. }) => assert_eq!(source.raw_os_error(), Some(libc::EIO)),
        other => panic!("expected Error::Io, got {other:?}"),
    }
    assert_eq!(vfs.faults_injected(), 1);
    assert!(!db.is_poisoned());
    tx.delete(TABLE, ids_of[1]).unwrap();
    tx.commit().unwrap();
    let mut expected: BTreeSet<i64> = (0..2000).collect();
    expected.remove(&1);
    expected.insert(3000);
    assert_eq!(ids(&db).unwrap(), expected);
    drop(db);
    vfs.restart(CrashMode::DropUnsynced);
    let db = Database::open(DIR, small_pool(table_opts(&vfs, Protection::Cow, table))).unwrap();
    assert_eq!(ids(&db).unwrap(), expected);
}

/// Write faults while a large transaction evicts dirty pages (the WAL is flushed, then
/// the page written): the failing statement reports the fault, the database refuses
/// writes, and the transaction that never committed leaves no trace after recovery.
#[test]
fn failed_eviction_write_poisons_and_the_open_transaction_vanishes() {
    for table in TABLE_KINDS {
        failed_eviction_write_poisons_and_the_open_transaction_vanishes_on(table);
    }
}

fn failed_eviction_write_poisons_and_the_open_transaction_vanishes_on(table: TableKind) {
    let mut paths = BTreeSet::new();
    for k in 1..=8u64 {
        let context = format!("{table} eviction k={k}");
        let vfs = SimVfs::new(k + 500);
        let db =
            Database::create(DIR, small_pool(table_opts(&vfs, Protection::Cow, table))).unwrap();
        db.create_table(TABLE, id_text_schema("payload")).unwrap();
        let mut tx = db.begin();
        let first = tx
            .insert_many(TABLE, (0..30).map(|id| padded_row(id, 200)))
            .unwrap();
        tx.commit().unwrap();
        let acked: BTreeSet<i64> = (0..30).collect();
        vfs.fail_nth(k, FaultOps::Write, FaultKind::Enospc);
        let mut tx = db.begin();
        let mut failure = None;
        if table == TableKind::Undo {
            // The acknowledged rows changed in place first: their old values must come
            // back from the WAL once the changed pages have been evicted.
            for (id, rid) in (0..30).zip(&first) {
                let changed = vec![Value::Int8(id), Value::Text(format!("{id:<200}"))];
                if let Err(e) = tx.update(TABLE, *rid, &changed) {
                    failure = Some(e);
                    break;
                }
            }
        }
        // Up to 1,000 rows of ~230 bytes: some 60 pages, four times the pool.
        let mut id = 100;
        while failure.is_none() && id < 1100 {
            failure = tx.insert(TABLE, &padded_row(id, 200)).err();
            id += 1;
        }
        let e = failure.unwrap_or_else(|| panic!("{context}: the fault never fired"));
        drop(tx);
        assert_eq!(vfs.faults_injected(), 1, "{context}");
        assert_injected(&e, FaultKind::Enospc, &context);
        if let Error::Io { path, .. } = &e {
            paths.insert(path.clone());
        }
        assert_refuses_writes(&db, &e, 5000, &context);
        drop(db);
        vfs.restart(CrashMode::Random);
        let db = Database::open(DIR, small_pool(table_opts(&vfs, Protection::Cow, table))).unwrap();
        assert_eq!(ids(&db).unwrap(), acked, "{context}");
    }
    // Both kinds of write were hit: WAL frames and data pages.
    assert!(
        paths.contains(&Path::new(DIR).join("data")),
        "{table}: {paths:?}"
    );
    assert!(
        paths
            .iter()
            .any(|p| p.starts_with(Path::new(DIR).join("wal"))),
        "{table}: {paths:?}"
    );
}

/// After a failed write fences the database, reads go on: a scan of a table larger than
/// the buffer pool evicts clean frames only (a dirty one cannot be written), and gives
/// every committed row; writes stay refused. What could go wrong: a full disk making
/// the data unreadable until a reopen, because eviction tried to write a dirty frame.
#[test]
fn a_fenced_database_still_reads() {
    let vfs = SimVfs::new(21);
    let db = Database::create(
        DIR,
        support::small_pool(support::table_opts(
            &vfs,
            Protection::FullPage,
            TableKind::Heap,
        )),
    )
    .unwrap();
    db.create_table("t", support::id_text_schema("v")).unwrap();
    let mut t = db.begin();
    for i in 0..2_000 {
        t.insert("t", &support::text_row(i, format!("row {i:0>60}")))
            .unwrap();
    }
    t.commit().unwrap();
    db.checkpoint().unwrap();
    // A few frames dirty, then a write that fails: the database is fenced.
    let mut t = db.begin();
    let ids = t.scan("t").unwrap();
    for i in [3, 700, 1400] {
        t.update("t", ids[i].0, &support::text_row(i as i64, "changed"))
            .unwrap();
    }
    t.commit().unwrap();
    vfs.fail_nth(1, FaultOps::Write, FaultKind::Enospc);
    assert!(db.checkpoint().is_err());
    assert!(db.is_poisoned());
    assert_eq!(vfs.faults_injected(), 1);
    // Every row reads back, the changed ones changed, though the pool (16 frames) is
    // far smaller than the table.
    let rows = db.begin().scan("t").unwrap();
    assert_eq!(rows.len(), 2_000);
    let changed = rows
        .iter()
        .filter(|(_, r)| r[1] == Value::Text("changed".into()))
        .count();
    assert_eq!(changed, 3);
    // Writes stay refused.
    let mut t = db.begin();
    let e = t
        .insert("t", &support::text_row(9_999, "refused"))
        .and_then(|_| t.commit());
    assert!(matches!(e, Err(Error::Poisoned { .. })), "{e:?}");
}
