//! WITH RECURSIVE: a WITH query that reads itself, `non-recursive-term UNION [ALL]
//! recursive-term`, planned (with PostgreSQL's checks on where the query may name
//! itself) and run as PostgreSQL runs it: the recursive term is run over the rows the
//! previous round added (the working table) until a round adds none.
//!
//! Rows are pushed to the reader round by round, so a reader that stops (a LIMIT) stops
//! the recursion: `SELECT … FROM t LIMIT 10` over an endless recursion ends. An endless
//! recursion read to its end runs until the statement is canceled, or, under UNION,
//! until the rows it has seen exceed `statement_mem`.

use std::cell::Cell;
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use sqlparser::ast::{
    self, JoinOperator, SetExpr, SetOperator, SetQuantifier, Spanned, TableFactor,
};
use sqlparser::tokenizer::Location;
use walden::Value;

use crate::catalog::{ident_name, object_name};
use crate::error::{code, SqlError, SqlResult};
use crate::expr::EvalCtx;
use crate::from::{Explain, Sink, Source};
use crate::guard::row_bytes;
use crate::select::{cast_rows, union_type, Cte, CteBody, Ctes, PlanCx, QueryPlan};
use crate::sort_key::key_bytes;
use crate::types::SqlType;

/// Tells the working tables of recursive queries apart while they run.
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// Which part of its own definition a WITH RECURSIVE query is being planned in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Term {
    /// The query is not of the form `… UNION [ALL] …`: it may not name itself.
    WrongForm,
    /// The non-recursive term: it may not name the query.
    NonRecursive,
    /// The recursive term: a name of the query is its working table.
    Recursive,
}

/// A WITH RECURSIVE query as seen from inside its own definition while it is planned.
#[derive(Debug)]
pub struct SelfRef {
    id: usize,
    term: Term,
    /// The query's name in the WITH clause, where form errors point.
    at: Location,
    /// The enclosing query of the recursive term's own level (its address): a reference
    /// bound under another is inside a subquery of an expression.
    outer: usize,
    /// References met in the recursive term.
    uses: Cell<u32>,
}

impl SelfRef {
    /// The source a reference to the query reads: its working table, or PostgreSQL's
    /// error for a reference where none may be.
    pub(crate) fn reference(&self, name: &str, cx: &PlanCx, at: Location) -> SqlResult<Source> {
        let recursion = |message: String| SqlError::new(code::INVALID_RECURSION, message);
        match self.term {
            Term::WrongForm => Err(recursion(format!(
                "recursive query \"{name}\" does not have the form non-recursive-term UNION [ALL] recursive-term"
            ))
            .at(self.at)),
            Term::NonRecursive => Err(recursion(format!(
                "recursive reference to query \"{name}\" must not appear within its non-recursive term"
            ))
            .at(at)),
            Term::Recursive => {
                if outer_address(cx) != self.outer {
                    return Err(recursion(format!(
                        "recursive reference to query \"{name}\" must not appear within a subquery"
                    ))
                    .at(at));
                }
                self.uses.set(self.uses.get() + 1);
                if self.uses.get() > 1 {
                    return Err(recursion(format!(
                        "recursive reference to query \"{name}\" must not appear more than once"
                    ))
                    .at(at));
                }
                Ok(Source::WorkTable {
                    id: self.id,
                    name: name.to_string(),
                })
            }
        }
    }
}

fn outer_address(cx: &PlanCx) -> usize {
    cx.outer.map_or(0, |o| o as *const _ as usize)
}

/// A planned WITH RECURSIVE query.
#[derive(Debug)]
pub struct RecursivePlan {
    /// Its working table's id (see `RunCx::work_tables`).
    id: usize,
    name: String,
    base: QueryPlan,
    step: QueryPlan,
    /// UNION ALL; under UNION a row equal to one already given is dropped.
    all: bool,
    /// Each column's type, where the recursive term's differs from it.
    step_casts: Vec<Option<SqlType>>,
}

