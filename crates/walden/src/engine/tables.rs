//! CREATE TABLE and DROP TABLE inside a transaction (docs/recovery.md rule 40): the
//! catalog changes at once, for this transaction and (marked with its xid, which they
//! wait for) for others; a rollback takes it back, a commit frees a dropped table's
//! pages.

use std::collections::HashSet;

use super::{check_name, Transaction, MAX_COLUMNS};
use crate::catalog::{CatalogRecord, Table, TableKind};
use crate::error::{Error, Result};
use crate::privilege::{ObjectAcl, ObjectKind, PrivilegeRecord};
use crate::schema::Schema;
use crate::sequence::{SeqState, Sequence, SequenceDef, SequenceRecord};
use crate::txn::RelLockMode;

impl Transaction {
    /// Creates a table of the given kind with the sequences its columns own (serial and
    /// identity columns: each definition's `owned_by` names the column by position, its
    /// table part ignored). `acl`, when given, is the table's owner and access control
    /// list and its sequences' (`privilege.rs`; none: the bootstrap superuser's).
    pub fn create_table_owning(
        &mut self,
        name: &str,
        schema: Schema,
        kind: TableKind,
        sequences: Vec<SequenceDef>,
        acl: Option<(ObjectAcl, ObjectAcl)>,
    ) -> Result<()> {
        self.check_open()?;
        check_name("table", name)?;
        if schema.columns.is_empty() || schema.columns.len() > MAX_COLUMNS {
            return Err(Error::InvalidOption(format!(
                "a table has 1 to {MAX_COLUMNS} columns"
            )));
        }
        let mut seen = HashSet::new();
        for c in &schema.columns {
            check_name("column", &c.name)?;
            if !seen.insert(c.name.as_str()) {
                return Err(Error::InvalidOption(format!(
                    "column {:?} appears twice",
                    c.name
                )));
            }
        }
        let db = self.db.clone();
        let mut cat = db.catalog.write().unwrap_or_else(|e| e.into_inner());
        if cat.name_taken(name) {
            return Err(Error::TableExists(name.to_string()));
        }
        let id = cat.next_table_id.max(1);
        let mut sequences = sequences;
        let mut names = HashSet::new();
        for (n, def) in sequences.iter_mut().enumerate() {
            def.check().map_err(Error::InvalidOption)?;
            check_name("sequence", &def.name)?;
            let column = def.owned_by.map_or(u16::MAX, |(_, c)| c);
            if schema
                .columns
                .get(column as usize)
                .is_none_or(|c| c.dropped)
            {
                return Err(Error::InvalidOption(format!(
                    "sequence {:?} is owned by no column of {name:?}",
                    def.name
                )));
            }
            if cat.name_taken(&def.name) || def.name == name || !names.insert(def.name.clone()) {
                return Err(Error::TableExists(def.name.clone()));
            }
            def.id = id
                .checked_add(1 + n as u32)
                .ok_or_else(|| Error::InvalidOption("relation ids are exhausted".to_string()))?;
            def.owned_by = Some((id, column));
        }
        // Each record is followed by its change, under the catalog's write lock.
        self.log_ddl(&CatalogRecord::CreateTable {
            table: id,
            name: name.to_string(),
            schema: schema.clone(),
            kind,
        })?;
        cat.insert(Table::new(id, name, schema, kind, Vec::new()));
        // Others wait for the transaction before they use it (none can hold it yet).
        if let Some(t) = cat.by_id.get(&id).cloned() {
            self.lock_table_of(&t, RelLockMode::AccessExclusive, false)?;
        }
        for def in &sequences {
            let state = SeqState::at(def.start);
            self.log_ddl(&SequenceRecord::Create {
                def: def.clone(),
                state,
            })?;
            cat.insert_sequence(Sequence::new(def.clone(), state));
        }
        let mut acls = Vec::new();
        if let Some((table_acl, sequence_acl)) = acl {
            for def in &sequences {
                acls.push((def.name.clone(), sequence_acl.clone()));
            }
            acls.push((name.to_string(), table_acl));
        }
        for (relation, acl) in acls {
            self.log(&PrivilegeRecord::SetAcl {
                kind: ObjectKind::Relation,
                name: relation.clone(),
                acl: Some(acl.clone()),
            })?;
            cat.privileges_mut()
                .set(ObjectKind::Relation, &relation, Some(acl));
        }
        Ok(())
    }

    /// Drops a table, with the sequences its columns own: hidden from now on (its name
    /// free again), gone with its pages freed when the transaction commits. Page
    /// numbers go to new relations once a checkpoint allows (docs/recovery.md rule 26).
    pub fn drop_table(&mut self, name: &str) -> Result<()> {
        self.check_open()?;
        let t = self.table_to_alter(name)?;
        let _ddl = t.ddl.write();
        let db = self.db.clone();
        let mut cat = db.catalog.write().unwrap_or_else(|e| e.into_inner());
        if !cat
            .by_id
            .get(&t.id)
            .is_some_and(|x| std::sync::Arc::ptr_eq(x, &t))
        {
            return Err(Error::NoSuchTable(name.to_string()));
        }
        // The sequences its columns own (serial and identity columns) go with it.
        let owned: Vec<(u32, String)> = cat
            .sequences
            .owned_by(t.id, None)
            .iter()
            .map(|s| (s.id, s.name()))
            .collect();
        for (seq, seq_name) in owned {
            self.log_ddl(&SequenceRecord::Drop {
                id: seq,
                name: seq_name,
            })?;
            cat.hide_sequence(seq);
        }
        self.log_ddl(&CatalogRecord::DropTable {
            table: t.id,
            name: name.to_string(),
        })?;
        cat.hide_table(t.id);
        Ok(())
    }
}
