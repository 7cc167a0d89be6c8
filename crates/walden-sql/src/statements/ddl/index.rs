//! Indexes: CREATE/DROP INDEX, REINDEX, and the keys of PRIMARY KEY and UNIQUE
//! constraints (in CREATE TABLE and ALTER TABLE ADD) built as unique indexes.

use sqlparser::ast::{self, Spanned, TableConstraint};

use crate::catalog::{ident_name, object_name};
use crate::error::{clip, code, SqlError, SqlResult};
use crate::statement::{Ctx, Output};

/// A PRIMARY KEY or UNIQUE constraint.
pub(crate) struct Key {
    /// The constraint's name, if it was given one (the index takes it).
    pub name: Option<String>,
    pub columns: Vec<String>,
    pub primary: bool,
}

/// The column names of a PRIMARY KEY or UNIQUE constraint: plain columns, ascending
/// (PostgreSQL's grammar has no DESC or NULLS there).
fn key_columns(cols: &[ast::IndexColumn], what: &str) -> SqlResult<Vec<String>> {
    if cols.iter().any(|c| {
        matches!(c.column.options.sort, Some(ast::OrderBySort::Desc))
            || c.column.options.nulls_first.is_some()
    }) {
        return Err(SqlError::unsupported(format!(
            "DESC or NULLS FIRST/LAST in a {what}"
        )));
    }
    Ok(index_columns(cols, what)?.0)
}

/// The columns of an index, each with its order: plain columns, each `ASC` or `DESC`
/// and `NULLS FIRST` or `NULLS LAST` (as PostgreSQL: DESC puts NULLs first unless told
/// otherwise, ASC last). Operator classes and `USING` orderings are refused.
fn index_columns(
    cols: &[ast::IndexColumn],
    what: &str,
) -> SqlResult<(Vec<String>, Vec<walden::KeyOrder>)> {
    let mut out: Vec<String> = Vec::new();
    let mut order = Vec::new();
    for col in cols {
        let name = match &col.column.expr {
            ast::Expr::Identifier(id) => ident_name(id),
            other => {
                return Err(SqlError::unsupported(format!(
                    "{what} on an expression ({})",
                    clip(&other.to_string())
                ))
                .at(other.span().start))
            }
        };
        if col.operator_class.is_some() {
            return Err(SqlError::unsupported(format!(
                "operator classes on {what} columns"
            )));
        }
        let options = &col.column.options;
        let desc = match &options.sort {
            None | Some(ast::OrderBySort::Asc) => false,
            Some(ast::OrderBySort::Desc) => true,
            Some(ast::OrderBySort::Using(_)) => {
                return Err(SqlError::unsupported(format!(
                    "USING an operator on {what} columns"
                )))
            }
        };
        if out.contains(&name) {
            return Err(SqlError::new(
                code::DUPLICATE_COLUMN,
                format!("column \"{name}\" appears twice in {what}"),
            ));
        }
        out.push(name);
        order.push(walden::KeyOrder {
            desc,
            nulls_first: options.nulls_first.unwrap_or(desc),
        });
    }
    if out.is_empty() {
        return Err(SqlError::syntax(format!(
            "{what} needs at least one column"
        )));
    }
    Ok((out, order))
}

/// A table constraint Walden keeps: PRIMARY KEY or UNIQUE.
pub(crate) fn key_constraint(tc: &TableConstraint) -> SqlResult<Key> {
    match tc {
        TableConstraint::PrimaryKey(c) => Ok(Key {
            name: c.name.as_ref().map(ident_name),
            columns: key_columns(&c.columns, "primary key constraint")?,
            primary: true,
        }),
        TableConstraint::Unique(c) => {
            if c.nulls_distinct != ast::NullsDistinctOption::None
                && c.nulls_distinct != ast::NullsDistinctOption::Distinct
            {
                return Err(SqlError::unsupported("UNIQUE NULLS NOT DISTINCT"));
            }
            Ok(Key {
                name: c.name.as_ref().map(ident_name),
                columns: key_columns(&c.columns, "unique constraint")?,
                primary: false,
            })
        }
        other => Err(SqlError::unsupported(format!(
            "the table constraint {}",
            clip(&other.to_string())
        ))),
    }
}

/// The name PostgreSQL gives an index it names: `table_col1_col2_suffix`, with a number
/// added until no relation has it.
fn index_name_for(cx: &Ctx, table: &str, columns: &[String], suffix: &str) -> String {
    let base = if suffix == "pkey" {
        format!("{table}_pkey")
    } else {
        format!("{table}_{}_{suffix}", columns.join("_"))
    };
    let taken = |n: &str| cx.db.relation_exists(n);
    if !taken(&base) {
        return base;
    }
    (1..)
        .map(|i| format!("{base}{i}"))
        .find(|n| !taken(n))
        .unwrap_or(base)
}

/// Creates the index behind a PRIMARY KEY or UNIQUE constraint.
pub(crate) fn add_key(
    cx: &mut Ctx,
    t: &mut walden::Transaction,
    table: &str,
    key: &Key,
) -> SqlResult<()> {
    if key.primary && cx.db.indexes(table)?.iter().any(|i| i.primary) {
        return Err(SqlError::new(
            code::INVALID_TABLE_DEFINITION,
            format!("multiple primary keys for table \"{table}\" are not allowed"),
        ));
    }
    let name = match &key.name {
        Some(n) => n.clone(),
        None => index_name_for(
            cx,
            table,
            &key.columns,
            if key.primary { "pkey" } else { "key" },
        ),
    };
    let cols: Vec<&str> = key.columns.iter().map(|c| c.as_str()).collect();
    t.create_index(&walden::IndexSpec {
        name: &name,
        table,
        columns: &cols,
        order: &[],
        unique: true,
        primary: key.primary,
        if_not_exists: false,
    })
    .map_err(build_error)?;
    Ok(())
}

