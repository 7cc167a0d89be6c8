//! SELECT, INSERT, UPDATE, DELETE and TRUNCATE inside a transaction: binding against the
//! table's schema, assignment rules (types, NOT NULL, character limits, serial columns,
//! primary keys), and the engine calls that do the work.

use sqlparser::ast::{
    self, AssignmentTarget, FromTable, SetExpr, Spanned, TableFactor, TableObject,
};
use walden::{Column, Row, RowAction, Schema, Transaction, Value};

use crate::fkeys::enforce::Written;

use crate::bind::{coerce_literal, Binder};
use crate::catalog::{ident_name, object_name, DbCatalog, Scope};
use crate::error::{clip, code, SqlError, SqlResult};
use crate::expr::Expr;

use crate::access_path::{self, Access, Wanted};
use crate::from::Explain;
use crate::guard::{row_bytes, Guard};
use crate::infer::Params;
use crate::prepared::Plan;
use crate::run::RunCx;
use crate::select::{
    bind_condition, read_index, PlanCx, QueryPlan, SeriesIter, Source, Subqueries,
};
use crate::statement::{Ctx, Output};
use crate::types::{DeclaredType, SqlType};
use crate::value;

mod joined;
pub(crate) mod recheck;
mod upsert;

use recheck::Noted;

pub(crate) fn select(cx: &mut Ctx, t: &mut Transaction, q: &ast::Query) -> SqlResult<Output> {
    let (plan, params) = match cx.prepared {
        // A prepared query: the plan its runs share, run with its values; its cached
        // plan filled with them; or its values written in.
        Some(run) => match run.generic_plan(cx.db) {
            Some(shared) => shared,
            None => (std::sync::Arc::new(run.select_plan(cx.db)?), &[][..]),
        },
        None => (
            std::sync::Arc::new(QueryPlan::plan(q, &DbCatalog::new(cx.db))?),
            &[][..],
        ),
    };
    // The rows as the executor's stream makes them: to the caller's sink when it takes
    // them so, else kept for the result.
    let columns = plan.columns().to_vec();
    let mut kept = Vec::new();
    let mut sink = cx.rows.take();
    if let Some(s) = sink.as_deref_mut() {
        s.start(&columns)?;
    }
    let n = crate::exec::with_run_params(Some(t.reader()?), params, cx.rng, cx.guard, |ecx| {
        let mut stream = crate::exec::RowStream::open(&plan, ecx)?;
        // Rows made whole were charged as they were made.
        let charge = !stream.is_materialized();
        let mut n = 0u64;
        while let Some(row) = stream.next(ecx)? {
            match sink.as_deref_mut() {
                Some(s) => s.row(&row)?,
                None => {
                    if let Some(g) = ecx.statement_guard().filter(|_| charge) {
                        g.charge(crate::guard::row_bytes(&row) + 24)?;
                    }
                    kept.push(row);
                }
            }
            n += 1;
        }
        Ok::<u64, SqlError>(n)
    })?;
    let mut out = Output::tag(format!("SELECT {n}"));
    out.columns = columns;
    out.rows = kept;
    out.streamed = sink.is_some();
    Ok(out)
}

/// The RETURNING columns of an INSERT, UPDATE or DELETE (none without RETURNING), the
/// statement bound as running it binds it, without reading or writing anything
/// (`Session::describe`).
pub(crate) fn returned_columns(
    db: &walden::Database,
    stmt: &ast::Statement,
    params: Params,
) -> SqlResult<Vec<(String, SqlType)>> {
    let returning = match stmt {
        ast::Statement::Insert(ins) if ins.on.is_some() => upsert::bind(db, ins, params)?.returning,
        ast::Statement::Insert(ins) => match bind_insert(db, ins, params)? {
            Insertion::Values(b) => b.returning,
            Insertion::Query {
                table,
                targets,
                query,
                returning,
            } => {
                let catalog = DbCatalog::new(db);
                let cx = PlanCx {
                    params,
                    ..PlanCx::of(&catalog)
                };
                let plan = QueryPlan::plan_in(query, &cx)?;
                query_targets(params, &plan, &targets, &db.schema(&table)?)?;
                returning
            }
        },
        ast::Statement::Update(u) if u.from.is_some() => joined::bind_update(db, u, params)?.2,
        ast::Statement::Update(u) => bind_update(db, u, params)?.returning,
        ast::Statement::Delete(d) if d.using.is_some() => joined::bind_delete(db, d, params)?.1,
        ast::Statement::Delete(d) => bind_delete(db, d, params)?.returning,
        _ => None,
    };
    Ok(returning.map(|r| r.columns).unwrap_or_default())
}

/// The schema of the table a statement writes; `verb` names the write in the error for
/// a view ("insert into", "update", "delete from", "truncate").
fn schema_of(
    db: &walden::Database,
    name: &str,
    at: &ast::ObjectName,
    verb: &str,
) -> SqlResult<Schema> {
    db.schema(name).map_err(|e| {
        if db.view(name).is_none() {
            return SqlError::from(e).at(at.span().start);
        }
        if verb == "truncate" {
            return SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!("\"{name}\" is not a table"),
            )
            .at(at.span().start);
        }
        crate::view::not_writable(verb, name).at(at.span().start)
    })
}

fn scope_of(table: &str, schema: &Schema) -> Scope {
    Scope::of_table(table, schema)
}

/// Can a value of type `from` be assigned to `col`? (Numbers convert, anything becomes
/// text; text does not silently become a number; date, timestamp and timestamptz
/// convert to each other, as PostgreSQL's assignment casts do: `CURRENT_TIMESTAMP`
/// goes into a timestamp column.)
fn check_assignable(
    from: SqlType,
    col: &Column,
    at: Option<sqlparser::tokenizer::Location>,
) -> SqlResult<()> {
    let to = SqlType::from_column(col.ty);
    let ok = from == to
        || from == SqlType::Null
        || to == SqlType::Text
        || (from.is_numeric() && to.is_numeric())
        || (from.is_datetime() && to.is_datetime());
    if ok {
        return Ok(());
    }
    let e = SqlError::new(
        code::DATATYPE_MISMATCH,
        format!(
            "column \"{}\" is of type {} but expression is of type {}",
            col.name,
            to.name(),
            from.name()
        ),
    )
    .with_hint("You will need to rewrite or cast the expression.");
    Err(match at {
        Some(l) => e.at(l),
        None => e,
    })
}

/// Binds a value expression for a column: literals take the column's type, and a
/// numeric converts to an integer column where its type is known (rounding halves away
/// from zero, where a float8 rounds them to even).
fn bind_for_column(b: &mut Binder, e: &ast::Expr, col: &Column) -> SqlResult<Expr> {
    let to = SqlType::from_column(col.ty);
    let x = coerce_literal(b.params, b.bind(e)?, to).map_err(|err| err.at(e.span().start))?;
    check_assignable(x.ty(), col, Some(e.span().start))?;
    if x.ty() == SqlType::Numeric && to.is_integer() {
        return Ok(Expr::Cast(Box::new(x), DeclaredType::plain(to)));
    }
    Ok(x)
}

/// True for the keyword DEFAULT standing as a value (VALUES, UPDATE's SET).
fn is_default(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(id)
        if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
}

/// A column's default bound for the column (its SQL text is parsed again: the catalog
/// keeps it as text); NULL for a column without one. A serial column's next value is
/// not an expression: callers fill it (`RowBuilder`).
pub(crate) fn column_default(col: &Column) -> SqlResult<Expr> {
    let Some(text) = &col.default else {
        return Ok(Expr::Const(Value::Null));
    };
    let parsed = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| {
            SqlError::new(
                code::DATA_CORRUPTED,
                format!(
                    "the stored default of column \"{}\" does not parse: {e}",
                    col.name
                ),
            )
        })?;
    bind_default(&parsed, col)
}

/// Binds a DEFAULT expression for `col`: no column may appear in it, nor a subquery.
pub(crate) fn bind_default(e: &ast::Expr, col: &Column) -> SqlResult<Expr> {
    let empty = Scope::default();
    bind_for_column(&mut Binder::plain(&empty), e, col).map_err(|err| {
        if err.code == code::UNDEFINED_COLUMN || err.code == code::UNDEFINED_TABLE {
            SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                "cannot use column reference in DEFAULT expression",
            )
        } else {
            err
        }
    })
}

