//! Foreign keys in DDL: a new one checked against its tables as PostgreSQL checks it
//! (42P01, 42703, 42830, 42704, 42804), the stored rows checked when ALTER TABLE adds
//! one (23503), and the refusals of DROP TABLE (2BP01) and TRUNCATE (0A000) of a
//! referenced table.

use std::ops::ControlFlow;

use sqlparser::ast;
use walden::{Database, Schema};

use super::{positions, ForeignKey, KeyCache};
use crate::error::{code, SqlError, SqlResult};
use crate::types::SqlType;

/// A foreign key as written in CREATE TABLE (column option or table constraint) or
/// ALTER TABLE ADD: its name, if given, and its parsed form (for a column option,
/// `columns` holds the one column).
pub(crate) type Written = (Option<String>, ast::ForeignKeyConstraint);

/// A foreign key as written, refused (0A000) where it asks for what Walden does not do.
pub(crate) fn written(name: Option<String>, fk: &ast::ForeignKeyConstraint) -> SqlResult<Written> {
    if fk
        .match_kind
        .is_some_and(|m| !matches!(m, ast::ConstraintReferenceMatchKind::Simple))
    {
        return Err(SqlError::unsupported(format!(
            "a foreign key with {}",
            fk.match_kind.map(|m| m.to_string()).unwrap_or_default()
        )));
    }
    if let Some(c) = &fk.characteristics {
        if c.deferrable == Some(true) || c.initially.is_some() || c.enforced == Some(false) {
            return Err(SqlError::unsupported(format!("a foreign key that is {c}")));
        }
    }
    if fk.foreign_table.0.len() > 1 {
        return Err(SqlError::unsupported(
            "a foreign key to a table of another schema",
        ));
    }
    Ok((name, fk.clone()))
}

/// Adds foreign keys to `table`, each checked (and, when `check_rows`, the stored rows
/// against it) before it is stored.
pub(crate) fn add(
    db: &Database,
    t: &mut walden::Transaction,
    auth: &crate::privileges::Authority,
    table: &str,
    list: &[Written],
    check_rows: bool,
) -> SqlResult<()> {
    for w in list {
        let schema = db.schema(table)?;
        let mut taken: Vec<String> = schema.constraints.iter().map(|c| c.name.clone()).collect();
        taken.extend(db.indexes(table)?.into_iter().map(|i| i.name));
        if let Some(n) = &w.0 {
            if taken.contains(n) {
                return Err(SqlError::new(
                    "42710",
                    format!("constraint \"{n}\" for relation \"{table}\" already exists"),
                ));
            }
        }
        let key = resolve(db, table, &schema, w, &taken)?;
        // REFERENCES on the table referenced (the referencing one is the user's own).
        if !auth.superuser {
            let kind = crate::privileges::RelKind::Table;
            let need = walden::privilege::bits::REFERENCES;
            auth.require(&key.parent, kind, need).or_else(|e| {
                if !auth.has_column_grants(&key.parent) {
                    return Err(e);
                }
                // Or REFERENCES on each column the key refers to.
                let uses = crate::privileges::columns::Uses {
                    references: key.parent_columns.iter().cloned().collect(),
                    ..Default::default()
                };
                crate::privileges::check::require_columns(
                    db,
                    auth,
                    &key.parent,
                    kind,
                    need,
                    Some(&uses),
                )
            })?;
        }
        if check_rows {
            verify_rows(db, t, &key)?;
        }
        t.alter_table(
            table,
            &walden::AlterOp::AddConstraint(walden::Constraint {
                name: key.name.clone(),
                definition: key.definition(),
            }),
        )?;
    }
    Ok(())
}

