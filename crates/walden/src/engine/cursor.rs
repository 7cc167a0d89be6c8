//! Reads that stop and go on later in the same transaction (a SQL cursor, a suspended
//! portal): a snapshot and command held past their statement, and a table read page by
//! page from where it stopped.
//!
//! A held snapshot keeps what it sees readable: under READ COMMITTED each statement
//! takes a new snapshot and moves the transaction's xmin up (so vacuum and the undo
//! log's discard go on), but never past a held snapshot's xmin. Pages a table's cursor
//! has still to read cannot go to another relation meanwhile: freed pages are reused
//! only once every transaction running when they were freed has ended (docs/recovery.md
//! rule 26), and a dropped table's cursor holds the table.

use std::sync::Arc;

use super::transaction::{decode_latest_columns, Reader, Transaction};
use crate::access::{self, PageRows};
use crate::catalog::Table;
use crate::error::{Error, Result};
use crate::schema::{Row, RowShape, Schema};
use crate::txn::Snapshot;
use crate::RowId;

/// A command's view kept past its statement: reads through it (`held_reader`) see the
/// database as the command did when it started, whatever the transaction did since.
/// Give it back with `release_snapshot`; one not given back holds the transaction's
/// horizon until it ends.
#[derive(Debug)]
pub struct HeldSnapshot {
    snapshot: Snapshot,
    cid: u32,
}

impl HeldSnapshot {
    /// The transaction it was taken in.
    pub fn xid(&self) -> u64 {
        self.snapshot.xid
    }
}

impl Transaction {
    /// Starts a read-only command and keeps its view for reads later in the
    /// transaction (a cursor's).
    pub fn hold_snapshot(&mut self) -> Result<HeldSnapshot> {
        let cid = self.next_command()?;
        let snapshot = self.snapshot.clone();
        self.held_xmins.push(snapshot.xmin);
        Ok(HeldSnapshot { snapshot, cid })
    }

    /// Gives back a held snapshot: the transaction's next statement snapshot may move
    /// its horizon past it.
    pub fn release_snapshot(&mut self, held: HeldSnapshot) {
        if let Some(i) = self
            .held_xmins
            .iter()
            .position(|&x| x == held.snapshot.xmin)
        {
            self.held_xmins.swap_remove(i);
        }
    }

    /// A reader that sees what the held snapshot's command saw. Starts no command.
    pub fn held_reader<'t>(&'t self, held: &'t HeldSnapshot) -> Result<Reader<'t>> {
        self.check_open()?;
        if held.snapshot.xid != self.snapshot.xid {
            return Err(Error::InvalidOption(
                "a snapshot held by another transaction was given to read with".into(),
            ));
        }
        Ok(Reader {
            txn: self,
            snapshot: &held.snapshot,
            cid: held.cid,
        })
    }
}

/// A read of every visible row of a table that stops and goes on: each call to
/// `next` gives the next row, reading a page when the one read before is used up.
/// It holds no latch or pin between calls; each call takes the reader of the moment,
/// which must see what the first one saw (the same command's, or a held snapshot's).
pub struct TableCursor {
    table: Arc<Table>,
    schema: Arc<Schema>,
    pages: Vec<u64>,
    next_page: usize,
    rows: PageRows,
    next_row: usize,
    needed: Option<Vec<bool>>,
    capacity: usize,
}

impl std::fmt::Debug for TableCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableCursor")
            .field("table", &self.table.name())
            .field("next_page", &self.next_page)
            .field("pages", &self.pages.len())
            .finish()
    }
}

impl Reader<'_> {
    /// A cursor over the table's visible rows, each decoded as `needed` asks (the
    /// columns it marks; None: all) in a vector with room for `capacity` values, as
    /// `Reader::read` does for a table. Nothing is read until the first `next`.
    pub fn table_cursor(
        &self,
        table: &str,
        needed: Option<Vec<bool>>,
        capacity: usize,
    ) -> Result<TableCursor> {
        let t = self.txn.table(table)?;
        Ok(TableCursor {
            schema: t.schema(),
            pages: t.page_list(),
            table: t,
            next_page: 0,
            rows: PageRows::default(),
            next_row: 0,
            needed,
            capacity,
        })
    }
}

impl TableCursor {
    /// The next visible row, or None at the end.
    pub fn next(&mut self, reader: &Reader<'_>) -> Result<Option<(RowId, Row)>> {
        let txn = reader.txn;
        loop {
            if let Some((id, bytes)) = self.rows.get(self.next_row) {
                self.next_row += 1;
                let shape = RowShape {
                    needed: self.needed.as_deref(),
                    capacity: self.capacity,
                };
                let row = decode_latest_columns(
                    &txn.db,
                    &self.table,
                    &mut self.schema,
                    id,
                    bytes,
                    shape,
                )?;
                return Ok(Some((id, self.schema.to_visible(row))));
            }
            let Some(&page) = self.pages.get(self.next_page) else {
                return Ok(None);
            };
            self.next_page += 1;
            self.rows.clear();
            self.next_row = 0;
            access::of(self.table.kind).scan_page(
                &txn.db.access_ctx(),
                page,
                &reader.view(),
                &mut self.rows,
            )?;
            txn.db.relieve_space();
        }
    }
}