/// The defaults of the columns a row is not given (`targets` are the ones it is):
/// those with a default, serial columns aside.
fn defaults_for(schema: &Schema, targets: &[usize]) -> SqlResult<Vec<(usize, Expr)>> {
    let mut out = Vec::new();
    for (i, c) in schema.columns.iter().enumerate() {
        if c.default.is_some() && !targets.contains(&i) {
            out.push((i, column_default(c)?));
        }
    }
    Ok(out)
}

/// Checks the foreign keys of rows a statement inserted into `table` (COPY FROM's,
/// gathered over its batches).
pub(crate) fn check_inserted_keys(
    cx: &mut Ctx,
    t: &mut Transaction,
    table: &str,
    rows: Vec<Row>,
) -> SqlResult<()> {
    let mut w = Written::new(table);
    w.inserted = rows;
    crate::fkeys::enforce::after(cx, t, w)
}

pub(crate) fn assign(v: Value, col: &Column) -> SqlResult<Value> {
    let from = value::type_of(&v);
    assign_from(v, from, col)
}

/// The most bytes of text one value may hold when stored: 2^30 - 1, as PostgreSQL's 1 GB
/// (the engine stores long values out of line, `Schema::check`).
const MAX_STORED_TEXT_BYTES: usize = walden::schema::MAX_VALUE_BYTES;

/// Converts a value of SQL type `from` for storing in `col`.
pub(crate) fn assign_from(v: Value, from: SqlType, col: &Column) -> SqlResult<Value> {
    let v = value::cast_from(v, from, &DeclaredType::of_column(col), false)?;
    match &v {
        Value::Text(s) if s.len() > MAX_STORED_TEXT_BYTES => Err(too_long(s.len(), col)),
        _ => Ok(v),
    }
}

fn too_long(len: usize, col: &Column) -> SqlError {
    SqlError::new(
        code::PROGRAM_LIMIT,
        format!(
            "value of {len} bytes is too long for column \"{}\"",
            col.name
        ),
    )
    .with_hint(format!(
        "Walden stores at most {MAX_STORED_TEXT_BYTES} bytes of text in one value."
    ))
}

/// For each target column, the type of value it takes as it is, with no conversion
/// (`assign_from` would hand it back unchanged): a column with no length, precision or
/// blank padding.
fn as_is(schema: &Schema, targets: &[usize]) -> Vec<Option<SqlType>> {
    targets
        .iter()
        .map(|&i| {
            let col = &schema.columns[i];
            let to = DeclaredType::of_column(col);
            (to.max_chars.is_none() && !to.blank_padded && to.ty != SqlType::Bpchar)
                .then_some(to.ty)
        })
        .collect()
}

pub(crate) fn row_text(row: &[Value]) -> String {
    let parts: Vec<String> = row
        .iter()
        .map(|v| match v {
            Value::Null => "null".to_string(),
            other => clip(&value::display(other)).into_owned(),
        })
        .collect();
    parts.join(", ")
}

/// NOT NULL, checked here so the error names the column as PostgreSQL does.
pub(crate) fn check_not_null(
    checks: &crate::checks::CheckCache,
    table: &str,
    schema: &Schema,
    row: &[Value],
) -> SqlResult<()> {
    for (c, v) in schema.columns.iter().zip(row) {
        if !c.nullable && matches!(v, Value::Null) {
            return Err(SqlError::new(
                code::NOT_NULL_VIOLATION,
                format!("null value in column \"{}\" of relation \"{table}\" violates not-null constraint", c.name),
            )
            .with_detail(format!("Failing row contains ({}).", row_text(row))));
        }
    }
    crate::checks::verify(checks, table, schema, row)
}

/// Builds a full row from the target columns' values: defaults (NULL, or the next serial
/// value), assignment conversions, NOT NULL.
pub(crate) struct RowBuilder<'a> {
    table: &'a str,
    schema: &'a Schema,
    targets: &'a [usize],
    /// The SQL types of the values, where their representation does not show it (a
    /// numeric is held as a float8); empty when it does.
    source_types: Vec<SqlType>,
    /// Columns not given that have a default, and the default.
    defaults: Vec<(usize, Expr)>,
    /// For each target, the type of value its column takes as it is (no length,
    /// precision or padding to apply), if any: such a value skips the conversion.
    as_is: Vec<Option<SqlType>>,
    returning: Option<&'a Returning>,
    /// The RETURNING rows of the rows built so far.
    returned: std::cell::RefCell<Vec<Vec<Value>>>,
    /// The rows built so far, kept when the table takes part in a foreign key.
    kept: Option<std::cell::RefCell<Vec<Row>>>,
}

/// A RETURNING list: expressions over the table's row.
#[derive(Debug)]
pub(crate) struct Returning {
    exprs: Vec<Expr>,
    columns: Vec<(String, SqlType)>,
}

impl Returning {
    fn bind(
        params: Params,
        items: Option<&[ast::SelectItem]>,
        table: &str,
        schema: &Schema,
        alias: Option<String>,
    ) -> SqlResult<Option<Returning>> {
        let Some(items) = items else {
            return Ok(None);
        };
        let mut scope = scope_of(table, schema);
        if let Some(a) = alias {
            scope.table = Some(a);
        }
        Returning::bind_in(params, items, &scope, &[]).map(Some)
    }

    /// Binds a RETURNING list over `scope`; `*` leaves out the columns `skip`.
    fn bind_in(
        params: Params,
        items: &[ast::SelectItem],
        scope: &Scope,
        skip: &[usize],
    ) -> SqlResult<Returning> {
        let mut r = Returning {
            exprs: Vec::new(),
            columns: Vec::new(),
        };
        for item in items {
            match item {
                ast::SelectItem::UnnamedExpr(e) => {
                    let x = Binder::plain(scope).with_params(params).bind(e)?;
                    r.columns.push((crate::bind::output_name(e), x.ty()));
                    r.exprs.push(x);
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    let x = Binder::plain(scope).with_params(params).bind(expr)?;
                    r.columns.push((ident_name(alias), x.ty()));
                    r.exprs.push(x);
                }
                ast::SelectItem::Wildcard(_) => {
                    for i in scope.star_columns() {
                        if skip.contains(&i) {
                            continue;
                        }
                        let (name, ty) = &scope.columns[i];
                        r.exprs.push(Expr::Column(i, *ty));
                        r.columns.push((name.clone(), *ty));
                    }
                }
                ast::SelectItem::QualifiedWildcard(
                    ast::SelectItemQualifiedWildcardKind::ObjectName(n),
                    _,
                ) => {
                    let name = object_name(n)?;
                    let Some(range) = scope.relation(&name) else {
                        return Err(SqlError::new(
                            code::UNDEFINED_TABLE,
                            format!("missing FROM-clause entry for table \"{name}\""),
                        ));
                    };
                    for i in range.filter(|i| !skip.contains(i)) {
                        let (name, ty) = &scope.columns[i];
                        r.exprs.push(Expr::Column(i, *ty));
                        r.columns.push((name.clone(), *ty));
                    }
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "the RETURNING item {}",
                        clip(&other.to_string())
                    )))
                }
            }
        }
        Ok(r)
    }

    fn project(&self, row: &[Value], cx: &mut crate::expr::EvalCtx) -> SqlResult<Vec<Value>> {
        self.exprs.iter().map(|e| e.eval(row, cx)).collect()
    }
}

/// A statement's output: its tag, and the RETURNING rows if it has a RETURNING list.
fn changed(tag: String, returning: Option<&Returning>, rows: Vec<Vec<Value>>) -> Output {
    let mut out = Output::tag(tag);
    if let Some(r) = returning {
        out.columns = r.columns.clone();
        out.rows = rows;
    }
    out
}

