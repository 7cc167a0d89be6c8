//! Reads of a row while other transactions update it over and over (heap-only chains
//! pruned on the fly under the readers): what could go wrong is a reader that finds no
//! version of a row it must see, because the chain of versions it walks was cut under it.
#![allow(clippy::unwrap_used)]

use std::thread;

use walden::vfs::SimVfs;
use walden::*;

mod support;
use support::sim_opts;

/// A database with table `t (id, x, y, pad)` holding `rows` rows (id i, x 1, y 0, pad
/// of `pad` bytes), and a unique index `t_pkey` on id.
fn db(seed: u64, rows: i64, pad: usize) -> Database {
    let db = Database::create("db", sim_opts(&SimVfs::new(seed))).unwrap();
    let schema = Schema::new(vec![
        Column::not_null("id", ColumnType::Int8),
        Column::not_null("x", ColumnType::Int8),
        Column::not_null("y", ColumnType::Int8),
        Column::not_null("pad", ColumnType::Text),
    ]);
    db.create_table_with("t", schema, TableKind::Heap).unwrap();
    db.create_index(&IndexSpec {
        name: "t_pkey",
        table: "t",
        columns: &["id"],
        order: &[],
        unique: true,
        primary: true,
        if_not_exists: false,
    })
    .unwrap();
    let mut tx = db.begin();
    tx.insert_many(
        "t",
        (0..rows).map(|i| {
            vec![
                Value::Int8(i),
                Value::Int8(1),
                Value::Int8(0),
                Value::Text("p".repeat(pad)),
            ]
        }),
    )
    .unwrap();
    tx.commit().unwrap();
    db
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int8(n) => *n,
        other => panic!("not an int8: {other:?}"),
    }
}

/// `row` with column `col` set to `v`.
fn with(row: &Row, col: usize, v: i64) -> Row {
    let mut new = row.clone();
    new[col] = Value::Int8(v);
    new
}

/// Readers through the index under REPEATABLE READ while writers update one row: each
/// finds the row. (A walk along the row's versions let go of the page between two of
/// them, and a prune in between cut it: one lookup in a few thousand found nothing.)
#[test]
fn index_reads_of_a_row_updated_concurrently_never_miss_it() {
    let db = db(9, 20, 40);
    let handles: Vec<_> = (0..8u64)
        .map(|_| {
            let db = db.clone();
            thread::spawn(move || {
                for _ in 0..300 {
                    let mut tx = db.begin();
                    let found = tx.index_get("t_pkey", &[Value::Int8(7)]).unwrap();
                    assert_eq!(found.len(), 1);
                    let (rid, row) = &found[0];
                    match tx.update("t", *rid, &with(row, 2, int(&row[2]) + 1)) {
                        Ok(_) => tx.commit().unwrap(),
                        Err(Error::SerializationFailure) => tx.rollback().unwrap(),
                        Err(e) => panic!("{e}"),
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(db.check().unwrap().problems, Vec::<String>::new());
}
