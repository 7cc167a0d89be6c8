//! A checkpoint that is already past its page writes when another thread's WAL fsync
//! fails: what could go wrong is the checkpoint going on to write the clog, the page map,
//! a checkpoint file and the control file after the database was fenced, although after a
//! failed write or fsync every write must be refused until the database is reopened.
#![allow(clippy::unwrap_used)]

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use walden::vfs::{FaultKind, FaultOps, OpenMode, SimVfs, Vfs, VfsFile};
use walden::*;

const DIR: &str = "db";
/// The thread whose first write to the held file the gate holds.
const CHECKPOINTER: &str = "checkpointer";

#[derive(Default)]
struct GateState {
    armed: bool,
    holding: bool,
    released: bool,
}

/// Holds the first write of the `CHECKPOINTER` thread to `path` until released.
struct Gate {
    path: PathBuf,
    state: Mutex<GateState>,
    changed: Condvar,
}

impl Gate {
    fn hold_here(&self, path: &Path) {
        if std::thread::current().name() != Some(CHECKPOINTER) || path != self.path {
            return;
        }
        let mut st = self.state.lock().unwrap();
        if !st.armed {
            return;
        }
        st.armed = false;
        st.holding = true;
        self.changed.notify_all();
        let (mut st, _) = self
            .changed
            .wait_timeout_while(st, Duration::from_secs(20), |st| !st.released)
            .unwrap();
        st.holding = false;
    }

    fn wait_holding(&self) -> bool {
        let st = self.state.lock().unwrap();
        let (st, _) = self
            .changed
            .wait_timeout_while(st, Duration::from_secs(20), |st| !st.holding)
            .unwrap();
        st.holding
    }

    fn release(&self) {
        self.state.lock().unwrap().released = true;
        self.changed.notify_all();
    }
}

struct GateVfs {
    inner: SimVfs,
    gate: Arc<Gate>,
}

struct GateFile {
    inner: Arc<dyn VfsFile>,
    path: PathBuf,
    gate: Arc<Gate>,
}

impl VfsFile for GateFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.gate.hold_here(&self.path);
        self.inner.write_all_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.inner.sync_data()
    }
    fn preallocate(&self, len_bytes: u64) -> io::Result<()> {
        self.inner.preallocate(len_bytes)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
}

impl Vfs for GateVfs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        Ok(Arc::new(GateFile {
            inner: self.inner.open(path, mode)?,
            path: path.to_path_buf(),
            gate: self.gate.clone(),
        }))
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.inner.exists(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(dir)
    }
}

fn opts(vfs: Arc<dyn Vfs>) -> Options {
    Options {
        vfs,
        protection: Protection::Cow,
        background: false,
        segment_size_bytes: 2 << 20,
        buffer_pool_bytes: 1 << 20,
        ..Options::default()
    }
}

#[test]
fn checkpoint_stops_writing_once_the_database_is_poisoned() {
    let sim = SimVfs::new(21);
    let gate = Arc::new(Gate {
        path: Path::new(DIR).join("xact"),
        state: Mutex::new(GateState::default()),
        changed: Condvar::new(),
    });
    let vfs: Arc<dyn Vfs> = Arc::new(GateVfs {
        inner: sim.clone(),
        gate: gate.clone(),
    });
    let db = Database::create(DIR, opts(vfs)).unwrap();
    db.create_table(
        "t",
        Schema::new(vec![Column::not_null("id", ColumnType::Int8)]),
    )
    .unwrap();
    let mut tx = db.begin();
    tx.insert("t", &[Value::Int8(1)]).unwrap();
    tx.commit().unwrap();
    let control_before = sim.file_contents(&Path::new(DIR).join("control")).unwrap();
    gate.state.lock().unwrap().armed = true;
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