/// Plans the WITH RECURSIVE query `cte`, the queries before it in `ctes`. A query that
/// does not name itself is planned as any WITH query.
pub(crate) fn plan_cte(cte: &ast::Cte, ctes: &Ctes, cx: &PlanCx) -> SqlResult<Cte> {
    let name = ident_name(&cte.alias.name);
    let at = cte.alias.name.span.start;
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let marker = |term, columns| Cte {
        name: name.clone(),
        columns,
        body: CteBody::SelfRef(SelfRef {
            id,
            term,
            at,
            outer: outer_address(cx),
            uses: Cell::new(0),
        }),
    };
    let layer = |marker| Ctes {
        list: vec![marker],
        parent: Some(ctes),
    };
    let query = match cte.query.body.as_ref() {
        SetExpr::Query(q) if plain(&cte.query) => q.as_ref(),
        _ => cte.query.as_ref(),
    };
    let (left, right, all) = match query.body.as_ref() {
        SetExpr::SetOperation {
            op: SetOperator::Union,
            set_quantifier,
            left,
            right,
        } if query.with.is_none() => {
            let all = match set_quantifier {
                SetQuantifier::All => true,
                SetQuantifier::Distinct | SetQuantifier::None => false,
                other => return Err(SqlError::unsupported(format!("UNION {other}"))),
            };
            (left, right, all)
        }
        _ => {
            // Planned with the name in reach only to report a reference.
            let scope = layer(marker(Term::WrongForm, Vec::new()));
            QueryPlan::plan_in(&cte.query, &within(cx, &scope))?;
            return plain_cte(cte, ctes, cx);
        }
    };
    let base = {
        let scope = layer(marker(Term::NonRecursive, Vec::new()));
        crate::select::plan_set_expr(left, &within(cx, &scope))?
    };
    let columns = named_columns(&name, &cte.alias.columns, base.columns())?;
    let scope = layer(marker(Term::Recursive, columns.clone()));
    if let SetExpr::Select(s) = right.as_ref() {
        check_outer_joins(&s.from, &name)?;
    }
    let step = crate::select::plan_set_expr(right, &within(cx, &scope))?;
    let used = match &scope.list[0].body {
        CteBody::SelfRef(s) => s.uses.get() > 0,
        _ => false,
    };
    if !used {
        return plain_cte(cte, ctes, cx);
    }
    if query.order_by.is_some() {
        return Err(not_implemented("ORDER BY"));
    }
    if let Some(l) = &query.limit_clause {
        let offset_only = matches!(l, ast::LimitClause::LimitOffset { limit: None, .. });
        return Err(not_implemented(if offset_only {
            "OFFSET"
        } else {
            "LIMIT"
        }));
    }
    if step.as_select().is_some_and(|s| s.has_aggregates()) {
        return Err(SqlError::new(
            code::INVALID_RECURSION,
            "aggregate functions are not allowed in a recursive query's recursive term",
        ));
    }
    let step_casts = step_casts(&name, &columns, step.columns(), left.span().start)?;
    Ok(Cte {
        name: name.clone(),
        columns,
        body: CteBody::Recursive(Arc::new(RecursivePlan {
            id,
            name,
            base,
            step,
            all,
            step_casts,
        })),
    })
}

/// `cx` with `ctes` in reach.
fn within<'a>(cx: &PlanCx<'a>, ctes: &'a Ctes<'a>) -> PlanCx<'a> {
    PlanCx {
        ctes: Some(ctes),
        ..*cx
    }
}

/// A query with nothing around its body (no WITH, ORDER BY, LIMIT).
fn plain(q: &ast::Query) -> bool {
    q.with.is_none() && q.order_by.is_none() && q.limit_clause.is_none()
}

fn not_implemented(what: &str) -> SqlError {
    SqlError::new(
        code::FEATURE_NOT_SUPPORTED,
        format!("{what} in a recursive query is not implemented"),
    )
}

/// A WITH query that does not name itself.
fn plain_cte(cte: &ast::Cte, ctes: &Ctes, cx: &PlanCx) -> SqlResult<Cte> {
    let name = ident_name(&cte.alias.name);
    let plan = QueryPlan::plan_in(
        &cte.query,
        &PlanCx {
            ctes: Some(ctes),
            ..*cx
        },
    )?;
    let columns = named_columns(&name, &cte.alias.columns, plan.columns())?;
    Ok(Cte {
        name,
        columns,
        body: CteBody::Plan(Arc::new(plan)),
    })
}

/// A WITH query's columns: its query's, renamed by the column list written after its
/// name.
pub(crate) fn named_columns(
    name: &str,
    names: &[ast::TableAliasColumnDef],
    columns: &[(String, SqlType)],
) -> SqlResult<Vec<(String, SqlType)>> {
    if names.len() > columns.len() {
        return Err(SqlError::new(
            code::INVALID_COLUMN_REFERENCE,
            format!(
                "WITH query \"{name}\" has {} columns available but {} columns specified",
                columns.len(),
                names.len()
            ),
        ));
    }
    let mut out = columns.to_vec();
    for (c, a) in out.iter_mut().zip(names) {
        c.0 = ident_name(&a.name);
    }
    Ok(out)
}

/// The casts of the recursive term's columns to the query's (the non-recursive term's)
/// types; PostgreSQL's error where the two terms together would have another type.
fn step_casts(
    name: &str,
    columns: &[(String, SqlType)],
    step: &[(String, SqlType)],
    base_at: Location,
) -> SqlResult<Vec<Option<SqlType>>> {
    if columns.len() != step.len() {
        return Err(SqlError::syntax(
            "each UNION query must have the same number of columns",
        ));
    }
    let mut casts = Vec::with_capacity(step.len());
    for (i, ((_, base), (_, rec))) in columns.iter().zip(step).enumerate() {
        let overall = union_type(*base, *rec, "UNION")?;
        if overall != *base {
            return Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                format!(
                    "recursive query \"{name}\" column {} has type {} in non-recursive term but type {} overall",
                    i + 1,
                    base.name(),
                    overall.name()
                ),
            )
            .with_hint("Cast the output of the non-recursive term to the correct type.")
            .at(base_at));
        }
        casts.push((*rec != overall && *rec != SqlType::Null).then_some(overall));
    }
    Ok(casts)
}

