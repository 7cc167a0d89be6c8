//! Schemas at the edge of what `create_table` accepts: what could go wrong is a table that
//! is acknowledged but whose create_table record or checkpoint entry cannot be read back,
//! so that the database no longer opens (or loses the table) after a restart.
#![allow(clippy::unwrap_used)]

use walden::vfs::{CrashMode, SimVfs};
use walden::*;

mod support;
use support::{opts, DIR};

/// [`opts`] in cow mode with 4 MiB WAL segments.
fn big_segment_opts(vfs: &SimVfs) -> Options {
    Options {
        segment_size_bytes: 4 << 20,
        ..opts(vfs, Protection::Cow)
    }
}

/// Creates a table with `schema`; if `create_table` accepts it, commits a row into it,
/// stops (cleanly with `close`, or by losing power) and reopens. Returns the summary of
/// the table's schema after the reopen, or the error reopening gave. None if create_table refused.
fn create_and_reopen(schema: Schema, close: bool) -> Option<Result<(usize, usize), String>> {
    let vfs = SimVfs::new(5);
    let db = Database::create(DIR, big_segment_opts(&vfs)).unwrap();
    if db.create_table("t", schema.clone()).is_err() {
        return None;
    }
    let mut tx = db.begin();
    let row: Row = schema.columns.iter().map(|_| Value::Null).collect();
    tx.insert("t", &row).unwrap();
    tx.commit().unwrap();
    if close {
        db.close().unwrap();
    } else {
        drop(db);
    }
    vfs.restart(CrashMode::DropUnsynced);
    Some(
        Database::open(DIR, big_segment_opts(&vfs))
            .and_then(|db| db.schema("t"))
            .map(|s| summary(&s))
            .map_err(|e| e.to_string()),
    )
}

/// (columns, bytes of all names): enough to compare schemas without printing them.
fn summary(s: &Schema) -> (usize, usize) {
    (
        s.columns.len(),
        s.columns.iter().map(|c| c.name.len()).sum(),
    )
}

/// A column name longer than 65535 bytes used to be written with a wrapped `u16` length:
/// now names are limited, and the refusal leaves a database that reopens.
fn long_name_schema() -> Schema {
    Schema::new(vec![Column::new(&"n".repeat(70_000), ColumnType::Int4)])
}

fn assert_refused(schema: Schema) {
    let vfs = SimVfs::new(5);
    let db = Database::create(DIR, big_segment_opts(&vfs)).unwrap();
    match db.create_table("t", schema) {
        Err(Error::InvalidOption(msg)) => {
            assert!(msg.contains("name") || msg.contains("column"), "{msg}")
        }
        other => panic!("expected InvalidOption, got {other:?}"),
    }
    assert_eq!(db.table_names(), Vec::<String>::new());
    drop(db);
    vfs.restart(CrashMode::DropUnsynced);
    let db = Database::open(DIR, big_segment_opts(&vfs)).unwrap();
    assert_eq!(db.table_names(), Vec::<String>::new());
}

#[test]
fn column_name_over_the_limit_is_refused() {
    assert_refused(long_name_schema());
    assert_refused(Schema::new(vec![Column::new(
        &"n".repeat(256),
        ColumnType::Int4,
    )]));
    assert_refused(Schema::new(vec![
        Column::new("a", ColumnType::Int4),
        Column::new("a", ColumnType::Int8),
    ]));
}

/// The longest names and the most columns allowed make a create_table record that still
/// fits in one WAL frame, and it survives a crash.
#[test]
fn largest_allowed_schema_survives_a_crash() {
    let columns = (0..1600)
        .map(|i| Column::new(&format!("{i:0>255}"), ColumnType::Int4))
        .collect();
    let schema = Schema::new(columns);
    let reopened = create_and_reopen(schema.clone(), false).expect("the table is accepted");
    assert_eq!(reopened, Ok(summary(&schema)));
    let reopened = create_and_reopen(schema.clone(), true).expect("the table is accepted");
    assert_eq!(reopened, Ok(summary(&schema)));
}

/// 1600 columns with 1000-byte names would make a record larger than a frame: refused.
#[test]
fn schema_larger_than_a_frame_is_refused() {
    let columns = (0..1600)
        .map(|i| Column::new(&format!("{i:0>1000}"), ColumnType::Int4))
        .collect();
    assert_refused(Schema::new(columns));
}
