//! What a statement needs, checked before it runs (PostgreSQL's `ExecCheckPermissions`
//! and each DDL command's ownership check), from its syntax tree: every relation it
//! names outside its target is read (SELECT), its target is written (INSERT, UPDATE,
//! DELETE, TRUNCATE, and SELECT too when the statement reads the target's columns:
//! WHERE, RETURNING, a SET or ON CONFLICT expression that names a column). A view is
//! checked for the user, and the relations its query reads for the view's owner, as
//! PostgreSQL expands a view with its owner's rights.
//!
//! A relation whose table-level privileges fall short may still be used through its
//! columns' privileges (PostgreSQL's `ExecCheckPermissions` per column): then the
//! columns the statement uses (`columns.rs`) are each checked, SELECT on those it reads,
//! INSERT on those it gives values, UPDATE on those it sets, and a relation read without
//! naming a column (`count(*)`) needs SELECT on some column.

use std::ops::ControlFlow;

use sqlparser::ast::{self, Expr, FromTable, ObjectName, Statement, TableObject};
use walden::privilege::bits;
use walden::Database;

use super::columns::{column_uses, ColumnUses, Uses};
use super::{rel_kind, Authority, RelKind, COLUMN_PRIVS};
use crate::catalog::object_name;
use crate::error::{SqlError, SqlResult};

/// How deep views over views are followed (a view cannot name itself, so this only
/// bounds the work).
const MAX_VIEW_DEPTH: usize = 64;

/// One relation a statement uses, and what it needs of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub relation: String,
    pub privs: u16,
}

/// The relations a statement names, each with what it needs (none for a statement
/// whose checks are its own: DDL, SET, …).
pub fn needs(stmt: &Statement) -> Vec<Need> {
    let mut out: Vec<Need> = Vec::new();
    let add = |out: &mut Vec<Need>, name: &ObjectName, privs: u16| {
        let Ok(relation) = object_name(name) else {
            return;
        };
        match out.iter_mut().find(|n| n.relation == relation) {
            Some(n) => n.privs |= privs,
            None => out.push(Need { relation, privs }),
        }
    };
    // Everything named is read, but the target where it is named once as the target.
    let mut all: Vec<ObjectName> = Vec::new();
    let _ = sqlparser::ast::visit_relations(stmt, |n: &ObjectName| {
        all.push(n.clone());
        ControlFlow::<()>::Continue(())
    });
    let mut target: Option<(ObjectName, u16)> = None;
    match stmt {
        Statement::Insert(ins) => {
            if let TableObject::TableName(name) = &ins.table {
                let mut privs = bits::INSERT;
                if ins.returning.is_some() {
                    privs |= bits::SELECT;
                }
                if let Some(ast::OnInsert::OnConflict(on)) = &ins.on {
                    if let ast::OnConflictAction::DoUpdate(_) = &on.action {
                        privs |= bits::UPDATE | bits::SELECT;
                    }
                }
                target = Some((name.clone(), privs));
            }
        }
        Statement::Update(u) => {
            if let ast::TableFactor::Table { name, .. } = &u.table.relation {
                let mut privs = bits::UPDATE;
                let reads = u.selection.is_some()
                    || u.returning.is_some()
                    || u.assignments.iter().any(|a| names_a_column(&a.value));
                if reads {
                    privs |= bits::SELECT;
                }
                target = Some((name.clone(), privs));
            }
        }
        Statement::Delete(d) => {
            let tables = match &d.from {
                FromTable::WithFromKeyword(v) | FromTable::WithoutKeyword(v) => v,
            };
            if let Some(ast::TableFactor::Table { name, .. }) = tables.first().map(|t| &t.relation)
            {
                let mut privs = bits::DELETE;
                if d.selection.is_some() || d.returning.is_some() {
                    privs |= bits::SELECT;
                }
                target = Some((name.clone(), privs));
            }
        }
        Statement::Truncate(tr) => {
            for t in &tr.table_names {
                add(&mut out, &t.name, bits::TRUNCATE);
            }
            return out;
        }
        Statement::Query(_) | Statement::Explain { .. } => {}
        Statement::CreateTable(ct) if ct.query.is_some() => {}
        _ => return out,
    }
    if let Statement::Explain { statement, .. } = stmt {
        return needs(statement);
    }
    let mut skipped = false;
    for name in &all {
        if let Some((t, privs)) = &target {
            if !skipped && name == t {
                skipped = true;
                add(&mut out, name, *privs);
                continue;
            }
        }
        add(&mut out, name, bits::SELECT);
    }
    out
}

/// Whether an expression reads a column (a name, or a subquery, which may).
fn names_a_column(e: &Expr) -> bool {
    let found = sqlparser::ast::visit_expressions(e, |e: &Expr| match e {
        Expr::Identifier(_)
        | Expr::CompoundIdentifier(_)
        | Expr::Subquery(_)
        | Expr::Exists { .. }
        | Expr::InSubquery { .. } => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    });
    found.is_break()
}