impl<'a> RowBuilder<'a> {
    /// A builder for rows whose `targets` the caller fills itself, already converted
    /// (COPY FROM): `complete` adds the rest. No RETURNING; the rows are kept for the
    /// table's foreign keys as an INSERT keeps them (`take_kept`).
    pub(crate) fn filled_by_caller(
        cx: &mut Ctx,
        table: &'a str,
        schema: &'a Schema,
        targets: &'a [usize],
    ) -> SqlResult<RowBuilder<'a>> {
        Ok(RowBuilder {
            table,
            schema,
            targets,
            source_types: Vec::new(),
            defaults: defaults_for(schema, targets)?,
            as_is: as_is(schema, targets),
            returning: None,
            returned: Default::default(),
            kept: keeps(cx, table)?,
        })
    }

    /// The rows built so far that the table's foreign keys need checked (none when it
    /// has none).
    pub(crate) fn take_kept(&mut self) -> Option<Vec<Row>> {
        self.kept.as_mut().map(|k| std::mem::take(k.get_mut()))
    }

    fn build(
        &self,
        cx: &mut Ctx,
        values: impl IntoIterator<Item = Value>,
        row: &mut Vec<Value>,
    ) -> SqlResult<()> {
        let width = self.schema.columns.len();
        // Every column is set below when the targets are all of them (they are distinct).
        if row.len() != width || self.targets.len() != width {
            row.clear();
            row.resize(width, Value::Null);
        }
        for (k, (&i, v)) in self.targets.iter().zip(values).enumerate() {
            let from = self.source_types.get(k).copied();
            let as_is = self.as_is[k].filter(|&ty| {
                from != Some(SqlType::Bpchar)
                    && (matches!(v, Value::Null) || value::type_of(&v) == ty)
            });
            row[i] = match (as_is, v) {
                (Some(_), Value::Text(s)) if s.len() > MAX_STORED_TEXT_BYTES => {
                    return Err(too_long(s.len(), &self.schema.columns[i]))
                }
                (Some(_), v) => v,
                (None, v) => {
                    let from = from.unwrap_or_else(|| value::type_of(&v));
                    assign_from(v, from, &self.schema.columns[i])?
                }
            };
        }
        self.complete(cx, row)
    }

    /// Completes a row whose target columns are set: the other columns' defaults and
    /// serial values, then NOT NULL and CHECK; keeps it for RETURNING and foreign keys.
    pub(crate) fn complete(&self, cx: &mut Ctx, row: &mut [Value]) -> SqlResult<()> {
        for (i, e) in &self.defaults {
            let v = e.eval(&[], &mut cx.eval_ctx())?;
            row[*i] = assign(v, &self.schema.columns[*i])?;
        }
        check_not_null(cx.checks, self.table, self.schema, row)?;
        if let Some(r) = self.returning {
            let out = r.project(row, &mut cx.eval_ctx())?;
            cx.guard.charge(row_bytes(&out) + 24)?;
            self.returned.borrow_mut().push(out);
        }
        if let Some(k) = &self.kept {
            cx.guard.charge(row_bytes(row) + 24)?;
            k.borrow_mut().push(row.to_vec());
        }
        Ok(())
    }

    /// Checks the foreign keys of the rows built (and inserted), if it kept them.
    fn after(self, cx: &mut Ctx, t: &mut Transaction) -> SqlResult<Vec<Vec<Value>>> {
        if let Some(k) = self.kept {
            let mut w = Written::new(self.table);
            w.inserted = k.into_inner();
            crate::fkeys::enforce::after(cx, t, w)?;
        }
        Ok(self.returned.into_inner())
    }
}

fn target_columns(table: &str, schema: &Schema, cols: &[ast::ObjectName]) -> SqlResult<Vec<usize>> {
    if cols.is_empty() {
        return Ok((0..schema.columns.len()).collect());
    }
    let mut out = Vec::new();
    for c in cols {
        let name = object_name(c)?;
        let Some(i) = schema.columns.iter().position(|x| x.name == name) else {
            return Err(SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("column \"{name}\" of relation \"{table}\" does not exist"),
            )
            .at(c.span().start));
        };
        if out.contains(&i) {
            return Err(SqlError::new(
                code::DUPLICATE_COLUMN,
                format!("column \"{name}\" specified more than once"),
            )
            .at(c.span().start));
        }
        out.push(i);
    }
    Ok(out)
}

pub(crate) fn insert(cx: &mut Ctx, t: &mut Transaction, ins: &ast::Insert) -> SqlResult<Output> {
    let Some(run) = cx.prepared else {
        return insert_parsed(cx, t, ins);
    };
    // A prepared INSERT: its cached plan, or its values written in.
    if let Some(Plan::Insert(plan)) = run.plan(cx.db) {
        return plan.run(cx, t, Some(run.values()));
    }
    match &*run.written_in() {
        ast::Statement::Insert(ins) => insert_parsed(cx, t, ins),
        _ => Err(SqlError::new(code::INTERNAL, "a prepared insert changed")),
    }
}

fn insert_parsed(cx: &mut Ctx, t: &mut Transaction, ins: &ast::Insert) -> SqlResult<Output> {
    if ins.on.is_some() {
        return upsert::run(cx, t, ins);
    }
    match bind_insert(cx.db, ins, Params::Absent)? {
        Insertion::Values(b) => b.run(cx, t, None),
        Insertion::Query {
            table,
            targets,
            query,
            returning,
        } => {
            let plan = QueryPlan::plan(query, &DbCatalog::new(cx.db))?;
            let (n, rows) = insert_plan(cx, t, &table, &plan, Some(targets), returning.as_ref())?;
            Ok(changed(format!("INSERT 0 {n}"), returning.as_ref(), rows))
        }
    }
}

/// Where an INSERT's rows come from, bound against its table.
enum Insertion<'q> {
    /// VALUES rows (or DEFAULT VALUES: one row of defaults).
    Values(BoundInsert),
    /// A query's rows, into `targets`.
    Query {
        table: String,
        targets: Vec<usize>,
        query: &'q ast::Query,
        returning: Option<Returning>,
    },
}

fn bind_insert<'q>(
    db: &walden::Database,
    ins: &'q ast::Insert,
    params: Params,
) -> SqlResult<Insertion<'q>> {
    let TableObject::TableName(tname) = &ins.table else {
        return Err(SqlError::unsupported("INSERT INTO a table function"));
    };
    let table = object_name(tname)?;
    let schema = schema_of(db, &table, tname, "insert into")?;
    let targets = target_columns(&table, &schema, &ins.columns)?;
    let alias = ins.table_alias.as_ref().map(|a| ident_name(&a.alias));
    let returning = Returning::bind(params, ins.returning.as_deref(), &table, &schema, alias)?;
    let always = crate::sequences::owned::always_columns(db, &table);
    let (targets, rows) = match ins.source.as_deref() {
        None => bind_values(params, &schema, targets, false, &[&[]])?,
        Some(q) => match q.body.as_ref() {
            SetExpr::Values(v) if q.order_by.is_none() && q.limit_clause.is_none() => {
                let rows: Vec<&[ast::Expr]> = v.rows.iter().map(|r| &r.content[..]).collect();
                bind_values(params, &schema, targets, !ins.columns.is_empty(), &rows)?
            }
            _ => {
                generated_always(&schema, &targets, &always)?;
                return Ok(Insertion::Query {
                    table,
                    targets,
                    query: q,
                    returning,
                });
            }
        },
    };
    generated_always(&schema, &targets, &always)?;
    Ok(Insertion::Values(BoundInsert {
        table,
        schema,
        targets,
        rows,
        returning,
    }))
}

/// PostgreSQL's refusal of a value for a GENERATED ALWAYS identity column (`always`)
/// among an INSERT's targets (a column given DEFAULT in every row is no target).
fn generated_always(schema: &Schema, targets: &[usize], always: &[usize]) -> SqlResult<()> {
    match targets.iter().find(|i| always.contains(i)) {
        None => Ok(()),
        Some(&i) => {
            let name = &schema.columns[i].name;
            Err(SqlError::new(
                code::GENERATED_ALWAYS,
                format!("cannot insert a non-DEFAULT value into column \"{name}\""),
            )
            .with_detail(format!(
                "Column \"{name}\" is an identity column defined as GENERATED ALWAYS."
            ))
            .with_hint("Use OVERRIDING SYSTEM VALUE to override."))
        }
    }
}