/// An index build's error: repeated keys are named as PostgreSQL names them when it
/// builds a unique index.
fn build_error(e: walden::Error) -> SqlError {
    match e {
        walden::Error::UniqueViolation {
            index,
            columns,
            values,
        } => SqlError::new(
            code::UNIQUE_VIOLATION,
            format!("could not create unique index \"{index}\""),
        )
        .with_detail(format!(
            "Key ({columns})=({}) is duplicated.",
            clip(&values)
        )),
        other => other.into(),
    }
}

/// CREATE [UNIQUE] INDEX [IF NOT EXISTS] [name] ON table (columns).
pub(crate) fn create_index(
    cx: &mut Ctx,
    t: &mut walden::Transaction,
    ci: &ast::CreateIndex,
) -> SqlResult<Output> {
    let unsupported = [
        (ci.concurrently, "CREATE INDEX CONCURRENTLY"),
        (!ci.include.is_empty(), "INCLUDE"),
        (ci.predicate.is_some(), "partial indexes (WHERE)"),
        (!ci.with.is_empty(), "index storage parameters (WITH)"),
        (ci.nulls_distinct == Some(false), "NULLS NOT DISTINCT"),
        (
            !ci.alter_options.is_empty() || !ci.index_options.is_empty(),
            "index options",
        ),
    ];
    for (set, what) in unsupported {
        if set {
            return Err(SqlError::unsupported(what));
        }
    }
    if let Some(u) = &ci.using {
        let m = u.to_string().to_lowercase();
        if m != "btree" {
            return Err(SqlError::new(
                code::UNDEFINED_OBJECT,
                format!("access method \"{m}\" does not exist"),
            )
            .with_hint("Walden's indexes are B-trees (USING btree)."));
        }
    }
    let table = object_name(&ci.table_name)?;
    let schema = cx
        .db
        .schema(&table)
        .map_err(|e| SqlError::from(e).at(ci.table_name.span().start))?;
    crate::privileges::check::require_owner(&cx.auth, &table, crate::privileges::RelKind::Table)?;
    let (columns, order) = index_columns(&ci.columns, "index")?;
    for c in &columns {
        if !schema.columns.iter().any(|x| x.name == *c) {
            return Err(SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("column \"{c}\" does not exist"),
            ));
        }
    }
    let name = match &ci.name {
        Some(n) => object_name(n)?,
        None => index_name_for(cx, &table, &columns, "idx"),
    };
    // The engine refuses a name any table or index has (or skips, IF NOT EXISTS).
    let cols: Vec<&str> = columns.iter().map(|c| c.as_str()).collect();
    let made = t
        .create_index(&walden::IndexSpec {
            name: &name,
            table: &table,
            columns: &cols,
            order: &order,
            unique: ci.unique,
            primary: false,
            if_not_exists: ci.if_not_exists,
        })
        .map_err(build_error)?;
    let mut out = Output::tag("CREATE INDEX");
    if !made {
        out.notices.push(format!(
            "NOTICE:  relation \"{name}\" already exists, skipping"
        ));
    }
    Ok(out)
}

/// DROP INDEX [IF EXISTS] name, ...
pub(super) fn drop_indexes(
    cx: &mut Ctx,
    t: &mut walden::Transaction,
    if_exists: bool,
    names: &[ast::ObjectName],
) -> SqlResult<Output> {
    let mut out = Output::tag("DROP INDEX");
    let mut to_drop = Vec::new();
    for n in names {
        let name = object_name(n)?;
        let found = cx.db.index(&name).ok();
        match found {
            Some(i) if i.primary => {
                return Err(SqlError::new(
                    "2BP01",
                    format!(
                    "cannot drop index {name} because constraint {name} on table {} requires it",
                    i.table
                ),
                )
                .with_hint(format!(
                    "You can drop constraint {name} on table {} instead.",
                    i.table
                )))
            }
            Some(_) => {
                crate::privileges::check::require_index_owner(cx.db, &cx.auth, &name)?;
                to_drop.push(name)
            }
            None if if_exists => out.notices.push(format!(
                "NOTICE:  index \"{name}\" does not exist, skipping"
            )),
            None => {
                return Err(SqlError::new(
                    code::UNDEFINED_OBJECT,
                    format!("index \"{name}\" does not exist"),
                )
                .at(n.span().start))
            }
        }
    }
    for name in to_drop {
        t.drop_index(&name)?;
    }
    Ok(out)
}

/// REINDEX INDEX name | REINDEX TABLE name.
pub(crate) fn reindex(cx: &mut Ctx, table: bool, name: &str) -> SqlResult<Output> {
    if table {
        cx.db.schema(name)?;
        crate::privileges::check::require_owner(&cx.auth, name, crate::privileges::RelKind::Table)?;
        for i in cx.db.indexes(name)? {
            cx.db.reindex(&i.name)?;
        }
    } else {
        if cx.db.index(name).is_ok() {
            crate::privileges::check::require_index_owner(cx.db, &cx.auth, name)?;
        }
        cx.db.reindex(name)?;
    }
    Ok(Output::tag("REINDEX"))
}
