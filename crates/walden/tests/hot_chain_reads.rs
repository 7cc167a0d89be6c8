//! Reads of a row while other transactions update it over and over (heap-only chains
//! pruned on the fly under the readers): what could go wrong is a reader that finds no
//! version of a row it must see, because the chain of versions it walks was cut under it.
#![allow(clippy::unwrap_used)]

use std::thread;

use walden::*;

mod support;
use support::{counters_db, int8_of};

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
    let db = counters_db(9, TableKind::Heap, 20, 40);
    let handles: Vec<_> = (0..8u64)
        .map(|_| {
            let db = db.clone();
            thread::spawn(move || {
                for _ in 0..300 {
                    let mut tx = db.begin();
                    let found = tx.index_get("t_pkey", &[Value::Int8(7)]).unwrap();
                    assert_eq!(found.len(), 1);
                    let (rid, row) = &found[0];
                    match tx.update("t", *rid, &with(row, 2, int8_of(&row[2]) + 1)) {
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
