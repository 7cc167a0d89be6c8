//! A checkpoint that is already past its page writes when another thread's WAL fsync
//! fails: what could go wrong is the checkpoint going on to write the clog, the page map,
//! a checkpoint file and the control file after the database was fenced, although after a
//! failed write or fsync every write must be refused until the database is reopened.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use walden::vfs::{FaultKind, FaultOps, SimVfs};
use walden::*;

mod support;
use support::{int8_schema, opts_on, Gate, GateVfs, Hold, DIR};

/// The thread whose first write to the held file the gate holds.
const CHECKPOINTER: &str = "checkpointer";

#[test]
fn checkpoint_stops_writing_once_the_database_is_poisoned() {
    let sim = SimVfs::new(21);
    let gate = Arc::new(Gate::new(CHECKPOINTER, Duration::from_secs(20)));
    let vfs = GateVfs::over(&sim, &gate);
    let db = Database::create(DIR, opts_on(vfs, Protection::Cow)).unwrap();
    db.create_table("t", int8_schema("id")).unwrap();
    let mut tx = db.begin();
    tx.insert("t", &[Value::Int8(1)]).unwrap();
    tx.commit().unwrap();
    let control_before = sim.file_contents(&Path::new(DIR).join("control")).unwrap();
    gate.arm(Hold::WriteTo(Path::new(DIR).join("xact.tmp")));
    let (checkpoint, writes_after_poison) = std::thread::scope(|s| {
        let checkpointer = std::thread::Builder::new()
            .name(CHECKPOINTER.into())
            .spawn_scoped(s, || db.checkpoint())
            .unwrap();
        assert!(gate.wait_holding(), "the checkpoint never wrote the clog");
        // The checkpoint has written its pages and is about to write the clog. A commit's
        // WAL fsync fails now: the database is fenced.
        sim.fail_nth(1, FaultOps::Sync, FaultKind::Eio);
        let mut tx = db.begin();
        tx.insert("t", &[Value::Int8(2)]).unwrap();
        let commit = tx.commit();
        assert!(
            matches!(commit, Err(Error::Io { .. })),
            "the commit must fail: {commit:?}"
        );
        assert_eq!(sim.faults_injected(), 1);
        assert!(db.is_poisoned());
        let writes = sim.stats().writes;
        gate.release();
        let r = checkpointer.join().unwrap();
        (r, sim.stats().writes - writes)
    });
    let control_after = sim.file_contents(&Path::new(DIR).join("control")).unwrap();
    assert_eq!(
        (
            checkpoint.map_err(|e| e.to_string()).is_err(),
            writes_after_poison,
            control_after == control_before,
        ),
        // The one write allowed is the one the gate held: it was issued before the fence
        // went up. Nothing the checkpoint does after it may reach the disk.
        (true, 1, true),
        "(checkpoint failed, writes after the fence, control file unchanged)"
    );
}
