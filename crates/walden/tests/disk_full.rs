//! A full disk (the simulated file layer's capacity, `SimVfs::set_capacity`): what could
//! go wrong is a database that acknowledges what it cannot write, loses what it
//! acknowledged, or becomes unusable — refusing reads, or refusing everything until a
//! restart — where only the change that does not fit should fail. In copy-on-write mode
//! the data file's room for every dirty page is reserved before a change, in the
//! fixed-place modes room for the pages changes make (`BufferPool::ensure_room`), so the insert that does not fit fails with `DiskFull`
//! (SQLSTATE 53100) and nothing is fenced: reads go on, and once space is freed so do
//! writes.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use walden::vfs::{CrashMode, SimVfs};
use walden::*;

mod support;
use support::{id_text_schema, padded_row, table_opts, DIR, TABLE};

fn ids(db: &Database) -> BTreeSet<i64> {
    db.begin()
        .scan(TABLE)
        .unwrap()
        .into_iter()
        .map(|(_, r)| match r[0] {
            Value::Int8(id) => id,
            _ => panic!("unexpected row {r:?}"),
        })
        .collect()
}

/// Inserts rows from `from`, one transaction each, until one fails; the ids committed
/// and the error.
fn fill(db: &Database, from: i64, committed: &mut BTreeSet<i64>) -> Error {
    for id in from..from + 1_000_000 {
        let mut tx = db.begin();
        if let Err(e) = tx.insert(TABLE, &padded_row(id, 200)) {
            return e;
        }
        match tx.commit() {
            Ok(()) => {
                committed.insert(id);
            }
            Err(e) => return e,
        }
    }
    panic!("the disk never filled");
}

/// Each protection mode with each table kind: copy-on-write reserves a free location
/// per dirty page; the fixed-place modes keep the file ahead of the next page number.
fn cases() -> Vec<(Protection, TableKind)> {
    let mut out = Vec::new();
    for prot in [Protection::Cow, Protection::FullPage, Protection::None] {
        for kind in [TableKind::Heap, TableKind::Undo] {
            out.push((prot, kind));
        }
    }
    out
}

#[test]
fn a_full_disk_fails_the_insert_that_does_not_fit_and_nothing_else() {
    for (prot, kind) in cases() {
        let vfs = SimVfs::new(5);
        let db = Database::create(DIR, table_opts(&vfs, prot, kind)).unwrap();
        db.create_table(TABLE, id_text_schema("v")).unwrap();
        db.checkpoint().unwrap();
        // Room for the WAL's segments (2 MiB each, made ahead) and a little data.
        vfs.set_capacity(Some(vfs.bytes_used() + (5 << 20)));
        let mut committed = BTreeSet::new();
        let e = fill(&db, 0, &mut committed);
        assert!(
            matches!(e, Error::DiskFull { .. }),
            "{prot:?} {kind:?}: expected DiskFull, got {e:?}"
        );
        assert!(
            !db.is_poisoned(),
            "{prot:?} {kind:?}: the full disk fenced the database"
        );
        assert!(
            committed.len() > 100,
            "{prot:?} {kind:?}: only {} rows fit",
            committed.len()
        );
        // Reads go on, and see every row acknowledged.
        assert_eq!(ids(&db), committed, "{prot:?} {kind:?}");
        // The next insert is refused the same way, still without a fence.
        let mut tx = db.begin();
        let e = tx.insert(TABLE, &padded_row(-1, 200)).unwrap_err();
        assert!(
            matches!(e, Error::DiskFull { .. }),
            "{prot:?} {kind:?}: {e:?}"
        );
        drop(tx);
        assert!(!db.is_poisoned());
        // A checkpoint with no byte to spare: its pages go to the room reserved, its file
        // finds none; the checkpoint before stays in force and nothing is fenced.
        vfs.set_capacity(Some(vfs.bytes_used()));
        match db.checkpoint() {
            Ok(()) | Err(Error::DiskFull { .. }) => {}
            Err(e) => panic!("{prot:?} {kind:?}: checkpoint on a full disk: {e:?}"),
        }
        assert!(
            !db.is_poisoned(),
            "{prot:?} {kind:?}: the checkpoint fenced the database"
        );
        assert_eq!(ids(&db), committed, "{prot:?} {kind:?}");
        // Space is freed: writes go on, in the same open database.
        vfs.set_capacity(None);
        let next = committed.iter().max().unwrap() + 1;
        for id in next..next + 100 {
            let mut tx = db.begin();
            tx.insert(TABLE, &padded_row(id, 200)).unwrap();
            tx.commit().unwrap();
            committed.insert(id);
        }
        db.checkpoint().unwrap();
        assert_eq!(ids(&db), committed, "{prot:?} {kind:?}");
        // After a crash every acknowledged row is there.
        vfs.crash_now();
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
        let db = Database::open(DIR, table_opts(&vfs, prot, kind)).unwrap();
        assert_eq!(ids(&db), committed, "{prot:?} {kind:?}: after the crash");
    }
}

