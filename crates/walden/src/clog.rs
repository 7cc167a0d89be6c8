//! The transaction-status log: two bits per transaction id (in progress, committed,
//! aborted), kept whole in memory and written to the file `xact` at each checkpoint.
//!
//! The file is replaced whole and atomically (written as `xact.tmp`, synced, renamed,
//! directory synced), so a crash leaves the old or the new file, never a mix of the two.
//! It carries the redo LSN of the checkpoint that wrote it: recovery needs an `xact` at
//! least as new as its checkpoint (every status change before the redo point is in it;
//! later ones are replayed from commit and abort records, idempotently), so an older copy
//! is refused. Layout (docs/format.md): a 40-byte header `magic "WALDNXAC" | version u32 |
//! crc32c u32 (of the header with this field zero) | database id u64 | redo lsn u64 |
//! status bytes u64`, then the status bytes in blocks of up to 4,092 bytes, each behind
//! its crc32c (seeded with the block number, so blocks cannot trade places unnoticed).
//! Only bits of xids below the checkpointed `next_xid` are trusted from the file.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};

use crate::codec::Reader;
use crate::error::{Error, Result};
use crate::stats::Stats;
use crate::vfs::{write_file_atomically, OpenMode, Vfs};

/// The status of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XidStatus {
    InProgress = 0,
    Committed = 1,
    Aborted = 2,
}

struct ClogState {
    bits: Vec<u8>,
}

/// Transaction status bits. Guarded by the RwLock.
pub struct Clog {
    path: PathBuf,
    state: RwLock<ClogState>,
}

impl Clog {
    /// Loads `xact` and checks it against the checkpoint recovery starts from (its
    /// database id and redo LSN). Bits of xids at or above `next_xid` are cleared: the
    /// file may hold statuses set after that checkpoint read `next_xid`, and those are
    /// replayed from the WAL.
    pub fn load(
        vfs: &Arc<dyn Vfs>,
        dir: &Path,
        database_id: u64,
        redo_lsn: u64,
        next_xid: u64,
    ) -> Result<Clog> {
        let path = xact_path(dir);
        let bytes = read_whole(vfs, &path)?;
        let bits =
            decode_xact(&bytes, database_id, redo_lsn).map_err(|reason| Error::CorruptFile {
                path: path.clone(),
                reason,
            })?;
        let clog = Clog::new(path, bits);
        clog.clear_from(next_xid);
        Ok(clog)
    }

    /// Like `load`, for `walden recover --accept-data-loss`: a missing or damaged file
    /// keeps what can be read (blocks whose checksum holds), and the statuses lost are
    /// said in the returned note. Transactions whose status is lost count as not
    /// committed: their changes are invisible.
    pub fn load_accepting_loss(
        vfs: &Arc<dyn Vfs>,
        dir: &Path,
        database_id: u64,
        redo_lsn: u64,
        next_xid: u64,
    ) -> Result<(Clog, Option<String>)> {
        let err = match Clog::load(vfs, dir, database_id, redo_lsn, next_xid) {
            Ok(clog) => return Ok((clog, None)),
            Err(e @ (Error::MissingFile { .. } | Error::CorruptFile { .. })) => e,
            Err(e) => return Err(e),
        };
        let path = xact_path(dir);
        let bytes = match read_whole(vfs, &path) {
            Ok(b) => b,
            Err(Error::MissingFile { .. }) => Vec::new(),
            Err(e) => return Err(e),
        };
        let (bits, bad_blocks) = salvage_xact(&bytes);
        let clog = Clog::new(path, bits);
        clog.clear_from(next_xid);
        let lost = if bad_blocks.is_empty() && !bytes.is_empty() {
            format!("{err}; the readable statuses were kept")
        } else if bytes.len() < XACT_HEADER_BYTES {
            format!(
                "{err}; the status of every transaction before xid {next_xid} is lost: their changes are invisible now"
            )
        } else {
            let ranges: Vec<String> = bad_blocks
                .iter()
                .map(|b| {
                    let first = *b as u64 * XACT_BLOCK_BYTES as u64 * 4;
                    format!("{first}..{}", first + XACT_BLOCK_BYTES as u64 * 4)
                })
                .collect();
            format!(
                "{err}; the status of transactions {} is lost: their changes are invisible now",
                ranges.join(", ")
            )
        };
        Ok((clog, Some(lost)))
    }

    /// An empty status log for a new database (its file is written by the first
    /// checkpoint).
    pub fn create(dir: &Path) -> Clog {
        Clog::new(xact_path(dir), Vec::new())
    }

