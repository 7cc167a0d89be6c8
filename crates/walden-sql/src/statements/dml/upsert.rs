//! `INSERT … ON CONFLICT [(columns) | ON CONSTRAINT name] DO NOTHING | DO UPDATE SET …
//! [WHERE …]`: each proposed row is checked against the arbiter unique indexes first;
//! a row whose key a visible row holds is skipped or updates that row, the others are
//! inserted in batches (one command each, so rows sharing a page share a WAL record).
//!
//! Race-free without locks of its own: the engine's insert checks every unique index
//! again under the index's lock, waiting for a transaction that holds the key. Under
//! REPEATABLE READ a key the check could not see — inserted by a transaction that
//! committed after this one's snapshot, or still running and then committed — fails the
//! batch, and the statement fails with a serialization failure (40001), as PostgreSQL's
//! REPEATABLE READ does: a row the transaction cannot see is not its to update or to
//! skip silently; a visible row changed concurrently fails the update the same way.
//! Under READ COMMITTED the check reads what committed by now, and a conflict found
//! later goes round again, as PostgreSQL's speculative insertion does: a batch that
//! meets a key committed meanwhile is taken back and its rows placed one at a time,
//! each looked up again (skipped, or the row found updated) or inserted; DO UPDATE
//! changes the newest version of the row found (`Transaction::newest`,
//! `modify_newest`), and looks again if it changed or went meanwhile. Nothing is ever
//! inserted twice, and nothing is lost.

use std::collections::HashSet;

use sqlparser::ast::{self, ConflictTarget, OnConflictAction, OnInsert};
use walden::{Isolation, RowAction, RowId, Transaction, Value};

use super::assign::{as_is, assign, bind_for_column, check_not_null, defaults_for, RowBuilder};
use super::insert::{bind_insert, query_targets, Insertion};
use super::returning::{changed, Returning};
use super::update::bind_assignments;
use crate::bind::Binder;
use crate::catalog::{ident_name, index_metas, object_name, IndexMeta, Scope};
use crate::error::{code, SqlError, SqlResult};
use crate::expr::Expr;
use crate::guard::row_bytes;
use crate::infer::Params;
use crate::select::{key_bytes, PlanCx, QueryPlan};
use crate::statement::{Ctx, Output};
use crate::types::SqlType;

/// DO UPDATE's SET list and WHERE, bound over the existing row followed by the proposed
/// one (`excluded`).
struct DoUpdate {
    sets: Vec<(usize, Expr)>,
    filter: Option<Expr>,
}

/// An upsert bound against its table, its rows not yet made.
pub(crate) struct Bound {
    table: String,
    schema: walden::Schema,
    targets: Vec<usize>,
    pub(crate) returning: Option<Returning>,
    rows: Proposed,
    arbiters: Vec<IndexMeta>,
    update: Option<DoUpdate>,
}

/// Where the proposed rows come from.
enum Proposed {
    Values(Vec<Vec<Expr>>),
    Query(QueryPlan),
}

/// Binds an upsert: its rows (VALUES, or a query planned), the arbiter indexes, DO
/// UPDATE's SET and WHERE, RETURNING. Nothing is read or written.
pub(crate) fn bind(db: &walden::Database, ins: &ast::Insert, params: Params) -> SqlResult<Bound> {
    let Some(OnInsert::OnConflict(on)) = &ins.on else {
        return Err(SqlError::unsupported("ON DUPLICATE KEY UPDATE"));
    };
    let (table, schema, targets, returning, rows) = match bind_insert(db, ins, params)? {
        Insertion::Values(b) => (
            b.table,
            b.schema,
            b.targets,
            b.returning,
            Proposed::Values(b.rows),
        ),
        Insertion::Query {
            table,
            targets,
            query,
            returning,
        } => {
            let catalog = crate::view::catalog_of(db);
            let cx = PlanCx {
                params,
                ..PlanCx::of(&catalog)
            };
            let plan = QueryPlan::plan_in(query, &cx)?;
            let schema = db.schema(&table)?;
            let targets = query_targets(params, &plan, &targets, &schema)?.to_vec();
            let rows = Proposed::Query(plan);
            (table, schema, targets, returning, rows)
        }
    };
    let indexes = index_metas(db, &table);
    let arbiters = arbiters(&table, &schema, &indexes, on.conflict_target.as_ref())?;
    let update = match &on.action {
        OnConflictAction::DoNothing => None,
        OnConflictAction::DoUpdate(u) => {
            if on.conflict_target.is_none() {
                return Err(SqlError::syntax(
                    "ON CONFLICT DO UPDATE requires inference specification or constraint name",
                )
                .with_hint("For example, ON CONFLICT (column_name)."));
            }
            let alias = ins.table_alias.as_ref().map(|a| ident_name(&a.alias));
            Some(bind_do_update(db, u, &table, alias, &schema, params)?)
        }
    };
    Ok(Bound {
        table,
        schema,
        targets,
        returning,
        rows,
        arbiters,
        update,
    })
}

