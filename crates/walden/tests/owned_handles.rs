//! Owned handles (issue 12 item 5): what could go wrong is a handle that cannot move to
//! another thread between operations (a server hands sessions to connection tasks), a
//! clone that is not the same database, or a transaction that dies with the handle that
//! began it.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use walden::vfs::SimVfs;
use walden::*;

mod support;
use support::{default_opts, int8_schema};

fn assert_send<T: Send + 'static>() {}
fn assert_send_sync<T: Send + Sync + 'static>() {}

#[test]
fn handles_are_owned_send_and_clones_share_one_database() {
    assert_send_sync::<Database>();
    assert_send::<Transaction>();
    let vfs = SimVfs::new(1);
    let opts = default_opts(Arc::new(vfs.clone()));
    let db = Database::create("db", opts.clone()).unwrap();
    db.create_table("t", int8_schema("id")).unwrap();
    let mut tx = db.begin();
    tx.insert("t", &[Value::Int8(1)]).unwrap();
    // The transaction moves to another thread and commits there, after every handle
    // that began it is gone.
    let clone = db.clone();
    drop(db);
    let committed = std::thread::spawn(move || tx.commit()).join().unwrap();
    committed.unwrap();
    let mut rows = clone.begin().scan("t").unwrap();
    assert_eq!(rows.pop().map(|(_, r)| r), Some(vec![Value::Int8(1)]));
    // The database stays open (and locked) while any clone lives.
    assert!(matches!(
        Database::open("db", opts.clone()),
        Err(Error::Locked { .. })
    ));
    clone.close().unwrap();
    let db = Database::open("db", opts).unwrap();
    assert_eq!(db.begin().scan("t").unwrap().len(), 1);
}
