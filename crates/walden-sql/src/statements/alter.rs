//! ALTER TABLE: columns added (no rewrite: rows stored before read the column's missing
//! value), dropped (hidden, never rewritten), renamed; the table renamed; defaults and
//! NOT NULL set or dropped; keys added (ADD PRIMARY KEY / UNIQUE build a unique index)
//! and dropped. Every operation is part of the session's transaction: inside a block
//! a ROLLBACK takes it back (docs/recovery.md rule 40).

use std::ops::ControlFlow;

use sqlparser::ast::{self, AlterColumnOperation, AlterTableOperation as Op, Spanned};
use walden::{AlterOp, Column, Database, RowShape, Rows, Schema, Transaction, Value};

use crate::catalog::{ident_name, object_name, Catalog, Scope};
use crate::ddl::{add_key, column_of, key_constraint};
use crate::error::{clip, code, SqlError, SqlResult};
use crate::expr::Expr;
use crate::statement::{Ctx, Output};

/// The catalog as it would be with a column (or a whole table) gone: what the views
/// would see after a DROP or RENAME, to find the ones that would break.
struct Without<'a> {
    db: &'a Database,
    table: &'a str,
    /// None: the table itself is gone (renamed).
    column: Option<&'a str>,
}

impl Catalog for Without<'_> {
    fn table_scope(&self, name: &str) -> SqlResult<Scope> {
        let mut scope = crate::view::catalog_of(self.db).table_scope(name)?;
        if name == self.table {
            match self.column {
                None => {
                    return Err(SqlError::new(
                        code::UNDEFINED_TABLE,
                        format!("relation \"{name}\" does not exist"),
                    ))
                }
                Some(c) => scope.columns.retain(|(n, _)| n != c),
            }
        }
        Ok(scope)
    }

    fn view(&self, name: &str) -> Option<walden::ViewDef> {
        self.db.view(name)
    }
}

/// The views that would no longer plan without `column` of `table` (or without the
/// table, if None).
fn broken_views(db: &Database, table: &str, column: Option<&str>) -> Vec<String> {
    let without = Without { db, table, column };
    db.views()
        .iter()
        .filter(|v| crate::view::plan_view(v, &without).is_err())
        .map(|v| v.name.clone())
        .collect()
}

fn no_column(column: &str, table: &str) -> SqlError {
    SqlError::new(
        code::UNDEFINED_COLUMN,
        format!("column \"{column}\" of relation \"{table}\" does not exist"),
    )
}

fn column_exists(column: &str, table: &str) -> SqlError {
    SqlError::new(
        code::DUPLICATE_COLUMN,
        format!("column \"{column}\" of relation \"{table}\" already exists"),
    )
}

fn contains_nulls(column: &str, table: &str) -> SqlError {
    SqlError::new(
        code::NOT_NULL_VIOLATION,
        format!("column \"{column}\" of relation \"{table}\" contains null values"),
    )
}

/// Whether a visible row of the table has NULL in visible column `at` (any row, when
/// `at` is None).
fn any_row(t: &mut Transaction, table: &str, at: Option<usize>) -> SqlResult<bool> {
    let mut found = false;
    t.read(Rows::Table(table), RowShape::default(), |_, row| {
        found = at.is_none_or(|i| matches!(row.get(i), Some(Value::Null)));
        Ok::<_, SqlError>(if found {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        })
    })?;
    Ok(found)
}

/// ALTER TABLE [IF EXISTS] name operation, ...
pub(crate) fn alter_table(
    cx: &mut Ctx,
    t: &mut Transaction,
    at: &ast::AlterTable,
) -> SqlResult<Output> {
    let mut out = Output::tag("ALTER TABLE");
    let Some(mut table) = target(cx, at, &mut out)? else {
        return Ok(out);
    };
    // One that fails fails the statement, whose transaction takes back the ones
    // before it.
    for op in &at.operations {
        if let Some(to) = alter_one(cx, t, &table, op, &mut out)? {
            table = to;
        }
    }
    Ok(out)
}

/// The table ALTER TABLE names; None when IF EXISTS finds none (with its notice).
fn target(cx: &mut Ctx, at: &ast::AlterTable, out: &mut Output) -> SqlResult<Option<String>> {
    let table = object_name(&at.name)?;
    if !cx.db.table_names().contains(&table) {
        if cx.db.view(&table).is_some() {
            return Err(SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!("\"{table}\" is not a table"),
            )
            .with_hint("Walden alters tables only; replace a view with CREATE OR REPLACE VIEW.")
            .at(at.name.span().start));
        }
        if at.if_exists {
            out.notices.push(format!(
                "NOTICE:  relation \"{table}\" does not exist, skipping"
            ));
            return Ok(None);
        }
        return Err(SqlError::new(
            code::UNDEFINED_TABLE,
            format!("relation \"{table}\" does not exist"),
        )
        .at(at.name.span().start));
    }
    crate::privileges::check::require_owner(&cx.auth, &table, crate::privileges::RelKind::Table)?;
    Ok(Some(table))
}

