//! The sequences columns own: a `serial` column's (its default calls `nextval` of it)
//! and an identity column's (`GENERATED … AS IDENTITY`: the insert path calls it), named
//! as PostgreSQL names them and made with their table in one step.

use std::collections::HashMap;

use walden::{Database, Identity, Schema, SeqType, SequenceDef};

use super::options::SeqOptions;
use crate::error::{code, SqlError, SqlResult};
use crate::pg_catalog::quote_ident;
use crate::types::SqlType;

/// PostgreSQL's NAMEDATALEN - 1: the longest name.
const MAX_NAME_BYTES: usize = 63;

/// A sequence a column of a table being made owns.
#[derive(Debug, Clone)]
pub(crate) struct ColumnSequence {
    pub identity: Identity,
    pub ty: SeqType,
    pub options: SeqOptions,
}

impl ColumnSequence {
    /// A `serial`, `bigserial` or `smallserial` column's.
    pub fn serial(ty: SqlType) -> ColumnSequence {
        ColumnSequence {
            identity: Identity::None,
            ty: seq_type_of(ty).unwrap_or(SeqType::Int4),
            options: SeqOptions::default(),
        }
    }

    /// An identity column's: its type must be an integer one.
    pub fn identity(
        identity: Identity,
        ty: SqlType,
        options: SeqOptions,
    ) -> SqlResult<ColumnSequence> {
        let Some(ty) = seq_type_of(ty) else {
            return Err(SqlError::new(
                code::INVALID_PARAMETER,
                "identity column type must be smallint, integer, or bigint",
            ));
        };
        if options.as_type.is_some() || options.owned_by.is_some() {
            return Err(SqlError::syntax(
                "an identity column's sequence takes neither AS nor OWNED BY",
            ));
        }
        Ok(ColumnSequence {
            identity,
            ty,
            options,
        })
    }

    /// The definition, named `name`, owned by column `column` of the table.
    pub fn definition(&self, name: &str, column: u16) -> SqlResult<SequenceDef> {
        let base = SequenceDef::new(name, self.ty);
        let (mut def, _) = self.options.apply(&base, true, None)?;
        def.identity = self.identity;
        def.owned_by = Some((0, column));
        Ok(def)
    }
}

fn seq_type_of(ty: SqlType) -> Option<SeqType> {
    match ty {
        SqlType::Int2 => Some(SeqType::Int2),
        SqlType::Int4 => Some(SeqType::Int4),
        SqlType::Int8 => Some(SeqType::Int8),
        _ => None,
    }
}