/// Binds VALUES rows for `targets` (cut to the rows' width). Without a column list
/// (`listed` false), rows shorter than the table fill its first columns and the rest get
/// their defaults, as in PostgreSQL.
fn bind_values(
    params: Params,
    schema: &Schema,
    mut targets: Vec<usize>,
    listed: bool,
    rows: &[&[ast::Expr]],
) -> SqlResult<(Vec<usize>, Vec<Vec<Expr>>)> {
    let width = rows.first().map_or(0, |r| r.len());
    if let Some(r) = rows.iter().find(|r| r.len() != width) {
        let e = SqlError::syntax("VALUES lists must all be the same length");
        return Err(match r.first() {
            Some(x) => e.at(x.span().start),
            None => e,
        });
    }
    if width > targets.len() {
        let e = SqlError::syntax("INSERT has more expressions than target columns");
        return Err(match rows.first().and_then(|r| r.get(targets.len())) {
            Some(x) => e.at(x.span().start),
            None => e,
        });
    }
    if width < targets.len() && listed {
        return Err(SqlError::syntax(
            "INSERT has more target columns than expressions",
        ));
    }
    targets.truncate(width);
    // A column given DEFAULT in every row is left out (its default fills it, as for a
    // column not listed); DEFAULT in some rows is the column's default in those.
    let keep: Vec<bool> = (0..width)
        .map(|k| rows.is_empty() || !rows.iter().all(|r| is_default(&r[k])))
        .collect();
    let empty = Scope::default();
    let mut bound = Vec::with_capacity(rows.len());
    for r in rows {
        let mut exprs = Vec::with_capacity(r.len());
        for ((e, &i), _) in r.iter().zip(&targets).zip(&keep).filter(|(_, k)| **k) {
            let col = &schema.columns[i];
            exprs.push(if is_default(e) {
                column_default(col)?
            } else {
                bind_for_column(&mut Binder::plain(&empty).with_params(params), e, col)?
            });
        }
        bound.push(exprs);
    }
    let targets = targets
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(i, _)| i)
        .collect();
    Ok((targets, bound))
}

/// Inserts rows of bound expressions (one per target column), each given as the
/// expressions or an error met in making them.
fn insert_bound<E>(
    cx: &mut Ctx,
    t: &mut Transaction,
    table: &str,
    schema: &Schema,
    targets: &[usize],
    rows: impl Iterator<Item = SqlResult<E>>,
    returning: Option<&Returning>,
) -> SqlResult<(u64, Vec<Vec<Value>>)>
where
    E: AsRef<[Expr]>,
{
    let builder = RowBuilder {
        table,
        schema,
        targets,
        source_types: Vec::new(),
        defaults: defaults_for(schema, targets)?,
        as_is: as_is(schema, targets),
        returning,
        returned: Default::default(),
        kept: keeps(cx, table)?,
    };
    let mut next = rows;
    let mut failed = None;
    let n = t.insert_with(table, |row| {
        let Some(exprs) = next.next() else {
            return false;
        };
        let r = (|| {
            cx.guard.check()?;
            let exprs = exprs?;
            let exprs = exprs.as_ref();
            let mut vals = Vec::with_capacity(exprs.len());
            for e in exprs {
                vals.push(e.eval(&[], &mut cx.eval_ctx())?);
            }
            builder.build(cx, vals, row)
        })();
        match r {
            Ok(()) => true,
            Err(e) => {
                failed = Some(e);
                false
            }
        }
    })?;
    match failed {
        Some(e) => Err(e),
        None => Ok((n, builder.after(cx, t)?)),
    }
}

/// Whether an insert into `table` keeps its rows (for its foreign keys).
pub(crate) fn keeps(cx: &Ctx, table: &str) -> SqlResult<Option<std::cell::RefCell<Vec<Row>>>> {
    Ok(crate::fkeys::enforce::watches(cx, table)?.then(Default::default))
}

/// An `INSERT ... VALUES` bound against its table; a prepared one keeps it with its
/// parameters unfilled.
#[derive(Debug)]
pub(crate) struct BoundInsert {
    table: String,
    schema: Schema,
    targets: Vec<usize>,
    rows: Vec<Vec<Expr>>,
    returning: Option<Returning>,
}

impl BoundInsert {
    /// Binds a prepared `ins` with its parameters of `types`; None when it does not bind
    /// that way (its rows come from a query, or a parameter's type must come from its
    /// column, as a text value for a uuid column does): the statement is then run with
    /// its values written in, which also reports any error.
    pub fn cached(ins: &ast::Insert, types: &[SqlType], db: &walden::Database) -> Option<Self> {
        if ins.on.is_some() {
            return None;
        }
        match bind_insert(db, ins, Params::Typed(types)) {
            Ok(Insertion::Values(b)) => Some(b),
            _ => None,
        }
    }

    /// Inserts the rows, with these values for their parameters if they have any.
    pub fn run(
        &self,
        cx: &mut Ctx,
        t: &mut Transaction,
        values: Option<&[Value]>,
    ) -> SqlResult<Output> {
        let (table, schema, targets) = (&self.table, &self.schema, &self.targets);
        let ret = self.returning.as_ref();
        let (n, rows) = match values {
            None => insert_bound(cx, t, table, schema, targets, self.rows.iter().map(Ok), ret),
            Some(values) => {
                let rows = self.rows.iter().map(|r| {
                    r.iter()
                        .map(|e| e.clone().with_params(values))
                        .collect::<SqlResult<Vec<Expr>>>()
                });
                insert_bound(cx, t, table, schema, targets, rows, ret)
            }
        }?;
        Ok(changed(format!("INSERT 0 {n}"), ret, rows))
    }
}

/// The target columns a query's columns go into (the first of `targets`), each checked
/// to take its column's type. A column of unknown type (a string literal, or a
/// parameter being inferred) takes its target's type, as PostgreSQL's INSERT ... SELECT
/// leaves such columns for the target to type: its text is read as that type.
fn query_targets<'t>(
    params: Params,
    query: &QueryPlan,
    targets: &'t [usize],
    schema: &Schema,
) -> SqlResult<&'t [usize]> {
    let columns = query.columns();
    if columns.len() > targets.len() {
        return Err(SqlError::syntax(
            "INSERT has more expressions than target columns",
        ));
    }
    let targets = &targets[..columns.len()];
    for (k, ((_, ty), &i)) in columns.iter().zip(targets).enumerate() {
        let col = &schema.columns[i];
        match query.unknown_output(params, k) {
            Some(e) => {
                coerce_literal(params, e.clone(), SqlType::from_column(col.ty))?;
            }
            None => check_assignable(*ty, col, None)?,
        }
    }
    Ok(targets)
}

