//! Views and ALTER TABLE: catalog changes committed at once, each logged as one catalog
//! record (with the drop_index records of indexes a dropped column takes along) before
//! the catalog in memory changes, under the catalog's write lock.

use std::sync::Arc;

use super::{check_name, Database, Transaction, MAX_COLUMNS};
use crate::catalog::{CatalogRecord, Table, TableStats, ViewDef};
use crate::error::{Error, Result};
use crate::schema::{Column, Constraint, Schema};

/// One change ALTER TABLE makes to a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlterOp {
    /// Adds a column at the end. Rows stored before read its `missing` value (None:
    /// NULL): the table is not rewritten.
    AddColumn(Column),
    /// Drops a column (and every index on it): it stays in the stored schema, hidden.
    DropColumn(String),
    RenameColumn {
        from: String,
        to: String,
    },
    /// Renames the table.
    Rename(String),
    /// Sets or removes a column's default (SQL text, for the layer above).
    SetDefault {
        column: String,
        default: Option<String>,
    },
    /// Makes a column NULL-able or NOT NULL. Whether stored rows hold a NULL is the
    /// caller's to check first.
    SetNullable {
        column: String,
        nullable: bool,
    },
    /// Adds a constraint for the layer above (whether the rows meet it is the caller's
    /// to check first).
    AddConstraint(Constraint),
    DropConstraint(String),
}

/// The position of a visible column of that name.
fn position(schema: &Schema, table: &str, name: &str) -> Result<usize> {
    schema
        .columns
        .iter()
        .position(|c| !c.dropped && c.name == name)
        .ok_or_else(|| {
            Error::InvalidOption(format!("column {name:?} of table {table:?} does not exist"))
        })
}

/// Whether a visible column has that name.
fn taken(schema: &Schema, name: &str) -> bool {
    schema.columns.iter().any(|c| !c.dropped && c.name == name)
}

impl Database {
    /// Creates a view, or replaces the one of that name if `replace`, committed at once
    /// (`Transaction::create_view`).
    pub fn create_view(
        &self,
        view: ViewDef,
        replace: bool,
        acl: Option<crate::privilege::ObjectAcl>,
    ) -> Result<()> {
        let mut tx = self.begin();
        tx.create_view(view, replace, acl)?;
        tx.commit()
    }

    /// Drops a view, committed at once.
    pub fn drop_view(&self, name: &str) -> Result<()> {
        let mut tx = self.begin();
        tx.drop_view(name)?;
        tx.commit()
    }

    /// Changes a table, committed at once (`Transaction::alter_table`).
    pub fn alter_table(&self, name: &str, op: &AlterOp) -> Result<()> {
        let mut tx = self.begin();
        tx.alter_table(name, op)?;
        tx.commit()
    }

    /// Keeps what ANALYZE found in a table (committed at once, logged so that it
    /// survives a restart): its live rows, and each visible column's distinct values
    /// (`TableStats::distinct`'s convention). The table's page count is taken now.
    pub fn set_table_stats(&self, table: &str, rows: f64, distinct: &[f64]) -> Result<()> {
        let inner = &self.handle.inner;
        // The catalog's write lock orders the record against a checkpoint's copy of the
        // catalog, as for views.
        let cat = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
        let t = cat
            .by_name
            .get(table)
            .cloned()
            .ok_or_else(|| Error::NoSuchTable(table.to_string()))?;
        let schema = t.schema();
        let visible = schema.columns.iter().filter(|c| !c.dropped).count();
        if distinct.len() != visible || !rows.is_finite() || rows < 0.0 {
            return Err(Error::InvalidOption(format!(
                "statistics of {} columns and {rows} rows for table {table:?} of {visible} columns",
                distinct.len()
            )));
        }
        let mut given = distinct.iter();
        let stats = TableStats {
            rows,
            pages: t.page_count() as u64,
            distinct: schema
                .columns
                .iter()
                .map(|c| {
                    if c.dropped {
                        0.0
                    } else {
                        given.next().copied().unwrap_or(0.0).clamp(-1.0, f64::MAX)
                    }
                })
                .collect(),
        };
        let mut tx = self.begin();
        tx.log(&CatalogRecord::TableStats {
            table: t.id,
            stats: stats.clone(),
        })?;
        tx.commit_inner()?;
        t.set_stats(stats);
        Ok(())
    }

