//! Crafted WAL records (whole, with valid frame and record CRCs) whose fields are out of
//! range: what could go wrong is recovery panicking on arithmetic overflow instead of
//! reporting the record as corrupt WAL.
#![allow(clippy::unwrap_used)]

use std::panic::{catch_unwind, AssertUnwindSafe};

use walden::access::heap::wal_records::HeapRecord;
use walden::access::slotted::SlottedRecord;
use walden::catalog::CatalogRecord;
use walden::vfs::{CrashMode, SimVfs};
use walden::wal::payload::Payload;
use walden::*;

mod support;
use support::{append_frame, int8_schema, opts, DIR};

/// A database with table `t` (id 1) holding one committed row, stopped without a
/// checkpoint after it. Returns the next unused page number.
fn base(vfs: &SimVfs) -> u64 {
    let db = Database::create(DIR, opts(vfs, Protection::Cow)).unwrap();
    db.create_table("t", int8_schema("id")).unwrap();
    let mut tx = db.begin();
    let id = tx.insert("t", &[Value::Int8(1)]).unwrap();
    tx.commit().unwrap();
    drop(db);
    vfs.restart(CrashMode::DropUnsynced);
    id.page + 1
}

/// Opens the database; Err(panic message) if opening panicked.
fn open_without_panic(vfs: &SimVfs) -> Result<Result<Database, Error>, String> {
    catch_unwind(AssertUnwindSafe(|| {
        Database::open(DIR, opts(vfs, Protection::Cow))
    }))
    .map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

fn assert_no_panic(vfs: &SimVfs) {
    match open_without_panic(vfs) {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => eprintln!("open refused the crafted WAL: {e}"),
        Err(msg) => panic!("recovery panicked on a crafted WAL record: {msg}"),
    }
}

#[test]
fn heap_insert_at_slot_65535_is_corrupt_wal_not_a_panic() {
    let vfs = SimVfs::new(1);
    let page = base(&vfs);
    append_frame(
        &vfs,
        &[
            (&SlottedRecord::Init { page, table: 1 }, 50),
            (
                &HeapRecord::Insert {
                    page,
                    cid: 1,
                    rows: vec![(u16::MAX, vec![0; 9])],
                },
                50,
            ),
        ],
    );
    assert_no_panic(&vfs);
}

#[test]
fn heap_init_of_page_u64_max_is_corrupt_wal_not_a_panic() {
    let vfs = SimVfs::new(2);
    base(&vfs);
    append_frame(
        &vfs,
        &[(
            &SlottedRecord::Init {
                page: u64::MAX,
                table: 1,
            },
            50,
        )],
    );
    assert_no_panic(&vfs);
}

#[test]
fn record_with_xid_u64_max_is_corrupt_wal_not_a_panic() {
    let vfs = SimVfs::new(3);
    let page = base(&vfs);
    append_frame(&vfs, &[(&SlottedRecord::Init { page, table: 1 }, u64::MAX)]);
    assert_no_panic(&vfs);
}

#[test]
fn create_table_with_id_u32_max_is_corrupt_wal_not_a_panic() {
    let vfs = SimVfs::new(4);
    base(&vfs);
    append_frame(
        &vfs,
        &[(
            &CatalogRecord::CreateTable {
                table: u32::MAX,
                name: "x".into(),
                schema: Schema::new(vec![Column::new("a", ColumnType::Int4)]),
                kind: TableKind::Heap,
            },
            50,
        )],
    );
    assert_no_panic(&vfs);
}

/// Undo-table records whose offsets, slots and lengths do not fit the page they name:
/// redo, and crash rollback of the (uncommitted) transaction, report the page as corrupt.
#[test]
fn undo_records_that_do_not_fit_their_page_are_errors_not_panics() {
    use walden::access::undo_table::wal_records::{ChangeOp, RevertOp, UndoTableRecord};
    let hostile = [
        UndoTableRecord::Change {
            page: 0,
            cid: 1,
            ops: vec![ChangeOp::Update {
                slot: 0,
                flags: None,
                off: u16::MAX,
                xor: vec![3; 4],
            }],
        },
        UndoTableRecord::Change {
            page: 0,
            cid: 1,
            ops: vec![ChangeOp::Resize {
                slot: 0,
                old_flags: 0,
                new_flags: 0,
                old_area: vec![1; 8],
                new_area: vec![2; 60_000],
            }],
        },
        UndoTableRecord::Change {
            page: 0,
            cid: 1,
            ops: vec![ChangeOp::Delete { slot: 900 }],
        },
        UndoTableRecord::Revert {
            page: 0,
            undone_lsn: 0,
            ops: vec![RevertOp::Remove { slot: 77 }],
        },
        UndoTableRecord::Revert {
            page: 0,
            undone_lsn: 0,
            ops: vec![RevertOp::Patch {
                slot: 0,
                header: [0; 17],
                off: 60_000,
                bytes: vec![1; 10],
            }],
        },
    ];
    for (i, rec) in hostile.into_iter().enumerate() {
        let vfs = SimVfs::new(100 + i as u64);
        base(&vfs);
        append_frame(&vfs, &[(&rec, 60)]);
        match open_without_panic(&vfs) {
            Ok(Err(Error::CorruptPage { reason, .. })) => {
                assert!(reason.contains("redo of the record"), "case {i}: {reason}")
            }
            Ok(other) => panic!("case {i}: expected CorruptPage, got {:?}", other.err()),
            Err(msg) => panic!("case {i}: recovery panicked: {msg}"),
        }
    }
}

/// A `btree_insert_row` whose row cannot be found or read (no insert record of its
/// transaction before it, a slot that record does not hold, a key part past the row's
/// end) is corrupt WAL naming the reason, not a panic and not a made-up index entry.
#[test]
fn btree_insert_row_without_its_row_is_corrupt_wal() {
    use walden::access::btree::key::KeyPart;
    use walden::access::btree::wal_records::BTreeRecord;
    let entry = |slot: u16, offset: u32| BTreeRecord::InsertRow {
        page: 0,
        pos: 0,
        slot,
        key: vec![KeyPart::At {
            ty: ColumnType::Int8,
            offset,
            desc: true,
        }],
    };
    let cases = [
        (false, entry(0, 1), "no insert record of its transaction"),
        (true, entry(5, 1), "no row at slot 5"),
        (true, entry(0, 100), "outside the row"),
    ];
    for (i, (with_insert, rec, want)) in cases.into_iter().enumerate() {
        let vfs = SimVfs::new(200 + i as u64);
        let page = base(&vfs);
        let init = SlottedRecord::Init { page, table: 1 };
        let insert = HeapRecord::Insert {
            page,
            cid: 1,
            rows: vec![(0, vec![0; 9])],
        };
        let mut records: Vec<(&dyn Payload, u64)> = Vec::new();
        if with_insert {
            records.push((&init, 70));
            records.push((&insert, 70));
        }
        records.push((&rec, 70));
        append_frame(&vfs, &records);
        match open_without_panic(&vfs) {
            Ok(Err(Error::CorruptWal { reason, .. })) => {
                assert!(reason.contains(want), "case {i}: {reason}")
            }
            Ok(other) => panic!("case {i}: expected CorruptWal, got {:?}", other.err()),
            Err(msg) => panic!("case {i}: recovery panicked: {msg}"),
        }
    }
}

/// A `heap_prune_hot` record whose redirect starts or ends at a slot with no tuple fails
/// its redo with an error naming the record and the slot, not a panic.
#[test]
fn heap_prune_hot_with_a_missing_slot_is_an_error_naming_it() {
    let cases = [
        (vec![(0u16, 9u16)], "to slot 9, which holds no tuple"),
        (vec![(5, 0)], "no tuple at slot 5"),
    ];
    for (i, (redirects, want)) in cases.into_iter().enumerate() {
        let vfs = SimVfs::new(300 + i as u64);
        let page = base(&vfs) - 1;
        let rec = HeapRecord::PruneHot {
            page,
            redirects,
            removed: vec![],
        };
        append_frame(&vfs, &[(&rec, 70)]);
        match open_without_panic(&vfs) {
            Ok(Err(Error::CorruptPage { reason, .. })) => {
                assert!(reason.contains(want), "case {i}: {reason}")
            }
            Ok(other) => panic!("case {i}: expected CorruptPage, got {:?}", other.err()),
            Err(msg) => panic!("case {i}: recovery panicked: {msg}"),
        }
    }
}