/// Cuts `s` to at most `bytes` bytes at a character boundary.
fn clip(s: &str, bytes: usize) -> &str {
    let mut end = bytes.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// PostgreSQL's `makeObjectName(table, column, label)`: `table_column_label`, the
/// longer of the two names cut first until the whole fits in 63 bytes.
fn object_name(table: &str, column: &str, label: &str) -> String {
    let overhead = label.len() + 2;
    let avail = MAX_NAME_BYTES.saturating_sub(overhead);
    let (mut t, mut c) = (table.len(), column.len());
    while t + c > avail {
        if t > c {
            t -= 1;
        } else {
            c -= 1;
        }
    }
    format!("{}_{}_{label}", clip(table, t), clip(column, c))
}

/// PostgreSQL's `ChooseRelationName(table, column, "seq")`: the name, or with `seq1`,
/// `seq2`, … in place of `seq` while a relation (or a name chosen already) has it.
pub(crate) fn choose_name(db: &Database, table: &str, column: &str, chosen: &[String]) -> String {
    let mut label = "seq".to_string();
    let mut pass = 0;
    loop {
        let name = object_name(table, column, &label);
        if name != table && !db.relation_exists(&name) && !chosen.contains(&name) {
            return name;
        }
        pass += 1;
        label = format!("seq{pass}");
    }
}

/// A serial column's default: `nextval('name'::regclass)`, as PostgreSQL writes it.
pub(crate) fn nextval_default(sequence: &str) -> String {
    format!(
        "nextval('{}'::regclass)",
        quote_ident(sequence).replace('\'', "''")
    )
}

/// Names the sequences of a table's columns (`(column position, what it needs)`),
/// sets each serial column's default, and returns the definitions to make with the
/// table (`Database::create_table_owning`).
pub(crate) fn prepare(
    db: &Database,
    table: &str,
    schema: &mut Schema,
    wanted: Vec<(usize, ColumnSequence)>,
) -> SqlResult<Vec<SequenceDef>> {
    let mut chosen = Vec::new();
    let mut defs = Vec::new();
    for (at, seq) in wanted {
        let column = &mut schema.columns[at];
        let name = choose_name(db, table, &column.name, &chosen);
        // An identity column's values come from its sequence through the same
        // default (the catalog shows it as an identity, not a default).
        column.default = Some(nextval_default(&name));
        defs.push(seq.definition(&name, at as u16)?);
        chosen.push(name);
    }
    Ok(defs)
}

/// The columns of `table` that are GENERATED ALWAYS AS IDENTITY, by position.
pub(crate) fn always_columns(db: &Database, table: &str) -> Vec<usize> {
    identities(db, table)
        .into_iter()
        .filter(|(_, (_, kind))| *kind == Identity::Always)
        .map(|(at, _)| at)
        .collect()
}

/// The identity sequence of each column of a table that has one, by column position.
pub(crate) fn identities(db: &Database, table: &str) -> HashMap<usize, (u32, Identity)> {
    let Ok(id) = db.table_id(table) else {
        return HashMap::new();
    };
    db.sequences()
        .into_iter()
        .filter(|s| s.def.identity != Identity::None)
        .filter_map(|s| {
            let (t, c) = s.def.owned_by?;
            (t == id).then_some((c as usize, (s.def.id, s.def.identity)))
        })
        .collect()
}

/// Starts each sequence a column of `table` owns again at its START (TRUNCATE …
/// RESTART IDENTITY).
pub(crate) fn restart_owned(db: &Database, table: &str) -> SqlResult<()> {
    let id = db.table_id(table)?;
    for s in db.sequences() {
        if s.def.owned_by.is_some_and(|(t, _)| t == id) {
            db.alter_sequence::<SqlError>(&s.def.name, |def, _| {
                Ok((def.clone(), Some(walden::SeqState::at(def.start))))
            })?;
        }
    }
    Ok(())
}

/// Serial columns of databases made before sequences (format 20 and older) have no
/// default: each such column gets its sequence now, starting past the column's
/// largest value, and the default that calls it. Done once per database a process
/// opens, before a session's first statement; a lock keeps two sessions from doing it
/// twice.
pub(crate) fn upgrade_legacy_serials(db: &Database) -> SqlResult<()> {
    static UPGRADING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let legacy = |db: &Database| -> Vec<(String, usize)> {
        let mut out = Vec::new();
        for table in db.table_names() {
            if let Ok(schema) = db.schema(&table) {
                for (i, c) in schema.columns.iter().enumerate() {
                    if c.serial && c.default.is_none() && !c.dropped {
                        out.push((table.clone(), i));
                    }
                }
            }
        }
        out
    };
    if legacy(db).is_empty() {
        return Ok(());
    }
    let _one = UPGRADING.lock().unwrap_or_else(|e| e.into_inner());
    for (table, at) in legacy(db) {
        let schema = db.schema(&table)?;
        let column = &schema.columns[at];
        let mut max = 0i64;
        let mut t = db.begin();
        let shape = walden::RowShape::default();
        t.read(walden::Rows::Table(&table), shape, |_, row| {
            if let Some(v) = crate::value::as_i64(&row[at]) {
                max = max.max(v);
            }
            Ok::<_, SqlError>(std::ops::ControlFlow::Continue(()))
        })?;
        t.commit()?;
        let ty = crate::types::SqlType::from_column(column.ty);
        let name = choose_name(db, &table, &column.name, &[]);
        let mut def = ColumnSequence::serial(ty).definition(&name, at as u16)?;
        def.owned_by = Some((db.table_id(&table)?, at as u16));
        def.start = max.saturating_add(1).clamp(def.min_value, def.max_value);
        db.create_sequence(def)?;
        db.alter_table(
            &table,
            &walden::AlterOp::SetDefault {
                column: column.name.clone(),
                default: Some(nextval_default(&name)),
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cut_as_postgres_cuts_them() {
        assert_eq!(object_name("t", "id", "seq"), "t_id_seq");
        let long = "a".repeat(70);
        let name = object_name(&long, "id", "seq");
        assert_eq!(name.len(), 63);
        assert!(name.ends_with("_id_seq"));
        let name = object_name(&"é".repeat(40), &"b".repeat(40), "seq");
        assert!(name.len() <= 63 && name.ends_with("_seq"), "{name}");
        assert_eq!(nextval_default("Odd's"), "nextval('\"Odd''s\"'::regclass)");
    }
}
