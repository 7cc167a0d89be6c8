//! Catalog changes inside a transaction (docs/recovery.md rule 40).
//!
//! A transaction's CREATE, ALTER and DROP change the catalog in memory at once, each
//! under the catalog's write lock together with its record (so a checkpoint's copy of
//! the catalog has the record's change exactly when its redo point is past the
//! record), and are taken back if the transaction does not commit:
//! - a creation is taken back by removing what it made (its pages freed);
//! - an alteration by setting the old definition its record carries (format 25);
//! - a drop only hides the relation until the transaction commits: it is renamed to a
//!   hidden name (`hidden_name`: a NUL byte, its id, a NUL byte, its name; no name a
//!   user gives holds a NUL byte), so the name is free for the transaction to use again,
//!   and nothing is freed. The commit removes it and frees its pages
//!   (`finish_drops`); a rollback gives it its name back (`revert`).
//!
//! Both the running transaction and recovery take changes back from the records alone
//! (`DdlChange`), newest first, so redo of an aborted or unfinished transaction ends
//! where the transaction's rollback would have.

use std::sync::Arc;

use super::{lock, Catalog, CatalogRecord, Index, Table};
use crate::sequence::SequenceRecord;
use crate::wal::{LogRecord, RecordType};

/// The name a relation being dropped has until its transaction ends.
pub fn hidden_name(id: u32, name: &str) -> String {
    format!("\0{id}\0{name}")
}

/// Whether a name is one `hidden_name` made.
pub fn is_hidden(name: &str) -> bool {
    name.starts_with('\0')
}

/// The name a hidden name hides.
fn shown_name(name: &str) -> &str {
    name.rsplit('\0').next().unwrap_or(name)
}

/// The name a hidden relation gets back: its record's (`name`), or, from a record of
/// format 24 that has none, the one its hidden name holds.
fn name_back(hidden: &str, name: &str) -> String {
    if name.is_empty() {
        shown_name(hidden).to_string()
    } else {
        name.to_string()
    }
}

/// One catalog change of a transaction, as its record logged it.
#[derive(Debug, Clone)]
pub enum DdlChange {
    Catalog(CatalogRecord),
    Sequence(SequenceRecord),
}

impl DdlChange {
    /// The change a record of type `t` makes, if it makes one a rollback takes back or
    /// a commit finishes (not statistics, toast relations, freed pages, roles or
    /// counters).
    pub fn decode(t: RecordType, payload: &[u8]) -> Result<Option<DdlChange>, String> {
        use super::{
            ALTER_TABLE, CREATE_INDEX, CREATE_TABLE, CREATE_VIEW, DROP_INDEX, DROP_TABLE, DROP_VIEW,
        };
        use crate::sequence::{CREATE_SEQUENCE, DROP_SEQUENCE};
        let catalog = [
            CREATE_TABLE,
            DROP_TABLE,
            CREATE_INDEX,
            DROP_INDEX,
            CREATE_VIEW,
            DROP_VIEW,
            ALTER_TABLE,
        ];
        if catalog.contains(&t) {
            return CatalogRecord::decode(t, payload).map(|c| Some(DdlChange::Catalog(c)));
        }
        if t == CREATE_SEQUENCE || t == DROP_SEQUENCE {
            return SequenceRecord::decode(t, payload).map(|s| Some(DdlChange::Sequence(s)));
        }
        Ok(None)
    }

    /// The change a record makes (as `decode`).
    pub fn of_record(rec: &LogRecord) -> Result<Option<DdlChange>, String> {
        DdlChange::decode(rec.rtype, &rec.payload)
    }
}

impl Catalog {
    /// Hides a table being dropped (and its indexes' names). False when it is not
    /// there or hidden already.
    pub fn hide_table(&mut self, id: u32) -> bool {
        let Some(t) = self.by_id.get(&id).cloned() else {
            return false;
        };
        let name = t.name();
        if is_hidden(&name) || t.toast_of.is_some() {
            return false;
        }
        self.changed();
        let hidden = hidden_name(id, &name);
        self.by_name.remove(&name);
        t.redefine(&hidden, (*t.schema()).clone());
        self.by_name.insert(hidden.clone(), t.clone());
        self.privileges_mut().relation_renamed(&name, &hidden);
        for ix in t.index_list() {
            self.unname_index(&ix);
        }
        true
    }

    /// Hides an index being dropped: out of the namespace and its table's list.
    pub fn hide_index(&mut self, id: u32) -> bool {
        let Some(ix) = self.indexes.get(&id).cloned() else {
            return false;
        };
        if !self.unname_index(&ix) {
            return false;
        }
        self.changed();
        if let Some(t) = self.by_id.get(&ix.table) {
            lock(&t.indexes).retain(|i| i.id != id);
        }
        true
    }