/// One operation of ALTER TABLE; the table's new name if it renamed the table.
fn alter_one(
    cx: &mut Ctx,
    t: &mut Transaction,
    table: &str,
    op: &Op,
    out: &mut Output,
) -> SqlResult<Option<String>> {
    let schema = cx.db.schema(table)?;
    match op {
        Op::AddConstraint {
            constraint: ast::TableConstraint::Check(cc),
            ..
        } => {
            let name = cc.name.as_ref().map(ident_name);
            add_check(t, table, &schema, name, &cc.expr)?;
        }
        Op::AddConstraint {
            constraint: ast::TableConstraint::ForeignKey(fk),
            ..
        } => {
            let w = crate::fkeys::ddl::written(fk.name.as_ref().map(ident_name), fk)?;
            crate::fkeys::ddl::add(cx.db, t, &cx.auth, table, &[w], true)?;
        }
        Op::AddConstraint { constraint, .. } => {
            add_key_constraint(cx, t, table, &schema, constraint)?
        }
        Op::DropConstraint {
            if_exists, name, ..
        } => drop_constraint(cx, t, table, *if_exists, &ident_name(name))?,
        Op::AddColumn {
            if_not_exists,
            column_def,
            column_position: None,
            ..
        } => add_column(cx, t, table, &schema, column_def, *if_not_exists, out)?,
        Op::DropColumn {
            column_names,
            if_exists,
            drop_behavior,
            ..
        } => {
            let cascade = matches!(drop_behavior, Some(ast::DropBehavior::Cascade));
            for c in column_names {
                drop_column(cx, t, table, &ident_name(c), *if_exists, cascade, out)?;
            }
        }
        Op::RenameColumn {
            old_column_name,
            new_column_name,
        } => {
            let (from, to) = (ident_name(old_column_name), ident_name(new_column_name));
            rename_column(cx, t, table, &schema, &from, &to)?;
        }
        Op::RenameTable { table_name } => {
            let (ast::RenameTableNameKind::To(n) | ast::RenameTableNameKind::As(n)) = table_name;
            let to = object_name(n)?;
            rename_table(cx, t, table, &to)?;
            return Ok(Some(to));
        }
        Op::AlterColumn { column_name, op } => {
            alter_column(cx, t, table, &schema, &ident_name(column_name), op)?
        }
        other => {
            return Err(SqlError::unsupported(format!(
                "ALTER TABLE {}",
                clip(&other.to_string())
            )))
        }
    }
    Ok(None)
}

/// ADD [CONSTRAINT name] PRIMARY KEY (...) | UNIQUE (...): the key's unique index.
fn add_key_constraint(
    cx: &mut Ctx,
    t: &mut Transaction,
    table: &str,
    schema: &Schema,
    constraint: &ast::TableConstraint,
) -> SqlResult<()> {
    let key = key_constraint(constraint)?;
    for c in &key.columns {
        if !schema.columns.iter().any(|x| x.name == *c) {
            return Err(SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("column \"{c}\" named in key does not exist"),
            ));
        }
    }
    if key.primary && cx.db.indexes(table)?.iter().any(|i| i.primary) {
        return Err(SqlError::new(
            code::INVALID_TABLE_DEFINITION,
            format!("multiple primary keys for table \"{table}\" are not allowed"),
        ));
    }
    let made_not_null = if key.primary {
        set_not_null_for_key(t, table, schema, &key.columns)?
    } else {
        Vec::new()
    };
    if let Err(e) = add_key(cx, t, table, &key) {
        // All or nothing: the columns take NULLs again.
        for column in made_not_null {
            let op = AlterOp::SetNullable {
                column,
                nullable: true,
            };
            let _ = t.alter_table(table, &op);
        }
        return Err(e);
    }
    Ok(())
}

