//! Space given back: VACUUM takes a table's empty pages out of it, a checkpoint makes
//! them free for any relation and cuts the data file's free end. What could go wrong: a
//! page given back while a snapshot could still read rows on it, a page used by two
//! relations, a file cut past a page in use, or an open that refuses a file shorter
//! than its checkpoint recorded though only free pages are missing.
#![allow(clippy::unwrap_used)]

use walden::vfs::{CrashMode, SimVfs};
use walden::*;

mod support;
use support::{id_text_schema, padded_row, sorted_ids, table_opts, DIR};

const MODES: [Protection; 3] = [Protection::Cow, Protection::FullPage, Protection::None];
const KINDS: [TableKind; 2] = [TableKind::Heap, TableKind::Undo];

fn options(vfs: &SimVfs, protection: Protection, kind: TableKind) -> Options {
    Options {
        page_size: 8192,
        buffer_pool_bytes: 4 << 20,
        ..table_opts(vfs, protection, kind)
    }
}

fn insert(db: &Database, table: &str, ids: std::ops::Range<i64>) {
    let rows: Vec<Row> = ids.map(|i| padded_row(i, 200)).collect();
    let mut tx = db.begin();
    tx.insert_many(table, &rows).unwrap();
    tx.commit().unwrap();
}

fn delete_all(db: &Database, table: &str) {
    let mut tx = db.begin();
    tx.modify_with(table, |_, _| RowAction::Delete).unwrap();
    tx.commit().unwrap();
}

/// Table `t` with a unique index `t_id` on its id.
fn indexed_table(db: &Database) {
    db.create_table("t", id_text_schema("payload")).unwrap();
    db.create_index(&IndexSpec {
        name: "t_id",
        table: "t",
        columns: &["id"],
        unique: true,
        ..IndexSpec::default()
    })
    .unwrap();
}

/// The rows of `t` its index finds under `id`.
fn rows_with_key(db: &Database, id: i64) -> usize {
    let mut tx = db.begin();
    let n = tx.index_get("t_id", &[Value::Int8(id)]).unwrap().len();
    tx.commit().unwrap();
    n
}

fn assert_clean(db: &Database, what: &str) {
    let r = db.check().unwrap();
    assert!(r.is_clean(), "{what}: {:?}", r.problems);
}

/// A small table made first (its pages lie at the file's start), then a big one: after
/// the big one is emptied and vacuumed, the data file is cut to a few pages, and the
/// database works on: the pages go to new rows, across a restart and a crash.
#[test]
fn vacuum_gives_an_emptied_tables_space_back() {
    for protection in MODES {
        for kind in KINDS {
            let what = format!("{protection:?} {kind:?}");
            let vfs = SimVfs::new(11);
            let db = Database::create(DIR, options(&vfs, protection, kind)).unwrap();
            db.create_table("small", id_text_schema("payload")).unwrap();
            insert(&db, "small", 0..10);
            db.create_table("big", id_text_schema("payload")).unwrap();
            insert(&db, "big", 0..12_000);
            db.checkpoint().unwrap();
            let before = db.data_file_bytes().unwrap();
            let big_pages = db.table_bytes("big").unwrap();
            assert!(big_pages > 300 * 8192, "{what}: {big_pages}");
            delete_all(&db, "big");
            db.vacuum("big").unwrap();
            assert_eq!(db.table_bytes("big").unwrap(), 0, "{what}");
            let after = db.data_file_bytes().unwrap();
            // The room reserved for changes to come stays (`BufferPool::ensure_room`:
            // ROOM_MARGIN free locations, and in cow a few for the map).
            let reserve = (walden::buffer::ROOM_MARGIN + 8) * 8192;
            assert!(
                after * 20 <= before + 20 * reserve,
                "{what}: data file {before} bytes before, {after} after"
            );
            // The file may have grown on the way (a cow checkpoint's map).
            let given_back = db.stats().data_bytes_given_back;
            assert!(given_back >= before - after, "{what}: {given_back} counted");
            assert_clean(&db, &what);
            assert_eq!(sorted_ids(&db, "big"), Vec::<i64>::new(), "{what}");
            // The crash right after: the checkpoint recorded a longer file, but only
            // free pages are missing.
            drop(db);
            vfs.restart(CrashMode::DropUnsynced);
            let db = Database::open(DIR, options(&vfs, protection, kind)).unwrap();
            assert_clean(&db, &what);
            assert_eq!(sorted_ids(&db, "small"), (0..10).collect::<Vec<_>>());
            assert_eq!(sorted_ids(&db, "big"), Vec::<i64>::new(), "{what}");
            // The pages are used again, by the table or another.
            insert(&db, "big", 0..3000);
            db.create_table("other", id_text_schema("payload")).unwrap();
            insert(&db, "other", 0..3000);
            assert_clean(&db, &what);
            let grown = db.data_file_bytes().unwrap();
            assert!(grown <= before + 8 * 8192, "{what}: {grown} > {before}");
            db.close().unwrap();
            let db = Database::open(DIR, options(&vfs, protection, kind)).unwrap();
            assert_clean(&db, &what);
            assert_eq!(sorted_ids(&db, "big"), (0..3000).collect::<Vec<_>>());
            assert_eq!(sorted_ids(&db, "other"), (0..3000).collect::<Vec<_>>());
            assert_eq!(sorted_ids(&db, "small"), (0..10).collect::<Vec<_>>());
        }
    }
}