/// Every stored row of the referencing table must find its key (ALTER TABLE ADD).
fn verify_rows(db: &Database, t: &mut walden::Transaction, key: &ForeignKey) -> SqlResult<()> {
    let schema = db.schema(&key.table)?;
    let pschema = db.schema(&key.parent)?;
    let at = positions(&schema, &key.columns)?;
    let pat = positions(&pschema, &key.parent_columns)?;
    let mut parents = std::collections::HashSet::new();
    let shape = walden::RowShape::default();
    t.read(walden::Rows::Table(&key.parent), shape, |_, row| {
        let k: Vec<walden::Value> = pat.iter().map(|&i| row[i].clone()).collect();
        parents.insert(format!("{k:?}"));
        Ok::<_, SqlError>(ControlFlow::Continue(()))
    })?;
    let found = t.read(walden::Rows::Table(&key.table), shape, |_, row| {
        let vals: Vec<walden::Value> = at.iter().map(|&i| row[i].clone()).collect();
        if vals.iter().any(|v| matches!(v, walden::Value::Null)) {
            return Ok(ControlFlow::Continue(()));
        }
        let typed: SqlResult<Vec<walden::Value>> = vals
            .iter()
            .zip(&pat)
            .map(|(v, &p)| crate::dml::assign(v.clone(), &pschema.columns[p]))
            .collect();
        if typed.is_ok_and(|k| parents.contains(&format!("{k:?}"))) {
            Ok(ControlFlow::Continue(()))
        } else {
            Err(super::enforce::not_present(key, &vals))
        }
    });
    found
}

/// Whether values of these types compare (PostgreSQL has an equality operator between
/// them): the numeric types among themselves, any type with itself.
fn comparable(a: SqlType, b: SqlType) -> bool {
    a == b || (a.is_numeric() && b.is_numeric())
}

/// Checks a written foreign key of `table` (whose schema is `schema`) against the
/// referenced table and names it; `schema` stands for the referenced table too when
/// the key references its own table. `taken` holds the names the table's constraints
/// and indexes have (a generated name steps around them).
pub(crate) fn resolve(
    db: &Database,
    table: &str,
    schema: &Schema,
    written: &Written,
    taken: &[String],
) -> SqlResult<ForeignKey> {
    let (name, fk) = written;
    let mut key = ForeignKey::from_ast(String::new(), table, fk);
    let parent_schema = if key.parent == table {
        schema.clone()
    } else {
        match db.schema(&key.parent) {
            Ok(s) => s,
            Err(_) => {
                return Err(SqlError::new(
                    code::UNDEFINED_TABLE,
                    format!("relation \"{}\" does not exist", key.parent),
                ))
            }
        }
    };
    let child_at = positions(schema, &key.columns)?;
    let indexes = if key.parent == table && !db.table_names().contains(&key.parent) {
        Vec::new()
    } else {
        db.indexes(&key.parent)?
    };
    if key.parent_columns.is_empty() {
        let Some(pk) = indexes.iter().find(|i| i.primary) else {
            return Err(SqlError::new(
                code::UNDEFINED_OBJECT,
                format!(
                    "there is no primary key for referenced table \"{}\"",
                    key.parent
                ),
            ));
        };
        key.parent_columns = pk.columns.clone();
    }
    let parent_at = positions(&parent_schema, &key.parent_columns)?;
    let mut wanted = key.parent_columns.clone();
    wanted.sort_unstable();
    let matched = indexes.iter().any(|i| {
        let mut cols = i.columns.clone();
        cols.sort_unstable();
        i.unique && cols == wanted
    });
    if !matched {
        return Err(SqlError::new(
            "42830",
            format!(
                "there is no unique constraint matching given keys for referenced table \"{}\"",
                key.parent
            ),
        ));
    }
    if key.columns.len() != key.parent_columns.len() {
        return Err(SqlError::new(
            "42830",
            "number of referencing and referenced columns for foreign key disagree",
        ));
    }
    key.name = match name {
        Some(n) => n.clone(),
        None => super::name_for(table, &key.columns, taken),
    };
    for (&c, &p) in child_at.iter().zip(&parent_at) {
        let (cc, pc) = (&schema.columns[c], &parent_schema.columns[p]);
        let (ct, pt) = (SqlType::from_column(cc.ty), SqlType::from_column(pc.ty));
        if !comparable(ct, pt) {
            return Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                format!(
                    "foreign key constraint \"{}\" cannot be implemented",
                    key.name
                ),
            )
            .with_detail(format!(
                "Key columns \"{}\" and \"{}\" are of incompatible types: {} and {}.",
                cc.name,
                pc.name,
                ct.name(),
                pt.name()
            )));
        }
    }
    Ok(key)
}