    /// Takes an index's name out of the namespace (if it has it there).
    fn unname_index(&mut self, ix: &Arc<Index>) -> bool {
        let named = self
            .index_names
            .get(&ix.name)
            .is_some_and(|x| Arc::ptr_eq(x, ix));
        if named {
            self.index_names.remove(&ix.name);
        }
        named
    }

    /// Whether an index is hidden (dropped by a transaction still running).
    pub fn index_hidden(&self, ix: &Arc<Index>) -> bool {
        is_hidden(&ix.name)
            || !self
                .index_names
                .get(&ix.name)
                .is_some_and(|x| Arc::ptr_eq(x, ix))
    }

    /// Hides a sequence being dropped.
    pub fn hide_sequence(&mut self, id: u32) -> bool {
        let Some(seq) = self.sequences.by_id(id).cloned() else {
            return false;
        };
        let name = seq.name();
        if is_hidden(&name) {
            return false;
        }
        let hidden = hidden_name(id, &name);
        seq.set_name(hidden.clone());
        self.sequence_renamed(id, &name);
        true
    }

    /// Takes back a transaction's catalog changes (oldest first in `changes`; taken
    /// back newest first). Returns the pages of each relation they made, free now, with
    /// whether something besides the catalog still held it (a statement that read
    /// through it: its pages then stay as they are).
    pub fn revert(&mut self, changes: &[DdlChange]) -> Vec<(Vec<u64>, bool)> {
        let mut freed = Vec::new();
        for change in changes.iter().rev() {
            match change {
                DdlChange::Catalog(rec) => self.revert_one(rec, &mut freed),
                DdlChange::Sequence(SequenceRecord::Create { def, .. }) => {
                    self.remove_sequence(def.id);
                }
                DdlChange::Sequence(SequenceRecord::Drop { id, name }) => {
                    self.show_sequence(*id, name);
                }
                DdlChange::Sequence(_) => {}
            }
        }
        freed
    }

    fn revert_one(&mut self, rec: &CatalogRecord, freed: &mut Vec<(Vec<u64>, bool)>) {
        match rec {
            CatalogRecord::CreateTable { table, .. } => {
                if let Some(t) = self.remove(*table) {
                    let held = Arc::strong_count(&t) > 1
                        || t.index_list().iter().any(|ix| Arc::strong_count(ix) > 2);
                    freed.push((t.pages_with_indexes(), held));
                }
            }
            CatalogRecord::DropTable { table, name } => self.show_table(*table, name),
            CatalogRecord::CreateIndex { def, .. } => {
                if let Some(ix) = self.remove_index(def.id) {
                    freed.push((ix.page_list(), Arc::strong_count(&ix) > 1));
                }
            }
            CatalogRecord::DropIndex { index, .. } => self.show_index(*index),
            CatalogRecord::CreateView { view, old, .. } => {
                match old {
                    Some(old) => {
                        self.changed();
                        self.views.insert(old.name.clone(), old.clone());
                    }
                    None => {
                        self.remove_view(&view.name);
                    }
                };
            }
            CatalogRecord::DropView { old: Some(old), .. } if !self.name_taken(&old.name) => {
                let _ = self.put_view(old.clone());
            }
            CatalogRecord::AlterTable {
                table,
                old: Some((name, schema)),
                ..
            } => self.restore_definition(*table, name, schema.clone()),
            _ => {}
        }
    }

    /// A committed transaction's drops: what it hid goes. Returns each relation's pages,
    /// free now, with whether something besides the catalog still held it (a statement
    /// that began before the drop).
    pub fn finish_drops(&mut self, changes: &[DdlChange]) -> Vec<(Vec<u64>, bool)> {
        let mut freed = Vec::new();
        for change in changes {
            match change {
                DdlChange::Catalog(CatalogRecord::DropTable { table, .. }) => {
                    let hidden = self.by_id.get(table).is_some_and(|t| is_hidden(&t.name()));
                    if hidden {
                        if let Some(t) = self.remove(*table) {
                            let held = Arc::strong_count(&t) > 1
                                || t.index_list().iter().any(|ix| Arc::strong_count(ix) > 2);
                            freed.push((t.pages_with_indexes(), held));
                        }
                    }
                }
                DdlChange::Catalog(CatalogRecord::DropIndex { index, .. }) => {
                    let hidden = self
                        .indexes
                        .get(index)
                        .cloned()
                        .is_some_and(|ix| self.index_hidden(&ix));
                    if hidden {
                        if let Some(ix) = self.indexes.remove(index) {
                            self.changed();
                            self.index_names.retain(|_, x| !Arc::ptr_eq(x, &ix));
                            if let Some(t) = self.by_id.get(&ix.table) {
                                lock(&t.indexes).retain(|i| i.id != *index);
                            }
                            freed.push((ix.page_list(), Arc::strong_count(&ix) > 1));
                        }
                    }
                }
                DdlChange::Sequence(SequenceRecord::Drop { id, .. }) => {
                    let hidden = self
                        .sequences
                        .by_id(*id)
                        .is_some_and(|s| is_hidden(&s.name()));
                    if hidden {
                        self.remove_sequence(*id);
                    }
                }
                _ => {}
            }
        }
        freed
    }