    /// The planner's estimates for a table from what ANALYZE last found (None: never
    /// analyzed, or no such table): its rows now (the rows counted, scaled by how its
    /// pages have grown or shrunk since, as PostgreSQL scales `reltuples`), and each
    /// visible column's distinct values as a count (0: unknown).
    pub fn table_estimate(&self, table: &str) -> Option<(f64, Vec<f64>)> {
        let t = self.catalog_read().by_name.get(table)?.clone();
        let stats = t.stats()?;
        let pages = t.page_count() as f64;
        let rows = if stats.pages == 0 {
            // Empty when analyzed: the density of its rows is unknown.
            if pages > 0.0 {
                return None;
            }
            0.0
        } else {
            stats.rows * pages / stats.pages as f64
        };
        let schema = t.schema();
        let distinct = schema
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.dropped)
            .map(
                |(i, _)| match stats.distinct.get(i).copied().unwrap_or(0.0) {
                    d if d < 0.0 => (-d * rows).max(1.0),
                    d => d,
                },
            )
            .collect();
        Some((rows, distinct))
    }

    /// The view of that name, if there is one.
    pub fn view(&self, name: &str) -> Option<ViewDef> {
        self.catalog_read().views.get(name).cloned()
    }

    /// Every view, by name.
    pub fn views(&self) -> Vec<ViewDef> {
        self.catalog_read().views.values().cloned().collect()
    }
}

impl Transaction {
    /// Creates a view, or replaces the one of that name if `replace`. The name must be
    /// no table's or index's. `acl`, when given, is a new view's owner and access
    /// control list (a replaced view keeps its own).
    pub fn create_view(
        &mut self,
        view: ViewDef,
        replace: bool,
        acl: Option<crate::privilege::ObjectAcl>,
    ) -> Result<()> {
        self.check_open()?;
        check_name("view", &view.name)?;
        let db = self.db.clone();
        let mut cat = db.catalog.write().unwrap_or_else(|e| e.into_inner());
        if cat.by_name.contains_key(&view.name) || cat.index_names.contains_key(&view.name) {
            return Err(Error::TableExists(view.name));
        }
        if cat.sequences.contains_name(&view.name) {
            return Err(Error::TableExists(view.name));
        }
        let old = cat.views.get(&view.name).cloned();
        if !replace && old.is_some() {
            return Err(Error::TableExists(view.name));
        }
        let acl = acl.filter(|_| old.is_none());
        self.log_ddl(&CatalogRecord::CreateView {
            replace,
            view: view.clone(),
            old,
        })?;
        let name = view.name.clone();
        cat.views.remove(&name);
        cat.put_view(view).map_err(Error::InvalidOption)?;
        if let Some(acl) = acl {
            self.log(&crate::privilege::PrivilegeRecord::SetAcl {
                kind: crate::privilege::ObjectKind::Relation,
                name: name.clone(),
                acl: Some(acl.clone()),
            })?;
            cat.privileges_mut()
                .set(crate::privilege::ObjectKind::Relation, &name, Some(acl));
        }
        Ok(())
    }

    /// Drops a view.
    pub fn drop_view(&mut self, name: &str) -> Result<()> {
        self.check_open()?;
        let db = self.db.clone();
        let mut cat = db.catalog.write().unwrap_or_else(|e| e.into_inner());
        let Some(old) = cat.views.get(name).cloned() else {
            return Err(Error::NoSuchTable(name.to_string()));
        };
        self.log_ddl(&CatalogRecord::DropView {
            name: name.to_string(),
            old: Some(old),
        })?;
        cat.remove_view(name);
        Ok(())
    }

