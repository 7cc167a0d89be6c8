//! Record owners (PostgreSQL's resource managers): each owner of WAL records —
//! the WAL itself, transactions, the catalog, the slotted-page base, each table kind —
//! encodes, checks, describes and redoes its own payloads behind `RecordOwner`. The WAL
//! core knows only the header, the record types and their flags.
//!
//! `Owners` maps codes to owners. The list of owners is made above every owner
//! (`crate::owners`), so no owner depends on another and a new one (a B-tree) is one
//! module and one line in that list.

use std::collections::HashMap;
use std::path::Path;

use crate::buffer::{BufferPool, Fetch};
use crate::catalog::Catalog;
use crate::clog::Clog;
use crate::error::{Error, Result};
use crate::page::{PageMut, PageRef};
use crate::stats::RECORD_CODES;
use crate::wal::payload::LoggedRows;
use crate::wal::record::*;

/// An owner of WAL records.
pub trait RecordOwner: Sync {
    /// Its name (in errors and listings).
    fn name(&self) -> &'static str;
    /// The record types it owns; no code belongs to two owners.
    fn types(&self) -> &'static [RecordType];
    /// Checks every field of a record's payload and says in a few words what it
    /// changed (waldump). An error is the reason the payload is not valid.
    fn describe(&self, rec: &LogRecord) -> std::result::Result<String, String>;
    /// Checks a record's payload (the WAL reader asks before handing a record on): the
    /// decoding `describe` does, without the words.
    fn check(&self, rec: &LogRecord) -> std::result::Result<(), String>;
    /// Replays a record during recovery (it has been checked). Redo is idempotent: a
    /// page whose LSN shows the change is left alone.
    fn redo(&self, rec: &LogRecord, ctx: &mut RedoCtx) -> Result<()>;
}

/// What redo may change: pages, transaction status, the catalog.
pub struct RedoCtx<'a> {
    pub pool: &'a BufferPool,
    pub clog: &'a Clog,
    pub catalog: &'a mut Catalog,
    /// The WAL directory (named in errors).
    pub wal_dir: &'a Path,
    /// The rows of each running transaction's latest `CARRIES_ROWS` record, which a
    /// `btree_insert_row` takes its key from.
    pub rows: &'a HashMap<u64, LoggedRows>,
}

impl RedoCtx<'_> {
    /// A record whose content cannot be right.
    pub fn corrupt(&self, rec: &LogRecord, reason: String) -> Error {
        Error::CorruptWal {
            path: self.wal_dir.to_path_buf(),
            lsn: rec.lsn,
            reason,
        }
    }

    /// The frame of every page redo: pins the record's page (`how`), skips it when the
    /// page LSN shows the record is already there (unless the page is overwritten),
    /// applies `apply` (page bytes, page number), and sets the page LSN. A reason from
    /// `apply` becomes a corrupt-page error naming the record.
    pub fn redo_page(
        &self,
        rec: &LogRecord,
        how: Fetch,
        apply: impl FnOnce(&mut [u8], u64) -> std::result::Result<(), String>,
    ) -> Result<()> {
        let Some(page_no) = rec.page() else {
            return Ok(());
        };
        let end_lsn = rec.end_lsn();
        let pinned = self.pool.fetch(page_no, how)?;
        let mut g = pinned.write();
        if how == Fetch::Read && PageRef(&g).lsn() >= end_lsn {
            return Ok(());
        }
        apply(&mut g, page_no).map_err(|reason| Error::CorruptPage {
            path: self.pool.store().path().to_path_buf(),
            page: page_no,
            location: page_no,
            reason: format!("redo of the record ending at LSN {end_lsn}: {reason}"),
        })?;
        PageMut(&mut g).set_lsn(end_lsn);
        Ok(())
    }
}

/// The WAL's own records: page images and checkpoints (`UNDO_ONLY` is handled by
/// `Owners`, which hands the kept record to its owner).
pub struct WalOwner;

impl RecordOwner for WalOwner {
    fn name(&self) -> &'static str {
        "wal"
    }

    fn types(&self) -> &'static [RecordType] {
        &[PAGE_IMAGE, CHECKPOINT, UNDO_ONLY]
    }

    fn check(&self, rec: &LogRecord) -> std::result::Result<(), String> {
        if rec.rtype == PAGE_IMAGE {
            // The image is any bytes: its head is all there is to check.
            return PageImage::head(&rec.payload).map(|_| ());
        }
        self.describe(rec).map(|_| ())
    }

    fn describe(&self, rec: &LogRecord) -> std::result::Result<String, String> {
        match rec.rtype.code {
            c if c == PAGE_IMAGE.code => {
                let i = PageImage::decode(&rec.payload)?;
                Ok(format!(
                    "page {} hole {}..{} image {} bytes",
                    i.page,
                    i.lower,
                    i.upper,
                    i.image.len()
                ))
            }
            c if c == CHECKPOINT.code => {
                let c = CheckpointRecord::decode(&rec.payload)?;
                Ok(format!("redo_lsn {} next_xid {}", c.redo_lsn, c.next_xid))
            }
            c => Err(format!("record code {c} is not the WAL's")),
        }
    }

    fn redo(&self, rec: &LogRecord, ctx: &mut RedoCtx) -> Result<()> {
        if rec.rtype != PAGE_IMAGE {
            // A checkpoint record changes nothing; recovery reads it for itself.
            return Ok(());
        }
        let image = PageImage::decode(&rec.payload).map_err(|r| ctx.corrupt(rec, r))?;
        ctx.redo_page(rec, Fetch::Overwrite, |g, _| {
            image.apply(g)?;
            PageRef(g).validate()
        })
    }
}

