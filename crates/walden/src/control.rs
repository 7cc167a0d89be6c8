//! The control file and checkpoint files.
//!
//! `control` (64 bytes) names the last complete checkpoint; it is replaced by writing
//! `control.tmp`, syncing it, renaming it over `control` and syncing the directory, so a
//! crash at any moment leaves the old or the new one, whole. Layout: `magic "WALDNCTL" |
//! version u32 | crc32c u32 (of the 64 bytes with this field zero) | page_size u32 |
//! protection u8 | 3 pad | segment_size u64 | checkpoint_seq u64 | generation u64 |
//! database_id u64 | wal_compression u8 | 7 reserved`.
//!
//! `checkpoint.<seq>` holds what recovery starts from: `magic "WALDNCKP" | version u32 |
//! crc32c u32 (of the body) | body_len u64 | body`, body = `seq u64 | database_id u64 |
//! redo segment u64 | redo offset u64 | redo lsn u64 | undo start (3 × u64) | next_xid
//! u64 | next_page u64 | data_file_bytes u64 | chunk count u32 | chunk locations+1 u64… |
//! catalog`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::catalog::Catalog;
use crate::codec::Reader;
use crate::error::{Error, Result};
use crate::store::Protection;
use crate::vfs::{write_file_atomically, OpenMode, Vfs};
use crate::wal::{WalCompression, WalPosition};

pub const CONTROL_MAGIC: &[u8; 8] = b"WALDNCTL";
pub const CHECKPOINT_MAGIC: &[u8; 8] = b"WALDNCKP";
/// The on-disk format version this build writes (docs/format.md).
pub const FORMAT_VERSION: u32 = 25;
/// The oldest format version this build still reads. Format 25 made catalog changes
/// transactional: `drop_table`, `drop_index`, `drop_sequence` records carry the name,
/// `alter_table`, `create_view` and `drop_view` the old definition, and a checkpoint
/// may hold relations under hidden names (dropped by a transaction still running); an
/// older build would refuse such records, and a format 5 to 24 database has none (its
/// catalog records all committed at once). Format 24 added subtransactions
/// (savepoints): a `commit` or `abort` record may list the subtransactions that end with
/// it; an older build would refuse such a record as corrupt, and a format 5 to 23
/// database has none (its records are empty). Format 23 added column privileges
/// (column lists after a `set_acl` record's list, and a list of them after the default
/// privileges in a checkpoint's catalog); an older build would refuse them, and a
/// format 5 to 22 database has none. Format 22 added privileges (the
/// records `set_acl`, `set_member` and `set_default_acl`, codes 45 to 47, and a section after the
/// sequences in a checkpoint's catalog); an older build would refuse them, and a format
/// 5 to 21 database has none (its relations are the bootstrap superuser's). Format 21 added sequences (the
/// records `create_sequence`, `alter_sequence`, `drop_sequence` and `sequence_values`,
/// codes 41 to 44, and a list after the free page numbers in a checkpoint's catalog);
/// an older build would refuse them, and a format 5 to 20 database has none. Format 20
/// added values stored
/// out of line (the value length 0xFFFF and its pointer in a row), toast relations
/// (the record `create_toast`, code 37, and the kind byte's bit 0x80 in a checkpoint's
/// catalog, followed by the table's id); an older build would refuse them as corrupt,
/// and a format 5 to 19 database has none. Format 19 added the record
/// `free_table_pages` (code 36) and data files cut shorter than their checkpoint
/// recorded (free pages given back); an older build would refuse both, and a format 5
/// to 18 database has neither. Format 18 added tables'
/// free-space hints after the secret in a checkpoint's catalog; an older build would
/// refuse the bytes it does not expect, and a format 5 to 17 checkpoint has none.
/// Format 17 added the record
/// `undo_update` (code 40: one plain in-place update, shorter than `undo_change`); an
/// older build would refuse it, and a format 5 to 16 database has none. Format 16 added roles (the
/// records `create_role`, `alter_role` and `drop_role`, and a list after the table
/// statistics in a checkpoint's catalog); an older build would refuse them, and a
/// format 5 to 15 database has none. Format 15 added index column
/// orders (DESC, NULLS FIRST): flag 4 and an order byte per column in an index
/// definition, the order bits 0x40 and 0x80 of `btree_insert_row` parts, and keys
/// whose descending values are inverted and whose NULLs may sort first; an older build
/// would refuse them as corrupt, and a format 5 to 14 database has none. Format 14 added table
/// statistics (ANALYZE; the record `table_stats`, and a list after the views in a
/// checkpoint's catalog). Format 13 added the column type jsonb (type code 14 in
/// schemas and `btree_insert_row` parts; the stored document of docs/format.md,
/// "jsonb"). Format 12 was not used. Format 11 added the column type
/// numeric (type code 13 in schemas and `btree_insert_row` parts, its stored form and
/// index key in docs/format.md); an older build would refuse it as corrupt, and a format
/// 5 to 10 database has none. Format 10 added the column types
/// date, timestamp, timestamptz, interval and bytea (type codes 8 to 12 in schemas and
/// `btree_insert_row` parts), counted rows (a table's rows start with their column
/// count, so ALTER TABLE ADD COLUMN leaves stored rows as they are; the schema's count
/// has bit 15 set), table constraints as SQL text (bit 14), dropped columns and missing
/// values (column flags 64 and 128), views (after the indexes in a checkpoint's
/// catalog) and the records `create_view`, `drop_view` and `alter_table`; an older
/// build would refuse them as corrupt, and a format 5 to 9 database has none (its
/// tables keep uncounted rows and cannot add columns). Format 9 added column defaults
/// (schema flag 32 and the default's SQL text). Format 8 added index free lists
/// (free index pages, the meta page's right-sibling field naming the first, WAL record
/// `btree_link`). Format 7 added heap-only versions
/// (two flag bits in the heap tuple header's command id, WAL records `heap_update_hot`
/// and `heap_prune_hot`); format 6 added `btree_insert_row`. An older build cannot
/// read them; a format 5 to 8 database has none, so this build reads it. Format 5 added indexes (the
/// catalog in checkpoints, index pages). Format 4 added the database id, the
/// checksummed `xact` file and the data file length in checkpoints; format 3 changed the
/// WAL (compact records, compressed frames). An older database is refused with a clear
/// error, its files untouched.
pub const MIN_FORMAT_VERSION: u32 = 5;
const CONTROL_BYTES: usize = 64;

