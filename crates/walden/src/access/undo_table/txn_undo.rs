//! A transaction's list of what it changed in undo tables, for rollback: one entry per
//! WAL record, with an 8-byte op per row. A transaction that changes a hundred million
//! rows holds 800 MB of ops, more than the undo log it points into keeps in memory; so
//! past `Options::txn_undo_memory_bytes` the entries held go to a temporary file as one
//! chunk (docs/format.md, "Temporary files"), and a rollback reads the chunks back
//! newest first. Nothing here needs to survive a crash: crash rollback reads the WAL
//! (docs/recovery.md rules 21, 22b). A chunk that cannot be written stays in memory
//! (the next try waits until twice as much is held), so a full disk loses nothing; one
//! that cannot be read back, or fails its checksum, fails the rollback like a damaged
//! undo record (rule 23).

use crate::codec::Reader;
use crate::error::{Error, Result};
use crate::temp::{TempFile, TempSpace};

use super::{EntryOp, UndoEntry};

/// The list (see the module's comment). Entries are counted together, in memory and
/// in files: `len` is what savepoints and statement marks remember.
#[derive(Debug, Default)]
pub struct TxnUndo {
    /// The newest entries, oldest first.
    entries: Vec<UndoEntry>,
    /// Ops of `entries`.
    ops_held: usize,
    /// Ops held before the entries go to a file (0: never).
    memory_ops: usize,
    temp: Option<TempSpace>,
    file: Option<TempFile>,
    /// Older entries in `file`, oldest first: (offset, bytes, entries).
    chunks: Vec<(u64, u32, u32)>,
    /// Entries in `chunks`.
    spilled: usize,
}

impl TxnUndo {
    /// A list that spills past `memory_bytes` of ops to temporary files in `temp`.
    pub fn new(temp: TempSpace, memory_bytes: u64) -> TxnUndo {
        TxnUndo {
            memory_ops: usize::try_from(memory_bytes / 8)
                .unwrap_or(usize::MAX)
                .max(1),
            temp: Some(temp),
            ..TxnUndo::default()
        }
    }