/// Inserts the rows of a query. A query over generate_series (or nothing) that needs no
/// sort or grouping streams into the table; others are run first.
pub(crate) fn insert_plan(
    cx: &mut Ctx,
    t: &mut Transaction,
    table: &str,
    query: &QueryPlan,
    targets: Option<Vec<usize>>,
    returning: Option<&Returning>,
) -> SqlResult<(u64, Vec<Vec<Value>>)> {
    let schema = cx.db.schema(table)?;
    let columns = query.columns();
    let targets = targets.unwrap_or_else(|| (0..schema.columns.len()).collect());
    let targets = query_targets(Params::Absent, query, &targets, &schema)?;
    let builder = RowBuilder {
        table,
        schema: &schema,
        targets,
        source_types: columns.iter().map(|(_, ty)| *ty).collect(),
        defaults: defaults_for(&schema, targets)?,
        as_is: as_is(&schema, targets),
        returning,
        returned: Default::default(),
        kept: keeps(cx, table)?,
    };
    let mut failed = None;
    let streaming = query.as_select().filter(|p| {
        p.is_streaming()
            && matches!(p.source, Source::Nothing | Source::Series { .. })
            && !p.has_subquery()
    });
    let n = if let Some(plan) = streaming {
        let mut series = SeriesIter::new(&plan.source);
        let mut nothing_done = !matches!(plan.source, Source::Nothing);
        let mut skipped = 0u64;
        let mut produced = 0u64;
        // The series' value and the projected values, reused row after row.
        let mut input: [Value; 1] = [Value::Null];
        let mut vals = Vec::with_capacity(plan.columns.len());
        t.insert_with(table, |row| loop {
            if plan.limit().is_some_and(|l| produced >= l) {
                return false;
            }
            if let Err(e) = cx.guard.check() {
                failed = Some(e);
                return false;
            }
            let input: &[Value] = match &plan.source {
                Source::Nothing if !nothing_done => {
                    nothing_done = true;
                    &[]
                }
                Source::Series { .. } => match series.next() {
                    Some(v) => {
                        input[0] = v;
                        &input
                    }
                    None => return false,
                },
                _ => return false,
            };
            let r = plan
                .project_into(input, &mut cx.eval_ctx(), &mut vals)
                .and_then(|kept| match kept {
                    false => Ok(false),
                    true if skipped < plan.offset() => {
                        skipped += 1;
                        Ok(false)
                    }
                    true => builder.build(cx, vals.drain(..), row).map(|()| true),
                });
            match r {
                Ok(true) => {
                    produced += 1;
                    return true;
                }
                Ok(false) => continue,
                Err(e) => {
                    failed = Some(e);
                    return false;
                }
            }
        })?
    } else {
        // The query's rows in batches, read with the snapshot and command of the
        // statement's start (so never the rows it inserts), each batch inserted before
        // the next is read: a query that streams is never held whole.
        let held = t.hold_snapshot()?;
        let r = insert_batches(cx, t, &held, query, table, &builder, &mut failed);
        t.release_snapshot(held);
        r?
    };
    match failed {
        Some(e) => Err(e),
        None => Ok((n, builder.after(cx, t)?)),
    }
}

/// At most this many bytes of a query's rows are read before they are inserted.
const INSERT_BATCH_BYTES: u64 = 4 << 20;

/// `insert_plan`'s rows of a query that does not stream into the table row by row: read
/// from the executor's stream a batch at a time with `held`, each batch inserted in a
/// command of its own. Returns the rows inserted; a row that fails leaves its error in
/// `failed`.
fn insert_batches(
    cx: &mut Ctx,
    t: &mut Transaction,
    held: &walden::HeldSnapshot,
    query: &QueryPlan,
    table: &str,
    builder: &RowBuilder,
    failed: &mut Option<SqlError>,
) -> SqlResult<u64> {
    let guard = cx.guard;
    let mut stream: Option<crate::exec::RowStream> = None;
    let mut total = 0u64;
    loop {
        let mut batch = Vec::new();
        let done = {
            let reader = t.held_reader(held)?;
            crate::exec::with_run(Some(reader), cx.rng, guard, |ecx| -> SqlResult<bool> {
                let s = match &mut stream {
                    Some(s) => s,
                    None => stream.insert(crate::exec::RowStream::open(query, ecx)?),
                };
                let mut bytes = 0u64;
                while bytes < INSERT_BATCH_BYTES {
                    let Some(row) = s.next(ecx)? else {
                        return Ok(true);
                    };
                    bytes += crate::guard::row_bytes(&row) + 24;
                    batch.push(row);
                }
                Ok(false)
            })?
        };
        if !batch.is_empty() {
            let mut it = batch.into_iter();
            total += t.insert_with(table, |row| {
                let Some(vals) = it.next() else { return false };
                match guard.check().and_then(|()| builder.build(cx, vals, row)) {
                    Ok(()) => true,
                    Err(e) => {
                        *failed = Some(e);
                        false
                    }
                }
            })?;
        }
        if done || failed.is_some() {
            return Ok(total);
        }
    }
}

fn alias_of(twj: &ast::TableWithJoins) -> Option<String> {
    match &twj.relation {
        TableFactor::Table { alias: Some(a), .. } => Some(ident_name(&a.name)),
        _ => None,
    }
}

fn single_table(
    twj: &ast::TableWithJoins,
) -> SqlResult<(String, &ast::ObjectName, Option<String>)> {
    if !twj.joins.is_empty() {
        return Err(SqlError::unsupported("JOIN"));
    }
    crate::bind::check_table_reference(&twj.relation)?;
    match &twj.relation {
        TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } => Ok((
            object_name(name)?,
            name,
            alias.as_ref().map(|a| ident_name(&a.name)),
        )),
        other => Err(
            SqlError::unsupported(format!("{} as a target", clip(&other.to_string())))
                .at(other.span().start),
        ),
    }
}

pub(crate) fn update(cx: &mut Ctx, t: &mut Transaction, u: &ast::Update) -> SqlResult<Output> {
    if cx.prepared.is_some() {
        return prepared_modify(cx, t);
    }
    update_parsed(cx, t, u)
}

pub(crate) fn delete(cx: &mut Ctx, t: &mut Transaction, d: &ast::Delete) -> SqlResult<Output> {
    if cx.prepared.is_some() {
        return prepared_modify(cx, t);
    }
    delete_parsed(cx, t, d)
}

fn update_parsed(cx: &mut Ctx, t: &mut Transaction, u: &ast::Update) -> SqlResult<Output> {
    if u.from.is_some() {
        return joined::update(cx, t, u);
    }
    bind_update(cx.db, u, Params::Absent)?.run(cx, t, None)
}

fn delete_parsed(cx: &mut Ctx, t: &mut Transaction, d: &ast::Delete) -> SqlResult<Output> {
    if d.using.is_some() {
        return joined::delete(cx, t, d);
    }
    bind_delete(cx.db, d, Params::Absent)?.run(cx, t, None)
}

/// A prepared UPDATE or DELETE: its cached plan, or its values written in.
fn prepared_modify(cx: &mut Ctx, t: &mut Transaction) -> SqlResult<Output> {
    let Some(run) = cx.prepared else {
        return Err(SqlError::new(code::INTERNAL, "no prepared statement runs"));
    };
    if let Some(Plan::Modify(plan)) = run.plan(cx.db) {
        return plan.run(cx, t, Some(run.values()));
    }
    let stmt = run.written_in();
    match &*stmt {
        ast::Statement::Update(u) => update_parsed(cx, t, u),
        ast::Statement::Delete(d) => delete_parsed(cx, t, d),
        _ => Err(SqlError::new(
            code::INTERNAL,
            "a prepared statement changed",
        )),
    }
}

/// An UPDATE or DELETE bound against its table; a prepared one keeps it with its
/// parameters unfilled.
#[derive(Debug)]
pub(crate) struct BoundModify {
    table: String,
    schema: Schema,
    /// UPDATE's assignments (column, value); None for a DELETE.
    sets: Option<Vec<(usize, Expr)>>,
    filter: Option<Expr>,
    returning: Option<Returning>,
}

impl BoundModify {
    /// Binds a prepared UPDATE or DELETE with its parameters of `types`; None when it
    /// does not bind that way (it is then run with its values written in, which also
    /// reports any error).
    pub fn cached(
        stmt: &ast::Statement,
        types: &[SqlType],
        db: &walden::Database,
    ) -> Option<BoundModify> {
        let params = Params::Typed(types);
        match stmt {
            ast::Statement::Update(u) => bind_update(db, u, params),
            ast::Statement::Delete(d) => bind_delete(db, d, params),
            _ => Err(SqlError::new(code::INTERNAL, "not an UPDATE or DELETE")),
        }
        .ok()
    }

    /// The assignments and the WHERE clause with `values` for their parameters.
    #[allow(clippy::type_complexity)]
    fn filled(&self, values: &[Value]) -> SqlResult<(Option<Vec<(usize, Expr)>>, Option<Expr>)> {
        let fill = |e: &Expr| e.clone().with_params(values);
        let sets = self
            .sets
            .as_ref()
            .map(|sets| sets.iter().map(|(i, e)| fill(e).map(|x| (*i, x))).collect())
            .transpose()?;
        let filter = self.filter.as_ref().map(fill).transpose()?;
        Ok((sets, filter))
    }

