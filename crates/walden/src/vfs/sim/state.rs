//! Everything the simulator knows, behind one mutex: inodes, current and durable names,
//! directories, power, the crash point, the scheduled fault, counters and locks; and the
//! file-system calls as operations on it.

use super::fault::{CrashMode, OpClass, ScheduledFault};
use super::file::SimFile;
use super::inode::{checked_range, Inode};
use super::path::{parent_of, split_parent};
use super::SimStats;
use crate::rng::SimRng;
use crate::vfs::OpenMode;
use std::collections::{BTreeMap, BTreeSet};
use std::io;

/// Everything the simulator knows. One mutex guards all of it: the simulator is for
/// tests, and a single lock makes every call atomic and every run replayable.
pub(super) struct State {
    /// Decides the fate of torn and randomly treated writes at a crash.
    rng: SimRng,
    /// Bumped by every restart; handles of older epochs are stale.
    pub(super) epoch: u64,
    next_inode: u64,
    pub(super) inodes: BTreeMap<u64, Inode>,
    /// Names as the running system sees them.
    pub(super) names: BTreeMap<String, u64>,
    /// Names as they would be found after a power loss.
    durable_names: BTreeMap<String, u64>,
    /// Directories named by `create_dir_all` (with their ancestors).
    dirs: BTreeSet<String>,
    pub(super) power_lost: bool,
    /// Mutating calls so far (see the module comment for what counts).
    pub(super) ops: u64,
    /// The value of `ops` at which power is lost.
    pub(super) crash_at_op: Option<u64>,
    pub(super) fault: Option<ScheduledFault>,
    pub(super) faults_injected: u64,
    pub(super) stats: SimStats,
    /// Bytes written, by the name under which the writing handle was opened.
    pub(super) bytes_by_name: BTreeMap<String, u64>,
    /// Advisory locks held, by file name. A restart forgets them: the process that held
    /// them is gone.
    pub(super) locks: BTreeMap<String, SimLockState>,
    /// The device's size (`SimVfs::set_capacity`); None: unlimited.
    pub(super) capacity: Option<u64>,
}

/// Holders of one simulated advisory lock.
#[derive(Debug, Clone, Copy)]
pub(super) struct SimLockState {
    pub(super) epoch: u64,
    pub(super) exclusive: bool,
    pub(super) holders: u32,
}

pub(super) fn power_loss_error() -> io::Error {
    io::Error::other("simulated power loss")
}

fn stale_handle_error() -> io::Error {
    io::Error::other("stale handle after simulated restart")
}

pub(super) fn not_found(name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{name}: no such file in the simulated file system"),
    )
}

