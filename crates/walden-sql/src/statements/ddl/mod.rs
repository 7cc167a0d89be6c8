//! CREATE TABLE (with column types and constraints, or AS SELECT), DROP TABLE, indexes
//! (CREATE/DROP INDEX, the keys of ALTER TABLE ADD PRIMARY KEY/UNIQUE, REINDEX), VACUUM.
//! The engine commits these at once, so they run outside transaction blocks.

mod index;

pub(crate) mod sequence;
pub(crate) mod view;

use sqlparser::ast::{self, ColumnOption, ObjectType, Spanned, TableConstraint};
use sqlparser::tokenizer::Location;
use walden::{Column, Schema, TableKind};

use crate::catalog::{ident_name, object_name, table_kind_named, TABLE_KINDS_HINT};
use crate::error::{clip, code, SqlError, SqlResult};
use crate::sequences::owned::ColumnSequence;
use crate::statement::{Ctx, Output};
use crate::types::{declared_type, SqlType};

use index::drop_indexes;
pub(crate) use index::{add_key, create_index, key_constraint, reindex, Key};

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

/// `WITH (fillfactor = 100, …)`: PostgreSQL's storage parameters are checked as it
/// checks them and then ignored (Walden fills every page and vacuums on its own
/// schedule; nothing of them is stored). An unknown one is an error, as in PostgreSQL.
fn check_storage_parameters(options: &ast::CreateTableOptions) -> SqlResult<()> {
    let ast::CreateTableOptions::With(options) = options else {
        return Ok(());
    };
    let invalid = |message: String| SqlError::new(code::INVALID_PARAMETER, message);
    let mut seen: Vec<String> = Vec::new();
    for option in options {
        let (name, value) = match option {
            ast::SqlOption::KeyValue { key, value } => (ident_name(key), Some(value)),
            ast::SqlOption::Ident(key) => (ident_name(key), None),
            other => {
                return Err(invalid(format!(
                    "unrecognized parameter \"{}\"",
                    clip(&other.to_string())
                )))
            }
        };
        if seen.contains(&name) {
            return Err(invalid(format!(
                "parameter \"{name}\" specified more than once"
            )));
        }
        // A bare name means true, as PostgreSQL reads it.
        let text = match value {
            None => "true".to_string(),
            Some(ast::Expr::Value(v)) => match &v.value {
                ast::Value::SingleQuotedString(s) => s.clone(),
                other => other.to_string(),
            },
            Some(other) => other.to_string(),
        };
        match name.as_str() {
            "fillfactor" => {
                let Some(n) = text.trim().parse::<f64>().ok().filter(|n| n.is_finite()) else {
                    return Err(invalid(format!(
                        "invalid value for integer option \"fillfactor\": {}",
                        clip(&text)
                    )));
                };
                let n = n.round();
                if !(10.0..=100.0).contains(&n) {
                    return Err(invalid(format!(
                        "value {} out of bounds for option \"fillfactor\"",
                        clip(&text)
                    ))
                    .with_detail("Valid values are between \"10\" and \"100\"."));
                }
            }
            "oids" if matches!(text.to_lowercase().as_str(), "false" | "off" | "0") => {}
            "oids" => {
                return Err(SqlError::unsupported("tables declared WITH OIDS")
                    .with_hint("PostgreSQL removed them in version 12."))
            }
            "autovacuum_enabled"
            | "toast_tuple_target"
            | "parallel_workers"
            | "user_catalog_table"
            | "vacuum_index_cleanup"
            | "vacuum_truncate"
            | "log_autovacuum_min_duration" => {}
            n if n.starts_with("autovacuum_") => {}
            _ => {
                return Err(invalid(format!(
                    "unrecognized parameter \"{}\"",
                    clip(&name)
                )))
            }
        }
        seen.push(name);
    }
    Ok(())
}