/// Contents of the control file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Control {
    pub page_size: u32,
    pub protection: Protection,
    pub segment_size: u64,
    pub checkpoint_seq: u64,
    pub generation: u64,
    /// Drawn at creation; every checkpoint, `xact` and WAL segment names it, so a file of
    /// another database put in place of one of ours is recognised.
    pub database_id: u64,
    /// The WAL codec chosen with `SET wal_compression` (a database setting: kept here
    /// so that it survives a reopen).
    pub wal_compression: WalCompression,
}

pub fn control_path(dir: &Path) -> PathBuf {
    dir.join("control")
}

pub fn checkpoint_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("checkpoint.{seq:016x}"))
}

impl Control {
    /// What every WAL segment of this database states in its header.
    pub fn segment_identity(&self) -> crate::wal::format::SegmentIdentity {
        crate::wal::format::SegmentIdentity {
            segment_size: self.segment_size,
            database_id: self.database_id,
        }
    }

    fn encode(&self) -> [u8; CONTROL_BYTES] {
        let mut b = [0u8; CONTROL_BYTES];
        b[0..8].copy_from_slice(CONTROL_MAGIC);
        b[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        b[16..20].copy_from_slice(&self.page_size.to_le_bytes());
        b[20] = self.protection.code();
        b[24..32].copy_from_slice(&self.segment_size.to_le_bytes());
        b[32..40].copy_from_slice(&self.checkpoint_seq.to_le_bytes());
        b[40..48].copy_from_slice(&self.generation.to_le_bytes());
        b[48..56].copy_from_slice(&self.database_id.to_le_bytes());
        b[56] = self.wal_compression.code();
        let crc = crc32c::crc32c(&b);
        b[12..16].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Reads and checks the control file of `dir`.
    pub fn read(vfs: &Arc<dyn Vfs>, dir: &Path) -> Result<Control> {
        let path = control_path(dir);
        if !vfs.exists(&path).map_err(|e| Error::io(&path, e))? {
            return Err(crate::directory::missing_control_error(vfs, dir));
        }
        let f = vfs
            .open(&path, OpenMode::ReadOnly)
            .map_err(|e| Error::io(&path, e))?;
        let len = f.len().map_err(|e| Error::io(&path, e))?;
        let bad = |reason: String| Error::CorruptControlFile {
            path: path.clone(),
            reason,
        };
        let mut b = vec![0u8; len.min(4096) as usize];
        f.read_exact_at(&mut b, 0)
            .map_err(|e| Error::io(&path, e))?;
        if b.len() >= 8 && &b[0..8] != CONTROL_MAGIC {
            // Not ours: a foreign file named `control` in a foreign directory, or a
            // damaged control file beside the database's other files.
            let others = crate::directory::database_files(vfs, dir)?;
            if others.is_empty() {
                return Err(Error::NotADatabase {
                    path: dir.to_path_buf(),
                });
            }
            return Err(bad("bad magic: not a Walden control file".into()));
        }
        if len < 12 {
            return Err(bad(format!("{len} bytes, expected {CONTROL_BYTES}")));
        }
        let version = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
        if !(MIN_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(Error::UnsupportedVersion {
                path: path.clone(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        if b.len() != CONTROL_BYTES {
            return Err(bad(format!("{} bytes, expected {CONTROL_BYTES}", b.len())));
        }
        let stored = u32::from_le_bytes([b[12], b[13], b[14], b[15]]);
        b[12..16].fill(0);
        if crc32c::crc32c(&b) != stored {
            return Err(bad("checksum mismatch".into()));
        }
        let mut r = Reader::new(&b, 16);
        let page_size = r.u32().map_err(bad)?;
        let protection = Protection::from_code(r.u8().map_err(bad)?)
            .ok_or_else(|| bad("unknown protection mode".into()))?;
        r.take(3).map_err(bad)?;
        let c = Control {
            page_size,
            protection,
            segment_size: r.u64().map_err(bad)?,
            checkpoint_seq: r.u64().map_err(bad)?,
            generation: r.u64().map_err(bad)?,
            database_id: r.u64().map_err(bad)?,
            wal_compression: {
                let code = r.u8().map_err(bad)?;
                WalCompression::try_from_code(code)
                    .ok_or_else(|| bad(format!("unknown WAL compression code {code}")))?
            },
        };
        if !crate::page::PAGE_SIZES.contains(&(c.page_size as usize)) {
            return Err(bad(format!("unsupported page size {}", c.page_size)));
        }
        if c.segment_size < crate::wal::format::MIN_SEGMENT_BYTES || c.segment_size > 1 << 32 {
            return Err(bad(format!("unsupported segment size {}", c.segment_size)));
        }
        Ok(c)
    }

    /// Replaces the control file atomically (write new, sync, rename, sync directory).
    pub fn write(&self, vfs: &Arc<dyn Vfs>, dir: &Path) -> Result<()> {
        write_file_atomically(vfs, dir, "control", &self.encode())
    }
}

/// What a checkpoint file holds.
#[derive(Debug)]
pub struct CheckpointData {
    pub seq: u64,
    pub database_id: u64,
    pub redo: WalPosition,
    /// Where recovery starts reading to roll back transactions on undo tables that were
    /// running at the checkpoint: at or before `redo` (format 2; format 1: `redo`).
    pub undo_start: WalPosition,
    pub next_xid: u64,
    pub next_page: u64,
    /// Length of the data file once this checkpoint's pages were durable: a shorter
    /// file has lost pages the checkpoint relies on.
    pub data_file_bytes: u64,
    pub chunk_locations: Vec<u64>,
    pub catalog: Catalog,
}

impl CheckpointData {
    pub fn encode(&self) -> Vec<u8> {
        self.encode_with(&self.catalog, &|| self.catalog.free_pages.clone())
    }

    /// Encodes with `catalog` in place of `self.catalog` (a checkpoint serializes the
    /// live catalog under its lock rather than copying it).
    pub fn encode_with(&self, catalog: &Catalog, free_pages: &dyn Fn() -> Vec<u64>) -> Vec<u8> {
        let mut body = Vec::new();
        for v in [
            self.seq,
            self.database_id,
            self.redo.segment_no,
            self.redo.offset,
            self.redo.lsn,
            self.undo_start.segment_no,
            self.undo_start.offset,
            self.undo_start.lsn,
            self.next_xid,
            self.next_page,
            self.data_file_bytes,
        ] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        body.extend_from_slice(&(self.chunk_locations.len() as u32).to_le_bytes());
        for c in &self.chunk_locations {
            body.extend_from_slice(&c.to_le_bytes());
        }
        catalog.encode_with_free(&mut body, free_pages);
        let mut out = Vec::with_capacity(body.len() + 24);
        out.extend_from_slice(CHECKPOINT_MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    pub fn read(vfs: &Arc<dyn Vfs>, dir: &Path, seq: u64) -> Result<CheckpointData> {
        let path = checkpoint_path(dir, seq);
        let bad = |reason: String| Error::CorruptCheckpoint {
            path: path.clone(),
            reason,
        };
        let f = vfs.open(&path, OpenMode::ReadOnly).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::MissingFile {
                    path: path.clone(),
                    reason: format!(
                        "the control file names checkpoint {seq}, which recovery starts from"
                    ),
                }
            } else {
                Error::io(&path, e)
            }
        })?;
        let len = f.len().map_err(|e| Error::io(&path, e))?;
        if !(24..=1 << 34).contains(&len) {
            return Err(bad(format!("{len} bytes")));
        }
        let mut b = vec![0u8; len as usize];
        f.read_exact_at(&mut b, 0)
            .map_err(|e| Error::io(&path, e))?;
        let mut r = Reader::new(&b, 0);
        let magic: [u8; 8] = r.array().map_err(bad)?;
        if &magic != CHECKPOINT_MAGIC {
            return Err(bad("bad magic".into()));
        }
        let version = r.u32().map_err(bad)?;
        if !(MIN_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
            // The control file was read with a supported version: a checkpoint of the
            // same database has it too, so another value is damage.
            return Err(bad(format!(
                "format version {version}, but the control file's is one this build reads ({MIN_FORMAT_VERSION} to {FORMAT_VERSION})"
            )));
        }
        let crc = r.u32().map_err(bad)?;
        let body_len = r.u64().map_err(bad)?;
        let body = r.take(body_len as usize).map_err(bad)?;
        if crc32c::crc32c(body) != crc {
            return Err(bad("checksum mismatch".into()));
        }
        let mut r = Reader::new(body, 0);
        let file_seq = r.u64().map_err(bad)?;
        if file_seq != seq {
            return Err(bad(format!("holds checkpoint {file_seq}, expected {seq}")));
        }
        let database_id = r.u64().map_err(bad)?;
        let redo = WalPosition {
            segment_no: r.u64().map_err(bad)?,
            offset: r.u64().map_err(bad)?,
            lsn: r.u64().map_err(bad)?,
        };
        let undo_start = WalPosition {
            segment_no: r.u64().map_err(bad)?,
            offset: r.u64().map_err(bad)?,
            lsn: r.u64().map_err(bad)?,
        };
        if undo_start.lsn > redo.lsn || undo_start.segment_no > redo.segment_no {
            return Err(bad(format!(
                "undo start LSN {} after the redo point {}",
                undo_start.lsn, redo.lsn
            )));
        }
        let next_xid = r.u64().map_err(bad)?;
        let next_page = r.u64().map_err(bad)?;
        let data_file_bytes = r.u64().map_err(bad)?;
        let n = r.u32().map_err(bad)? as usize;
        if n > r.remaining() / 8 {
            return Err(bad(format!("{n} map chunks do not fit the file")));
        }
        let mut chunk_locations = Vec::with_capacity(n);
        for _ in 0..n {
            chunk_locations.push(r.u64().map_err(bad)?);
        }
        let mut at = r.pos();
        let catalog = Catalog::decode(body, &mut at).map_err(bad)?;
        if at != body.len() {
            return Err(bad(format!("{} trailing bytes", body.len() - at)));
        }
        // A free page past those handed out would be handed out twice.
        if let Some(p) = catalog.free_pages.iter().find(|&&p| p >= next_page) {
            return Err(bad(format!(
                "free page {p} was never handed out (next page {next_page})"
            )));
        }
        Ok(CheckpointData {
            seq,
            database_id,
            redo,
            undo_start,
            next_xid,
            next_page,
            data_file_bytes,
            chunk_locations,
            catalog,
        })
    }
}