    /// Runs it, with these values for its parameters if it has any.
    pub fn run(
        &self,
        cx: &mut Ctx,
        t: &mut Transaction,
        values: Option<&[Value]>,
    ) -> SqlResult<Output> {
        let filled = values.map(|v| self.filled(v)).transpose()?;
        let (sets, filter) = match &filled {
            Some((sets, filter)) => (sets.as_deref(), filter.as_ref()),
            None => (self.sets.as_deref(), self.filter.as_ref()),
        };
        let (table, schema) = (&self.table, &self.schema);
        let guard = cx.guard;
        let checks = cx.checks;
        let returning = self.returning.as_ref();
        let mut notes = ModifyNotes {
            returning,
            guard,
            returned: Noted::default(),
            fk: crate::fkeys::enforce::watches(cx, table)?.then(Noted::default),
        };
        let reads = filter.is_some_and(Expr::has_subquery)
            || sets.is_some_and(|s| s.iter().any(|(_, e)| e.has_subquery()));
        let first = if reads {
            // Subqueries read tables as the rows are judged: every row is judged first,
            // in one command's snapshot, then the changes are made.
            let mut actions = Vec::new();
            {
                let reader = t.reader()?;
                let rc = RunCx::new(Some(reader), guard, &Subqueries);
                let mut ecx = crate::expr::EvalCtx {
                    rng: &mut *cx.rng,
                    outer: &[],
                    run: Some(&rc),
                    now_micros: guard.now_micros(),
                    settings: guard.settings(),
                    sequences: guard.sequences(),
                    guard: Some(guard),
                    folding: false,
                };
                let mut failed = None;
                let mut judge = |id: walden::RowId, row: walden::Row| {
                    let r = guard.check().and_then(|()| {
                        let a = row_action(checks, &row, sets, filter, table, schema, &mut ecx)?;
                        notes.give_back(id, &row, &a, &mut ecx)?;
                        Ok(a)
                    });
                    match r {
                        Ok(RowAction::Keep) => true,
                        Ok(action) => {
                            let bytes = match &action {
                                RowAction::Update(new) => row_bytes(new),
                                _ => 0,
                            } + 32;
                            match guard.charge(bytes) {
                                Ok(()) => {
                                    actions.push((id, action));
                                    true
                                }
                                Err(e) => {
                                    failed = Some(e);
                                    false
                                }
                            }
                        }
                        Err(e) => {
                            failed = Some(e);
                            false
                        }
                    }
                };
                match access_for(cx.db, table, schema, filter) {
                    Access::Scan => reader.scan_with(table, &mut judge)?,
                    Access::Index(r) => read_index(&reader, &r, 0, (&[], &[]), &mut judge)?,
                }
                if let Some(e) = failed {
                    return Err(e);
                }
            }
            t.modify_rows(table, actions)?
        } else {
            let mut failed = None;
            // A DELETE that returns nothing and has no foreign key to tell needs of a
            // row only what its WHERE clause reads; other statements need rows that
            // pass it whole.
            let whole = sets.is_some() || notes.returning.is_some() || notes.fk.is_some();
            let judged = Judged::of(schema, filter, whole);
            // The whole rows of rows that pass, decoded into one vector.
            let mut full = Vec::new();
            let first = modify(cx.db, guard, t, table, schema, &judged, |id, some, rest| {
                let mut ecx = crate::expr::EvalCtx::of(&mut *cx.rng, guard);
                let r = guard.check().and_then(|()| {
                    if let Some(f) = filter {
                        if !f.test(some, &mut ecx)? {
                            return Ok(RowAction::Keep);
                        }
                    }
                    let row = match rest {
                        Some(decode) if whole => {
                            decode(&mut full)?;
                            &full
                        }
                        _ => some,
                    };
                    let a = row_action(checks, row, sets, None, table, schema, &mut ecx)?;
                    notes.give_back(id, row, &a, &mut ecx)?;
                    Ok(a)
                });
                r.unwrap_or_else(|e| {
                    failed = Some(e);
                    RowAction::Stop
                })
            })?;
            if let Some(e) = failed {
                return Err(e);
            }
            first
        };
        let mut n = first.count;
        if !first.changed.is_empty() {
            notes.forget(&first.changed);
            let rng = &mut *cx.rng;
            let (more, applied) =
                recheck::judge_again(t, table, first.changed, &mut |t, _, newest| {
                    guard.check()?;
                    let reader = reads.then(|| t.command_reader()).transpose()?;
                    let rc = RunCx::new(reader, guard, &Subqueries);
                    let mut ecx = crate::expr::EvalCtx {
                        rng: &mut *rng,
                        outer: &[],
                        run: reads.then_some(&rc),
                        now_micros: guard.now_micros(),
                        settings: guard.settings(),
                        sequences: guard.sequences(),
                        guard: Some(guard),
                        folding: false,
                    };
                    row_action(checks, &newest.row, sets, filter, table, schema, &mut ecx)
                })?;
            n += more;
            let rc = RunCx::new(
                reads.then(|| t.command_reader()).transpose()?,
                guard,
                &Subqueries,
            );
            let mut ecx = crate::expr::EvalCtx {
                rng: &mut *cx.rng,
                outer: &[],
                run: reads.then_some(&rc),
                now_micros: guard.now_micros(),
                settings: guard.settings(),
                sequences: guard.sequences(),
                guard: Some(guard),
                folding: false,
            };
            for (id, row, action) in applied {
                notes.give_back(id, &row, &action, &mut ecx)?;
            }
        }
        let ModifyNotes { returned, fk, .. } = notes;
        if let Some(fk) = fk {
            let mut w = Written::new(table);
            for (row, action) in fk.into_items() {
                w.take(row, action);
            }
            crate::fkeys::enforce::after(cx, t, w)?;
        }
        let verb = if sets.is_some() { "UPDATE" } else { "DELETE" };
        Ok(changed(
            format!("{verb} {n}"),
            returning,
            returned.into_items().collect(),
        ))
    }
}

/// What an UPDATE or DELETE notes of each row it changes — its RETURNING row, and the
/// change for the table's foreign keys — under the id of the row judged: READ
/// COMMITTED may leave a row and judge its newest version again (`dml/recheck.rs`).
struct ModifyNotes<'r> {
    returning: Option<&'r Returning>,
    guard: &'r Guard,
    returned: Noted<Vec<Value>>,
    /// None: no foreign key involves the table.
    fk: Option<Noted<(Row, RowAction)>>,
}

impl ModifyNotes<'_> {
    fn give_back(
        &mut self,
        id: walden::RowId,
        row: &[Value],
        action: &RowAction,
        ecx: &mut crate::expr::EvalCtx,
    ) -> SqlResult<()> {
        if let Some(fk) = self.fk.as_mut() {
            self.guard.charge(row_bytes(row) * 2 + 32)?;
            fk.push(id, (row.to_vec(), action.clone()));
        }
        let Some(r) = self.returning else {
            return Ok(());
        };
        let out = match action {
            RowAction::Update(new) => r.project(new, ecx)?,
            RowAction::Delete => r.project(row, ecx)?,
            _ => return Ok(()),
        };
        self.guard.charge(row_bytes(&out) + 24)?;
        self.returned.push(id, out);
        Ok(())
    }

    /// Takes back the notes of rows the engine left.
    fn forget(&mut self, left: &[walden::RowId]) {
        self.returned.forget(left);
        if let Some(fk) = self.fk.as_mut() {
            fk.forget(left);
        }
    }
}

/// What an UPDATE or DELETE does with one row.
fn row_action(
    checks: &crate::checks::CheckCache,
    row: &[Value],
    sets: Option<&[(usize, Expr)]>,
    filter: Option<&Expr>,
    table: &str,
    schema: &Schema,
    ecx: &mut crate::expr::EvalCtx,
) -> SqlResult<RowAction> {
    if let Some(f) = filter {
        if !f.test(row, ecx)? {
            return Ok(RowAction::Keep);
        }
    }
    let Some(sets) = sets else {
        return Ok(RowAction::Delete);
    };
    let mut new = row.to_vec();
    for (i, e) in sets {
        new[*i] = assign(e.eval(row, ecx)?, &schema.columns[*i])?;
    }
    check_not_null(checks, table, schema, &new)?;
    Ok(RowAction::Update(new))
}