/// ADD PRIMARY KEY makes its columns NOT NULL first, as PostgreSQL does (refusing when
/// a row holds a NULL there). Returns the columns it changed.
fn set_not_null_for_key(
    t: &mut Transaction,
    table: &str,
    schema: &Schema,
    columns: &[String],
) -> SqlResult<Vec<String>> {
    let mut changed = Vec::new();
    for c in columns {
        let at = schema.columns.iter().position(|x| x.name == *c);
        if let Some(i) = at.filter(|&i| schema.columns[i].nullable) {
            if any_row(t, table, Some(i))? {
                return Err(contains_nulls(c, table));
            }
            t.alter_table(
                table,
                &AlterOp::SetNullable {
                    column: c.clone(),
                    nullable: false,
                },
            )?;
            changed.push(c.clone());
        }
    }
    Ok(changed)
}

/// The expression of a CHECK constraint this session just made.
fn checks_expr(c: &walden::Constraint) -> SqlResult<ast::Expr> {
    let text = c.definition.strip_prefix("CHECK ").unwrap_or(&c.definition);
    sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| SqlError::new(code::INTERNAL, e.to_string()))
}

/// ADD [CONSTRAINT name] CHECK (expr): every stored row must pass it first.
fn add_check(
    t: &mut Transaction,
    table: &str,
    schema: &Schema,
    name: Option<String>,
    e: &ast::Expr,
) -> SqlResult<()> {
    if let Some(n) = &name {
        if schema.constraints.iter().any(|c| c.name == *n) {
            return Err(SqlError::new(
                "42710",
                format!("constraint \"{n}\" for relation \"{table}\" already exists"),
            ));
        }
    }
    let list = crate::ddl::named_checks(table, schema, &[(name, e.clone())])?;
    for c in list {
        crate::checks::verify_rows(t, table, schema, &c.name, e)?;
        t.alter_table(table, &AlterOp::AddConstraint(c))?;
    }
    Ok(())
}

/// DROP CONSTRAINT name: a CHECK constraint, or a key (its unique index goes).
fn drop_constraint(
    cx: &mut Ctx,
    t: &mut Transaction,
    table: &str,
    if_exists: bool,
    name: &str,
) -> SqlResult<()> {
    if cx
        .db
        .schema(table)?
        .constraints
        .iter()
        .any(|c| c.name == name)
    {
        t.alter_table(table, &AlterOp::DropConstraint(name.to_string()))?;
        return Ok(());
    }
    let found = cx
        .db
        .indexes(table)?
        .into_iter()
        .find(|i| i.name == name && i.unique);
    match found {
        Some(_) => t.drop_index(name)?,
        None if if_exists => {}
        None => {
            return Err(SqlError::new(
                code::UNDEFINED_OBJECT,
                format!("constraint \"{name}\" of relation \"{table}\" does not exist"),
            ))
        }
    }
    Ok(())
}

/// The value rows stored before the column was added read for it: its default,
/// evaluated once. A default that is not a constant (random()) would need a value per
/// row, so a rewrite, which Walden does not do.
fn missing_value(cx: &mut Ctx, col: &Column) -> SqlResult<Option<Vec<u8>>> {
    if col.serial {
        return Err(SqlError::unsupported(
            "ADD COLUMN of a serial column (each stored row would need its own value: Walden does not rewrite tables)",
        ));
    }
    let expr = crate::dml::column_default(col)?;
    let Expr::Const(v) = expr else {
        return Err(SqlError::unsupported(format!(
            "ADD COLUMN with the volatile default {} (each stored row would need its own value: Walden does not rewrite tables)",
            clip(col.default.as_deref().unwrap_or(""))
        )));
    };
    let v = crate::dml::assign(v, col)?;
    let _ = cx;
    Ok(walden::schema::encode_value(&v))
}

