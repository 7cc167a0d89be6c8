//! The simulated file layer: an in-memory file system that keeps, per file, what is durable
//! and what is only written, loses power on command (dropping, keeping or tearing unsynced
//! writes at 512-byte sectors) and fails chosen calls with EIO or ENOSPC, all replayable
//! from a seed.
//!
//! The model, in brief:
//! - A file is an inode holding `durable` bytes (what survives a power loss), `current`
//!   bytes (what reads see) and the `pending` writes since its last `sync_data`. The
//!   invariant is that applying `pending` in order onto `durable` gives `current`.
//! - Names map to inodes twice: the current names, changed by create, rename and remove,
//!   and the durable names, which catch up for one directory at a time on `sync_dir`.
//!   A file whose directory was never synced vanishes on a crash, as on a real disk.
//! - Directories are plain strings that exist once `create_dir_all` named them or a file
//!   lives in them; they are never lost.
//! - Every mutating call (write, sync, preallocate, rename, remove, sync_dir, an open that
//!   creates) is counted. Calls rejected for their arguments (a missing file, a write past
//!   the size limit) change nothing and are not counted, so the count names exactly the
//!   calls that reached the "disk".

use super::{FileLock, LockMode, OpenMode, Vfs, VfsFile, SECTOR_SIZE_BYTES};
use crate::rng::SimRng;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::path::{Component, Path};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The largest file the simulator holds. Larger writes fail with EFBIG instead of trying
/// to allocate, so that a bogus offset computed from corrupt data cannot exhaust memory.
const MAX_FILE_SIZE_BYTES: u64 = 1 << 30;

/// What happens to unsynced writes when power is lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Every unsynced write is lost.
    DropUnsynced,
    /// Every unsynced write reached the disk.
    KeepUnsynced,
    /// Each unsynced write is cut at 512-byte sector boundaries and each piece survives
    /// with probability 1/2.
    TearUnsynced,
    /// Each unsynced write independently gets one of the three fates above.
    Random,
}

/// Which calls an injected fault applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultOps {
    /// `read_exact_at`.
    Read,
    /// `write_all_at` and `preallocate`.
    Write,
    /// `sync_data` and `sync_dir`.
    Sync,
    /// All of the above.
    Any,
}

/// The error an injected fault returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// EIO: the device failed.
    Eio,
    /// ENOSPC: the device is full.
    Enospc,
}

/// Counts of successful calls, for tests that measure I/O.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimStats {
    /// Successful `write_all_at` calls.
    pub writes: u64,
    /// Bytes passed to successful `write_all_at` calls (preallocation not included).
    pub bytes_written: u64,
    /// Successful `sync_data` calls.
    pub syncs: u64,
    /// Successful `sync_dir` calls.
    pub dir_syncs: u64,
}

/// An in-memory file system that can lose power and fail calls. Clones share one state.
#[derive(Clone)]
pub struct SimVfs {
    state: Arc<Mutex<State>>,
}

/// The class of a call, for fault matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpClass {
    Read,
    Write,
    Sync,
}

impl FaultOps {
    fn matches(self, class: OpClass) -> bool {
        match self {
            FaultOps::Any => true,
            FaultOps::Read => class == OpClass::Read,
            FaultOps::Write => class == OpClass::Write,
            FaultOps::Sync => class == OpClass::Sync,
        }
    }
}

impl FaultKind {
    fn to_error(self) -> io::Error {
        match self {
            FaultKind::Eio => io::Error::from_raw_os_error(libc::EIO),
            FaultKind::Enospc => io::Error::from_raw_os_error(libc::ENOSPC),
        }
    }
}

/// A one-shot fault waiting for its call.
#[derive(Debug, Clone, Copy)]
struct ScheduledFault {
    /// Matching calls still to come before the one that fails, counting that one: the
    /// fault fires on the call that brings this to zero.
    countdown: u64,
    ops: FaultOps,
    kind: FaultKind,
}

/// One write not yet made durable.
#[derive(Debug, Clone)]
struct PendingWrite {
    offset: usize,
    bytes: Vec<u8>,
}