/// A binder for an UPDATE's or DELETE's expressions, where subqueries may read tables.
fn modify_binder<'a>(scope: &'a Scope, cx: &'a PlanCx<'a>) -> Binder<'a> {
    Binder::in_query(scope, cx)
}

/// SET's assignments to columns of `table`: each column and its value, bound by `bind`
/// (DEFAULT is the column's default).
fn bind_assignments(
    db: &walden::Database,
    assignments: &[ast::Assignment],
    table: &str,
    schema: &Schema,
    bind: &mut dyn FnMut(&ast::Expr, &Column) -> SqlResult<Expr>,
) -> SqlResult<Vec<(usize, Expr)>> {
    let mut sets: Vec<(usize, Expr)> = Vec::new();
    let always = crate::sequences::owned::always_columns(db, table);
    for a in assignments {
        let AssignmentTarget::ColumnName(cname) = &a.target else {
            return Err(SqlError::unsupported("assigning a tuple of columns"));
        };
        // SET may not qualify the column with the table name (PostgreSQL allows it only
        // as a composite field), so take the last part.
        let col_name = cname
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(ident_name)
            .unwrap_or_default();
        let Some(i) = schema.columns.iter().position(|c| c.name == col_name) else {
            return Err(SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("column \"{col_name}\" of relation \"{table}\" does not exist"),
            )
            .at(cname.span().start));
        };
        if sets.iter().any(|(j, _)| *j == i) {
            return Err(SqlError::syntax(format!(
                "multiple assignments to same column \"{col_name}\""
            )));
        }
        let col = &schema.columns[i];
        let value = if !is_default(&a.value) {
            if always.contains(&i) {
                return Err(SqlError::new(
                    code::GENERATED_ALWAYS,
                    format!("column \"{col_name}\" can only be updated to DEFAULT"),
                )
                .with_detail(format!(
                    "Column \"{col_name}\" is an identity column defined as GENERATED ALWAYS."
                )));
            }
            bind(&a.value, col)?
        } else {
            column_default(col)?
        };
        sets.push((i, value));
    }
    Ok(sets)
}

fn bind_update(db: &walden::Database, u: &ast::Update, params: Params) -> SqlResult<BoundModify> {
    if u.from.is_some() {
        return Err(SqlError::unsupported("a cached UPDATE ... FROM"));
    }
    let (table, tname, alias) = single_table(&u.table)?;
    let schema = schema_of(db, &table, tname, "update")?;
    let mut scope = scope_of(&table, &schema);
    if let Some(a) = alias {
        scope.table = Some(a);
    }
    let catalog = DbCatalog::new(db);
    let cx = PlanCx {
        params,
        ..PlanCx::of(&catalog)
    };
    let sets = bind_assignments(db, &u.assignments, &table, &schema, &mut |e, col| {
        bind_for_column(&mut modify_binder(&scope, &cx), e, col)
    })?;
    let filter = match &u.selection {
        Some(w) => Some(bind_condition(&mut modify_binder(&scope, &cx), w, "WHERE")?),
        None => None,
    };
    let returning = Returning::bind(
        params,
        u.returning.as_deref(),
        &table,
        &schema,
        alias_of(&u.table),
    )?;
    Ok(BoundModify {
        table,
        schema,
        sets: Some(sets),
        filter,
        returning,
    })
}

fn bind_delete(db: &walden::Database, d: &ast::Delete, params: Params) -> SqlResult<BoundModify> {
    if d.using.is_some() {
        return Err(SqlError::unsupported("a cached DELETE ... USING"));
    }
    let from = match &d.from {
        FromTable::WithFromKeyword(v) | FromTable::WithoutKeyword(v) => v,
    };
    let [twj] = from.as_slice() else {
        return Err(SqlError::unsupported("DELETE from several tables"));
    };
    let (table, tname, alias) = single_table(twj)?;
    let schema = schema_of(db, &table, tname, "delete from")?;
    let mut scope = scope_of(&table, &schema);
    if let Some(a) = alias {
        scope.table = Some(a);
    }
    let catalog = DbCatalog::new(db);
    let cx = PlanCx {
        params,
        ..PlanCx::of(&catalog)
    };
    let filter = match &d.selection {
        Some(w) => Some(bind_condition(&mut modify_binder(&scope, &cx), w, "WHERE")?),
        None => None,
    };
    let returning = Returning::bind(
        params,
        d.returning.as_deref(),
        &table,
        &schema,
        alias_of(twj),
    )?;
    Ok(BoundModify {
        table,
        schema,
        sets: None,
        filter,
        returning,
    })
}

/// EXPLAIN of a SELECT, INSERT, UPDATE or DELETE: how it reads its table (a scan, or
/// which index over which conditions), in PostgreSQL's node names.
pub(crate) fn explain(
    cx: &mut Ctx,
    t: &mut Transaction,
    stmt: &ast::Statement,
    analyze: bool,
    costs: bool,
) -> SqlResult<Output> {
    if analyze {
        let ast::Statement::Query(q) = stmt else {
            return Err(SqlError::unsupported(
                "EXPLAIN ANALYZE of INSERT, UPDATE or DELETE (EXPLAIN ANALYZE runs queries)",
            ));
        };
        let t0 = std::time::Instant::now();
        let plan = QueryPlan::plan(q, &DbCatalog::new(cx.db))?;
        let planning = t0.elapsed();
        let t1 = std::time::Instant::now();
        let (mut lines, _rows) = plan.run_analyzed(costs, Some(t.reader()?), cx.rng, cx.guard)?;
        let execution = t1.elapsed();
        lines.push(format!(
            "Planning Time: {:.3} ms",
            planning.as_secs_f64() * 1e3
        ));
        lines.push(format!(
            "Execution Time: {:.3} ms",
            execution.as_secs_f64() * 1e3
        ));
        return Ok(explain_output(lines));
    }
    let mut lines = Vec::new();
    let modify_lines = |verb: &str,
                        twj: &ast::TableWithJoins,
                        selection: &Option<ast::Expr>|
     -> SqlResult<Vec<String>> {
        let (table, tname, alias) = single_table(twj)?;
        let what = if verb == "Update" {
            "update"
        } else {
            "delete from"
        };
        let schema = schema_of(cx.db, &table, tname, what)?;
        let mut scope = scope_of(&table, &schema);
        if let Some(a) = alias {
            scope.table = Some(a);
        }
        let filter = match selection {
            Some(w) => Some(bind_condition(&mut Binder::plain(&scope), w, "WHERE")?),
            None => None,
        };
        let access = access_for(cx.db, &table, &schema, filter.as_ref());
        let lines = vec![format!("{verb} on {table}")];
        let text = selection.as_ref().map(|w| w.to_string());
        let names: Vec<String> = schema.columns.iter().map(|c| c.name.clone()).collect();
        let mut out = Explain::new(costs, None);
        out.lines = lines;
        crate::select::explain_access(&mut out, &access, &table, 1, text.as_deref(), &names, None);
        Ok(out.lines)
    };
    match stmt {
        ast::Statement::Query(q) => {
            let plan = QueryPlan::plan(q, &DbCatalog::new(cx.db))?;
            lines = plan.explain(costs);
        }
        ast::Statement::Update(u) => {
            lines = modify_lines("Update", &u.table, &u.selection)?;
        }
        ast::Statement::Delete(d) => {
            let from = match &d.from {
                FromTable::WithFromKeyword(v) | FromTable::WithoutKeyword(v) => v,
            };
            let [twj] = from.as_slice() else {
                return Err(SqlError::unsupported("DELETE from several tables"));
            };
            lines = modify_lines("Delete", twj, &d.selection)?;
        }
        ast::Statement::Insert(ins) => {
            let TableObject::TableName(name) = &ins.table else {
                return Err(SqlError::unsupported("INSERT into a table function"));
            };
            let table = object_name(name)?;
            schema_of(cx.db, &table, name, "insert into")?;
            lines.push(format!("Insert on {table}"));
            match ins.source.as_deref().map(|q| q.body.as_ref()) {
                Some(SetExpr::Values(_)) | None => lines.push("  ->  Values Scan".into()),
                Some(_) => {
                    let q = ins
                        .source
                        .as_deref()
                        .ok_or_else(|| SqlError::syntax("INSERT without rows"))?;
                    let plan = QueryPlan::plan(q, &DbCatalog::new(cx.db))?;
                    for (i, l) in plan.explain(costs).into_iter().enumerate() {
                        lines.push(if i == 0 {
                            format!("  ->  {l}")
                        } else {
                            format!("      {l}")
                        });
                    }
                }
            }
        }
        other => {
            let text = other.to_string();
            let words: Vec<&str> = text.split_whitespace().take(2).collect();
            return Err(SqlError::unsupported(format!(
                "EXPLAIN {}",
                words.join(" ").to_uppercase()
            )));
        }
    }
    Ok(explain_output(lines))
}