pub(crate) fn create_table(
    cx: &mut Ctx,
    t: &mut walden::Transaction,
    ct: &ast::CreateTable,
    kind: Option<(String, Location)>,
    default_kind: TableKind,
) -> SqlResult<Output> {
    check_plain_create(ct)?;
    check_storage_parameters(&ct.table_options)?;
    let kind = table_kind(kind, default_kind)?;
    let name = object_name(&ct.name)?;
    if !cx.auth.superuser {
        cx.auth.require_create()?;
    }
    if cx.db.relation_exists(&name) {
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
        return create_table_as(cx, t, ct, &name, q, kind);
    }
    let mut columns: Vec<Column> = Vec::new();
    let mut keys: Vec<Key> = Vec::new();
    let mut checks: Vec<Check> = Vec::new();
    let mut fkeys = Vec::new();
    let mut sequences = Vec::new();
    for def in &ct.columns {
        let col_name = ident_name(&def.name);
        if columns.iter().any(|c| c.name == col_name) {
            return Err(SqlError::new(
                code::DUPLICATE_COLUMN,
                format!("column \"{col_name}\" specified more than once"),
            )
            .at(def.name.span.start));
        }
        let (c, col_keys, col_checks, sequence) = column_of(def, &name)?;
        if let Some(seq) = sequence {
            sequences.push((columns.len(), seq));
        }
        keys.extend(col_keys);
        checks.extend(col_checks);
        fkeys.extend(column_fkeys(def)?);
        columns.push(c);
    }
    table_constraints(ct, &mut columns, &mut keys, &mut checks, &mut fkeys)?;
    if keys.iter().filter(|k| k.primary).count() > 1 {
        return Err(SqlError::new(
            code::INVALID_TABLE_DEFINITION,
            format!("multiple primary keys for table \"{name}\" are not allowed"),
        ));
    }
    if columns.is_empty() {
        return Err(SqlError::unsupported("a table with no columns"));
    }
    let mut schema = Schema::new(columns);
    schema.constraints = named_checks(&name, &schema, &checks)?;
    let owned = crate::sequences::owned::prepare(cx.db, &name, &mut schema, sequences)?;
    t.create_table_owning(&name, schema, kind, owned, Some(creation_acls(cx)))?;
    // The primary key first, then the unique constraints in the order written. (A
    // failure fails the statement: its transaction takes the table back.)
    keys.sort_by_key(|k| !k.primary);
    for key in &keys {
        add_key(cx, t, &name, key)?;
    }
    // Foreign keys last: one may reference a key of the table itself.
    crate::fkeys::ddl::add(cx.db, t, &cx.auth, &name, &fkeys, false)?;
    Ok(Output::tag("CREATE TABLE"))
}

/// CREATE TABLE's table constraints: CHECKs, FOREIGN KEYs, and PRIMARY KEY and UNIQUE
/// keys (a primary key's columns made NOT NULL).
fn table_constraints(
    ct: &ast::CreateTable,
    columns: &mut [Column],
    keys: &mut Vec<Key>,
    checks: &mut Vec<Check>,
    fkeys: &mut Vec<crate::fkeys::ddl::Written>,
) -> SqlResult<()> {
    for tc in &ct.constraints {
        if let TableConstraint::Check(cc) = tc {
            checks.push((cc.name.as_ref().map(ident_name), (*cc.expr).clone()));
            continue;
        }
        if let TableConstraint::ForeignKey(fk) = tc {
            fkeys.push(crate::fkeys::ddl::written(
                fk.name.as_ref().map(ident_name),
                fk,
            )?);
            continue;
        }
        let key = key_constraint(tc)?;
        for col_name in &key.columns {
            let Some(c) = columns.iter_mut().find(|c| c.name == *col_name) else {
                return Err(SqlError::new(
                    code::UNDEFINED_COLUMN,
                    format!("column \"{col_name}\" named in key does not exist"),
                ));
            };
            if key.primary {
                c.primary_key = true;
                c.nullable = false;
            }
        }
        keys.push(key);
    }
    Ok(())
}

/// The foreign keys a column's options declare (REFERENCES).
pub(crate) fn column_fkeys(def: &ast::ColumnDef) -> SqlResult<Vec<crate::fkeys::ddl::Written>> {
    let mut out = Vec::new();
    for opt in &def.options {
        if let ColumnOption::ForeignKey(fk) = &opt.option {
            let mut fk = fk.clone();
            fk.columns = vec![def.name.clone()];
            out.push(crate::fkeys::ddl::written(
                opt.name.as_ref().map(ident_name),
                &fk,
            )?);
        }
    }
    Ok(out)
}

/// A CHECK constraint as written: its name if given, its expression.
pub(crate) type Check = (Option<String>, ast::Expr);

/// A column as CREATE TABLE or ALTER TABLE ADD COLUMN defines it: the column, the keys
/// (PRIMARY KEY, UNIQUE) and CHECK constraints its options declare, and the sequence a
/// serial or identity column owns.
pub(crate) type ColumnDecl = (Column, Vec<Key>, Vec<Check>, Option<ColumnSequence>);