/// A snapshot taken before the delete still reads the rows: their pages are not
/// emptied, so not given back, until it ends.
#[test]
fn a_snapshot_keeps_the_pages_it_can_read() {
    for kind in KINDS {
        let what = format!("{kind:?}");
        let vfs = SimVfs::new(12);
        let db = Database::create(DIR, options(&vfs, Protection::Cow, kind)).unwrap();
        db.create_table("t", id_text_schema("payload")).unwrap();
        insert(&db, "t", 0..2000);
        let mut reader = db.begin();
        delete_all(&db, "t");
        db.vacuum("t").unwrap();
        assert!(db.table_bytes("t").unwrap() > 0, "{what}");
        assert_eq!(
            reader.scan("t").unwrap().len(),
            2000,
            "{what}: the old snapshot"
        );
        reader.commit().unwrap();
        db.vacuum("t").unwrap();
        assert_eq!(db.table_bytes("t").unwrap(), 0, "{what}");
        assert_clean(&db, &what);
    }
}

/// A table with a unique index: the index's entries go with the rows, so the same keys
/// go in again; lookups of the old keys find nothing meanwhile.
#[test]
fn an_indexed_tables_pages_go_back_and_its_keys_return() {
    for protection in MODES {
        for kind in KINDS {
            let what = format!("{protection:?} {kind:?}");
            let vfs = SimVfs::new(13);
            let db = Database::create(DIR, options(&vfs, protection, kind)).unwrap();
            indexed_table(&db);
            insert(&db, "t", 0..3000);
            delete_all(&db, "t");
            db.vacuum("t").unwrap();
            assert_eq!(db.table_bytes("t").unwrap(), 0, "{what}");
            assert_eq!(rows_with_key(&db, 7), 0, "{what}");
            insert(&db, "t", 0..3000);
            assert_clean(&db, &what);
            assert_eq!(rows_with_key(&db, 7), 1, "{what}");
            drop(db);
            vfs.restart(CrashMode::Random);
            let db = Database::open(DIR, options(&vfs, protection, kind)).unwrap();
            assert_clean(&db, &what);
            assert_eq!(sorted_ids(&db, "t"), (0..3000).collect::<Vec<_>>());
        }
    }
}

/// Truncation is checked at the open: a fixed-place data file cut shorter than its
/// checkpoint recorded opens only if every page missing is free.
#[test]
fn a_data_file_cut_past_a_page_in_use_is_refused() {
    for protection in [Protection::FullPage, Protection::None] {
        let vfs = SimVfs::new(14);
        let db = Database::create(DIR, options(&vfs, protection, TableKind::Heap)).unwrap();
        db.create_table("t", id_text_schema("payload")).unwrap();
        insert(&db, "t", 0..3000);
        db.close().unwrap();
        let data = std::path::Path::new(DIR).join("data");
        // Cut to half: past the room kept ahead (`ensure_room`), into pages in use.
        let len = vfs.file_contents(&data).unwrap().len() as u64;
        assert!(vfs.truncate_file(&data, len / 8192 / 2 * 8192));
        let Err(err) = Database::open(DIR, options(&vfs, protection, TableKind::Heap)) else {
            panic!("{protection:?}: a file cut past a page in use opened");
        };
        assert!(
            matches!(err, Error::CorruptFile { .. }),
            "{protection:?}: {err:?}"
        );
    }
}

/// REINDEX gives the old index's pages back: rebuilt again and again, with checkpoints
/// between, an index does not grow the data file; across a crash the same holds.
#[test]
fn reindex_gives_the_old_pages_back() {
    for protection in MODES {
        let what = format!("{protection:?}");
        let vfs = SimVfs::new(15);
        let db = Database::create(DIR, options(&vfs, protection, TableKind::Heap)).unwrap();
        indexed_table(&db);
        insert(&db, "t", 0..20_000);
        db.reindex("t_id").unwrap();
        db.checkpoint().unwrap();
        db.checkpoint().unwrap();
        let size = db.data_file_bytes().unwrap();
        for _ in 0..4 {
            db.reindex("t_id").unwrap();
            db.checkpoint().unwrap();
            db.checkpoint().unwrap();
        }
        let grown = db.data_file_bytes().unwrap();
        assert!(grown <= size + 4 * 8192, "{what}: {size} then {grown}");
        assert_clean(&db, &what);
        db.reindex("t_id").unwrap();
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
        let db = Database::open(DIR, options(&vfs, protection, TableKind::Heap)).unwrap();
        assert_clean(&db, &what);
        assert_eq!(rows_with_key(&db, 19_999), 1, "{what}");
    }
}

/// A table a little larger than the buffer pool, emptied and vacuumed: the emptied
/// pages' frames are dropped unwritten, so the vacuum writes about what its pass pushed
/// out of the pool, not the table again. (Judging the emptied pages again in the pass's
/// order once made each read push out a dirty frame: the whole table was written.)
#[test]
fn vacuum_of_a_table_larger_than_the_pool_does_not_write_it_again() {
    for protection in MODES {
        for kind in KINDS {
            let what = format!("{protection:?} {kind:?}");
            let vfs = SimVfs::new(16);
            let opts = support::with_pool(options(&vfs, protection, kind), 8192, 256);
            let db = Database::create(DIR, opts).unwrap();
            db.create_table("t", id_text_schema("payload")).unwrap();
            insert(&db, "t", 0..10_000);
            let pages = db.table_bytes("t").unwrap() / 8192;
            assert!(pages > 256, "{what}: {pages} pages");
            delete_all(&db, "t");
            db.checkpoint().unwrap();
            let before = db.stats();
            db.vacuum("t").unwrap();
            let written = db.stats().since(&before).data_pages_written;
            assert_eq!(db.table_bytes("t").unwrap(), 0, "{what}");
            assert!(
                written * 2 < pages,
                "{what}: the vacuum wrote {written} pages of a {pages}-page table"
            );
            assert_clean(&db, &what);
        }
    }
}