/// The record owners by code.
pub struct Owners {
    owners: Vec<&'static dyn RecordOwner>,
    /// Code -> (index into `owners`, type).
    by_code: [Option<(usize, RecordType)>; RECORD_CODES],
}

impl Owners {
    /// The registry of `owners`. Two owners claiming one code is a bug, caught by the
    /// first test that opens a database.
    pub fn new(owners: &[&'static dyn RecordOwner]) -> Owners {
        let mut by_code = [None; RECORD_CODES];
        for (i, o) in owners.iter().enumerate() {
            for t in o.types() {
                let slot = &mut by_code[t.code as usize];
                assert!(slot.is_none(), "record code {} claimed twice", t.code);
                *slot = Some((i, *t));
            }
        }
        Owners {
            owners: owners.to_vec(),
            by_code,
        }
    }

    /// The type with this code.
    pub fn record_type(&self, code: u8) -> Option<RecordType> {
        self.entry(code).map(|(_, t)| t)
    }

    /// Every record type, by code.
    pub fn types(&self) -> impl Iterator<Item = RecordType> + '_ {
        self.by_code.iter().flatten().map(|(_, t)| *t)
    }

    /// The owner of a type.
    pub fn owner(&self, code: u8) -> Option<&'static dyn RecordOwner> {
        self.entry(code).map(|(i, _)| self.owners[i])
    }

    fn entry(&self, code: u8) -> Option<(usize, RecordType)> {
        self.by_code.get(code as usize).copied().flatten()
    }

    /// Decodes and checks the record at the start of `bytes` (which sits at `lsn`).
    pub fn decode(&self, bytes: &[u8], lsn: u64) -> std::result::Result<LogRecord, String> {
        let h = decode_header(bytes)?;
        let rtype = self
            .record_type(h.code)
            .ok_or(format!("unknown record kind {}", h.code))?;
        let rec = LogRecord {
            lsn,
            len: h.len,
            rtype,
            xid: h.xid,
            payload: bytes[h.payload_at..h.len as usize].to_vec(),
        };
        self.check(&rec)?;
        Ok(rec)
    }

    /// The record an `UNDO_ONLY` record keeps (same position and transaction).
    pub fn kept(&self, rec: &LogRecord) -> std::result::Result<LogRecord, String> {
        let (code, payload) = split_kept(&rec.payload)?;
        match self.record_type(code) {
            Some(t) if t.keep_with_image() => Ok(LogRecord {
                lsn: rec.lsn,
                len: rec.len,
                rtype: t,
                xid: rec.xid,
                payload: payload.to_vec(),
            }),
            _ => Err(format!("undo_only record wraps kind {code}")),
        }
    }

    /// Checks a record's payload through its owner.
    pub fn check(&self, rec: &LogRecord) -> std::result::Result<(), String> {
        if rec.rtype == UNDO_ONLY {
            let kept = self.kept(rec)?;
            return self.check(&kept);
        }
        self.owner_of(rec)?.check(rec)
    }

    /// What a record changed, in a few words (waldump).
    pub fn describe(&self, rec: &LogRecord) -> std::result::Result<String, String> {
        if rec.rtype == UNDO_ONLY {
            let kept = self.kept(rec)?;
            return Ok(format!("{}: {}", kept.rtype.name, self.describe(&kept)?));
        }
        self.owner_of(rec)?.describe(rec)
    }

    /// Replays a record through its owner (an `UNDO_ONLY` record is never redone: the
    /// page image before it holds its change).
    pub fn redo(&self, rec: &LogRecord, ctx: &mut RedoCtx) -> Result<()> {
        if rec.rtype == UNDO_ONLY {
            return Ok(());
        }
        let owner = self.owner_of(rec).map_err(|r| ctx.corrupt(rec, r))?;
        owner.redo(rec, ctx)
    }

    fn owner_of(&self, rec: &LogRecord) -> std::result::Result<&'static dyn RecordOwner, String> {
        self.owner(rec.rtype.code)
            .ok_or_else(|| format!("unknown record kind {}", rec.rtype.code))
    }
}