/// Checks a statement's needs for `auth`: each relation for the user, each view's
/// relations for the view's owner.
///
/// Ok(true) when the user lacks table-level SELECT on a relation the statement uses:
/// then the details of its constraint errors, which show rows and keys, are not to be
/// shown (PostgreSQL shows only the columns the user may read).
pub fn check_statement(db: &Database, auth: &Authority, stmt: &Statement) -> SqlResult<bool> {
    if auth.superuser {
        return Ok(false);
    }
    check_needs(db, auth, stmt, &needs(stmt), 0)
}

/// Checks needs (of a statement, or of a view's query for its owner), table-level
/// first, then through the columns `stmt` uses where the relation's columns have
/// privileges of their own. Ok(true): a relation lacks table-level SELECT (see
/// `check_statement`).
pub fn check_needs(
    db: &Database,
    auth: &Authority,
    stmt: &Statement,
    needs: &[Need],
    depth: usize,
) -> SqlResult<bool> {
    let mut uses: Option<ColumnUses> = None;
    let mut unreadable = false;
    for need in needs {
        let Some(kind) = rel_kind(db, &need.relation) else {
            // Not a relation of the database (a WITH query, the virtual catalog, a
            // table function): the statement's own binding decides.
            continue;
        };
        let held = auth.relation_mask(&need.relation, kind, need.privs | bits::SELECT);
        unreadable |= held & bits::SELECT == 0;
        let held = held & need.privs;
        if held != need.privs {
            let missing = need.privs & !held;
            if missing & !COLUMN_PRIVS != 0 || !auth.has_column_grants(&need.relation) {
                return Err(super::denied(kind, &need.relation));
            }
            let uses = uses.get_or_insert_with(|| column_uses(db, stmt));
            require_columns(
                db,
                auth,
                &need.relation,
                kind,
                missing,
                uses.get(&need.relation),
            )?;
        }
        if kind == RelKind::View {
            check_view(db, auth, &need.relation, depth + 1)?;
        }
    }
    Ok(unreadable)
}

/// 42501 unless the user holds each privilege of `missing` on every column `uses`
/// names for it (on some column, for a relation read without naming one).
pub fn require_columns(
    db: &Database,
    auth: &Authority,
    relation: &str,
    kind: RelKind,
    missing: u16,
    uses: Option<&Uses>,
) -> SqlResult<()> {
    let empty = Uses::default();
    let uses = uses.unwrap_or(&empty);
    let positions = super::column_positions(db, relation).unwrap_or_default();
    for bit in [bits::SELECT, bits::INSERT, bits::UPDATE, bits::REFERENCES] {
        if missing & bit == 0 {
            continue;
        }
        let cols = match bit {
            bits::SELECT => &uses.select,
            bits::INSERT => &uses.insert,
            bits::UPDATE => &uses.update,
            _ => &uses.references,
        };
        let ok = if cols.is_empty() {
            // A target whose columns are not read needs no SELECT.
            (bit == bits::SELECT && uses.target && !uses.source)
                || auth.any_column_mask(relation, bit) != 0
        } else {
            cols.iter().all(|c| {
                positions
                    .iter()
                    .find(|(n, _)| n == c)
                    .is_none_or(|(_, at)| auth.column_mask(relation, *at, bit) != 0)
            })
        };
        if !ok {
            return Err(super::denied(kind, relation));
        }
    }
    Ok(())
}

/// A view's query reads its relations with its owner's privileges.
fn check_view(db: &Database, auth: &Authority, name: &str, depth: usize) -> SqlResult<()> {
    if depth > MAX_VIEW_DEPTH {
        return Ok(());
    }
    let Some(view) = db.view(name) else {
        return Ok(());
    };
    let owner = super::relation_acl(&auth.privileges, name).owner;
    let owner_auth = auth.as_role(&owner);
    if owner_auth.superuser {
        return Ok(());
    }
    let Ok(query) = crate::view::parse_query(&view) else {
        // A view whose query no longer parses fails when it is read.
        return Ok(());
    };
    let stmt = Statement::Query(Box::new(query));
    check_needs(db, &owner_auth, &stmt, &needs(&stmt), depth).map(|_| ())
}

/// Ownership of the relation `name` (of a kind the caller knows) for DDL.
pub fn require_owner(auth: &Authority, name: &str, kind: RelKind) -> SqlResult<()> {
    if auth.superuser {
        return Ok(());
    }
    auth.require_owner(name, kind)
}

/// DDL on an index: its table's owner's.
pub fn require_index_owner(db: &Database, auth: &Authority, index: &str) -> SqlResult<()> {
    if auth.superuser {
        return Ok(());
    }
    let table = db.index_table(index).ok_or_else(|| {
        SqlError::new(
            crate::error::code::UNDEFINED_TABLE,
            format!("relation \"{index}\" does not exist"),
        )
    })?;
    if auth.owns_relation(&table) {
        Ok(())
    } else {
        Err(super::not_owner("index", index))
    }
}