pub(crate) fn run(cx: &mut Ctx, t: &mut Transaction, ins: &ast::Insert) -> SqlResult<Output> {
    let Bound {
        table,
        schema,
        targets,
        returning,
        rows,
        arbiters,
        update,
    } = bind(cx.db, ins, Params::Absent)?;
    let (rows, source_types) = match rows {
        Proposed::Values(exprs) => {
            let mut rows = Vec::with_capacity(exprs.len());
            for r in &exprs {
                cx.guard.check()?;
                let mut vals = Vec::with_capacity(r.len());
                for e in r {
                    vals.push(e.eval(&[], &mut cx.eval_ctx())?);
                }
                rows.push(vals);
            }
            (rows, Vec::new())
        }
        Proposed::Query(plan) => {
            let rows = plan.run_top(Some(t.reader()?), cx.rng, cx.guard)?;
            let types = plan.columns().iter().map(|(_, ty)| *ty).collect();
            (rows, types)
        }
    };
    let builder = RowBuilder {
        table: &table,
        schema: &schema,
        targets: &targets,
        source_types,
        defaults: defaults_for(&schema, &targets)?,
        as_is: as_is(&schema, &targets),
        returning: None,
        returned: Default::default(),
        kept: None,
    };
    let mut state = Upsert {
        table: &table,
        schema: &schema,
        update: update.as_ref(),
        arbiters: &arbiters,
        returning: returning.as_ref(),
        pending: Vec::new(),
        seen: vec![HashSet::new(); arbiters.len()],
        returned: Vec::new(),
        count: 0,
        written: crate::fkeys::enforce::watches(cx, &table)?
            .then(|| crate::fkeys::enforce::Written::new(&table)),
    };
    let mut row = Vec::new();
    for vals in rows {
        cx.guard.check()?;
        builder.build(cx, vals, &mut row)?;
        state.offer(cx, t, &row, update.as_ref(), &schema)?;
    }
    state.flush(cx, t)?;
    if let Some(w) = state.written.take() {
        crate::fkeys::enforce::after(cx, t, w)?;
    }
    let (n, returned) = (state.count, state.returned);
    Ok(changed(
        format!("INSERT 0 {n}"),
        returning.as_ref(),
        returned,
    ))
}

/// The unique indexes a conflict is judged by: the one on exactly the listed columns,
/// the one named, or (DO NOTHING without a target) every unique index.
fn arbiters(
    table: &str,
    schema: &walden::Schema,
    indexes: &[IndexMeta],
    target: Option<&ConflictTarget>,
) -> SqlResult<Vec<IndexMeta>> {
    let unique = indexes.iter().filter(|i| i.unique);
    let found: Vec<IndexMeta> = match target {
        None => unique.cloned().collect(),
        Some(ConflictTarget::OnConstraint(name)) => {
            let name = object_name(name)?;
            let hit: Vec<IndexMeta> = unique.filter(|i| i.name == name).cloned().collect();
            if hit.is_empty() {
                return Err(SqlError::new(
                    code::UNDEFINED_OBJECT,
                    format!("constraint \"{name}\" for table \"{table}\" does not exist"),
                ));
            }
            hit
        }
        Some(ConflictTarget::Columns(cols)) => {
            let mut wanted = Vec::with_capacity(cols.len());
            for c in cols {
                let name = ident_name(c);
                let Some(i) = schema.columns.iter().position(|x| x.name == name) else {
                    return Err(SqlError::new(
                        code::UNDEFINED_COLUMN,
                        format!("column \"{name}\" does not exist"),
                    )
                    .at(c.span.start));
                };
                wanted.push(i);
            }
            // The index whose columns are the listed ones, in any order.
            unique
                .filter(|i| {
                    i.columns.len() == wanted.len() && i.columns.iter().all(|c| wanted.contains(c))
                })
                .take(1)
                .cloned()
                .collect()
        }
    };
    if found.is_empty() && target.is_some() {
        return Err(SqlError::new(
            code::INVALID_COLUMN_REFERENCE,
            "there is no unique or exclusion constraint matching the ON CONFLICT specification",
        ));
    }
    Ok(found)
}