/// A column's DEFAULT expression as stored (its text), checked: one per column, none
/// beside a serial's or an identity, bound against the column's type.
fn default_of(
    e: &ast::Expr,
    c: &Column,
    serial: bool,
    identity: bool,
    def: &ast::ColumnDef,
    table: &str,
) -> SqlResult<String> {
    if serial || c.default.is_some() {
        return Err(SqlError::syntax(format!(
            "multiple default values specified for column \"{}\" of table \"{table}\"",
            c.name
        ))
        .at(def.name.span.start));
    }
    if identity {
        return Err(SqlError::syntax(format!(
            "both default and identity specified for column \"{}\" of table \"{table}\"",
            c.name
        ))
        .at(def.name.span.start));
    }
    crate::dml::bind_default(e, c).map_err(|err| match err.location {
        None => err.at(e.span().start),
        Some(_) => err,
    })?;
    let text = e.to_string();
    if text.len() > u16::MAX as usize {
        return Err(SqlError::new(
            code::PROGRAM_LIMIT,
            "a column default of more than 65,535 bytes is not supported",
        ));
    }
    Ok(text)
}

/// The declaration of one column of CREATE TABLE or ALTER TABLE ADD COLUMN.
pub(crate) fn column_of(def: &ast::ColumnDef, table: &str) -> SqlResult<ColumnDecl> {
    let name = table;
    let col_name = ident_name(&def.name);
    let mut keys = Vec::new();
    let mut checks = Vec::new();
    let d = declared_type(&def.data_type, true).map_err(|e| e.at(def.name.span.start))?;
    let mut c = Column::new(&col_name, d.ty.column_type());
    c.max_chars = d.max_chars;
    c.blank_padded = d.blank_padded;
    // A serial column is an integer column whose default calls its own sequence's
    // nextval (set once the sequence is named: `sequences::owned::prepare`).
    c.nullable = !d.serial;
    let mut sequence = d.serial.then(|| ColumnSequence::serial(d.ty));
    for opt in &def.options {
        match &opt.option {
            ColumnOption::NotNull => c.nullable = false,
            ColumnOption::Null => {}
            ColumnOption::PrimaryKey(_) => {
                c.primary_key = true;
                c.nullable = false;
                keys.push(Key {
                    name: opt.name.as_ref().map(ident_name),
                    columns: vec![col_name.clone()],
                    primary: true,
                });
            }
            ColumnOption::Generated {
                generated_as,
                sequence_options,
                generation_expr: None,
                ..
            } if !matches!(generated_as, ast::GeneratedAs::ExpStored) => {
                if c.default.is_some() || sequence.is_some() {
                    let what = if d.serial || c.default.is_some() {
                        "both default and identity"
                    } else {
                        "multiple identity specifications"
                    };
                    return Err(SqlError::syntax(format!(
                        "{what} specified for column \"{col_name}\" of table \"{name}\""
                    ))
                    .at(def.name.span.start));
                }
                let identity = match generated_as {
                    ast::GeneratedAs::Always => walden::Identity::Always,
                    _ => walden::Identity::ByDefault,
                };
                let options = crate::sequences::options::SeqOptions::from_parsed(
                    sequence_options.as_deref().unwrap_or(&[]),
                )?;
                sequence = Some(ColumnSequence::identity(identity, d.ty, options)?);
                c.nullable = false;
            }
            ColumnOption::Default(e) => {
                c.default = Some(default_of(e, &c, d.serial, sequence.is_some(), def, table)?);
            }
            ColumnOption::Unique(_) => keys.push(Key {
                name: opt.name.as_ref().map(ident_name),
                columns: vec![col_name.clone()],
                primary: false,
            }),
            // Made by `column_fkeys` once the table has its keys.
            ColumnOption::ForeignKey(_) => {}
            ColumnOption::Check(cc) => checks.push((
                opt.name.as_ref().or(cc.name.as_ref()).map(ident_name),
                (*cc.expr).clone(),
            )),
            other => {
                return Err(SqlError::unsupported(format!(
                    "the column option {}",
                    clip(&other.to_string())
                ))
                .at(def.name.span.start))
            }
        }
    }
    // An identity column is NOT NULL even when declared NULL (PostgreSQL refuses that).
    if sequence
        .as_ref()
        .is_some_and(|s| s.identity != walden::Identity::None)
    {
        c.nullable = false;
    }
    Ok((c, keys, checks, sequence))
}