    fn new(path: PathBuf, bits: Vec<u8>) -> Clog {
        Clog {
            path,
            state: RwLock::new(ClogState { bits }),
        }
    }

    fn clear_from(&self, xid: u64) {
        let mut st = self.state.write().unwrap_or_else(|e| e.into_inner());
        let byte = (xid / 4) as usize;
        if byte < st.bits.len() {
            for x in xid..(byte as u64 + 1) * 4 {
                let sh = (x % 4) * 2;
                st.bits[byte] &= !(3 << sh);
            }
            st.bits.truncate(byte + 1);
        }
    }

    pub fn get(&self, xid: u64) -> XidStatus {
        let st = self.state.read().unwrap_or_else(|e| e.into_inner());
        match st.bits.get((xid / 4) as usize) {
            Some(b) => match (b >> ((xid % 4) * 2)) & 3 {
                1 => XidStatus::Committed,
                2 => XidStatus::Aborted,
                _ => XidStatus::InProgress,
            },
            None => XidStatus::InProgress,
        }
    }

    pub fn set(&self, xid: u64, status: XidStatus) {
        let mut st = self.state.write().unwrap_or_else(|e| e.into_inner());
        let byte = (xid / 4) as usize;
        if st.bits.len() <= byte {
            st.bits.resize(byte + 1, 0);
        }
        let sh = (xid % 4) * 2;
        st.bits[byte] = (st.bits[byte] & !(3 << sh)) | ((status as u8) << sh);
    }

    /// Replaces `xact` with the current statuses, stamped with the checkpoint's redo
    /// LSN (docs/recovery.md rule 9). Called by a checkpoint after it fixed its redo
    /// point under the commit fence, so every commit before the redo point has its bit.
    pub fn write_out(
        &self,
        vfs: &Arc<dyn Vfs>,
        stats: &Stats,
        database_id: u64,
        redo_lsn: u64,
    ) -> Result<()> {
        let bytes = {
            let st = self.state.read().unwrap_or_else(|e| e.into_inner());
            encode_xact(&st.bits, database_id, redo_lsn)
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        write_file_atomically(vfs, dir, XACT_FILE, &bytes)?;
        stats.other_fsyncs.fetch_add(2, Ordering::Relaxed);
        Ok(())
    }
}

/// The status file's name in the database directory.
pub const XACT_FILE: &str = "xact";
const XACT_MAGIC: &[u8; 8] = b"WALDNXAC";
const XACT_VERSION: u32 = 1;
const XACT_HEADER_BYTES: usize = 40;
/// Status bytes per block (a block with its CRC is 4 KiB).
const XACT_BLOCK_BYTES: usize = 4092;

pub fn xact_path(dir: &Path) -> PathBuf {
    dir.join(XACT_FILE)
}

fn read_whole(vfs: &Arc<dyn Vfs>, path: &Path) -> Result<Vec<u8>> {
    let f = vfs.open(path, OpenMode::ReadOnly).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::MissingFile {
                path: path.to_path_buf(),
                reason: "the transaction-status file is needed to tell committed from aborted transactions".into(),
            }
        } else {
            Error::io(path, e)
        }
    })?;
    let len = f.len().map_err(|e| Error::io(path, e))?;
    // 2 bits per xid: 2^40 bytes would be 2^42 transactions; more is damage.
    if len > 1 << 40 {
        return Err(Error::CorruptFile {
            path: path.to_path_buf(),
            reason: format!("{len} bytes"),
        });
    }
    let mut bytes = vec![0u8; len as usize];
    f.read_exact_at(&mut bytes, 0)
        .map_err(|e| Error::io(path, e))?;
    Ok(bytes)
}

fn block_crc(index: u64, block: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&index.to_le_bytes()), block)
}

fn encode_xact(bits: &[u8], database_id: u64, redo_lsn: u64) -> Vec<u8> {
    let blocks = bits.len().div_ceil(XACT_BLOCK_BYTES);
    let mut out = Vec::with_capacity(XACT_HEADER_BYTES + bits.len() + 4 * blocks);
    out.extend_from_slice(XACT_MAGIC);
    out.extend_from_slice(&XACT_VERSION.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&database_id.to_le_bytes());
    out.extend_from_slice(&redo_lsn.to_le_bytes());
    out.extend_from_slice(&(bits.len() as u64).to_le_bytes());
    let crc = crc32c::crc32c(&out);
    out[12..16].copy_from_slice(&crc.to_le_bytes());
    for (i, block) in bits.chunks(XACT_BLOCK_BYTES).enumerate() {
        out.extend_from_slice(&block_crc(i as u64, block).to_le_bytes());
        out.extend_from_slice(block);
    }
    out
}