/// EXPLAIN's result: one text column, a row per line.
fn explain_output(lines: Vec<String>) -> Output {
    let mut out = Output::tag("EXPLAIN");
    out.columns = vec![("QUERY PLAN".into(), SqlType::Text)];
    out.rows = lines.into_iter().map(|l| vec![Value::Text(l)]).collect();
    out
}

/// How an UPDATE or DELETE with this WHERE clause reads its table.
pub(crate) fn access_for(
    db: &walden::Database,
    table: &str,
    schema: &Schema,
    filter: Option<&Expr>,
) -> Access {
    let indexes = crate::catalog::index_metas(db, table);
    if indexes.is_empty() || filter.is_none() {
        return Access::Scan;
    }
    let types: Vec<walden::ColumnType> = schema.columns.iter().map(|c| c.ty).collect();
    access_path::choose(
        &indexes,
        &types,
        &Wanted {
            filter,
            order: None,
            nulls_dropped: false,
            few: false,
        },
    )
}

/// Runs `f` on the rows an UPDATE or DELETE reads (through an index when its WHERE
/// clause bounds one) and applies what it says, in one command. Under READ COMMITTED
/// the rows transactions that committed since the snapshot changed are left and listed
/// (`Modified::changed`).
/// An UPDATE's or DELETE's WHERE clause, and what the statement decodes of each row
/// it scans before judging it: the columns that clause reads (`needed`), unless that is
/// every column or the statement needs rows whole and has no WHERE clause.
struct Judged<'f> {
    filter: Option<&'f Expr>,
    needed: Option<Vec<bool>>,
    width: usize,
}

impl<'f> Judged<'f> {
    fn of(schema: &Schema, filter: Option<&'f Expr>, whole: bool) -> Judged<'f> {
        let width = schema.columns.len();
        let mut needed = vec![false; width];
        for c in filter.iter().flat_map(|f| f.columns()) {
            if let Some(n) = needed.get_mut(c) {
                *n = true;
            }
        }
        // Rows needed whole and judged by no filter are decoded whole at once.
        let partial = needed.iter().any(|n| !n) && (filter.is_some() || !whole);
        Judged {
            filter,
            needed: partial.then_some(needed),
            width,
        }
    }
}

/// Runs `f` on the rows of `table` an UPDATE or DELETE judges, and applies what it
/// says. `f` gets each row with the columns `judged` asks for (the others NULL) and,
/// when those are not all, what decodes the whole row (into the vector it is given).
#[allow(clippy::type_complexity)]
fn modify(
    db: &walden::Database,
    guard: &Guard,
    t: &mut Transaction,
    table: &str,
    schema: &Schema,
    judged: &Judged,
    mut f: impl FnMut(
        walden::RowId,
        &walden::Row,
        Option<&mut dyn FnMut(&mut walden::Row) -> SqlResult<()>>,
    ) -> RowAction,
) -> SqlResult<walden::Modified> {
    match access_for(db, table, schema, judged.filter) {
        Access::Scan => {
            let shape = walden::RowShape {
                needed: judged.needed.as_deref(),
                capacity: judged.width,
            };
            // Decoded into the same vector row after row.
            let mut some = Vec::new();
            Ok(t.modify_decoding(table, |id, decode| {
                decode(shape, &mut some)?;
                if judged.needed.is_none() {
                    return Ok(f(id, &some, None));
                }
                let mut whole = |row: &mut walden::Row| -> SqlResult<()> {
                    Ok(decode(walden::RowShape::default(), row)?)
                };
                Ok(f(id, &some, Some(&mut whole)))
            })?)
        }
        Access::Index(r) => {
            // Found first, then changed: a changed key never meets the read again.
            let mut actions = Vec::new();
            let mut failed = None;
            read_index(
                &t.reader()?,
                &r,
                0,
                (&[], &[]),
                &mut |id, row| match f(id, &row, None) {
                    RowAction::Keep => true,
                    RowAction::Stop => false,
                    action => {
                        let bytes = match &action {
                            RowAction::Update(new) => row_bytes(new),
                            _ => 0,
                        } + 32;
                        if let Err(e) = guard.charge(bytes) {
                            failed = Some(e);
                            return false;
                        }
                        actions.push((id, action));
                        true
                    }
                },
            )?;
            if let Some(e) = failed {
                return Err(e);
            }
            Ok(t.modify_rows(table, actions)?)
        }
    }
}

/// TRUNCATE deletes every row in the transaction (so it is transactional and crash-safe
/// like any delete; VACUUM reclaims the space).
pub(crate) fn truncate(cx: &mut Ctx, t: &mut Transaction, tr: &ast::Truncate) -> SqlResult<Output> {
    let mut names = Vec::new();
    for target in &tr.table_names {
        let name = object_name(&target.name)?;
        schema_of(cx.db, &name, &target.name, "truncate")?;
        names.push(name);
    }
    let cascade = matches!(tr.cascade, Some(ast::CascadeOption::Cascade));
    let mut notices = Vec::new();
    let names = crate::fkeys::ddl::truncate_list(cx.db, cx.fkeys, names, cascade, &mut notices)?;
    let restart = matches!(tr.identity, Some(ast::TruncateIdentityOption::Restart));
    // TRUNCATE on every table it empties, those CASCADE adds included; RESTART IDENTITY
    // needs the sequences' ownership too (PostgreSQL's ExecuteTruncate).
    if !cx.auth.superuser {
        use crate::privileges::RelKind;
        for name in &names {
            cx.auth
                .require(name, RelKind::Table, walden::privilege::bits::TRUNCATE)?;
        }
        if restart {
            for seq in cx.db.sequences() {
                let owned = crate::ddl::sequence::owner_names(cx.db, &seq.def)
                    .is_some_and(|(table, _)| names.contains(&table));
                if owned {
                    cx.auth.require_owner(&seq.def.name, RelKind::Sequence)?;
                }
            }
        }
    }
    // RESTART IDENTITY: the sequences the tables' columns own start again (at once,
    // not at commit: PostgreSQL's is transactional, Walden's sequences are not).
    if restart {
        for name in &names {
            crate::sequences::owned::restart_owned(cx.db, name)?;
        }
    }
    for name in names {
        let mut failed = None;
        t.modify_with(&name, |_, _| match cx.guard.check() {
            Ok(()) => RowAction::Delete,
            Err(e) => {
                failed = Some(e);
                RowAction::Stop
            }
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
    }
    let mut out = Output::tag("TRUNCATE TABLE");
    out.notices = notices;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use walden::{Column, ColumnType};

    use super::column_default;
    use crate::code;

    /// A default read back from the catalog is untrusted: text that does not parse, or
    /// names a column, is a clear error, never a panic.
    #[test]
    fn a_damaged_stored_default_is_an_error() {
        for text in ["1 +", "(select", "nope", "'x'"] {
            let col = Column {
                default: Some(text.into()),
                ..Column::new("a", ColumnType::Int4)
            };
            let e = column_default(&col).unwrap_err();
            assert!(
                [
                    code::DATA_CORRUPTED,
                    code::FEATURE_NOT_SUPPORTED,
                    code::INVALID_TEXT
                ]
                .contains(&e.code),
                "{text}: {e:?}"
            );
        }
        let col = Column {
            default: Some("2 * 3".into()),
            ..Column::new("a", ColumnType::Int4)
        };
        assert!(column_default(&col).is_ok());
    }
}