#[derive(Debug, Default)]
struct Inode {
    /// What survives a power loss.
    durable: Vec<u8>,
    /// What reads see: `durable` with every write of `pending` applied in order.
    current: Vec<u8>,
    /// Writes since the last `sync_data`, oldest first.
    pending: Vec<PendingWrite>,
    /// Live handles of the current boot epoch; the inode is kept while any exist even
    /// if no name refers to it, as an unlinked but open file is on Unix.
    open_handles: u64,
}

/// Everything the simulator knows. One mutex guards all of it: the simulator is for
/// tests, and a single lock makes every call atomic and every run replayable.
struct State {
    /// Decides the fate of torn and randomly treated writes at a crash.
    rng: SimRng,
    /// Bumped by every restart; handles of older epochs are stale.
    epoch: u64,
    next_inode: u64,
    inodes: BTreeMap<u64, Inode>,
    /// Names as the running system sees them.
    names: BTreeMap<String, u64>,
    /// Names as they would be found after a power loss.
    durable_names: BTreeMap<String, u64>,
    /// Directories named by `create_dir_all` (with their ancestors).
    dirs: BTreeSet<String>,
    power_lost: bool,
    /// Mutating calls so far (see the module comment for what counts).
    ops: u64,
    /// The value of `ops` at which power is lost.
    crash_at_op: Option<u64>,
    fault: Option<ScheduledFault>,
    faults_injected: u64,
    stats: SimStats,
    /// Bytes written, by the name under which the writing handle was opened.
    bytes_by_name: BTreeMap<String, u64>,
    /// Advisory locks held, by file name. A restart forgets them: the process that held
    /// them is gone.
    locks: BTreeMap<String, SimLockState>,
}

/// Holders of one simulated advisory lock.
#[derive(Debug, Clone, Copy)]
struct SimLockState {
    epoch: u64,
    exclusive: bool,
    holders: u32,
}

fn power_loss_error() -> io::Error {
    io::Error::other("simulated power loss")
}

fn stale_handle_error() -> io::Error {
    io::Error::other("stale handle after simulated restart")
}

fn not_found(name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{name}: no such file in the simulated file system"),
    )
}

