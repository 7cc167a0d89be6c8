//! A gated file layer over `SimVfs` for race tests: it holds one chosen call of one named
//! thread (a write to a file, or a listing of a directory) until the test lets it go, so
//! that a race becomes a fixed interleaving.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use walden::vfs::{FileLock, LockMode, OpenMode, SimVfs, Vfs, VfsFile};

/// Which call of the gated thread the gate holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hold {
    /// The next write to this file, held before it happens, until `release`.
    WriteTo(PathBuf),
    /// The next listing of this directory, held after the names were read, until a file
    /// has been renamed (so the listing it returns is stale).
    ListThenWaitForRename(PathBuf),
}

#[derive(Debug, Default)]
struct GateState {
    armed: Option<Hold>,
    holding: bool,
    released: bool,
    renames: u64,
}

/// Holds one armed call of the thread named `thread`.
pub struct Gate {
    /// The name of the thread whose calls the gate may hold.
    thread: &'static str,
    /// How long a held call waits to be let go, and how long `wait_holding` waits for a
    /// call to be held. A held call that times out goes on as if released.
    timeout: Duration,
    state: Mutex<GateState>,
    changed: Condvar,
}

impl Gate {
    /// A gate, not yet armed, for calls of the thread named `thread`.
    pub fn new(thread: &'static str, timeout: Duration) -> Gate {
        Gate {
            thread,
            timeout,
            state: Mutex::new(GateState::default()),
            changed: Condvar::new(),
        }
    }

    /// Arms the gate: the next call matching `hold` is held.
    pub fn arm(&self, hold: Hold) {
        let mut st = self.state.lock().unwrap();
        *st = GateState {
            armed: Some(hold),
            renames: st.renames,
            ..GateState::default()
        };
    }

    /// Takes the armed hold if this call matches it.
    fn matches(&self, hold: &Hold) -> bool {
        if std::thread::current().name() != Some(self.thread) {
            return false;
        }
        let mut st = self.state.lock().unwrap();
        if st.armed.as_ref() == Some(hold) {
            st.armed = None;
            st.holding = true;
            self.changed.notify_all();
            true
        } else {
            false
        }
    }

    /// Waits (up to the timeout) until `done` holds, then ends the hold.
    fn wait_in_call(&self, done: impl Fn(&GateState) -> bool) {
        let st = self.state.lock().unwrap();
        let (mut st, _) = self
            .changed
            .wait_timeout_while(st, self.timeout, |st| !done(st))
            .unwrap();
        st.holding = false;
        self.changed.notify_all();
    }

    /// Waits (up to the timeout) until the gated thread is held; false if it never was.
    pub fn wait_holding(&self) -> bool {
        let st = self.state.lock().unwrap();
        let (st, _) = self
            .changed
            .wait_timeout_while(st, self.timeout, |st| !st.holding)
            .unwrap();
        st.holding
    }

    /// Lets a held write go on.
    pub fn release(&self) {
        self.state.lock().unwrap().released = true;
        self.changed.notify_all();
    }

    /// Renames through the gated layer so far.
    pub fn renames(&self) -> u64 {
        self.state.lock().unwrap().renames
    }
}

/// `SimVfs` with a gate on its calls.
pub struct GateVfs {
    pub inner: SimVfs,
    pub gate: Arc<Gate>,
}

impl GateVfs {
    /// `inner` behind `gate`, as the file layer of a database.
    pub fn over(inner: &SimVfs, gate: &Arc<Gate>) -> Arc<dyn Vfs> {
        Arc::new(GateVfs {
            inner: inner.clone(),
            gate: gate.clone(),
        })
    }
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
        if self.gate.matches(&Hold::WriteTo(self.path.clone())) {
            self.gate.wait_in_call(|st| st.released);
        }
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
    fn truncate(&self, len_bytes: u64) -> io::Result<()> {
        self.inner.truncate(len_bytes)
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
        self.inner.rename(from, to)?;
        self.gate.state.lock().unwrap().renames += 1;
        self.gate.changed.notify_all();
        Ok(())
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
        let names = self.inner.list_dir(dir)?;
        if self
            .gate
            .matches(&Hold::ListThenWaitForRename(dir.to_path_buf()))
        {
            let before = self.gate.renames();
            self.gate.wait_in_call(|st| st.renames > before);
        }
        Ok(names)
    }
    fn try_lock(&self, path: &Path, mode: LockMode) -> io::Result<Option<Box<dyn FileLock>>> {
        self.inner.try_lock(path, mode)
    }
    fn lock_holder(&self, path: &Path) -> Option<u32> {
        self.inner.lock_holder(path)
    }
}
