//! Sequences: created, altered and dropped at once (one record each, committed under the
//! catalog's write lock, as roles and views are), and their values handed out outside
//! transactions: `nextval` and `setval` log `sequence_values` records of no transaction,
//! and the caller's transaction waits for them to be durable before it ends
//! (`Transaction::needs_durable`; docs/recovery.md rule 38).

use std::sync::Arc;

use super::{check_name, Database, Inner, Transaction};
use crate::error::{Error, Result};
use crate::sequence::{Exhausted, SeqState, Sequence, SequenceDef, SequenceInfo, SequenceRecord};
use crate::wal::payload::Payload;

/// What one `nextval` took: `count` values from `first` on by the sequence's increment
/// (`SequenceDef::after` gives each next one), and the LSN the log must be durable to
/// before a transaction that uses any of them ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeqValues {
    pub first: i64,
    pub last: i64,
    pub count: i64,
    pub durable_lsn: u64,
}

fn checked(def: &SequenceDef) -> Result<()> {
    check_name("sequence", &def.name)?;
    def.check().map_err(Error::InvalidOption)
}

impl Inner {
    /// Appends a record of no transaction (a sequence's counter) and returns its end.
    fn log_sequence(&self, rec: &SequenceRecord) -> Result<u64> {
        let mut payload = Vec::new();
        rec.encode_payload(&mut payload);
        let a = self.wal.append(rec.record_type(), 0, &payload, None)?;
        Ok(a.end_lsn)
    }

    fn sequence_handle(&self, id: u32) -> Result<Arc<Sequence>> {
        self.catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .sequences
            .by_id(id)
            .cloned()
            .ok_or_else(|| Error::NoSuchSequence(format!("with id {id}")))
    }

    fn nextval(&self, id: u32) -> Result<SeqValues> {
        let seq = self.sequence_handle(id)?;
        match seq.next(|rec| self.log_sequence(rec))? {
            Ok((f, durable_lsn)) => Ok(SeqValues {
                first: f.first,
                last: f.last,
                count: f.count,
                durable_lsn,
            }),
            Err(Exhausted { maximum, limit }) => Err(Error::SequenceExhausted {
                name: seq.name(),
                maximum,
                limit,
            }),
        }
    }
}

impl Database {
    /// Creates a sequence whose counter stands at `def.start`, not yet called (committed
    /// at once). Returns its id (in the id space of tables and indexes).
    pub fn create_sequence(&self, def: SequenceDef) -> Result<u32> {
        self.create_sequence_by(def, None)
    }

    /// As `create_sequence`, owned by `acl`'s owner with its access control list when
    /// given (`privilege.rs`), in the same transaction.
    pub fn create_sequence_by(
        &self,
        mut def: SequenceDef,
        acl: Option<crate::privilege::ObjectAcl>,
    ) -> Result<u32> {
        checked(&def)?;
        let inner = &self.handle.inner;
        let mut cat = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
        if cat.name_taken(&def.name) {
            return Err(Error::TableExists(def.name));
        }
        if let Some((table, column)) = def.owned_by {
            let owner = cat.by_id.get(&table).ok_or_else(|| {
                Error::InvalidOption(format!(
                    "sequence owned by table {table}, which is not there"
                ))
            })?;
            if owner
                .schema()
                .columns
                .get(column as usize)
                .is_none_or(|c| c.dropped)
            {
                return Err(Error::InvalidOption(format!(
                    "sequence owned by column {column} of {:?}, which it does not have",
                    owner.name()
                )));
            }
        }
        def.id = cat.next_table_id.max(1);
        let state = SeqState::at(def.start);
        let mut tx = self.begin();
        tx.log(&SequenceRecord::Create {
            def: def.clone(),
            state,
        })?;
        if let Some(acl) = &acl {
            tx.log(&crate::privilege::PrivilegeRecord::SetAcl {
                kind: crate::privilege::ObjectKind::Relation,
                name: def.name.clone(),
                acl: Some(acl.clone()),
            })?;
        }
        tx.commit_inner()?;
        let id = def.id;
        let name = def.name.clone();
        cat.insert_sequence(Sequence::new(def, state));
        if let Some(acl) = acl {
            cat.privileges_mut()
                .set(crate::privilege::ObjectKind::Relation, &name, Some(acl));
        }
        Ok(id)
    }

