//! Basic life cycle: what could go wrong is anything at all — create, write, reopen, read.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use walden::vfs::{CrashMode, SimVfs};
use walden::*;

fn schema() -> Schema {
    Schema::new(vec![
        Column::not_null("id", ColumnType::Int8),
        Column::new("name", ColumnType::Text),
    ])
}

fn opts(vfs: &SimVfs, protection: Protection) -> Options {
    Options {
        vfs: Arc::new(vfs.clone()),
        protection,
        background: false,
        segment_size_bytes: 2 << 20,
        buffer_pool_bytes: 1 << 20,
        ..Options::default()
    }
}

#[test]
fn create_insert_reopen_update_delete() {
    for protection in [Protection::Cow, Protection::FullPage, Protection::None] {
        let vfs = SimVfs::new(1);
        let db = Database::create("db", opts(&vfs, protection)).unwrap();
        db.create_table("t", schema()).unwrap();
        let mut tx = db.begin();
        let rows: Vec<Row> = (0..1000)
            .map(|i| vec![Value::Int8(i), Value::Text(format!("row {i}"))])
            .collect();
        let ids = tx.insert_many("t", &rows).unwrap();
        tx.commit().unwrap();
        let mut tx = db.begin();
        let new = tx
            .update("t", ids[5], &[Value::Int8(5), Value::Text("five".into())])
            .unwrap();
        tx.delete("t", ids[6]).unwrap();
        tx.commit().unwrap();
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
        let db = Database::open("db", opts(&vfs, protection)).unwrap();
        let mut tx = db.begin();
        let all = tx.scan("t").unwrap();
        assert_eq!(all.len(), 999, "{protection:?}");
        assert_eq!(
            tx.get("t", new).unwrap().unwrap()[1],
            Value::Text("five".into())
        );
        assert_eq!(
            tx.get("t", ids[5]).unwrap().unwrap()[1],
            Value::Text("five".into())
        );
        assert_eq!(tx.get("t", ids[6]).unwrap(), None);
        drop(tx);
        assert_eq!(db.vacuum("t").unwrap(), 2);
        db.checkpoint().unwrap();
        drop(db);
        vfs.restart(CrashMode::TearUnsynced);
        let db = Database::open("db", opts(&vfs, protection)).unwrap();
        assert_eq!(db.begin().scan("t").unwrap().len(), 999);
    }
}