impl State {
    pub(super) fn new(seed: u64) -> State {
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
            capacity: None,
        }
    }

    pub(super) fn check_power(&self) -> io::Result<()> {
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
    fn check_fault(&mut self, class: OpClass, name: Option<&str>) -> io::Result<()> {
        let Some(fault) = self.fault.as_mut() else {
            return Ok(());
        };
        if !fault.ops.matches(class) {
            return Ok(());
        }
        if let Some(prefix) = &fault.under {
            if !name.is_some_and(|n| n.starts_with(prefix.as_str())) {
                return Ok(());
            }
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

    pub(super) fn dir_exists(&self, dir: &str) -> bool {
        dir.is_empty()
            || dir == "/"
            || self.dirs.contains(dir)
            || self.names.keys().any(|name| parent_of(name) == dir)
            || self.durable_names.keys().any(|name| parent_of(name) == dir)
    }

    /// Drops an inode that no name and no live handle refers to any more.
    pub(super) fn collect(&mut self, inode: u64) {
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

    pub(super) fn open(&mut self, name: &str, mode: OpenMode) -> io::Result<(u64, u64)> {
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

    pub(super) fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
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

    pub(super) fn remove(&mut self, name: &str) -> io::Result<()> {
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

    pub(super) fn sync_dir(&mut self, dir: &str) -> io::Result<()> {
        self.check_power()?;
        if !self.dir_exists(dir) {
            return Err(not_found(dir));
        }
        if self.count_op() {
            return Err(power_loss_error());
        }
        self.check_fault(OpClass::Sync, None)?;
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

    pub(super) fn create_dir_all(&mut self, dir: &str) -> io::Result<()> {
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

    pub(super) fn list_dir(&self, dir: &str) -> io::Result<Vec<String>> {
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

    pub(super) fn read(
        &mut self,
        epoch: u64,
        inode: u64,
        buf: &mut [u8],
        offset: u64,
    ) -> io::Result<()> {
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
        self.check_fault(OpClass::Read, None)?;
        buf.copy_from_slice(&self.inode_mut(inode)?.current[start..end]);
        Ok(())
    }

    /// The total length of every file (what the device holds).
    pub(super) fn bytes_used(&self) -> u64 {
        self.inodes.values().map(|i| i.current.len() as u64).sum()
    }

    /// ENOSPC when growing `inode` to `end` bytes would pass the capacity.
    fn check_room(&self, inode: u64, end: usize) -> io::Result<()> {
        let Some(cap) = self.capacity else {
            return Ok(());
        };
        let len = self.inodes.get(&inode).map_or(0, |i| i.current.len());
        let growth = end.saturating_sub(len) as u64;
        if growth > 0 && self.bytes_used() + growth > cap {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        Ok(())
    }

    pub(super) fn write(&mut self, handle: &SimFile, buf: &[u8], offset: u64) -> io::Result<()> {
        self.check_handle(handle.epoch)?;
        let (start, end) = checked_range(offset, buf.len())?;
        if !self.power_lost {
            self.check_room(handle.inode, end)?;
        }
        if self.count_op() {
            // The write was in flight when power went: it may be torn, kept or dropped.
            self.inode_mut(handle.inode)?.write(start, buf);
            return Err(power_loss_error());
        }
        self.check_fault(OpClass::Write, Some(&handle.name))?;
        self.inode_mut(handle.inode)?.write(start, buf);
        // Buffers never exceed the size limit checked above, so the length fits.
        let len = buf.len() as u64;
        self.stats.writes += 1;
        self.stats.bytes_written += len;
        *self.bytes_by_name.entry(handle.name.clone()).or_insert(0) += len;
        Ok(())
    }

    pub(super) fn sync_data(&mut self, epoch: u64, inode: u64) -> io::Result<()> {
        self.check_handle(epoch)?;
        self.inode_mut(inode)?;
        if self.count_op() {
            return Err(power_loss_error());
        }
        self.check_fault(OpClass::Sync, None)?;
        self.inode_mut(inode)?.sync();
        self.stats.syncs += 1;
        Ok(())
    }

    pub(super) fn preallocate(&mut self, epoch: u64, inode: u64, len_bytes: u64) -> io::Result<()> {
        self.check_handle(epoch)?;
        let (_, target) = checked_range(len_bytes, 0)?;
        let current = self.inode_mut(inode)?.current.len();
        if !self.power_lost {
            self.check_room(inode, target)?;
        }
        let crashed = self.count_op();
        if !crashed {
            self.check_fault(OpClass::Write, None)?;
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

    pub(super) fn truncate(&mut self, handle: &SimFile, len_bytes: u64) -> io::Result<()> {
        self.check_handle(handle.epoch)?;
        let (to, _) = checked_range(len_bytes, 0)?;
        let len = self.inode_mut(handle.inode)?.current.len();
        if to > len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("truncate to {to} bytes would grow a {len}-byte file"),
            ));
        }
        if self.count_op() {
            // In flight when power went: the new length may or may not survive.
            self.inode_mut(handle.inode)?.truncate(to);
            return Err(power_loss_error());
        }
        self.check_fault(OpClass::Write, Some(&handle.name))?;
        self.inode_mut(handle.inode)?.truncate(to);
        Ok(())
    }

    pub(super) fn len(&mut self, epoch: u64, inode: u64) -> io::Result<u64> {
        self.check_handle(epoch)?;
        Ok(self.inode_mut(inode)?.current.len() as u64)
    }

    pub(super) fn restart(&mut self, mode: CrashMode) {
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