/// Checks and decodes a status file; the reason names what is wrong.
fn decode_xact(
    bytes: &[u8],
    database_id: u64,
    redo_lsn: u64,
) -> std::result::Result<Vec<u8>, String> {
    if bytes.len() < XACT_HEADER_BYTES {
        return Err(format!(
            "{} bytes, shorter than its {XACT_HEADER_BYTES}-byte header",
            bytes.len()
        ));
    }
    let (header, body) = bytes.split_at(XACT_HEADER_BYTES);
    if &header[0..8] != XACT_MAGIC {
        return Err("bad magic: not a transaction-status file".into());
    }
    let mut copy = header.to_vec();
    copy[12..16].fill(0);
    let mut r = Reader::new(header, 8);
    let version = r.u32()?;
    let stored_crc = r.u32()?;
    if crc32c::crc32c(&copy) != stored_crc {
        return Err("header checksum mismatch".into());
    }
    if version != XACT_VERSION {
        return Err(format!(
            "format version {version}, this build reads {XACT_VERSION}"
        ));
    }
    let file_id = r.u64()?;
    let file_redo = r.u64()?;
    let len = r.u64()?;
    if file_id != database_id {
        return Err(format!(
            "belongs to another database (id {file_id:016x}, this one is {database_id:016x})"
        ));
    }
    if file_redo < redo_lsn {
        return Err(format!(
            "written at a checkpoint with redo LSN {file_redo}, older than the checkpoint recovery starts from (redo LSN {redo_lsn}): an older copy of the file"
        ));
    }
    let blocks = len.div_ceil(XACT_BLOCK_BYTES as u64);
    let expected = len + 4 * blocks;
    if body.len() as u64 != expected {
        return Err(format!(
            "{} bytes after the header, expected {expected} for {len} status bytes (truncated or extended)",
            body.len()
        ));
    }
    let mut bits = Vec::with_capacity(len as usize);
    for (i, stored) in body.chunks(XACT_BLOCK_BYTES + 4).enumerate() {
        let (crc, block) = stored.split_at(4);
        let crc = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        if block_crc(i as u64, block) != crc {
            return Err(format!(
                "checksum mismatch in block {i} (file offset {})",
                XACT_HEADER_BYTES + i * (XACT_BLOCK_BYTES + 4)
            ));
        }
        bits.extend_from_slice(block);
    }
    Ok(bits)
}

/// What can be read of a damaged status file: the blocks whose checksum holds (others
/// read as zeros: in progress, so not committed) and the numbers of the bad blocks. The
/// header's own checks are skipped: the caller accepts the loss.
fn salvage_xact(bytes: &[u8]) -> (Vec<u8>, Vec<usize>) {
    let mut bits = Vec::new();
    let mut bad = Vec::new();
    if bytes.len() < XACT_HEADER_BYTES || &bytes[0..8] != XACT_MAGIC {
        return (bits, bad);
    }
    for (i, stored) in bytes[XACT_HEADER_BYTES..]
        .chunks(XACT_BLOCK_BYTES + 4)
        .enumerate()
    {
        if stored.len() <= 4 {
            bad.push(i);
            break;
        }
        let (crc, block) = stored.split_at(4);
        let crc = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        if block_crc(i as u64, block) == crc {
            bits.extend_from_slice(block);
        } else {
            bad.push(i);
            bits.resize(bits.len() + block.len(), 0);
        }
    }
    (bits, bad)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn xact_round_trip_and_damage() {
        let bits: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
        let enc = encode_xact(&bits, 42, 1000);
        assert_eq!(decode_xact(&enc, 42, 1000).unwrap(), bits);
        assert_eq!(decode_xact(&enc, 42, 999).unwrap(), bits);
        assert!(decode_xact(&enc, 42, 1001)
            .unwrap_err()
            .contains("older copy"));
        assert!(decode_xact(&enc, 43, 1000)
            .unwrap_err()
            .contains("another database"));
        for at in [0, 9, 13, 20, 45, 4200, enc.len() - 1] {
            let mut bad = enc.clone();
            bad[at] ^= 0x10;
            assert!(
                decode_xact(&bad, 42, 1000).is_err(),
                "flip at {at} accepted"
            );
        }
        for len in [0, 39, 40, 41, enc.len() - 1] {
            assert!(
                decode_xact(&enc[..len], 42, 1000).is_err(),
                "length {len} accepted"
            );
        }
        assert_eq!(
            decode_xact(&encode_xact(&[], 1, 2), 1, 2).unwrap(),
            Vec::<u8>::new()
        );
    }
}
