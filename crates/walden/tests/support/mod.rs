//! A gated file layer over `SimVfs` for race tests: it holds one chosen thread at its
//! first write to one file until the test releases it, so that a race becomes a fixed
//! interleaving.
#![allow(dead_code, clippy::unwrap_used)]

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use walden::vfs::{FileLock, LockMode, OpenMode, SimVfs, Vfs, VfsFile};

#[derive(Default)]
pub struct GateState {
    pub armed: bool,
    holding: bool,
    released: bool,
}

/// Holds the first write of the thread named `thread` to `path` until released.
pub struct Gate {
    thread: &'static str,
    path: PathBuf,
    state: Mutex<GateState>,
    changed: Condvar,
}

impl Gate {
    /// A gate, not yet armed, for the first write of thread `thread` to `path`.
    pub fn new(thread: &'static str, path: PathBuf) -> Gate {
        Gate {
            thread,
            path,
            state: Mutex::new(GateState::default()),
            changed: Condvar::new(),
        }
    }

    /// Arms the gate: the next matching write is held.
    pub fn arm(&self) {
        self.state.lock().unwrap().armed = true;
    }

    fn hold_here(&self, path: &Path) {
        if std::thread::current().name() != Some(self.thread) || path != self.path {
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

    pub fn wait_holding(&self) -> bool {
        let st = self.state.lock().unwrap();
        let (st, _) = self
            .changed
            .wait_timeout_while(st, Duration::from_secs(20), |st| !st.holding)
            .unwrap();
        st.holding
    }

    pub fn release(&self) {
        self.state.lock().unwrap().released = true;
        self.changed.notify_all();
    }
}

pub struct GateVfs {
    pub inner: SimVfs,
    pub gate: Arc<Gate>,
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
    fn try_lock(&self, path: &Path, mode: LockMode) -> io::Result<Option<Box<dyn FileLock>>> {
        self.inner.try_lock(path, mode)
    }
    fn lock_holder(&self, path: &Path) -> Option<u32> {
        self.inner.lock_holder(path)
    }
}
