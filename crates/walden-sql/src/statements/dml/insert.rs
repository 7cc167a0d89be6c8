//! INSERT: its targets, VALUES or a query's rows bound and inserted (in batches for a
//! query), a prepared INSERT's cached plan (`BoundInsert`).

use sqlparser::ast::{self, SetExpr, Spanned, TableObject};
use walden::{Row, Schema, Transaction, Value};

use super::assign::{
    as_is, bind_for_column, check_assignable, column_default, defaults_for, is_default, RowBuilder,
};
use super::returning::{changed, Returning};
use super::schema_of;
use crate::bind::{coerce_literal, Binder};
use crate::catalog::{ident_name, object_name, Scope};
use crate::error::{code, SqlError, SqlResult};
use crate::expr::Expr;
use crate::infer::Params;
use crate::prepared::Plan;
use crate::select::{QueryPlan, SeriesIter, Source};
use crate::statement::{Ctx, Output};
use crate::types::SqlType;

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
        return super::upsert::run(cx, t, ins);
    }
    match bind_insert(cx.db, ins, Params::Absent)? {
        Insertion::Values(b) => b.run(cx, t, None),
        Insertion::Query {
            table,
            targets,
            query,
            returning,
        } => {
            let plan = QueryPlan::plan(query, &crate::view::catalog_of(cx.db))?;
            let (n, rows) = insert_plan(cx, t, &table, &plan, Some(targets), returning.as_ref())?;
            Ok(changed(format!("INSERT 0 {n}"), returning.as_ref(), rows))
        }
    }
}

/// Where an INSERT's rows come from, bound against its table.
pub(super) enum Insertion<'q> {
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

pub(super) fn bind_insert<'q>(
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
    let n = t.insert_with(table, |row| {
        let Some(exprs) = next.next() else {
            return Ok(false);
        };
        cx.guard.check()?;
        let exprs = exprs?;
        let exprs = exprs.as_ref();
        let mut vals = Vec::with_capacity(exprs.len());
        for e in exprs {
            vals.push(e.eval(&[], &mut cx.eval_ctx())?);
        }
        builder.build(cx, vals, row)?;
        Ok::<_, SqlError>(true)
    })?;
    Ok((n, builder.after(cx, t)?))
}

/// Whether an insert into `table` keeps its rows (for its foreign keys).
pub(crate) fn keeps(cx: &Ctx, table: &str) -> SqlResult<Option<std::cell::RefCell<Vec<Row>>>> {
    Ok(crate::fkeys::enforce::watches(cx, table)?.then(Default::default))
}

/// An `INSERT ... VALUES` bound against its table; a prepared one keeps it with its
/// parameters unfilled.
#[derive(Debug)]
pub(crate) struct BoundInsert {
    pub(super) table: String,
    pub(super) schema: Schema,
    pub(super) targets: Vec<usize>,
    pub(super) rows: Vec<Vec<Expr>>,
    pub(super) returning: Option<Returning>,
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
pub(super) fn query_targets<'t>(
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
                return Ok(false);
            }
            cx.guard.check()?;
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
                    None => return Ok(false),
                },
                _ => return Ok(false),
            };
            if !plan.project_into(input, &mut cx.eval_ctx(), &mut vals)? {
                continue;
            }
            if skipped < plan.offset() {
                skipped += 1;
                continue;
            }
            builder.build(cx, vals.drain(..), row)?;
            produced += 1;
            return Ok::<_, SqlError>(true);
        })?
    } else {
        // The query's rows in batches, read with the snapshot and command of the
        // statement's start (so never the rows it inserts), each batch inserted before
        // the next is read: a query that streams is never held whole.
        let held = t.hold_snapshot()?;
        let r = insert_batches(cx, t, &held, query, table, &builder);
        t.release_snapshot(held);
        r?
    };
    Ok((n, builder.after(cx, t)?))
}

/// At most this many bytes of a query's rows are read before they are inserted.
const INSERT_BATCH_BYTES: u64 = 4 << 20;

/// `insert_plan`'s rows of a query that does not stream into the table row by row: read
/// from the executor's stream a batch at a time with `held`, each batch inserted in a
/// command of its own. Returns the rows inserted.
fn insert_batches(
    cx: &mut Ctx,
    t: &mut Transaction,
    held: &walden::HeldSnapshot,
    query: &QueryPlan,
    table: &str,
    builder: &RowBuilder,
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
                let Some(vals) = it.next() else {
                    return Ok(false);
                };
                guard.check()?;
                builder.build(cx, vals, row)?;
                Ok::<_, SqlError>(true)
            })?;
        }
        if done {
            return Ok(total);
        }
    }
}
