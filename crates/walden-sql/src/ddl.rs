//! CREATE TABLE (with column types and constraints, or AS SELECT), DROP TABLE, VACUUM.
//! The engine commits these at once, so they run outside transaction blocks.

use sqlparser::ast::{self, ColumnOption, ObjectType, Spanned, TableConstraint};
use sqlparser::tokenizer::Location;
use walden::{Column, Schema, TableKind};

use crate::bind::{ident_name, object_name};
use crate::error::{clip, code, SqlError, SqlResult};
use crate::session::{Ctx, DbCatalog, Output};
use crate::types::declared_type;

/// The table kind `CREATE TABLE ... USING name` names: `heap`, or `undo` (also spelled
/// `zheap`, the name of PostgreSQL's undo-based table access method).
pub(crate) fn table_kind_named(name: &str) -> Option<TableKind> {
    match name {
        "zheap" => Some(TableKind::Undo),
        _ => TableKind::parse(name).filter(|k| k.name() == name),
    }
}

/// The hint listing what `USING` and `default_table_kind` accept.
pub(crate) const TABLE_KINDS_HINT: &str =
    "Walden's table kinds: heap, undo (zheap is an alias of undo).";

/// The kind of a new table: the one `USING` names, else the session's default.
fn table_kind(kind: Option<(String, Location)>, default: TableKind) -> SqlResult<TableKind> {
    match kind {
        None => Ok(default),
        Some((k, at)) => table_kind_named(&k).ok_or_else(|| {
            SqlError::new(
                code::UNDEFINED_OBJECT,
                format!("access method \"{k}\" does not exist"),
            )
            .with_hint(TABLE_KINDS_HINT)
            .at(at)
        }),
    }
}

fn check_plain_create(ct: &ast::CreateTable) -> SqlResult<()> {
    let unsupported = [
        (ct.or_replace, "CREATE OR REPLACE TABLE"),
        (ct.temporary, "CREATE TEMPORARY TABLE"),
        (ct.unlogged, "CREATE UNLOGGED TABLE"),
        (ct.external, "CREATE EXTERNAL TABLE"),
        (ct.like.is_some(), "CREATE TABLE ... LIKE"),
        (ct.clone.is_some(), "CREATE TABLE ... CLONE"),
        (ct.partition_by.is_some(), "partitioned tables"),
        (ct.inherits.is_some(), "table inheritance"),
        (ct.on_commit.is_some(), "ON COMMIT"),
    ];
    for (set, what) in unsupported {
        if set {
            return Err(SqlError::unsupported(what));
        }
    }
    Ok(())
}

pub(crate) fn create_table(
    cx: &mut Ctx,
    ct: &ast::CreateTable,
    kind: Option<(String, Location)>,
    default_kind: TableKind,
    synchronous_commit: bool,
) -> SqlResult<Output> {
    check_plain_create(ct)?;
    let kind = table_kind(kind, default_kind)?;
    let name = object_name(&ct.name)?;
    if cx.db.table_names().contains(&name) {
        if ct.if_not_exists {
            let mut out = Output::tag("CREATE TABLE");
            out.notices.push(format!(
                "NOTICE:  relation \"{name}\" already exists, skipping"
            ));
            return Ok(out);
        }
        return Err(SqlError::new(
            code::DUPLICATE_TABLE,
            format!("relation \"{name}\" already exists"),
        )
        .at(ct.name.span().start));
    }
    if let Some(q) = &ct.query {
        return create_table_as(cx, ct, &name, q, kind, synchronous_commit);
    }
    let mut columns: Vec<Column> = Vec::new();
    for def in &ct.columns {
        let col_name = ident_name(&def.name);
        if columns.iter().any(|c| c.name == col_name) {
            return Err(SqlError::new(
                code::DUPLICATE_COLUMN,
                format!("column \"{col_name}\" specified more than once"),
            )
            .at(def.name.span.start));
        }
        let d = declared_type(&def.data_type, true).map_err(|e| e.at(def.name.span.start))?;
        let mut c = Column::new(&col_name, d.ty.column_type());
        c.max_chars = d.max_chars;
        c.blank_padded = d.blank_padded;
        c.serial = d.serial;
        c.nullable = !d.serial;
        for opt in &def.options {
            match &opt.option {
                ColumnOption::NotNull => c.nullable = false,
                ColumnOption::Null => {}
                ColumnOption::PrimaryKey(_) => {
                    c.primary_key = true;
                    c.nullable = false;
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "the column option {}",
                        clip(&other.to_string())
                    ))
                    .at(def.name.span.start))
                }
            }
        }
        columns.push(c);
    }
    // The primary key: a column option or a table constraint, one or several columns.
    let mut pk: Vec<String> = columns
        .iter()
        .filter(|c| c.primary_key)
        .map(|c| c.name.clone())
        .collect();
    let multiple = || {
        SqlError::new(
            code::INVALID_TABLE_DEFINITION,
            format!("multiple primary keys for table \"{name}\" are not allowed"),
        )
    };
    if pk.len() > 1 {
        return Err(multiple());
    }
    for tc in &ct.constraints {
        match tc {
            TableConstraint::PrimaryKey(c) => {
                if !pk.is_empty() {
                    return Err(multiple());
                }
                for col in &c.columns {
                    let col_name = match &col.column.expr {
                        ast::Expr::Identifier(id) => ident_name(id),
                        other => {
                            return Err(SqlError::unsupported(format!(
                                "PRIMARY KEY ({})",
                                clip(&other.to_string())
                            )))
                        }
                    };
                    let Some(c) = columns.iter_mut().find(|c| c.name == col_name) else {
                        return Err(SqlError::new(
                            code::UNDEFINED_COLUMN,
                            format!("column \"{col_name}\" named in key does not exist"),
                        ));
                    };
                    if pk.contains(&col_name) {
                        return Err(SqlError::new(
                            code::DUPLICATE_COLUMN,
                            format!(
                                "column \"{col_name}\" appears twice in primary key constraint"
                            ),
                        ));
                    }
                    c.primary_key = true;
                    c.nullable = false;
                    pk.push(col_name);
                }
            }
            other => {
                return Err(SqlError::unsupported(format!(
                    "the table constraint {other}"
                )))
            }
        }
    }
    if columns.is_empty() {
        return Err(SqlError::unsupported("a table with no columns"));
    }
    forget_serials(cx, &name);
    cx.db.create_table_with(&name, Schema::new(columns), kind)?;
    if !pk.is_empty() {
        let cols: Vec<&str> = pk.iter().map(|c| c.as_str()).collect();
        let index = format!("{name}_pkey");
        let made = cx.db.create_index(&walden::IndexSpec {
            name: &index,
            table: &name,
            columns: &cols,
            unique: true,
            primary: true,
            if_not_exists: false,
        });
        if let Err(e) = made {
            // The table goes too: CREATE TABLE is all or nothing.
            let _ = cx.db.drop_table(&name);
            return Err(e.into());
        }
    }
    Ok(Output::tag("CREATE TABLE"))
}