fn add_column(
    cx: &mut Ctx,
    t: &mut Transaction,
    table: &str,
    schema: &Schema,
    def: &ast::ColumnDef,
    if_not_exists: bool,
    out: &mut Output,
) -> SqlResult<()> {
    let (mut col, keys, checks, sequence) = column_of(def, table)?;
    if sequence.is_some() {
        return Err(SqlError::unsupported(
            "ADD COLUMN of a serial or identity column (each stored row would need its own value: Walden does not rewrite tables)",
        ));
    }
    let fkeys = crate::ddl::column_fkeys(def)?;
    if schema.columns.iter().any(|c| c.name == col.name) {
        if if_not_exists {
            out.notices.push(format!(
                "NOTICE:  column \"{}\" of relation \"{table}\" already exists, skipping",
                col.name
            ));
            return Ok(());
        }
        return Err(column_exists(&col.name, table));
    }
    col.missing = missing_value(cx, &col)?;
    if !col.nullable && col.missing.is_none() && any_row(t, table, None)? {
        return Err(contains_nulls(&col.name, table));
    }
    if keys.iter().any(|k| k.primary) && cx.db.indexes(table)?.iter().any(|i| i.primary) {
        return Err(SqlError::new(
            code::INVALID_TABLE_DEFINITION,
            format!("multiple primary keys for table \"{table}\" are not allowed"),
        ));
    }
    let name = col.name.clone();
    t.alter_table(table, &AlterOp::AddColumn(col))?;
    let added = cx.db.schema(table)?;
    let checks = crate::ddl::named_checks(table, &added, &checks);
    let checks = checks.and_then(|list| {
        for c in &list {
            let e = &checks_expr(c)?;
            crate::checks::verify_rows(t, table, &added, &c.name, e)?;
        }
        for c in list {
            t.alter_table(table, &AlterOp::AddConstraint(c))?;
        }
        Ok(())
    });
    if let Err(e) = checks {
        let _ = t.alter_table(table, &AlterOp::DropColumn(name.clone()));
        return Err(e);
    }
    for key in &keys {
        if let Err(e) = add_key(cx, t, table, key) {
            // The column goes again: ADD COLUMN is all or nothing.
            let _ = t.alter_table(table, &AlterOp::DropColumn(name.clone()));
            return Err(e);
        }
    }
    if let Err(e) = crate::fkeys::ddl::add(cx.db, t, &cx.auth, table, &fkeys, true) {
        let _ = t.alter_table(table, &AlterOp::DropColumn(name.clone()));
        return Err(e);
    }
    Ok(())
}

