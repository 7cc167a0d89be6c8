//! The one way to read rows: [`Reader::read`] (and [`Transaction::read`], in a command
//! of its own) visits the rows a [`Rows`] names — a table's, or those in a range of an
//! index's keys — and gives each to a callback that says whether to go on. The callback
//! may fail with an error of its caller's own type (a SQL error, a client gone): the
//! read stops there and returns that error as it was, so no caller keeps an error aside
//! while the engine unwinds. Reads that stop and go on later are `TableCursor`'s.

use std::ops::{Bound, ControlFlow};

use super::transaction::{decode_latest_columns, Reader, Transaction};
use crate::error::Error;
use crate::schema::{Row, RowShape, Value};
use crate::RowId;

/// Which rows a read visits.
#[derive(Debug, Clone, Copy)]
pub enum Rows<'a> {
    /// Every row of a table visible to the read, page by page.
    Table(&'a str),
    /// The visible rows whose key in an index lies between `lower` and `upper` (values
    /// for the first columns of the key: a prefix bound covers every key that starts
    /// with it), in key order, or reversed when `backward`. Key order is each column's
    /// declared order (`IndexSpec::order`), and so are the bounds: for a descending
    /// column a larger value is a lower key; NULLs are below every value in a column
    /// that puts them first, above every value in one that puts them last.
    Index {
        index: &'a str,
        lower: Bound<&'a [Value]>,
        upper: Bound<&'a [Value]>,
        backward: bool,
    },
}

impl<'a> Rows<'a> {
    /// The rows of `index` whose keys lie between the bounds, in key order.
    pub fn index(index: &'a str, lower: Bound<&'a [Value]>, upper: Bound<&'a [Value]>) -> Rows<'a> {
        Rows::Index {
            index,
            lower,
            upper,
            backward: false,
        }
    }

    /// The same rows in the other order when `yes` (an index's; a table's have none).
    pub fn backward(self, yes: bool) -> Rows<'a> {
        match self {
            Rows::Index {
                index,
                lower,
                upper,
                backward,
            } => Rows::Index {
                index,
                lower,
                upper,
                backward: backward != yes,
            },
            table => table,
        }
    }

    /// The rows of `index` whose key equals `key` (or starts with it, for fewer values
    /// than the index has columns).
    pub fn index_key(index: &'a str, key: &'a [Value]) -> Rows<'a> {
        Rows::Index {
            index,
            lower: Bound::Included(key),
            upper: Bound::Included(key),
            backward: false,
        }
    }
}

impl Reader<'_> {
    /// Calls `f` with each row `rows` names, decoded as `shape` asks, until `f` breaks
    /// or fails; `f`'s error is returned as it was, and the engine's own errors convert
    /// into the caller's type. A table's rows decode only the columns `shape.needed`
    /// marks (the others NULL, their bytes not read); an index's rows decode whole (each
    /// row's key is checked against the entry that led to it). Either way the vector
    /// has room for `shape.capacity` values.
    pub fn read<E: From<Error>>(
        &self,
        rows: Rows<'_>,
        shape: RowShape,
        f: impl FnMut(RowId, Row) -> Result<ControlFlow<()>, E>,
    ) -> Result<(), E> {
        match rows {
            Rows::Table(table) => self.read_table(table, shape, f),
            Rows::Index {
                index,
                lower,
                upper,
                backward,
            } => self.read_index(index, (lower, upper), backward, shape.capacity, f),
        }
    }

    /// Every visible row of a table, page by page (with the table's schema of now when
    /// a row is newer than the schema read at the start).
    fn read_table<E: From<Error>>(
        &self,
        table: &str,
        shape: RowShape,
        mut f: impl FnMut(RowId, Row) -> Result<ControlFlow<()>, E>,
    ) -> Result<(), E> {
        let txn = self.txn;
        let t = txn.table(table)?;
        let mut rows = crate::access::PageRows::default();
        let mut schema = t.schema();
        let view = self.view();
        for page in t.page_list() {
            rows.clear();
            txn.scan_page_in(&view, &t, page, &mut rows)?;
            txn.db.relieve_space();
            for (id, bytes) in rows.iter() {
                let row = decode_latest_columns(&txn.db, &t, &mut schema, id, bytes, shape)?;
                if f(id, schema.to_visible(row))?.is_break() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

impl Transaction {
    /// As [`Reader::read`], in a read-only command of its own.
    pub fn read<E: From<Error>>(
        &mut self,
        rows: Rows<'_>,
        shape: RowShape,
        f: impl FnMut(RowId, Row) -> Result<ControlFlow<()>, E>,
    ) -> Result<(), E> {
        self.reader()?.read(rows, shape, f)
    }
}