fn bind_do_update(
    db: &walden::Database,
    u: &ast::DoUpdate,
    table: &str,
    alias: Option<String>,
    schema: &walden::Schema,
    params: Params,
) -> SqlResult<DoUpdate> {
    let n = schema.columns.len();
    let mut columns: Vec<(String, SqlType)> = schema
        .columns
        .iter()
        .map(|c| (c.name.clone(), SqlType::of_column(c)))
        .collect();
    columns.extend(columns.clone());
    let scope = Scope {
        table: None,
        columns,
        relations: vec![
            (alias.unwrap_or_else(|| table.to_string()), 0..n),
            ("excluded".to_string(), n..2 * n),
        ],
        // As in PostgreSQL, an unqualified name found in both is ambiguous.
        hidden: Vec::new(),
        ..Scope::default()
    };
    let sets = bind_assignments(db, &u.assignments, table, schema, &mut |e, col| {
        bind_for_column(&mut Binder::plain(&scope).with_params(params), e, col)
    })?;
    let filter = match &u.selection {
        Some(w) => Some(
            Binder::plain(&scope)
                .with_params(params)
                .boolean(w, "WHERE")
                .map(crate::optimize::simplify::simplify_condition)?,
        ),
        None => None,
    };
    Ok(DoUpdate { sets, filter })
}

/// An upsert under way.
struct Upsert<'a> {
    table: &'a str,
    schema: &'a walden::Schema,
    /// DO UPDATE's; None for DO NOTHING.
    update: Option<&'a DoUpdate>,
    arbiters: &'a [IndexMeta],
    returning: Option<&'a Returning>,
    /// Rows to insert, not yet inserted (a batch).
    pending: Vec<Vec<Value>>,
    /// Per arbiter index, the keys (as bytes) this statement inserted or updated: a
    /// second proposed row with one is skipped (DO NOTHING) or an error (DO UPDATE may
    /// not change a row twice).
    seen: Vec<HashSet<Vec<u8>>>,
    returned: Vec<Vec<Value>>,
    count: u64,
    /// The rows inserted and updated, kept when the table takes part in a foreign key.
    written: Option<crate::fkeys::enforce::Written>,
}