/// A path as the simulator's key: its components joined by `/`, with `.` dropped and a
/// leading `/` kept for absolute paths. `..` is kept as a name, not resolved.
fn normalize(path: &Path) -> String {
    let mut absolute = false;
    let mut parts: Vec<String> = Vec::new();
    for component in path.components() {
        match component {
            Component::RootDir => absolute = true,
            Component::CurDir => {}
            Component::ParentDir => parts.push("..".to_string()),
            Component::Prefix(prefix) => {
                parts.push(prefix.as_os_str().to_string_lossy().into_owned())
            }
            Component::Normal(name) => parts.push(name.to_string_lossy().into_owned()),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

/// Splits a normalized name into its directory and its last component.
fn split_parent(name: &str) -> (&str, &str) {
    match name.rfind('/') {
        Some(0) => ("/", &name[1..]),
        Some(at) => (&name[..at], &name[at + 1..]),
        None => ("", name),
    }
}

fn parent_of(name: &str) -> &str {
    split_parent(name).0
}

/// True when `name` is `prefix` or lies below it (whole components, not characters).
fn is_under(name: &str, prefix: &str) -> bool {
    if prefix.is_empty() {
        return true;
    }
    if prefix.ends_with('/') {
        return name.starts_with(prefix);
    }
    name == prefix || (name.starts_with(prefix) && name.as_bytes().get(prefix.len()) == Some(&b'/'))
}

/// The byte range `[offset, offset + len)` as indices, or EFBIG if it ends past the
/// simulator's size limit.
fn checked_range(offset: u64, len: usize) -> io::Result<(usize, usize)> {
    let too_big = || io::Error::from_raw_os_error(libc::EFBIG);
    let end = u64::try_from(len)
        .ok()
        .and_then(|len| offset.checked_add(len))
        .filter(|&end| end <= MAX_FILE_SIZE_BYTES)
        .ok_or_else(too_big)?;
    let start = usize::try_from(offset).map_err(|_| too_big())?;
    let end = usize::try_from(end).map_err(|_| too_big())?;
    Ok((start, end))
}

/// Writes `bytes` at `offset`, zero-filling any gap past the end.
fn write_into(target: &mut Vec<u8>, offset: usize, bytes: &[u8]) {
    let end = offset + bytes.len();
    if target.len() < end {
        target.resize(end, 0);
    }
    target[offset..end].copy_from_slice(bytes);
}

impl Inode {
    /// Records a write: visible now, durable only after `sync_data`.
    fn write(&mut self, offset: usize, bytes: &[u8]) {
        // A write of nothing changes nothing, not even the length (as pwrite).
        if bytes.is_empty() {
            return;
        }
        write_into(&mut self.current, offset, bytes);
        self.pending.push(PendingWrite {
            offset,
            bytes: bytes.to_vec(),
        });
    }

    fn sync(&mut self) {
        for write in std::mem::take(&mut self.pending) {
            write_into(&mut self.durable, write.offset, &write.bytes);
        }
        // The invariant makes this a no-op; it is kept so that a broken invariant cannot
        // leave reads and the durable image disagreeing on the length.
        self.durable.resize(self.current.len(), 0);
    }

    /// Applies a power loss to the pending writes, then starts the new boot from what is
    /// durable.
    fn crash(&mut self, mode: CrashMode, rng: &mut SimRng) {
        for write in std::mem::take(&mut self.pending) {
            let fate = match mode {
                CrashMode::Random => match rng.below(3) {
                    0 => CrashMode::DropUnsynced,
                    1 => CrashMode::KeepUnsynced,
                    _ => CrashMode::TearUnsynced,
                },
                other => other,
            };
            match fate {
                CrashMode::KeepUnsynced => {
                    write_into(&mut self.durable, write.offset, &write.bytes);
                }
                CrashMode::TearUnsynced => self.tear(&write, rng),
                CrashMode::DropUnsynced | CrashMode::Random => {}
            }
        }
        self.current = self.durable.clone();
        self.open_handles = 0;
    }

    /// Lets each sector-aligned piece of `write` survive with probability 1/2.
    fn tear(&mut self, write: &PendingWrite, rng: &mut SimRng) {
        // The sector size is a small constant, so the conversion cannot truncate.
        let sector = SECTOR_SIZE_BYTES as usize;
        let end = write.offset + write.bytes.len();
        let mut start = write.offset;
        while start < end {
            let piece_end = ((start / sector + 1) * sector).min(end);
            if rng.below(2) == 0 {
                let from = start - write.offset;
                let to = piece_end - write.offset;
                write_into(&mut self.durable, start, &write.bytes[from..to]);
            }
            start = piece_end;
        }
    }
}

impl State {
    fn new(seed: u64) -> State {
        State {
            rng: SimRng::new(seed),
            epoch: 0,
            next_inode: 1,
            inodes: BTreeMap::new(),
            names: BTreeMap::new(),
            durable_names: BTreeMap::new(),
            dirs: BTreeSet::new(),
            power_lost: false,
            ops: 0,
            crash_at_op: None,
            fault: None,
            faults_injected: 0,
            stats: SimStats::default(),
            bytes_by_name: BTreeMap::new(),
            locks: BTreeMap::new(),
        }
    }

    fn check_power(&self) -> io::Result<()> {
        if self.power_lost {
            Err(power_loss_error())
        } else {
            Ok(())
        }
    }

    /// The checks every call through a file handle starts with.
    fn check_handle(&self, epoch: u64) -> io::Result<()> {
        self.check_power()?;
        if epoch != self.epoch {
            return Err(stale_handle_error());
        }
        Ok(())
    }

    /// Counts one mutating call. Returns true when it is the crash point, in which case
    /// power is now lost and the caller must not let the call take effect (a write is
    /// still recorded as pending, since it may have partly reached the disk).
    fn count_op(&mut self) -> bool {
        self.ops += 1;
        if self.crash_at_op == Some(self.ops) {
            self.crash_at_op = None;
            self.power_lost = true;
            return true;
        }
        false
    }

    /// Fires the scheduled fault if this call is the one it waits for.
    fn check_fault(&mut self, class: OpClass) -> io::Result<()> {
        let Some(fault) = self.fault.as_mut() else {
            return Ok(());
        };
        if !fault.ops.matches(class) {
            return Ok(());
        }
        fault.countdown = fault.countdown.saturating_sub(1);
        if fault.countdown > 0 {
            return Ok(());
        }
        let kind = fault.kind;
        self.fault = None;
        self.faults_injected += 1;
        Err(kind.to_error())
    }

    fn inode_mut(&mut self, inode: u64) -> io::Result<&mut Inode> {
        // A live handle keeps its inode, so a miss is a simulator bug; report it rather
        // than panic inside the engine's test.
        self.inodes
            .get_mut(&inode)
            .ok_or_else(|| io::Error::other(format!("simulator lost inode {inode}")))
    }

    fn dir_exists(&self, dir: &str) -> bool {
        dir.is_empty()
            || dir == "/"
            || self.dirs.contains(dir)
            || self.names.keys().any(|name| parent_of(name) == dir)
            || self.durable_names.keys().any(|name| parent_of(name) == dir)
    }

    /// Drops an inode that no name and no live handle refers to any more.
    fn collect(&mut self, inode: u64) {
        let Some(node) = self.inodes.get(&inode) else {
            return;
        };
        if node.open_handles > 0
            || self.names.values().any(|&i| i == inode)
            || self.durable_names.values().any(|&i| i == inode)
        {
            return;
        }
        self.inodes.remove(&inode);
    }

    /// Registers a new handle on `inode` for the current epoch.
    fn attach(&mut self, inode: u64) -> io::Result<u64> {
        self.inode_mut(inode)?.open_handles += 1;
        Ok(self.epoch)
    }

    fn open(&mut self, name: &str, mode: OpenMode) -> io::Result<(u64, u64)> {
        self.check_power()?;
        if name.is_empty() || name == "/" || self.dirs.contains(name) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is a directory, not a file"),
            ));
        }
        if let Some(&inode) = self.names.get(name) {
            if mode == OpenMode::CreateNew {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{name}: file exists"),
                ));
            }
            return Ok((inode, self.attach(inode)?));
        }
        if matches!(mode, OpenMode::Existing | OpenMode::ReadOnly) {
            return Err(not_found(name));
        }
        if self.count_op() {
            return Err(power_loss_error());
        }
        let inode = self.next_inode;
        self.next_inode += 1;
        self.inodes.insert(inode, Inode::default());
        self.names.insert(name.to_string(), inode);
        Ok((inode, self.attach(inode)?))
    }

    fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
        self.check_power()?;
        let Some(&inode) = self.names.get(from) else {
            return Err(not_found(from));
        };
        if to.is_empty() || to == "/" || self.dirs.contains(to) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cannot rename {from} over directory {to:?}"),
            ));
        }
        if self.count_op() {
            return Err(power_loss_error());
        }
        self.names.remove(from);
        if let Some(replaced) = self.names.insert(to.to_string(), inode) {
            self.collect(replaced);
        }
        Ok(())
    }

    fn remove(&mut self, name: &str) -> io::Result<()> {
        self.check_power()?;
        let Some(&inode) = self.names.get(name) else {
            return Err(not_found(name));
        };
        if self.count_op() {
            return Err(power_loss_error());
        }
        self.names.remove(name);
        self.collect(inode);
        Ok(())
    }

    fn sync_dir(&mut self, dir: &str) -> io::Result<()> {
        self.check_power()?;
        if !self.dir_exists(dir) {
            return Err(not_found(dir));
        }
        if self.count_op() {
            return Err(power_loss_error());
        }
        self.check_fault(OpClass::Sync)?;
        let mut dropped = Vec::new();
        self.durable_names.retain(|name, &mut inode| {
            let keep = parent_of(name) != dir;
            if !keep {
                dropped.push(inode);
            }
            keep
        });
        for (name, &inode) in &self.names {
            if parent_of(name) == dir {
                self.durable_names.insert(name.clone(), inode);
            }
        }
        for inode in dropped {
            self.collect(inode);
        }
        self.stats.dir_syncs += 1;
        Ok(())
    }

    fn create_dir_all(&mut self, dir: &str) -> io::Result<()> {
        self.check_power()?;
        if self.names.contains_key(dir) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{dir} is a file, not a directory"),
            ));
        }
        let mut dir = dir;
        while !dir.is_empty() && dir != "/" {
            self.dirs.insert(dir.to_string());
            dir = parent_of(dir);
        }
        Ok(())
    }

    fn list_dir(&self, dir: &str) -> io::Result<Vec<String>> {
        self.check_power()?;
        if !self.dir_exists(dir) {
            return Err(not_found(dir));
        }
        let mut entries: Vec<String> = self
            .names
            .keys()
            .filter_map(|name| {
                let (parent, file) = split_parent(name);
                (parent == dir).then(|| file.to_string())
            })
            .collect();
        entries.sort();
        Ok(entries)
    }

    fn read(&mut self, epoch: u64, inode: u64, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.check_handle(epoch)?;
        let len = self.inode_mut(inode)?.current.len();
        let range = usize::try_from(offset)
            .ok()
            .and_then(|start| Some((start, start.checked_add(buf.len())?)))
            .filter(|&(_, end)| end <= len);
        let Some((start, end)) = range else {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "read of {} bytes at offset {offset} past the end of a {len}-byte file",
                    buf.len()
                ),
            ));
        };
        self.check_fault(OpClass::Read)?;
        buf.copy_from_slice(&self.inode_mut(inode)?.current[start..end]);
        Ok(())
    }

    fn write(&mut self, handle: &SimFile, buf: &[u8], offset: u64) -> io::Result<()> {
        self.check_handle(handle.epoch)?;
        let (start, _) = checked_range(offset, buf.len())?;
        if self.count_op() {
            // The write was in flight when power went: it may be torn, kept or dropped.
            self.inode_mut(handle.inode)?.write(start, buf);
            return Err(power_loss_error());
        }
        self.check_fault(OpClass::Write)?;
        self.inode_mut(handle.inode)?.write(start, buf);
        // Buffers never exceed the size limit checked above, so the length fits.
        let len = buf.len() as u64;
        self.stats.writes += 1;
        self.stats.bytes_written += len;
        *self.bytes_by_name.entry(handle.name.clone()).or_insert(0) += len;
        Ok(())
    }

    fn sync_data(&mut self, epoch: u64, inode: u64) -> io::Result<()> {
        self.check_handle(epoch)?;
        self.inode_mut(inode)?;
        if self.count_op() {
            return Err(power_loss_error());
        }
        self.check_fault(OpClass::Sync)?;
        self.inode_mut(inode)?.sync();
        self.stats.syncs += 1;
        Ok(())
    }

    fn preallocate(&mut self, epoch: u64, inode: u64, len_bytes: u64) -> io::Result<()> {
        self.check_handle(epoch)?;
        let (_, target) = checked_range(len_bytes, 0)?;
        let current = self.inode_mut(inode)?.current.len();
        let crashed = self.count_op();
        if !crashed {
            self.check_fault(OpClass::Write)?;
        }
        if target > current {
            // Preallocation is modelled as a write of zeros: the new length is durable
            // only after a sync, like any other extension.
            let zeros = vec![0u8; target - current];
            self.inode_mut(inode)?.write(current, &zeros);
        }
        if crashed {
            return Err(power_loss_error());
        }
        Ok(())
    }

    fn len(&mut self, epoch: u64, inode: u64) -> io::Result<u64> {
        self.check_handle(epoch)?;
        Ok(self.inode_mut(inode)?.current.len() as u64)
    }

    fn restart(&mut self, mode: CrashMode) {
        let State { rng, inodes, .. } = self;
        for inode in inodes.values_mut() {
            inode.crash(mode, rng);
        }
        self.names = self.durable_names.clone();
        self.locks.clear();
        let named: BTreeSet<u64> = self.durable_names.values().copied().collect();
        self.inodes.retain(|inode, _| named.contains(inode));
        self.power_lost = false;
        self.crash_at_op = None;
        self.epoch += 1;
    }
}