    /// Entries in all, in memory and in files.
    pub fn len(&self) -> usize {
        self.spilled + self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn push(&mut self, e: UndoEntry) {
        self.ops_held += e.ops.len();
        self.entries.push(e);
        if self.memory_ops > 0
            && self.ops_held > self.memory_ops
            && self.temp.is_some()
            && self.spill().is_err()
        {
            // Kept in memory: nothing is lost; try again at twice the size.
            self.memory_ops = self.memory_ops.saturating_mul(2);
        }
    }

    /// The newest entry, read back from its file if it was written there.
    pub fn last(&mut self) -> Result<Option<&UndoEntry>> {
        if self.entries.is_empty() && !self.chunks.is_empty() {
            self.load_newest_chunk()?;
        }
        Ok(self.entries.last())
    }

    /// Drops the newest entry (after `last`).
    pub fn pop(&mut self) {
        if let Some(e) = self.entries.pop() {
            self.ops_held -= e.ops.len();
        }
    }

    /// Writes the entries in memory to the file as one chunk. On an error nothing
    /// changes.
    fn spill(&mut self) -> Result<()> {
        let bytes = encode_chunk(&self.entries);
        let len = u32::try_from(bytes.len())
            .map_err(|_| Error::InvalidOption("an undo chunk past 4 GiB".into()))?;
        let count = u32::try_from(self.entries.len())
            .map_err(|_| Error::InvalidOption("an undo chunk past 2^32 entries".into()))?;
        let file = match (&mut self.file, &self.temp) {
            (Some(f), _) => f,
            (None, Some(t)) => self.file.insert(t.create()?),
            (None, None) => return Ok(()),
        };
        let at = file.append(&bytes)?;
        self.chunks.push((at, len, count));
        self.spilled += self.entries.len();
        self.entries.clear();
        self.entries.shrink_to_fit();
        self.ops_held = 0;
        Ok(())
    }

    /// Reads the newest chunk back into memory (which holds no entry), checked.
    fn load_newest_chunk(&mut self) -> Result<()> {
        let Some(&(at, len, count)) = self.chunks.last() else {
            return Ok(());
        };
        let Some(file) = &self.file else {
            return Err(damaged("a chunk without a file"));
        };
        let mut bytes = vec![0u8; len as usize];
        file.read_at(at, &mut bytes)?;
        let entries = decode_chunk(&bytes, count).map_err(|e| {
            damaged(&format!(
                "temporary file {} at {at}: {e}",
                file.path().display()
            ))
        })?;
        self.chunks.pop();
        self.spilled -= entries.len();
        self.ops_held = entries.iter().map(|e| e.ops.len()).sum();
        self.entries = entries;
        Ok(())
    }
}

fn damaged(why: &str) -> Error {
    Error::CorruptFile {
        path: std::path::PathBuf::from(crate::temp::TEMP_DIR),
        reason: format!("a transaction's undo list read back: {why}"),
    }
}

/// Entries as a chunk: `crc32c of the rest u32 | entries × (lsn u64 | page u64 | ops
/// u32 | ops × u64)` (docs/format.md, "Temporary files").
fn encode_chunk(entries: &[UndoEntry]) -> Vec<u8> {
    let mut bytes = vec![0u8; 4];
    for e in entries {
        bytes.extend_from_slice(&e.lsn.to_le_bytes());
        bytes.extend_from_slice(&e.page.to_le_bytes());
        bytes.extend_from_slice(&(e.ops.len() as u32).to_le_bytes());
        for op in &e.ops {
            bytes.extend_from_slice(&op.0.to_le_bytes());
        }
    }
    let crc = crc32c::crc32c(&bytes[4..]);
    bytes[..4].copy_from_slice(&crc.to_le_bytes());
    bytes
}

/// A chunk's `count` entries, checked: the checksum, every length, nothing left over.
fn decode_chunk(bytes: &[u8], count: u32) -> std::result::Result<Vec<UndoEntry>, String> {
    let mut r = Reader::new(bytes, 0);
    let crc = r.u32()?;
    if crc32c::crc32c(&bytes[4..]) != crc {
        return Err("checksum mismatch".into());
    }
    let mut out = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let lsn = r.u64()?;
        let page = r.u64()?;
        let n = r.u32()? as usize;
        if n > r.remaining() / 8 {
            return Err(format!("an entry of {n} ops past the chunk's end"));
        }
        let ops = (0..n)
            .map(|_| r.u64().map(EntryOp))
            .collect::<std::result::Result<_, _>>()?;
        out.push(UndoEntry { lsn, page, ops });
    }
    if r.remaining() != 0 {
        return Err(format!("{} bytes after its {count} entries", r.remaining()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Stats;
    use crate::vfs::{FaultKind, FaultOps, SimVfs, Vfs};
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    fn space(vfs: &SimVfs) -> TempSpace {
        let v: Arc<dyn Vfs> = Arc::new(vfs.clone());
        TempSpace::open(v, PathBuf::from("tmp"), Arc::new(Stats::default()))
    }

    fn entry(i: u64) -> UndoEntry {
        UndoEntry {
            lsn: 1000 + i,
            page: i % 7,
            ops: (0..(i % 5) as u16)
                .map(|s| EntryOp::change(s, i * 10 + u64::from(s)).unwrap())
                .collect(),
        }
    }

    fn pop_all_to(u: &mut TxnUndo, keep: usize) -> Vec<UndoEntry> {
        let mut out = Vec::new();
        while u.len() > keep {
            let e = u.last().unwrap().unwrap();
            out.push(UndoEntry {
                lsn: e.lsn,
                page: e.page,
                ops: e.ops.clone(),
            });
            u.pop();
        }
        out
    }

    #[test]
    fn entries_spill_and_come_back_newest_first() {
        let vfs = SimVfs::new(1);
        let mut u = TxnUndo::new(space(&vfs), 64);
        for i in 0..1000 {
            u.push(entry(i));
        }
        assert_eq!(u.len(), 1000);
        assert!(u.chunks.len() > 10, "{} chunks", u.chunks.len());
        assert!(u.entries.len() < 100);
        // A savepoint's rollback to 400 entries, then more work, then all of it.
        let back = pop_all_to(&mut u, 400);
        assert_eq!(back.len(), 600);
        for (k, e) in back.iter().enumerate() {
            let want = entry(999 - k as u64);
            assert_eq!((e.lsn, e.page, &e.ops), (want.lsn, want.page, &want.ops));
        }
        for i in 400..500 {
            u.push(entry(i));
        }
        let back = pop_all_to(&mut u, 0);
        let lsns: Vec<u64> = back.iter().map(|e| e.lsn).collect();
        let want: Vec<u64> = (0..500).rev().map(|i| 1000 + i).collect();
        assert_eq!(lsns, want);
        assert!(u.is_empty());
        drop(u);
        assert!(vfs.list_dir(Path::new("tmp")).unwrap().is_empty());
    }

    #[test]
    fn a_full_disk_keeps_entries_in_memory_and_a_damaged_chunk_is_an_error() {
        let vfs = SimVfs::new(2);
        let mut u = TxnUndo::new(space(&vfs), 64);
        vfs.fail_nth(1, FaultOps::Write, FaultKind::Enospc);
        for i in 0..100 {
            u.push(entry(i));
        }
        assert_eq!(u.len(), 100);
        let back = pop_all_to(&mut u, 0);
        assert_eq!(back.len(), 100);
        assert_eq!(back[99].lsn, 1000);
        // A flipped byte in a chunk: the rollback's read fails, naming it.
        let mut u = TxnUndo::new(space(&vfs), 64);
        for i in 0..100 {
            u.push(entry(i));
        }
        let file = u.file.as_ref().unwrap().path().to_path_buf();
        assert!(vfs.corrupt_byte(&file, 30, 0x01));
        let mut failed = None;
        while !u.is_empty() {
            match u.last() {
                Ok(_) => u.pop(),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let e = failed.expect("the damaged chunk is read back");
        assert!(e.to_string().contains("checksum mismatch"), "{e}");
    }

    #[test]
    fn a_chunk_is_decoded_only_when_whole() {
        let mut u = TxnUndo::default();
        for i in 0..20 {
            u.push(entry(i));
        }
        let bytes = encode_chunk(&u.entries);
        assert_eq!(decode_chunk(&bytes, 20).unwrap().len(), 20);
        assert!(decode_chunk(&bytes, 21).is_err());
        assert!(decode_chunk(&bytes, 19).is_err());
        for cut in 0..bytes.len() {
            assert!(decode_chunk(&bytes[..cut], 20).is_err(), "cut at {cut}");
        }
    }
}