fn create_table_as(
    cx: &mut Ctx,
    ct: &ast::CreateTable,
    name: &str,
    q: &ast::Query,
    kind: TableKind,
    synchronous_commit: bool,
) -> SqlResult<Output> {
    let plan = crate::select::SelectPlan::plan(q, &mut DbCatalog(cx.db))?;
    let mut names: Vec<String> = plan.columns.iter().map(|(n, _)| n.clone()).collect();
    // CREATE TABLE t (x, y) AS SELECT ... renames the columns.
    for (i, def) in ct.columns.iter().enumerate() {
        if i < names.len() {
            names[i] = ident_name(&def.name);
        }
    }
    let mut columns = Vec::new();
    for (n, (_, ty)) in names.iter().zip(&plan.columns) {
        if columns.iter().any(|c: &Column| c.name == *n) {
            return Err(SqlError::new(
                code::DUPLICATE_COLUMN,
                format!("column \"{n}\" specified more than once"),
            ));
        }
        columns.push(Column::new(n, ty.column_type()));
    }
    forget_serials(cx, name);
    cx.db.create_table_with(name, Schema::new(columns), kind)?;
    // The rows go in their own transaction; if that fails the table goes too.
    let mut t = cx.db.begin();
    t.set_synchronous_commit(synchronous_commit);
    let r = crate::dml::insert_plan(cx, &mut t, name, &plan, None).and_then(|n| {
        t.commit()?;
        Ok(n)
    });
    match r {
        Ok(n) => Ok(Output::tag(format!("SELECT {n}"))),
        Err(e) => {
            let _ = cx.db.drop_table(name);
            Err(e)
        }
    }
}

fn forget_serials(cx: &mut Ctx, table: &str) {
    cx.serials.retain(|(t, _), _| t != table);
}

pub(crate) fn drop(
    cx: &mut Ctx,
    object_type: ObjectType,
    if_exists: bool,
    names: &[ast::ObjectName],
) -> SqlResult<Output> {
    if object_type != ObjectType::Table {
        return Err(SqlError::unsupported(format!("DROP {object_type}")));
    }
    let mut out = Output::tag("DROP TABLE");
    let existing = cx.db.table_names();
    let mut to_drop = Vec::new();
    for n in names {
        let name = object_name(n)?;
        if existing.contains(&name) {
            to_drop.push(name);
        } else if if_exists {
            out.notices.push(format!(
                "NOTICE:  table \"{name}\" does not exist, skipping"
            ));
        } else {
            return Err(SqlError::new(
                code::UNDEFINED_TABLE,
                format!("table \"{name}\" does not exist"),
            )
            .at(n.span().start));
        }
    }
    for name in to_drop {
        forget_serials(cx, &name);
        cx.db.drop_table(&name)?;
    }
    Ok(out)
}

pub(crate) fn vacuum(cx: &mut Ctx, v: &ast::VacuumStatement) -> SqlResult<Output> {
    if v.full {
        return Err(SqlError::unsupported("VACUUM FULL"));
    }
    let tables = match &v.table_name {
        Some(n) => {
            let name = object_name(n)?;
            cx.db
                .schema(&name)
                .map_err(|e| SqlError::from(e).at(n.span().start))?;
            vec![name]
        }
        None => cx.db.table_names(),
    };
    for t in tables {
        cx.db.vacuum(&t)?;
    }
    Ok(Output::tag("VACUUM"))
}