fn drop_column(
    cx: &mut Ctx,
    t: &mut Transaction,
    table: &str,
    column: &str,
    if_exists: bool,
    cascade: bool,
    out: &mut Output,
) -> SqlResult<()> {
    let schema = cx.db.schema(table)?;
    if !schema.columns.iter().any(|c| c.name == column) {
        if if_exists {
            out.notices.push(format!(
                "NOTICE:  column \"{column}\" of relation \"{table}\" does not exist, skipping"
            ));
            return Ok(());
        }
        return Err(no_column(column, table));
    }
    if schema.columns.len() == 1 {
        return Err(SqlError::unsupported(
            "dropping a table's last column (Walden's tables have at least one)",
        ));
    }
    let broken = broken_views(cx.db, table, Some(column));
    if !broken.is_empty() {
        let what = format!("column {column} of table {table}");
        if !cascade {
            return Err(crate::view::depended_on(&what, &broken, &what));
        }
        let views =
            crate::ddl::view::with_dependents(cx.db, &broken, "view", true, &mut out.notices)?;
        for v in views {
            t.drop_view(&v)?;
        }
    }
    // Foreign keys of the table over the column go with it, as in PostgreSQL; one that
    // references the column goes only with CASCADE.
    for k in crate::fkeys::ddl::naming_column(cx.db, cx.fkeys, table, column)? {
        if k.parent == table && k.parent_columns.iter().any(|c| c == column) && k.table != table {
            if !cascade {
                return Err(SqlError::new(
                    "2BP01",
                    format!("cannot drop column {column} of table {table} because other objects depend on it"),
                )
                .with_detail(format!("constraint {} on table {} depends on column {column} of table {table}", k.name, k.table))
                .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
            }
            out.notices.push(format!(
                "NOTICE:  drop cascades to constraint {} on table {}",
                k.name, k.table
            ));
        }
        t.alter_table(&k.table, &AlterOp::DropConstraint(k.name.clone()))?;
    }
    // CHECK constraints that name the column go with it, as in PostgreSQL.
    let mut without = schema.clone();
    without.columns.retain(|c| c.name != column);
    for c in crate::checks::broken(table, &without) {
        t.alter_table(table, &AlterOp::DropConstraint(c))?;
    }
    t.alter_table(table, &AlterOp::DropColumn(column.to_string()))?;
    Ok(())
}

/// Views keep their query as SQL text, so one that names the column (or the table)
/// would no longer read it after a rename: Walden refuses rather than break it.
fn refuse_if_views_break(db: &Database, table: &str, column: Option<&str>) -> SqlResult<()> {
    let broken = broken_views(db, table, column);
    if broken.is_empty() {
        return Ok(());
    }
    let what = match column {
        Some(c) => format!("column \"{c}\" of relation \"{table}\""),
        None => format!("relation \"{table}\""),
    };
    Err(SqlError::unsupported(format!(
        "renaming {what}, which view \"{}\" uses (Walden keeps a view's query as text)",
        broken[0]
    ))
    .with_hint("Drop the view, rename, and create the view again."))
}

fn rename_column(
    cx: &mut Ctx,
    t: &mut Transaction,
    table: &str,
    schema: &Schema,
    from: &str,
    to: &str,
) -> SqlResult<()> {
    if !schema.columns.iter().any(|c| c.name == from) {
        return Err(SqlError::new(
            code::UNDEFINED_COLUMN,
            format!("column \"{from}\" does not exist"),
        ));
    }
    if schema.columns.iter().any(|c| c.name == to) {
        return Err(column_exists(to, table));
    }
    refuse_if_views_break(cx.db, table, Some(from))?;
    if let Some(k) = crate::fkeys::ddl::naming_column(cx.db, cx.fkeys, table, from)?.first() {
        return Err(SqlError::unsupported(format!(
            "renaming column \"{from}\" of relation \"{table}\", which foreign key constraint \"{}\" uses (Walden keeps a foreign key as text)",
            k.name
        ))
        .with_hint("Drop the constraint, rename, and add it again."));
    }
    let mut renamed = schema.clone();
    for c in renamed.columns.iter_mut().filter(|c| c.name == from) {
        c.name = to.to_string();
    }
    if let Some(c) = crate::checks::broken(table, &renamed).first() {
        return Err(SqlError::unsupported(format!(
            "renaming column \"{from}\" of relation \"{table}\", which check constraint \"{c}\" uses (Walden keeps a check's expression as text)"
        ))
        .with_hint("Drop the constraint, rename, and add it again."));
    }
    t.alter_table(
        table,
        &AlterOp::RenameColumn {
            from: from.to_string(),
            to: to.to_string(),
        },
    )?;
    Ok(())
}

fn rename_table(cx: &mut Ctx, t: &mut Transaction, table: &str, to: &str) -> SqlResult<()> {
    if cx.db.relation_exists(to) || cx.db.view(to).is_some() {
        return Err(SqlError::new(
            code::DUPLICATE_TABLE,
            format!("relation \"{to}\" already exists"),
        ));
    }
    refuse_if_views_break(cx.db, table, None)?;
    if let Some(k) = cx.fkeys.all(cx.db)?.referencing(table).next() {
        return Err(SqlError::unsupported(format!(
            "renaming relation \"{table}\", which foreign key constraint \"{}\" of relation \"{}\" references (Walden keeps a foreign key as text)",
            k.name, k.table
        ))
        .with_hint("Drop the constraint, rename, and add it again."));
    }
    t.alter_table(table, &AlterOp::Rename(to.to_string()))?;
    Ok(())
}

fn alter_column(
    cx: &mut Ctx,
    t: &mut Transaction,
    table: &str,
    schema: &Schema,
    column: &str,
    op: &AlterColumnOperation,
) -> SqlResult<()> {
    let Some(at) = schema.columns.iter().position(|c| c.name == column) else {
        return Err(no_column(column, table));
    };
    let col = &schema.columns[at];
    let change = match op {
        AlterColumnOperation::SetDefault { value } => {
            crate::dml::bind_default(value, col).map_err(|err| match err.location {
                None => err.at(value.span().start),
                Some(_) => err,
            })?;
            let text = value.to_string();
            if text.len() > u16::MAX as usize {
                return Err(SqlError::new(
                    code::PROGRAM_LIMIT,
                    "a column default of more than 65,535 bytes is not supported",
                ));
            }
            AlterOp::SetDefault {
                column: column.to_string(),
                default: Some(text),
            }
        }
        AlterColumnOperation::DropDefault => AlterOp::SetDefault {
            column: column.to_string(),
            default: None,
        },
        AlterColumnOperation::SetNotNull => {
            if any_row(t, table, Some(at))? {
                return Err(contains_nulls(column, table));
            }
            AlterOp::SetNullable {
                column: column.to_string(),
                nullable: false,
            }
        }
        AlterColumnOperation::DropNotNull => {
            if col.primary_key || primary_key_has(cx.db, table, column)? {
                return Err(SqlError::new(
                    code::INVALID_TABLE_DEFINITION,
                    format!("column \"{column}\" is in a primary key"),
                ));
            }
            AlterOp::SetNullable {
                column: column.to_string(),
                nullable: true,
            }
        }
        other => {
            return Err(SqlError::unsupported(format!(
                "ALTER COLUMN {}",
                clip(&other.to_string())
            )))
        }
    };
    t.alter_table(table, &change)?;
    Ok(())
}

fn primary_key_has(db: &Database, table: &str, column: &str) -> SqlResult<bool> {
    Ok(db
        .indexes(table)?
        .iter()
        .any(|i| i.primary && i.columns.iter().any(|c| c == column)))
}