/// CHECK constraints named (as PostgreSQL names them when not named) and bound against
/// the table's columns, as the schema keeps them.
pub(crate) fn named_checks(
    table: &str,
    schema: &Schema,
    checks: &[Check],
) -> SqlResult<Vec<walden::Constraint>> {
    let mut taken: Vec<String> = schema.constraints.iter().map(|c| c.name.clone()).collect();
    let mut out = Vec::new();
    // Named ones first, so that a generated name steps around them.
    taken.extend(checks.iter().filter_map(|(n, _)| n.clone()));
    for (name, e) in checks {
        crate::checks::bind(table, schema, e)?;
        let name = match name {
            Some(n) => {
                if out.iter().any(|c: &walden::Constraint| c.name == *n) {
                    return Err(SqlError::new(
                        "42710",
                        format!("check constraint \"{n}\" already exists"),
                    ));
                }
                n.clone()
            }
            None => {
                let n = crate::checks::name_for(table, e, &taken);
                taken.push(n.clone());
                n
            }
        };
        out.push(walden::Constraint {
            name,
            definition: crate::checks::definition(e),
        });
    }
    Ok(out)
}

fn create_table_as(
    cx: &mut Ctx,
    t: &mut walden::Transaction,
    ct: &ast::CreateTable,
    name: &str,
    q: &ast::Query,
    kind: TableKind,
) -> SqlResult<Output> {
    let plan = crate::select::QueryPlan::plan(q, &crate::view::catalog_of(cx.db))?;
    let mut names: Vec<String> = plan.columns().iter().map(|(n, _)| n.clone()).collect();
    // CREATE TABLE t (x, y) AS SELECT ... renames the columns.
    for (i, def) in ct.columns.iter().enumerate() {
        if i < names.len() {
            names[i] = ident_name(&def.name);
        }
    }
    let mut columns = Vec::new();
    for (n, (_, ty)) in names.iter().zip(plan.columns()) {
        if columns.iter().any(|c: &Column| c.name == *n) {
            return Err(SqlError::new(
                code::DUPLICATE_COLUMN,
                format!("column \"{n}\" specified more than once"),
            ));
        }
        if let SqlType::Record(_) = ty {
            return Err(SqlError::new(
                code::INVALID_TABLE_DEFINITION,
                format!("column \"{n}\" has pseudo-type record"),
            ));
        }
        columns.push(Column::new(n, ty.column_type()));
    }
    t.create_table_owning(
        name,
        Schema::new(columns),
        kind,
        Vec::new(),
        Some(creation_acls(cx)),
    )?;
    // The rows go in the same transaction: if that fails the table goes too.
    let (n, _) = crate::dml::insert_plan(cx, t, name, &plan, None, None)?;
    Ok(Output::tag(format!("SELECT {n}")))
}

/// A new table's owner and privileges, and its serial sequences' (each with the
/// user's defaults for its kind).
fn creation_acls(cx: &Ctx) -> (walden::ObjectAcl, walden::ObjectAcl) {
    use crate::privileges::RelKind;
    (
        cx.auth.new_acl(RelKind::Table),
        cx.auth.new_acl(RelKind::Sequence),
    )
}

pub(crate) fn drop(
    cx: &mut Ctx,
    t: &mut walden::Transaction,
    object_type: ObjectType,
    if_exists: bool,
    names: &[ast::ObjectName],
    cascade: bool,
) -> SqlResult<Output> {
    if object_type == ObjectType::Index {
        return drop_indexes(cx, t, if_exists, names);
    }
    if object_type != ObjectType::Table {
        return Err(SqlError::unsupported(format!("DROP {object_type}")));
    }
    let mut out = Output::tag("DROP TABLE");
    let existing = cx.db.table_names();
    let mut to_drop = Vec::new();
    for n in names {
        let name = object_name(n)?;
        if existing.contains(&name) {
            crate::privileges::check::require_owner(
                &cx.auth,
                &name,
                crate::privileges::RelKind::Table,
            )?;
            to_drop.push(name);
        } else if cx.db.view(&name).is_some() {
            return Err(SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!("\"{name}\" is not a table"),
            )
            .with_hint("Use DROP VIEW to remove a view.")
            .at(n.span().start));
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
    let views =
        crate::ddl::view::with_dependents(cx.db, &to_drop, "table", cascade, &mut out.notices)?;
    crate::fkeys::ddl::before_drop(cx.db, t, cx.fkeys, &to_drop, cascade, &mut out.notices)?;
    for v in views {
        t.drop_view(&v)?;
    }
    for name in to_drop {
        t.drop_table(&name)?;
    }
    Ok(out)
}
