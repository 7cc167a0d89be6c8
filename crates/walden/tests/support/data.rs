//! Tables and rows of test databases: the usual schemas, rows built from an id, and the
//! ids a table shows.

use walden::{Column, ColumnType, Database, IndexSpec, Row, Schema, TableKind, Value};

/// The table most tests use.
pub const TABLE: &str = "t";

/// One column: `name`, a not-null `Int8`.
pub fn int8_schema(name: &str) -> Schema {
    Schema::new(vec![Column::not_null(name, ColumnType::Int8)])
}

/// A not-null `Int8` column `id`, then a `Text` column named `text` that may be null.
pub fn id_text_schema(text: &str) -> Schema {
    Schema::new(vec![
        Column::not_null("id", ColumnType::Int8),
        Column::new(text, ColumnType::Text),
    ])
}

/// A row of [`id_text_schema`].
pub fn text_row(id: i64, text: impl Into<String>) -> Row {
    vec![Value::Int8(id), Value::Text(text.into())]
}

/// A row of [`id_text_schema`] whose text is `row {id}`.
pub fn labelled_row(id: i64) -> Row {
    text_row(id, format!("row {id}"))
}

/// A row of [`id_text_schema`] whose text is `id` right-aligned in `width` bytes.
pub fn padded_row(id: i64, width: usize) -> Row {
    text_row(id, format!("{id:>width$}"))
}

/// The `Int8` first column of every visible row of `table`, sorted.
pub fn sorted_ids(db: &Database, table: &str) -> Vec<i64> {
    let mut ids: Vec<i64> = db
        .begin()
        .scan(table)
        .unwrap()
        .into_iter()
        .map(|(_, r)| match r[0] {
            Value::Int8(id) => id,
            _ => panic!("unexpected row {r:?}"),
        })
        .collect();
    ids.sort_unstable();
    ids
}

/// The first two columns (both `Int8`) of every visible row of `table`, sorted.
pub fn sorted_int8_pairs(db: &Database, table: &str) -> Vec<(i64, i64)> {
    let mut pairs: Vec<(i64, i64)> = db
        .begin()
        .scan(table)
        .unwrap()
        .into_iter()
        .map(|(_, r)| match (&r[0], &r[1]) {
            (Value::Int8(a), Value::Int8(b)) => (*a, *b),
            _ => panic!("unexpected row {r:?}"),
        })
        .collect();
    pairs.sort_unstable();
    pairs
}

/// A database with table `t (id, x, y, pad)` of `kind` holding `rows` rows (id i, x 1,
/// y 0, pad of `pad` bytes), and a unique index `t_pkey` on id.
pub fn counters_db(seed: u64, kind: TableKind, rows: i64, pad: usize) -> Database {
    let db = Database::create("db", super::sim_opts(&walden::vfs::SimVfs::new(seed))).unwrap();
    let schema = Schema::new(vec![
        Column::not_null("id", ColumnType::Int8),
        Column::not_null("x", ColumnType::Int8),
        Column::not_null("y", ColumnType::Int8),
        Column::not_null("pad", ColumnType::Text),
    ]);
    db.create_table_with("t", schema, kind).unwrap();
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

pub fn int8_of(v: &Value) -> i64 {
    match v {
        Value::Int8(n) => *n,
        other => panic!("not an int8: {other:?}"),
    }
}
