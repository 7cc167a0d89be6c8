//! `Transaction::modify_with`, the set-oriented update and delete the SQL layer uses. What
//! could go wrong: an update meeting its own new versions again (the Halloween problem),
//! rows skipped or changed twice across pages, a Stop that undoes or keeps the wrong rows,
//! and a concurrent writer's change being overwritten.
#![allow(clippy::unwrap_used)]

use walden::vfs::SimVfs;
use walden::*;

mod support;
use support::{sim_opts, sorted_int8_pairs};

fn db(vfs: &SimVfs) -> Database {
    let db = Database::create("db", sim_opts(vfs)).unwrap();
    db.create_table(
        "t",
        Schema::new(vec![
            Column::not_null("a", ColumnType::Int8),
            Column::new("b", ColumnType::Int8),
            Column::new("pad", ColumnType::Text),
        ]),
    )
    .unwrap();
    let mut tx = db.begin();
    let rows: Vec<Row> = (0..5000)
        .map(|i| vec![Value::Int8(i), Value::Int8(i), Value::Text("x".repeat(50))])
        .collect();
    tx.insert_many("t", &rows).unwrap();
    tx.commit().unwrap();
    db
}

#[test]
fn update_all_changes_each_row_exactly_once() {
    let vfs = SimVfs::new(3);
    let db = db(&vfs);
    let mut tx = db.begin();
    // The new versions are larger, so many move to later pages the scan has yet to read.
    let n = tx
        .modify_with("t", |_, row| {
            let mut new = row.clone();
            if let Value::Int8(b) = new[1] {
                new[1] = Value::Int8(b + 1);
            }
            new[2] = Value::Text("y".repeat(120));
            RowAction::Update(new)
        })
        .unwrap();
    assert_eq!(n, 5000);
    tx.commit().unwrap();
    let rows = sorted_int8_pairs(&db, "t");
    assert_eq!(rows.len(), 5000);
    assert!(rows.iter().all(|&(a, b)| b == a + 1), "each row once");
}

#[test]
fn delete_where_and_stop_keep_exactly_the_rows_before() {
    let vfs = SimVfs::new(4);
    let db = db(&vfs);
    let mut tx = db.begin();
    let n = tx
        .modify_with("t", |_, row| match row[0] {
            Value::Int8(a) if a % 10 == 1 => RowAction::Delete,
            _ => RowAction::Keep,
        })
        .unwrap();
    assert_eq!(n, 500);
    // Stop after three more updates: exactly those three stay changed.
    let mut seen = 0;
    let n = tx
        .modify_with("t", |_, row| {
            seen += 1;
            if seen > 3 {
                return RowAction::Stop;
            }
            RowAction::Update(vec![row[0].clone(), Value::Int8(-1), row[2].clone()])
        })
        .unwrap();
    assert_eq!(n, 3);
    tx.commit().unwrap();
    let rows = sorted_int8_pairs(&db, "t");
    assert_eq!(rows.len(), 4500);
    assert!(rows.iter().all(|&(a, _)| a % 10 != 1));
    assert_eq!(rows.iter().filter(|&&(_, b)| b == -1).count(), 3);
}

#[test]
fn rolled_back_modify_leaves_nothing() {
    let vfs = SimVfs::new(5);
    let db = db(&vfs);
    let before = sorted_int8_pairs(&db, "t");
    let mut tx = db.begin();
    tx.modify_with("t", |_, _| RowAction::Delete).unwrap();
    assert!(tx.scan("t").unwrap().is_empty());
    tx.rollback().unwrap();
    assert_eq!(sorted_int8_pairs(&db, "t"), before);
}

#[test]
fn concurrent_committed_change_is_a_serialization_failure() {
    let vfs = SimVfs::new(6);
    let db = db(&vfs);
    let mut reader = db.begin();
    // Take the snapshot before the other writer commits.
    assert_eq!(reader.scan("t").unwrap().len(), 5000);
    let mut other = db.begin();
    other
        .modify_with("t", |_, row| match row[0] {
            Value::Int8(7) => RowAction::Delete,
            _ => RowAction::Keep,
        })
        .unwrap();
    other.commit().unwrap();
    let err = reader
        .modify_with("t", |_, row| {
            RowAction::Update(vec![row[0].clone(), Value::Int8(0), row[2].clone()])
        })
        .unwrap_err();
    assert!(matches!(err, Error::SerializationFailure), "got {err:?}");
    reader.rollback().unwrap();
    assert_eq!(sorted_int8_pairs(&db, "t").len(), 4999);
}