    /// Gives a hidden table its name back (with its indexes').
    fn show_table(&mut self, id: u32, name: &str) {
        let Some(t) = self.by_id.get(&id).cloned() else {
            return;
        };
        let hidden = t.name();
        if !is_hidden(&hidden) {
            return;
        }
        let name = name_back(&hidden, name);
        if self.name_taken(&name) {
            return;
        }
        self.changed();
        self.by_name.remove(&hidden);
        t.redefine(&name, (*t.schema()).clone());
        self.by_name.insert(name.clone(), t.clone());
        self.privileges_mut().relation_renamed(&hidden, &name);
        for ix in t.index_list() {
            self.name_index(&t, ix);
        }
    }

    /// Puts an index of `t` back in the namespace, under the name it had before it was
    /// hidden (an index read back from a checkpoint with a hidden name is made anew).
    fn name_index(&mut self, t: &Arc<Table>, ix: Arc<Index>) {
        let ix = if is_hidden(&ix.name) {
            let mut def = ix.def();
            def.name = shown_name(&ix.name).to_string();
            let fresh = Arc::new(Index::new(def, ix.page_list()));
            self.indexes.insert(fresh.id, fresh.clone());
            for slot in lock(&t.indexes).iter_mut() {
                if slot.id == fresh.id {
                    *slot = fresh.clone();
                }
            }
            fresh
        } else {
            ix
        };
        if !self.name_taken(&ix.name) {
            self.index_names.insert(ix.name.clone(), ix);
        }
    }

    /// Gives a hidden index its name and its place on its table back (the name its
    /// hidden name holds, when it was read back from a checkpoint so).
    fn show_index(&mut self, id: u32) {
        let Some(ix) = self.indexes.get(&id).cloned() else {
            return;
        };
        if !self.index_hidden(&ix) {
            return;
        }
        let Some(t) = self.by_id.get(&ix.table).cloned() else {
            return;
        };
        self.changed();
        if !lock(&t.indexes).iter().any(|i| i.id == id) {
            lock(&t.indexes).push(ix.clone());
        }
        self.name_index(&t, ix);
    }

    fn show_sequence(&mut self, id: u32, name: &str) {
        let Some(seq) = self.sequences.by_id(id).cloned() else {
            return;
        };
        let hidden = seq.name();
        if !is_hidden(&hidden) {
            return;
        }
        let name = name_back(&hidden, name);
        if self.name_taken(&name) {
            return;
        }
        seq.set_name(name);
        self.sequence_renamed(id, &hidden);
    }

    /// Sets a table's definition back (a rollback of ALTER TABLE): unlike `redefine`,
    /// the old schema may have fewer columns than the current one.
    fn restore_definition(&mut self, id: u32, name: &str, schema: crate::schema::Schema) {
        let Some(t) = self.by_id.get(&id).cloned() else {
            return;
        };
        let current = t.name();
        if name != current && self.name_taken(name) {
            return;
        }
        self.changed();
        self.by_name.remove(&current);
        t.redefine(name, schema);
        self.by_name.insert(name.to_string(), t);
        if name != current {
            self.privileges_mut().relation_renamed(&current, name);
        }
    }

    /// After a checkpoint's catalog is read: indexes hidden when it was written are
    /// taken out of the namespace again (and, when dropped on their own, out of their
    /// table's list).
    pub(super) fn rehide_indexes(&mut self) {
        let hidden: Vec<Arc<Index>> = self
            .indexes
            .values()
            .filter(|ix| is_hidden(&ix.name))
            .cloned()
            .collect();
        for ix in hidden {
            self.index_names.remove(&ix.name);
            let table_hidden = self
                .by_id
                .get(&ix.table)
                .is_some_and(|t| is_hidden(&t.name()));
            if !table_hidden {
                if let Some(t) = self.by_id.get(&ix.table) {
                    lock(&t.indexes).retain(|i| i.id != ix.id);
                }
            }
        }
    }
}