/// The foreign keys of other tables, not among `dropping`, that reference a table of
/// `dropping`.
pub(crate) fn dependents(
    db: &Database,
    keys: &KeyCache,
    dropping: &[String],
) -> SqlResult<Vec<ForeignKey>> {
    let all = keys.all(db)?;
    Ok(all
        .keys
        .iter()
        .filter(|k| dropping.contains(&k.parent) && !dropping.contains(&k.table))
        .cloned()
        .collect())
}

/// DROP TABLE of referenced tables: refused (2BP01) unless CASCADE, which drops the
/// referencing constraints (not their tables), with PostgreSQL's notices.
pub(crate) fn before_drop(
    db: &Database,
    t: &mut walden::Transaction,
    keys: &KeyCache,
    dropping: &[String],
    cascade: bool,
    notices: &mut Vec<String>,
) -> SqlResult<()> {
    let deps = dependents(db, keys, dropping)?;
    let Some(first) = deps.first() else {
        return Ok(());
    };
    let what = |k: &ForeignKey| format!("constraint {} on table {}", k.name, k.table);
    if !cascade {
        let detail = deps
            .iter()
            .map(|k| format!("{} depends on table {}", what(k), k.parent))
            .collect::<Vec<_>>()
            .join("\n");
        return Err(SqlError::new(
            "2BP01",
            format!(
                "cannot drop table {} because other objects depend on it",
                first.parent
            ),
        )
        .with_detail(detail)
        .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
    }
    if deps.len() == 1 {
        notices.push(format!("NOTICE:  drop cascades to {}", what(first)));
    } else {
        let list = deps.iter().map(what).collect::<Vec<_>>().join("\n");
        notices.push(format!(
            "NOTICE:  drop cascades to {} other objects\nDETAIL:  drop cascades to {}",
            deps.len(),
            list.replace('\n', "\ndrop cascades to ")
        ));
    }
    for k in deps {
        t.alter_table(&k.table, &walden::AlterOp::DropConstraint(k.name.clone()))?;
    }
    Ok(())
}

/// TRUNCATE of tables: the tables to empty, those named and, with CASCADE, every table
/// that references one of them (transitively, each named in a notice); without CASCADE
/// a referencing table not named is refused (0A000).
pub(crate) fn truncate_list(
    db: &Database,
    keys: &KeyCache,
    named: Vec<String>,
    cascade: bool,
    notices: &mut Vec<String>,
) -> SqlResult<Vec<String>> {
    let all = keys.all(db)?;
    let mut list = named;
    let mut i = 0;
    while i < list.len() {
        let parent = list[i].clone();
        for k in all.referencing(&parent) {
            if list.contains(&k.table) {
                continue;
            }
            if !cascade {
                return Err(SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    "cannot truncate a table referenced in a foreign key constraint",
                )
                .with_detail(format!("Table \"{}\" references \"{}\".", k.table, parent))
                .with_hint(format!(
                    "Truncate table \"{}\" at the same time, or use TRUNCATE ... CASCADE.",
                    k.table
                )));
            }
            notices.push(format!(
                "NOTICE:  truncate cascades to table \"{}\"",
                k.table
            ));
            list.push(k.table.clone());
        }
        i += 1;
    }
    Ok(list)
}

/// The foreign keys that name a column of `table`, from either end.
pub(crate) fn naming_column(
    db: &Database,
    keys: &KeyCache,
    table: &str,
    column: &str,
) -> SqlResult<Vec<ForeignKey>> {
    let all = keys.all(db)?;
    Ok(all
        .keys
        .iter()
        .filter(|k| {
            (k.table == table && k.columns.iter().any(|c| c == column))
                || (k.parent == table && k.parent_columns.iter().any(|c| c == column))
        })
        .cloned()
        .collect())
}