impl SimVfs {
    /// An empty file system whose crash decisions are drawn from `seed`.
    pub fn new(seed: u64) -> SimVfs {
        SimVfs {
            state: Arc::new(Mutex::new(State::new(seed))),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock_state(&self.state)
    }

    /// Schedules a power loss at the `n`-th mutating call from now. That call does not
    /// take effect (a write is left pending, to be torn, kept or dropped by `restart`),
    /// and it and every later call fail with "simulated power loss". `n == 0` loses
    /// power at once.
    pub fn crash_after_ops(&self, n: u64) {
        let mut state = self.lock();
        if n == 0 {
            state.power_lost = true;
            state.crash_at_op = None;
        } else {
            state.crash_at_op = Some(state.ops.saturating_add(n));
        }
    }

    /// Loses power now: every call fails until `restart`.
    pub fn crash_now(&self) {
        let mut state = self.lock();
        state.power_lost = true;
        state.crash_at_op = None;
    }

    /// True between a power loss and the next `restart`.
    pub fn power_lost(&self) -> bool {
        self.lock().power_lost
    }

    /// Boots again after a power loss (or simulates one now if power was never lost):
    /// unsynced writes meet their fate under `mode`, reads and names return to what was
    /// durable, and handles opened before become stale. A fault scheduled with
    /// `fail_nth` that has not fired yet stays scheduled.
    pub fn restart(&self, mode: CrashMode) {
        self.lock().restart(mode);
    }

    /// Makes the `n`-th call from now among those matching `ops` fail with `kind` and
    /// have no effect. One-shot; a later call replaces a fault that has not fired yet.
    /// `n == 0` is taken as 1 (the next matching call).
    pub fn fail_nth(&self, n: u64, ops: FaultOps, kind: FaultKind) {
        self.lock().fault = Some(ScheduledFault {
            countdown: n.max(1),
            ops,
            kind,
        });
    }

    /// How many scheduled faults have fired so far.
    pub fn faults_injected(&self) -> u64 {
        self.lock().faults_injected
    }

    /// Mutating calls so far, counted as `crash_after_ops` counts them.
    pub fn ops_count(&self) -> u64 {
        self.lock().ops
    }

    /// Counts of successful writes and syncs so far (never reset by `restart`).
    pub fn stats(&self) -> SimStats {
        self.lock().stats.clone()
    }

    /// Bytes passed to successful writes through handles opened at `prefix` or below it
    /// (whole path components: `db/wal` covers `db/wal/1` but not `db/wal2`).
    pub fn bytes_written_with_prefix(&self, prefix: &Path) -> u64 {
        let prefix = normalize(prefix);
        self.lock()
            .bytes_by_name
            .iter()
            .filter(|(name, _)| is_under(name, &prefix))
            .map(|(_, bytes)| bytes)
            .sum()
    }

    /// What a read of the whole file would see now, or `None` if no such file.
    pub fn file_contents(&self, path: &Path) -> Option<Vec<u8>> {
        let state = self.lock();
        let inode = state.names.get(&normalize(path))?;
        state.inodes.get(inode).map(|node| node.current.clone())
    }

    /// XORs the byte at `offset` with `xor` both in what reads see and in what is
    /// durable, as bit rot would. False if there is no such file or byte.
    pub fn corrupt_byte(&self, path: &Path, offset: u64, xor: u8) -> bool {
        let mut state = self.lock();
        let Some(&inode) = state.names.get(&normalize(path)) else {
            return false;
        };
        let Some(node) = state.inodes.get_mut(&inode) else {
            return false;
        };
        let Ok(at) = usize::try_from(offset) else {
            return false;
        };
        let Some(byte) = node.current.get_mut(at) else {
            return false;
        };
        *byte ^= xor;
        let flipped = *byte;
        if let Some(byte) = node.durable.get_mut(at) {
            *byte ^= xor;
        }
        // Pending writes are flipped too, so that a later sync or crash keeps the damage.
        let mut covered = false;
        for write in &mut node.pending {
            if let Some(byte) = at
                .checked_sub(write.offset)
                .and_then(|i| write.bytes.get_mut(i))
            {
                *byte ^= xor;
                covered = true;
            }
        }
        if !covered && at >= node.durable.len() {
            // The byte lies in a zero-filled gap that only a pending write's extension
            // created; record it so that syncing it keeps the damage.
            node.pending.push(PendingWrite {
                offset: at,
                bytes: vec![flipped],
            });
        }
        true
    }

    /// Cuts the file to `len` bytes, both in what reads see and in what is durable. False
    /// if there is no such file or it is shorter than `len`.
    pub fn truncate_file(&self, path: &Path, len: u64) -> bool {
        let mut state = self.lock();
        let Some(&inode) = state.names.get(&normalize(path)) else {
            return false;
        };
        let Some(node) = state.inodes.get_mut(&inode) else {
            return false;
        };
        let Ok(len) = usize::try_from(len) else {
            return false;
        };
        if len > node.current.len() {
            return false;
        }
        node.current.truncate(len);
        node.durable.truncate(len);
        node.pending.retain_mut(|write| {
            write.bytes.truncate(len.saturating_sub(write.offset));
            !write.bytes.is_empty()
        });
        true
    }
}

fn lock_state(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // No code panics while holding the lock, but a poisoned lock must not turn one test
    // failure into a cascade of panics in Drop.
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl fmt::Debug for SimVfs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("SimVfs")
            .field("epoch", &state.epoch)
            .field("ops", &state.ops)
            .field("power_lost", &state.power_lost)
            .field("files", &state.names.len())
            .finish()
    }
}