/// A crash while the disk is full: the database reopens on the same, still full, disk
/// (recovery writes its pages into the room reserved before the crash) with every
/// acknowledged row, and refuses the next insert that does not fit as before.
#[test]
fn a_database_that_filled_its_disk_reopens_on_it() {
    for (prot, kind) in cases() {
        let vfs = SimVfs::new(6);
        let db = Database::create(DIR, table_opts(&vfs, prot, kind)).unwrap();
        db.create_table(TABLE, id_text_schema("v")).unwrap();
        db.checkpoint().unwrap();
        vfs.set_capacity(Some(vfs.bytes_used() + (5 << 20)));
        let mut committed = BTreeSet::new();
        let e = fill(&db, 0, &mut committed);
        assert!(
            matches!(e, Error::DiskFull { .. }),
            "{prot:?} {kind:?}: {e:?}"
        );
        vfs.crash_now();
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
        let db = Database::open(DIR, table_opts(&vfs, prot, kind))
            .unwrap_or_else(|e| panic!("{prot:?} {kind:?}: reopening on the full disk: {e}"));
        assert_eq!(ids(&db), committed, "{prot:?} {kind:?}: after the crash");
        let next = committed.iter().max().unwrap() + 1;
        let e = fill(&db, next, &mut committed);
        assert!(
            matches!(e, Error::DiskFull { .. }),
            "{prot:?} {kind:?}: {e:?}"
        );
        assert!(!db.is_poisoned());
        assert_eq!(ids(&db), committed, "{prot:?} {kind:?}");
    }
}

/// The disk fills at different points of the WAL's and the data file's growth (budgets
/// from 3 to 12 MiB past a fresh database, in each protection mode): whichever runs out first, the data file's
/// reserve or the WAL's next segment (made ahead, `Wal::prepare_next`), the insert
/// fails with `DiskFull` and nothing is fenced; both kinds are met.
#[test]
fn whichever_file_runs_out_first_nothing_is_fenced() {
    for prot in [Protection::Cow, Protection::FullPage, Protection::None] {
        whichever_file_runs_out_first(prot);
    }
}

fn whichever_file_runs_out_first(prot: Protection) {
    let mut met = BTreeSet::new();
    for (n, mib) in (3..=12u64).enumerate() {
        let vfs = SimVfs::new(20 + n as u64);
        let db = Database::create(DIR, table_opts(&vfs, prot, TableKind::Heap)).unwrap();
        db.create_table(TABLE, id_text_schema("v")).unwrap();
        db.checkpoint().unwrap();
        vfs.set_capacity(Some(vfs.bytes_used() + (mib << 20)));
        let mut committed = BTreeSet::new();
        let e = fill(&db, 0, &mut committed);
        let Error::DiskFull { path, .. } = &e else {
            panic!("{prot:?} {mib} MiB: expected DiskFull, got {e:?}");
        };
        met.insert(if path.to_string_lossy().contains("wal") {
            "wal"
        } else {
            "data"
        });
        assert!(!db.is_poisoned(), "{prot:?} {mib} MiB");
        assert_eq!(ids(&db), committed, "{prot:?} {mib} MiB");
        vfs.set_capacity(None);
        let mut tx = db.begin();
        tx.insert(TABLE, &padded_row(-1, 200)).unwrap();
        tx.commit().unwrap();
        committed.insert(-1);
        vfs.crash_now();
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
        let db = Database::open(DIR, table_opts(&vfs, prot, TableKind::Heap)).unwrap();
        assert_eq!(ids(&db), committed, "{prot:?} {mib} MiB: after the crash");
    }
    assert_eq!(
        met.len(),
        2,
        "{prot:?}: only {met:?} ran out first: the budgets no longer reach both"
    );
}