impl Upsert<'_> {
    /// The arbiter keys of `row`: None for an index where the row's key has a NULL
    /// (such a row conflicts with nothing there).
    fn keys(&self, row: &[Value]) -> Vec<Option<(Vec<Value>, Vec<u8>)>> {
        self.arbiters
            .iter()
            .map(|ix| {
                let key: Vec<Value> = ix.columns.iter().map(|&c| row[c].clone()).collect();
                if key.iter().any(|v| matches!(v, Value::Null)) {
                    return None;
                }
                let mut bytes = Vec::new();
                key_bytes(&key, &mut bytes);
                Some((key, bytes))
            })
            .collect()
    }

    /// Notes the keys of a row this statement inserted or updated.
    fn remember(&mut self, keys: Vec<Option<(Vec<Value>, Vec<u8>)>>) {
        for (seen, k) in self.seen.iter_mut().zip(keys) {
            if let Some((_, bytes)) = k {
                seen.insert(bytes);
            }
        }
    }

    fn offer(
        &mut self,
        cx: &mut Ctx,
        t: &mut Transaction,
        row: &[Value],
        update: Option<&DoUpdate>,
        schema: &walden::Schema,
    ) -> SqlResult<()> {
        let keys = self.keys(row);
        // A key this statement already inserted or updated.
        let again = keys
            .iter()
            .zip(&self.seen)
            .any(|(k, seen)| k.as_ref().is_some_and(|(_, b)| seen.contains(b)));
        if again {
            return match update {
                None => Ok(()),
                Some(_) => Err(SqlError::new(
                    code::CARDINALITY_VIOLATION,
                    "ON CONFLICT DO UPDATE command cannot affect row a second time",
                )
                .with_hint(
                    "Ensure that no rows proposed for insertion within the same command have duplicate constrained values.",
                )),
            };
        }
        if t.isolation() == Isolation::ReadCommitted {
            return self.offer_read_committed(cx, t, row, update, schema, keys);
        }
        // A visible row holding one of the keys.
        let Some((id, old)) = self.existing(t, &keys)? else {
            self.remember(keys);
            cx.guard.charge(row_bytes(row) + 32)?;
            self.pending.push(row.to_vec());
            return Ok(());
        };
        let Some(update) = update else {
            return Ok(());
        };
        // The batch goes in first, so the changes happen in the rows' order.
        self.flush(cx, t)?;
        let Some(new) = self.updated_row(cx, row, &old, update, schema)? else {
            return Ok(());
        };
        t.update(self.table, id, &new)?;
        self.note_update(cx, keys, old, new)
    }

    /// A row holding one of `keys` that the transaction's current command sees (under
    /// READ COMMITTED, with a snapshot taken now).
    fn existing(
        &self,
        t: &mut Transaction,
        keys: &[Option<(Vec<Value>, Vec<u8>)>],
    ) -> SqlResult<Option<(RowId, Vec<Value>)>> {
        let latest = t.isolation() == Isolation::ReadCommitted;
        for (ix, k) in self.arbiters.iter().zip(keys) {
            let Some((key, _)) = k else { continue };
            let found = if latest {
                let b = std::ops::Bound::Included(key.as_slice());
                t.with_latest_reader(|r| {
                    let mut first = None;
                    let rows = walden::Rows::index(&ix.name, b, b);
                    r.read(rows, walden::RowShape::default(), |id, row| {
                        first = Some((id, row));
                        Ok::<_, SqlError>(std::ops::ControlFlow::Break(()))
                    })
                    .map(|()| first)
                })??
            } else {
                t.index_get(&ix.name, key)?.into_iter().next()
            };
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// DO UPDATE's new version of `old` for the proposed `row`; None when its WHERE
    /// leaves it.
    fn updated_row(
        &self,
        cx: &mut Ctx,
        row: &[Value],
        old: &[Value],
        update: &DoUpdate,
        schema: &walden::Schema,
    ) -> SqlResult<Option<Vec<Value>>> {
        let mut both = old.to_vec();
        both.extend_from_slice(row);
        if let Some(f) = &update.filter {
            if !f.test(&both, &mut cx.eval_ctx())? {
                return Ok(None);
            }
        }
        let mut new = old.to_vec();
        for (i, e) in &update.sets {
            new[*i] = assign(e.eval(&both, &mut cx.eval_ctx())?, &schema.columns[*i])?;
        }
        check_not_null(cx.checks, self.table, schema, &new)?;
        Ok(Some(new))
    }

    /// Counts and keeps a row DO UPDATE changed.
    fn note_update(
        &mut self,
        cx: &mut Ctx,
        keys: Vec<Option<(Vec<Value>, Vec<u8>)>>,
        old: Vec<Value>,
        new: Vec<Value>,
    ) -> SqlResult<()> {
        if let Some(r) = self.returning {
            let out = r.project(&new, &mut cx.eval_ctx())?;
            cx.guard.charge(row_bytes(&out) + 24)?;
            self.returned.push(out);
        }
        if let Some(w) = self.written.as_mut() {
            cx.guard.charge(row_bytes(&new) * 2 + 32)?;
            w.updated.push((old, new));
        }
        self.remember(keys);
        self.count += 1;
        Ok(())
    }

    /// READ COMMITTED: looks the row's keys up in what committed by now, and inserts
    /// the row (in the batch), skips it, or updates the row found in its newest version.
    fn offer_read_committed(
        &mut self,
        cx: &mut Ctx,
        t: &mut Transaction,
        row: &[Value],
        update: Option<&DoUpdate>,
        schema: &walden::Schema,
        keys: Vec<Option<(Vec<Value>, Vec<u8>)>>,
    ) -> SqlResult<()> {
        let Some((id, _)) = self.existing(t, &keys)? else {
            self.remember(keys);
            cx.guard.charge(row_bytes(row) + 32)?;
            self.pending.push(row.to_vec());
            return Ok(());
        };
        let Some(update) = update else {
            return Ok(());
        };
        self.flush(cx, t)?;
        self.place(cx, t, row, Some(update), schema, keys, Some(id))
    }

    /// READ COMMITTED: places one proposed row for good, going round until it is done:
    /// the row found holding a key (`found`, or looked up again) is skipped or updated
    /// in its newest version — unless it changed or went meanwhile, when the keys are
    /// looked up again — and a row with no conflict is inserted, unless a key was
    /// committed meanwhile.
    #[allow(clippy::too_many_arguments)]
    fn place(
        &mut self,
        cx: &mut Ctx,
        t: &mut Transaction,
        row: &[Value],
        update: Option<&DoUpdate>,
        schema: &walden::Schema,
        keys: Vec<Option<(Vec<Value>, Vec<u8>)>>,
        mut found: Option<RowId>,
    ) -> SqlResult<()> {
        loop {
            cx.guard.check()?;
            let id = match found.take() {
                Some(id) => id,
                None => match self.existing(t, &keys)? {
                    Some((id, _)) => id,
                    None => {
                        if self.insert_one(cx, t, row)? {
                            self.remember(keys);
                            return Ok(());
                        }
                        continue;
                    }
                },
            };
            let Some(update) = update else {
                return Ok(());
            };
            let Some(newest) = t.newest(self.table, id)? else {
                continue;
            };
            let holds = self
                .keys(&newest.row)
                .iter()
                .zip(&keys)
                .any(|(a, b)| matches!((a, b), (Some((_, a)), Some((_, b))) if a == b));
            if !holds {
                continue;
            }
            let old = newest.row.clone();
            let Some(new) = self.updated_row(cx, row, &old, update, schema)? else {
                return Ok(());
            };
            let done =
                t.modify_newest(self.table, vec![(newest, RowAction::Update(new.clone()))])?;
            if done.changed.is_empty() {
                return self.note_update(cx, keys, old, new);
            }
        }
    }

    /// READ COMMITTED: inserts one row; false when an arbiter's key was committed by
    /// another transaction meanwhile (nothing inserted).
    fn insert_one(&mut self, cx: &mut Ctx, t: &mut Transaction, row: &[Value]) -> SqlResult<bool> {
        match t.insert(self.table, row) {
            Ok(_) => {}
            Err(walden::Error::UniqueViolation { index, .. })
                if self.arbiters.iter().any(|a| a.name == index) =>
            {
                return Ok(false)
            }
            Err(e) => return Err(e.into()),
        }
        self.count += 1;
        if let Some(w) = self.written.as_mut() {
            cx.guard.charge(row_bytes(row) + 32)?;
            w.inserted.push(row.to_vec());
        }
        if let Some(r) = self.returning {
            let out = r.project(row, &mut cx.eval_ctx())?;
            cx.guard.charge(row_bytes(&out) + 24)?;
            self.returned.push(out);
        }
        Ok(true)
    }

    /// Inserts the batch. A unique violation on an arbiter index is a key this
    /// transaction could not see: a serialization failure under REPEATABLE READ; under
    /// READ COMMITTED the batch's rows are placed one at a time instead (`place`).
    fn flush(&mut self, cx: &mut Ctx, t: &mut Transaction) -> SqlResult<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let rows = std::mem::take(&mut self.pending);
        match t.insert_many(self.table, &rows) {
            Ok(ids) => {
                self.count += ids.len() as u64;
                if let Some(w) = self.written.as_mut() {
                    w.inserted.extend(rows.iter().cloned());
                }
            }
            Err(walden::Error::UniqueViolation { index, .. })
                if self.arbiters.iter().any(|a| a.name == index)
                    && t.isolation() == Isolation::ReadCommitted =>
            {
                let (update, schema) = (self.update, self.schema);
                for row in &rows {
                    let keys = self.keys(row);
                    self.place(cx, t, row, update, schema, keys, None)?;
                }
                return Ok(());
            }
            Err(walden::Error::UniqueViolation { index, .. })
                if self.arbiters.iter().any(|a| a.name == index) =>
            {
                return Err(SqlError::new(
                    code::SERIALIZATION_FAILURE,
                    "could not serialize access due to concurrent update",
                )
                .with_detail(format!(
                    "A row with a key of index \"{index}\" was inserted by a transaction this one cannot see."
                )));
            }
            Err(e) => return Err(e.into()),
        }
        if let Some(r) = self.returning {
            for row in &rows {
                let out = r.project(row, &mut cx.eval_ctx())?;
                cx.guard.charge(row_bytes(&out) + 24)?;
                self.returned.push(out);
            }
        }
        Ok(())
    }
}