impl Vfs for SimVfs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        let name = normalize(path);
        let (inode, epoch) = self.lock().open(&name, mode)?;
        // The handle is built after the lock is released: its Drop takes the lock.
        Ok(Arc::new(SimFile {
            state: Arc::clone(&self.state),
            inode,
            epoch,
            name,
            read_only: mode == OpenMode::ReadOnly,
        }))
    }

    fn try_lock(&self, path: &Path, mode: LockMode) -> io::Result<Option<Box<dyn FileLock>>> {
        let name = normalize(path);
        let mut state = self.lock();
        state.check_power()?;
        let epoch = state.epoch;
        let exclusive = mode == LockMode::Exclusive;
        let held = state
            .locks
            .get(&name)
            .filter(|l| l.epoch == epoch && l.holders > 0)
            .copied();
        let next = match held {
            None => SimLockState {
                epoch,
                exclusive,
                holders: 1,
            },
            Some(l) if !l.exclusive && !exclusive => SimLockState {
                holders: l.holders + 1,
                ..l
            },
            Some(_) => return Ok(None),
        };
        state.locks.insert(name.clone(), next);
        drop(state);
        Ok(Some(Box::new(SimLock {
            state: Arc::clone(&self.state),
            name,
            epoch,
        })))
    }

    fn lock_holder(&self, path: &Path) -> Option<u32> {
        let state = self.lock();
        let l = state.locks.get(&normalize(path))?;
        (l.epoch == state.epoch && l.exclusive).then(std::process::id)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let name = normalize(path);
        let state = self.lock();
        state.check_power()?;
        Ok(state.names.contains_key(&name) || state.dir_exists(&name))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.lock().rename(&normalize(from), &normalize(to))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.lock().remove(&normalize(path))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.lock().sync_dir(&normalize(dir))
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.lock().create_dir_all(&normalize(dir))
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.lock().list_dir(&normalize(dir))
    }
}

