//! A table read (`TableRead`): its label, a row's shape as read, row ids (`ctid`), the
//! pushed-down top-N's filter (`TopFilter`), and reading its rows (`read_rows`).

use std::ops::ControlFlow;

use sqlparser::ast::{self};
use walden::Value;

use crate::catalog::ident_name;
use crate::error::{code, SqlError, SqlResult};
use crate::expr::EvalCtx;

use super::{TableRead, TopFilter};

/// A WITH query as EXPLAIN names it: `t`, or `t a` when read under an alias.
pub(super) fn label(name: &str, alias: Option<&ast::TableAlias>) -> String {
    match alias.map(|a| ident_name(&a.name)) {
        Some(a) if a != name => format!("{name} {a}"),
        _ => name.to_string(),
    }
}

impl TopFilter {
    /// Whether a row of the table could still enter the top-N: it sorts strictly
    /// before the last row kept (an equal row arrives later and would sort after it).
    pub(super) fn admits(&self, row: &[Value], cx: &EvalCtx) -> bool {
        let Some(run) = cx.run else { return true };
        let bounds = run.top_bounds.borrow();
        let Some((_, bound)) = bounds.iter().find(|(id, _)| *id == self.id) else {
            return true;
        };
        for ((col, desc, nulls_first), b) in self.keys.iter().zip(bound) {
            let Some(v) = row.get(*col) else { return true };
            match crate::sort_key::compare_key(v, b, *desc, *nulls_first) {
                std::cmp::Ordering::Less => return true,
                std::cmp::Ordering::Greater => return false,
                std::cmp::Ordering::Equal => {}
            }
        }
        false
    }
}

/// A row id as a value of the column a `row_id` table read adds.
pub(crate) fn row_id_value(id: walden::RowId) -> Value {
    Value::Int8(((id.page as i64) << 16) | i64::from(id.slot))
}

/// The row id a `row_id_value` holds.
pub(crate) fn row_id_of(v: &Value) -> Option<walden::RowId> {
    match v {
        Value::Int8(x) if *x >= 0 => Some(walden::RowId {
            page: (*x >> 16) as u64,
            slot: (*x & 0xffff) as u16,
        }),
        _ => None,
    }
}

impl TableRead {
    /// A row as the engine read it, as this read gives it: columns nobody reads made
    /// NULL, its row id after it when asked. A row of another width than the table's
    /// columns means ALTER TABLE changed the table since the statement was planned
    /// (readers take no lock), which fails the statement rather than read columns in the
    /// wrong places.
    pub(crate) fn shape(&self, id: walden::RowId, mut row: Vec<Value>) -> SqlResult<Vec<Value>> {
        if row.len() != self.names.len() {
            return Err(SqlError::new(
                code::OBJECT_IN_USE,
                format!(
                    "table \"{}\" was altered while the statement read it",
                    self.name
                ),
            ));
        }
        if let Some(needed) = &self.needed {
            for (v, keep) in row.iter_mut().zip(needed.iter()) {
                if !keep {
                    *v = Value::Null;
                }
            }
        }
        if self.row_id {
            row.push(row_id_value(id));
        }
        Ok(row)
    }

    /// The table as EXPLAIN names it: `t`, or `t a` when read under an alias.
    pub fn label(&self) -> String {
        match &self.alias {
            Some(a) if *a != self.name => format!("{} {a}", self.name),
            _ => self.name.clone(),
        }
    }
}

/// Runs the engine's read with a callback, keeping the first error the callback met.
/// Reads a table's rows into `sink`. `read` is the table's read as planned: a row of
/// another width than its columns means ALTER TABLE changed the table since the
/// statement was planned (readers take no lock), which fails the statement rather than
/// read columns in the wrong places.
pub(crate) fn read_rows(
    cx: &mut EvalCtx,
    read_of: &TableRead,
    read: impl FnOnce(
        &mut dyn FnMut(walden::RowId, walden::Row) -> SqlResult<ControlFlow<()>>,
    ) -> SqlResult<()>,
    sink: &mut dyn FnMut(&mut EvalCtx, Vec<Value>) -> SqlResult<bool>,
) -> SqlResult<bool> {
    let mut stopped = false;
    read(&mut |id, row| {
        let row = read_of.shape(id, row)?;
        if sink(cx, row)? {
            Ok(ControlFlow::Continue(()))
        } else {
            stopped = true;
            Ok(ControlFlow::Break(()))
        }
    })?;
    Ok(!stopped)
}