/// PostgreSQL's error for the query named on the side of an outer join that may be
/// filled with NULLs.
fn check_outer_joins(from: &[ast::TableWithJoins], name: &str) -> SqlResult<()> {
    for twj in from {
        let mut left = names(&twj.relation, name)?;
        for j in &twj.joins {
            let right = names(&j.relation, name)?;
            let (left_nullable, right_nullable) = match &j.join_operator {
                JoinOperator::Left(_) | JoinOperator::LeftOuter(_) => (false, true),
                JoinOperator::Right(_) | JoinOperator::RightOuter(_) => (true, false),
                JoinOperator::FullOuter(_) => (true, true),
                _ => (false, false),
            };
            if (left && left_nullable) || (right && right_nullable) {
                return Err(SqlError::new(
                    code::INVALID_RECURSION,
                    format!(
                        "recursive reference to query \"{name}\" must not appear within an outer join"
                    ),
                ));
            }
            left |= right;
        }
    }
    Ok(())
}

/// True if the FROM item is the query `name` (or a parenthesized join holding it).
fn names(t: &TableFactor, name: &str) -> SqlResult<bool> {
    match t {
        TableFactor::Table { name: n, args, .. } => {
            Ok(args.is_none() && n.0.len() == 1 && object_name(n).is_ok_and(|n| n == name))
        }
        TableFactor::NestedJoin {
            table_with_joins, ..
        } => {
            check_outer_joins(std::slice::from_ref(table_with_joins), name)?;
            let mut found = names(&table_with_joins.relation, name)?;
            for j in &table_with_joins.joins {
                found |= names(&j.relation, name)?;
            }
            Ok(found)
        }
        _ => Ok(false),
    }
}

impl RecursivePlan {
    /// Produces the query's rows into `sink`, round by round; false when the sink
    /// stopped it.
    pub(crate) fn produce(&self, cx: &mut EvalCtx, sink: &mut Sink) -> SqlResult<bool> {
        let run = cx.run.ok_or_else(|| {
            SqlError::new(code::INTERNAL, "a recursive query run without a guard")
        })?;
        let guard = run.guard;
        let mut round = Round {
            seen: HashSet::new(),
            seen_bytes: 0,
            key: Vec::new(),
            all: self.all,
        };
        let mut rows = self.base.run(cx)?;
        let mut charged = 0;
        let result = loop {
            let mut working = Vec::new();
            let mut bytes = 0;
            let mut stopped = false;
            for row in rows {
                guard.check()?;
                if !round.is_new(&row, guard)? {
                    continue;
                }
                let b = row_bytes(&row);
                guard.charge(b)?;
                bytes += b;
                working.push(row.clone());
                if !sink(cx, row)? {
                    stopped = true;
                    break;
                }
            }
            guard.release(charged);
            charged = bytes;
            if stopped || working.is_empty() {
                break !stopped;
            }
            guard.check()?;
            let table = Rc::new(working);
            let before = run.work_tables.borrow_mut().insert(self.id, table);
            let next = self.step.run(cx);
            let mut tables = run.work_tables.borrow_mut();
            match before {
                Some(t) => tables.insert(self.id, t),
                None => tables.remove(&self.id),
            };
            drop(tables);
            rows = cast_rows(next?, self.step.columns(), &self.step_casts)?;
        };
        guard.release(charged + round.seen_bytes);
        Ok(result)
    }

    pub(crate) fn explain_into(&self, out: &mut Explain, depth: usize) {
        out.detail(depth, &format!("CTE {}", self.name));
        out.node(depth + 1, "Recursive Union");
        self.base.explain_into(out, depth + 2);
        self.step.explain_into(out, depth + 2);
    }
}

/// The rows given so far, under UNION.
struct Round {
    seen: HashSet<Vec<u8>>,
    seen_bytes: u64,
    key: Vec<u8>,
    all: bool,
}

impl Round {
    fn is_new(&mut self, row: &[Value], guard: &crate::guard::Guard) -> SqlResult<bool> {
        if self.all {
            return Ok(true);
        }
        key_bytes(row, &mut self.key);
        if self.seen.contains(&self.key) {
            return Ok(false);
        }
        let b = self.key.len() as u64 + 48;
        guard.charge(b)?;
        self.seen_bytes += b;
        self.seen.insert(self.key.clone());
        Ok(true)
    }
}

/// Produces the rows of a working table (the rows the previous round added).
pub(crate) fn produce_work_table(id: usize, cx: &mut EvalCtx, sink: &mut Sink) -> SqlResult<bool> {
    let run = cx
        .run
        .ok_or_else(|| SqlError::new(code::INTERNAL, "a working table read without a run"))?;
    let table = run.work_tables.borrow().get(&id).cloned();
    let Some(table) = table else {
        return Err(SqlError::new(
            code::INTERNAL,
            "a working table read outside its recursive query",
        ));
    };
    for row in table.iter() {
        run.guard.check()?;
        if !sink(cx, row.clone())? {
            return Ok(false);
        }
    }
    Ok(true)
}