/// A held simulated lock; dropping it releases it (unless a restart already did).
struct SimLock {
    state: Arc<Mutex<State>>,
    name: String,
    epoch: u64,
}

impl FileLock for SimLock {}

impl Drop for SimLock {
    fn drop(&mut self) {
        let mut state = lock_state(&self.state);
        if let Some(l) = state.locks.get_mut(&self.name) {
            if l.epoch == self.epoch {
                l.holders = l.holders.saturating_sub(1);
            }
        }
    }
}

/// A handle on a simulated file, valid for the boot epoch it was opened in.
struct SimFile {
    state: Arc<Mutex<State>>,
    inode: u64,
    epoch: u64,
    /// The name the file was opened under, for per-name write accounting.
    name: String,
    /// Opened with `OpenMode::ReadOnly`: writes fail.
    read_only: bool,
}

fn read_only_error() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, "file opened read-only")
}

impl SimFile {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock_state(&self.state)
    }
}

impl VfsFile for SimFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.lock().read(self.epoch, self.inode, buf, offset)
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if self.read_only {
            return Err(read_only_error());
        }
        self.lock().write(self, buf, offset)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.lock().sync_data(self.epoch, self.inode)
    }

    fn preallocate(&self, len_bytes: u64) -> io::Result<()> {
        if self.read_only {
            return Err(read_only_error());
        }
        self.lock().preallocate(self.epoch, self.inode, len_bytes)
    }

    fn len(&self) -> io::Result<u64> {
        self.lock().len(self.epoch, self.inode)
    }
}

impl Drop for SimFile {
    fn drop(&mut self) {
        let mut state = self.lock();
        // Handles of an older epoch were already forgotten by the restart.
        if state.epoch != self.epoch {
            return;
        }
        if let Some(node) = state.inodes.get_mut(&self.inode) {
            node.open_handles = node.open_handles.saturating_sub(1);
        }
        state.collect(self.inode);
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