    /// Changes a table: statements changing the table wait while it is altered (the
    /// table's DDL lock), other transactions until this one ends; the new definition
    /// is logged whole, with the old one (what a rollback puts back).
    pub fn alter_table(&mut self, name: &str, op: &AlterOp) -> Result<()> {
        self.check_open()?;
        let t = self.table_to_alter(name)?;
        let _ddl = t.ddl.write();
        let db = self.db.clone();
        let mut cat = db.catalog.write().unwrap_or_else(|e| e.into_inner());
        if !cat.by_id.get(&t.id).is_some_and(|x| Arc::ptr_eq(x, &t)) {
            return Err(Error::NoSuchTable(name.to_string()));
        }
        let (new_name, schema) = altered(&t, op)?;
        if new_name != name && cat.name_taken(&new_name) {
            return Err(Error::TableExists(new_name));
        }
        // Indexes on a dropped column go with it, as in PostgreSQL.
        let doomed: Vec<(u32, String)> = match op {
            AlterOp::DropColumn(c) => {
                let at = position(&t.schema(), name, c)? as u16;
                t.index_list()
                    .iter()
                    .filter(|ix| ix.columns.contains(&at))
                    .map(|ix| (ix.id, ix.name.clone()))
                    .collect()
            }
            _ => Vec::new(),
        };
        // So do the sequences it owns (a serial or identity column's).
        let owned: Vec<(u32, String)> = match op {
            AlterOp::DropColumn(c) => {
                let at = position(&t.schema(), name, c)? as u16;
                cat.sequences
                    .owned_by(t.id, Some(at))
                    .iter()
                    .map(|s| (s.id, s.name()))
                    .collect()
            }
            _ => Vec::new(),
        };
        for (index, index_name) in doomed {
            self.log_ddl(&CatalogRecord::DropIndex {
                index,
                name: index_name,
            })?;
            cat.hide_index(index);
        }
        for (seq, seq_name) in owned {
            self.log_ddl(&crate::sequence::SequenceRecord::Drop {
                id: seq,
                name: seq_name,
            })?;
            cat.hide_sequence(seq);
        }
        self.log_ddl(&CatalogRecord::AlterTable {
            table: t.id,
            name: new_name.clone(),
            schema: schema.clone(),
            old: Some((t.name(), (*t.schema()).clone())),
        })?;
        cat.redefine(t.id, &new_name, schema)
            .map_err(Error::InvalidOption)
    }
}
/// The table's name and schema after `op`.
fn altered(t: &Table, op: &AlterOp) -> Result<(String, Schema)> {
    let name = t.name();
    let mut schema = (*t.schema()).clone();
    match op {
        AlterOp::AddColumn(c) => add_column(&mut schema, &name, c)?,
        AlterOp::DropColumn(c) => {
            let at = position(&schema, &name, c)?;
            if schema.columns.iter().filter(|c| !c.dropped).count() == 1 {
                return Err(Error::InvalidOption(format!(
                    "column {c:?} is the last column of table {name:?}"
                )));
            }
            let col = &mut schema.columns[at];
            col.dropped = true;
            col.nullable = true;
            col.primary_key = false;
            col.default = None;
            col.missing = None;
        }
        AlterOp::RenameColumn { from, to } => {
            check_name("column", to)?;
            let at = position(&schema, &name, from)?;
            if taken(&schema, to) {
                return Err(Error::InvalidOption(format!(
                    "column {to:?} of table {name:?} already exists"
                )));
            }
            schema.columns[at].name = to.clone();
        }
        AlterOp::Rename(to) => {
            check_name("table", to)?;
            return Ok((to.clone(), schema));
        }
        AlterOp::SetDefault { column, default } => {
            let at = position(&schema, &name, column)?;
            schema.columns[at].default = default.clone();
        }
        AlterOp::SetNullable { column, nullable } => {
            let at = position(&schema, &name, column)?;
            schema.columns[at].nullable = *nullable;
        }
        AlterOp::AddConstraint(c) => {
            check_name("constraint", &c.name)?;
            if schema.constraints.iter().any(|x| x.name == c.name) {
                return Err(Error::InvalidOption(format!(
                    "constraint {:?} of table {name:?} already exists",
                    c.name
                )));
            }
            schema.constraints.push(c.clone());
        }
        AlterOp::DropConstraint(c) => {
            let before = schema.constraints.len();
            schema.constraints.retain(|x| x.name != *c);
            if schema.constraints.len() == before {
                return Err(Error::InvalidOption(format!(
                    "constraint {c:?} of table {name:?} does not exist"
                )));
            }
        }
    }
    Ok((name, schema))
}

/// ADD COLUMN: the column at the end (a table of an older format cannot: its rows do not
/// say how many columns they have).
fn add_column(schema: &mut Schema, name: &str, c: &Column) -> Result<()> {
    check_name("column", &c.name)?;
    if !schema.counted {
        return Err(Error::InvalidOption(format!(
            "table {name:?} was created before format 10: its rows do not say how many columns they have, so it cannot add columns"
        )));
    }
    if taken(schema, &c.name) {
        return Err(Error::InvalidOption(format!(
            "column {:?} of table {name:?} already exists",
            c.name
        )));
    }
    if schema.columns.len() >= MAX_COLUMNS {
        return Err(Error::InvalidOption(format!(
            "a table has 1 to {MAX_COLUMNS} columns (dropped ones count)"
        )));
    }
    schema.columns.push(Column {
        dropped: false,
        ..c.clone()
    });
    Ok(())
}