    /// Changes the sequence `name` in one step under its lock (committed at once):
    /// `change` gets its definition and counter and returns the new definition (its
    /// `name` renames it) and, for RESTART, the counter to set. `change` must be quick.
    pub fn alter_sequence<E: From<Error>>(
        &self,
        name: &str,
        change: impl FnOnce(
            &SequenceDef,
            SeqState,
        ) -> std::result::Result<(SequenceDef, Option<SeqState>), E>,
    ) -> std::result::Result<SequenceDef, E> {
        let inner = &self.handle.inner;
        let mut cat = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
        let seq = cat
            .sequences
            .get(name)
            .cloned()
            .ok_or_else(|| Error::NoSuchSequence(name.to_string()))?;
        let taken = |n: &str| n != name && cat.name_taken(n);
        let def = seq.alter(
            |def, state| -> std::result::Result<(SequenceDef, Option<SeqState>), E> {
                let (new, restart) = change(def, state)?;
                if taken(&new.name) {
                    return Err(Error::TableExists(new.name).into());
                }
                checked(&new).map_err(E::from)?;
                Ok((new, restart))
            },
            |rec| {
                // Committed at once, as every DDL: the record is in a transaction of
                // its own so that the change is durable when this returns.
                let mut tx = self.begin();
                tx.log(rec)?;
                tx.commit_inner()?;
                Ok(inner.wal.insert_lsn())
            },
        )?;
        cat.sequence_renamed(seq.id, name);
        Ok(def)
    }

    /// Drops a sequence (committed at once).
    pub fn drop_sequence(&self, name: &str) -> Result<()> {
        let inner = &self.handle.inner;
        let mut cat = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
        let id = cat
            .sequences
            .get(name)
            .map(|s| s.id)
            .ok_or_else(|| Error::NoSuchSequence(name.to_string()))?;
        let mut tx = self.begin();
        tx.log(&SequenceRecord::Drop {
            id,
            name: name.to_string(),
        })?;
        tx.commit_inner()?;
        cat.remove_sequence(id);
        Ok(())
    }

    /// The sequence of that name, as it is now.
    pub fn sequence(&self, name: &str) -> Option<SequenceInfo> {
        let s = self.catalog_read().sequences.get(name).cloned();
        s.map(|s| s.info())
    }

    /// The sequence of that id, as it is now.
    pub fn sequence_by_id(&self, id: u32) -> Option<SequenceInfo> {
        let s = self.catalog_read().sequences.by_id(id).cloned();
        s.map(|s| s.info())
    }

    /// Every sequence, by id.
    pub fn sequences(&self) -> Vec<SequenceInfo> {
        let all: Vec<Arc<Sequence>> = self.catalog_read().sequences.iter().cloned().collect();
        all.iter()
            .map(|s| s.info())
            .filter(|s| !crate::catalog::is_hidden(&s.def.name))
            .collect()
    }

    /// Takes the sequence's next values: one, or its CACHE's worth for the caller to
    /// hand out itself. Not part of any transaction: a value taken is never given
    /// again, whatever becomes of the caller's transaction; the caller passes
    /// `durable_lsn` to `Transaction::needs_durable` of the transaction that uses them.
    pub fn nextval(&self, id: u32) -> Result<SeqValues> {
        self.handle.inner.nextval(id)
    }

    /// Sets the sequence's counter (`setval`): `value` is handed out next unless
    /// `is_called`. Returns the LSN to pass to `Transaction::needs_durable`.
    pub fn setval(&self, id: u32, value: i64, is_called: bool) -> Result<u64> {
        let inner = &self.handle.inner;
        let seq = inner.sequence_handle(id)?;
        let state = SeqState {
            last_value: value,
            is_called,
        };
        match seq.set(state, |rec| inner.log_sequence(rec))? {
            Ok(lsn) => Ok(lsn),
            Err(def) => Err(Error::SequenceOutOfBounds {
                name: def.name,
                value,
                min: def.min_value,
                max: def.max_value,
            }),
        }
    }
}

impl Transaction {
    /// The next value of the sequence `name`, taken for this transaction (a sequence
    /// with a CACHE above 1 gives the first of the values it took; the rest are not
    /// handed out). The transaction's end waits for the log to cover it.
    pub fn nextval(&mut self, name: &str) -> Result<i64> {
        self.check_open()?;
        let id = self
            .db
            .catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .sequences
            .get(name)
            .map(|s| s.id)
            .ok_or_else(|| Error::NoSuchSequence(name.to_string()))?;
        let v = self.db.nextval(id)?;
        self.needs_durable(v.durable_lsn);
        Ok(v.first)
    }
}
