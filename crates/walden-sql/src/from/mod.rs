//! FROM: the relations a query reads — tables, subqueries, WITH queries,
//! `generate_series` — joined (inner, left, right, full, cross; `ON`, `USING`, `NATURAL`,
//! comma lists) in an order chosen from row estimates, by nested-loop, hash or index
//! nested-loop joins; and producing their rows.
//!
//! With several relations, every row is as wide as the whole FROM clause: each relation
//! fills its own columns and a join copies the right side's columns into the left
//! side's row. Expressions are therefore bound once, over the FROM clause's scope, and
//! hold at every level of the join tree, whichever order it joins in.

use std::ops::Range;
use std::sync::Arc;

use sqlparser::ast::{
    self, FunctionArg, FunctionArgExpr, JoinConstraint, JoinOperator, Spanned, TableFactor,
};
use walden::{ColumnType, Value};

use crate::access_path::{self, Access, Wanted};
use crate::bind::Binder;
use crate::catalog::{ident_name, object_name, IndexMeta, Scope};
use crate::error::{clip, code, SqlError, SqlResult};
use crate::expr::{CmpOp, EvalCtx, Expr};
use crate::guard::row_bytes;
use crate::infer::Params;
use crate::keytable::KeyTable;
use crate::recursive::RecursivePlan;
use crate::run::{record, NodeKey, NodeStats};
use crate::select::{push_key, read_index, CteBody, PlanCx, QueryPlan, SeriesIter};
use crate::types::{DeclaredType, SqlType};
use crate::value::{self, as_i64};
use crate::window;

/// Where a query's rows come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// No FROM: one row with no columns.
    Nothing,
    Series {
        start: i64,
        stop: i64,
        step: i64,
        ty: SqlType,
        /// A series of timestamps (`ty` timestamp or timestamptz; `start` and `stop` in
        /// microseconds, `step` the interval's sign): each value the previous plus this.
        interval: Option<walden::Interval>,
    },
    Table(TableRead),
    /// `generate_series` whose bounds are known only when it runs (they read the
    /// enclosing query's row, in a correlated subquery): its arguments, and its type.
    SeriesOf {
        args: Vec<Expr>,
        ty: SqlType,
    },
    /// A set-returning jsonb function (`jsonb_each`, …) of one argument, evaluated when
    /// it runs (it may read the enclosing query's row or a parameter).
    JsonRows {
        func: crate::jsonb::JsonRows,
        arg: Expr,
    },
    /// A relation of the virtual catalog (`pg_catalog`), its rows made when the
    /// statement was planned.
    Values {
        rows: Arc<Vec<Vec<Value>>>,
        name: String,
        /// Readable by superusers only: what the refusal calls it (`pg_authid`).
        superuser_only: Option<&'static str>,
    },
    /// `pg_settings`: the session's settings, read when it runs.
    Settings,
    /// `pg_cursors`: the session's open cursors as the statement started.
    Cursors,
    /// A subquery in FROM or a WITH query, run when read.
    Derived {
        plan: Arc<QueryPlan>,
        name: String,
    },
    /// A relation's rows placed at columns `at..` of rows `width` wide.
    Padded {
        inner: Box<Source>,
        at: usize,
        width: usize,
    },
    /// Rows of `inner` that pass `cond` (conditions on an outer join's result).
    Filter {
        inner: Box<Source>,
        cond: Expr,
        text: String,
        /// The planner's estimate of the rows that pass.
        est: f64,
    },
    Join(Box<Join>),
    /// A LATERAL subquery in FROM: run for each row of the FROM items before it, its
    /// parameters (`Expr::Outer` inside it) the values of `params` over that row.
    Lateral {
        body: LateralBody,
        params: Vec<Expr>,
        name: String,
    },
    /// A WITH RECURSIVE query, run where it is read; `label` names it for EXPLAIN.
    Recursive {
        plan: Arc<RecursivePlan>,
        label: String,
    },
    /// A WITH RECURSIVE query read inside its recursive term: the rows its previous
    /// round added.
    WorkTable {
        id: usize,
        name: String,
    },
}

/// What a LATERAL item runs for each row before it.
#[derive(Debug, Clone)]
pub enum LateralBody {
    Query(Arc<QueryPlan>),
    /// A function in FROM (implicitly LATERAL) over columns of the items before it.
    Series(Box<Source>),
}

/// A WITH query as EXPLAIN names it: `t`, or `t a` when read under an alias.
fn label(name: &str, alias: Option<&ast::TableAlias>) -> String {
    match alias.map(|a| ident_name(&a.name)) {
        Some(a) if a != name => format!("{name} {a}"),
        _ => name.to_string(),
    }
}

/// A table read: a scan or an index read, with the conditions on this table alone
/// (over its own columns) when it is one of several relations.
#[derive(Debug, Clone)]
pub struct TableRead {
    pub name: String,
    pub alias: Option<String>,
    pub access: Access,
    pub filter: Option<Expr>,
    pub filter_text: Option<String>,
    /// The table's column names, for EXPLAIN.
    pub names: Arc<[String]>,
    /// Each row is followed by its row id (`row_id_value`): the target of UPDATE …
    /// FROM and DELETE … USING, whose rows are changed by id.
    pub row_id: bool,
    /// The planner's estimate of the rows this read gives (its conditions applied).
    pub est: f64,
    /// The columns anyone reads (`Source::prune`): the others are made NULL as rows
    /// are read, so that no join copies them. None: every column.
    pub needed: Option<Arc<[bool]>>,
    /// ORDER BY … LIMIT whose sort keys are all columns of this table: rows that sort
    /// after the last row the top-N keeps are dropped as they are read, before any
    /// join looks them up or copies them (`SelectPlan::push_top`).
    pub top: Option<TopFilter>,
    /// The width of the joined rows this table's rows are placed in (0: its own): each
    /// row is read into a vector with that much room.
    pub width: usize,
}

/// The sort keys of a top-N pushed down to a table read: each a column of the table,
/// descending, NULLs first. The top-N publishes the keys of the last row it keeps in
/// `RunCx::top_bounds` under `id` once it holds its LIMIT of rows; until then every
/// row passes.
#[derive(Debug, Clone)]
pub struct TopFilter {
    pub id: u64,
    pub keys: Vec<(usize, bool, bool)>,
}

impl TopFilter {
    /// Whether a row of the table could still enter the top-N: it sorts strictly
    /// before the last row kept (an equal row arrives later and would sort after it).
    fn admits(&self, row: &[Value], cx: &EvalCtx) -> bool {
        let Some(run) = cx.run else { return true };
        let bounds = run.top_bounds.borrow();
        let Some((_, bound)) = bounds.iter().find(|(id, _)| *id == self.id) else {
            return true;
        };
        for ((col, desc, nulls_first), b) in self.keys.iter().zip(bound) {
            let Some(v) = row.get(*col) else { return true };
            match crate::select::compare_key(v, b, *desc, *nulls_first) {
                std::cmp::Ordering::Less => return true,
                std::cmp::Ordering::Greater => return false,
                std::cmp::Ordering::Equal => {}
            }
        }
        false
    }
}

/// A table's name, indexes and column types (a cached plan's, to choose its reads with).
pub(crate) type TableIndexes = (String, Vec<IndexMeta>, Vec<ColumnType>);

/// A row id as a value of the column a `row_id` table read adds.
pub(crate) fn row_id_value(id: walden::RowId) -> Value {
    Value::Int8(((id.page as i64) << 16) | i64::from(id.slot))
}

/// The row id a `row_id_value` holds.
pub(crate) fn row_id_of(v: &Value) -> Option<walden::RowId> {
    match v {
        Value::Int8(x) if *x >= 0 => Some(walden::RowId {
            page: (*x >> 16) as u64,
            slot: (*x & 0xffff) as u16,
        }),
        _ => None,
    }
}

impl TableRead {
    /// A row as the engine read it, as this read gives it: columns nobody reads made
    /// NULL, its row id after it when asked. A row of another width than the table's
    /// columns means ALTER TABLE changed the table since the statement was planned
    /// (readers take no lock), which fails the statement rather than read columns in the
    /// wrong places.
    pub(crate) fn shape(&self, id: walden::RowId, mut row: Vec<Value>) -> SqlResult<Vec<Value>> {
        if row.len() != self.names.len() {
            return Err(SqlError::new(
                code::OBJECT_IN_USE,
                format!(
                    "table \"{}\" was altered while the statement read it",
                    self.name
                ),
            ));
        }
        if let Some(needed) = &self.needed {
            for (v, keep) in row.iter_mut().zip(needed.iter()) {
                if !keep {
                    *v = Value::Null;
                }
            }
        }
        if self.row_id {
            row.push(row_id_value(id));
        }
        Ok(row)
    }

    /// The table as EXPLAIN names it: `t`, or `t a` when read under an alias.
    pub fn label(&self) -> String {
        match &self.alias {
            Some(a) if *a != self.name => format!("{} {a}", self.name),
            _ => self.name.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    /// Every left row, with NULLs for the right side where nothing matched.
    Left,
    /// Every row of both sides.
    Full,
}

#[derive(Debug, Clone)]
pub enum JoinMethod {
    /// The right side read once, each left row against each of its rows.
    NestedLoop,
    /// The right side (a LATERAL item) run again for each left row.
    Lateral,
    /// The right side read once into a hash table on its keys; each left row looks its
    /// keys up.
    Hash {
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
    },
    /// For each left row, the right table's rows found through an index on the values
    /// of `keys` (over the left row) for its first columns.
    Index {
        index: String,
        keys: Vec<(Expr, ColumnType)>,
    },
}

#[derive(Debug, Clone)]
pub struct Join {
    pub kind: JoinKind,
    pub left: Source,
    pub right: Source,
    pub method: JoinMethod,
    /// Conditions a pair of rows must meet besides the hash or index keys.
    pub cond: Option<Expr>,
    pub cond_text: Option<String>,
    /// The hash or index keys' conditions, for EXPLAIN.
    pub key_text: Option<String>,
    /// The columns the right side fills.
    pub right_cols: Vec<Range<usize>>,
    /// Row estimate, for choosing.
    pub rows: f64,
}

/// A FROM clause planned: its rows, its scope, and what of the WHERE clause is left to
/// check on the joined rows.
pub(crate) struct FromPlan {
    pub source: Source,
    pub scope: Scope,
    pub filter: Option<Expr>,
    /// The WHERE clause as written, when it is all in `filter` (EXPLAIN shows it).
    pub filter_text: Option<Arc<str>>,
    /// The planner's estimate of the rows that pass the filter.
    pub rows: f64,
    /// Each column's distinct values as ANALYZE estimated them (0: unknown), by the
    /// clause's column number.
    pub distinct: Vec<f64>,
}

/// One relation of the FROM clause, as written.
struct Rel {
    source: Source,
    name: Option<String>,
    columns: Vec<(String, SqlType)>,
    at: usize,
    /// For a table: its indexes and column types (for index reads) and a row estimate.
    indexes: Vec<IndexMeta>,
    types: Vec<ColumnType>,
    rows: f64,
    /// Each column's distinct values, when ANALYZE estimated them (0: unknown).
    distinct: Vec<f64>,
}

/// The FROM clause as a tree, before planning.
enum Item {
    Rel(usize),
    Join {
        kind: Kind,
        left: Box<Item>,
        right: Box<Item>,
        /// ON conditions (bound later), or USING columns as (left, right) pairs.
        on: Option<Box<ast::Expr>>,
        using: Vec<(usize, usize)>,
    },
}

/// A join as written (a RIGHT join is planned as a LEFT one turned round).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Inner,
    Left,
    Right,
    Full,
    /// A LATERAL item joined to the items before it (a comma or INNER JOIN; LEFT JOIN).
    LateralInner,
    LateralLeft,
}

/// One AND-ed condition of WHERE or ON.
#[derive(Debug, Clone)]
struct Conj {
    expr: Expr,
    cols: Vec<usize>,
    text: String,
}

/// The AND-ed parts of a WHERE or ON condition (parentheses around an AND looked
/// through).
pub(crate) fn split_and<'e>(e: &'e ast::Expr, out: &mut Vec<&'e ast::Expr>) {
    let mut e = e;
    while let ast::Expr::Nested(x) = e {
        if matches!(
            **x,
            ast::Expr::BinaryOp {
                op: ast::BinaryOperator::And,
                ..
            }
        ) {
            e = x;
        } else {
            break;
        }
    }
    match e {
        ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::And,
            right,
        } => {
            crate::depth::recurse(|| {
                split_and(left, out);
                split_and(right, out);
            });
        }
        other => out.push(other),
    }
}

fn bind_conjuncts(b: &mut Binder, e: &ast::Expr, what: &str) -> SqlResult<Vec<Conj>> {
    let mut parts = Vec::new();
    split_and(e, &mut parts);
    let mut out = Vec::with_capacity(parts.len());
    for p in parts {
        let expr = b.boolean(p, what).map_err(|e| window::in_clause(e, what))?;
        out.push(Conj {
            cols: expr.columns(),
            text: p.to_string(),
            expr,
        });
    }
    Ok(out)
}

fn and_all(conds: Vec<Expr>) -> Option<Expr> {
    conds
        .into_iter()
        .reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
}

fn text_of(conjs: &[Conj]) -> Option<String> {
    match conjs {
        [] => None,
        [one] => Some(one.text.clone()),
        many => Some(
            many.iter()
                .map(|c| format!("({})", c.text))
                .collect::<Vec<_>>()
                .join(" AND "),
        ),
    }
}

struct Builder<'c, 'a> {
    cx: &'c PlanCx<'a>,
    rels: Vec<Rel>,
    columns: Vec<(String, SqlType)>,
    relations: Vec<(String, Range<usize>)>,
    hidden: Vec<usize>,
    /// FULL JOIN USING columns: (visible, hidden).
    merged: Vec<(usize, usize)>,
    /// The next table read also gives its row ids (see `plan_from_with_row_id`).
    row_id_next: bool,
}

pub(crate) fn plan_from(
    from: &[ast::TableWithJoins],
    selection: Option<&ast::Expr>,
    cx: &PlanCx,
) -> SqlResult<FromPlan> {
    plan_from_in(from, selection, cx, false)
}

/// As `plan_from`, the first relation being a table whose rows are followed by their
/// row ids: a column `ctid` after its own, which only a qualified name finds.
pub(crate) fn plan_from_with_row_id(
    from: &[ast::TableWithJoins],
    selection: Option<&ast::Expr>,
    cx: &PlanCx,
) -> SqlResult<FromPlan> {
    plan_from_in(from, selection, cx, true)
}

fn plan_from_in(
    from: &[ast::TableWithJoins],
    selection: Option<&ast::Expr>,
    cx: &PlanCx,
    row_id: bool,
) -> SqlResult<FromPlan> {
    let mut b = Builder {
        cx,
        rels: Vec::new(),
        columns: Vec::new(),
        relations: Vec::new(),
        hidden: Vec::new(),
        merged: Vec::new(),
        row_id_next: row_id,
    };
    let mut items = Vec::new();
    for twj in from {
        let mut item = b.relation(&twj.relation)?;
        if b.is_lateral(&item) {
            // A LATERAL item in a comma list is joined to all the items before it.
            let before = items.drain(..).reduce(|left, right| Item::Join {
                kind: Kind::Inner,
                left: Box::new(left),
                right: Box::new(right),
                on: None,
                using: Vec::new(),
            });
            if let Some(left) = before {
                item = Item::Join {
                    kind: Kind::LateralInner,
                    left: Box::new(left),
                    right: Box::new(item),
                    on: None,
                    using: Vec::new(),
                };
            }
        }
        for j in &twj.joins {
            let right = b.relation(&j.relation)?;
            item = b.join(item, right, &j.join_operator)?;
        }
        items.push(item);
    }
    let star: Vec<usize> = items.iter().flat_map(|i| b.star(i)).collect();
    let width = b.columns.len();
    let scope = Scope {
        star: (star.len() != width || star.iter().enumerate().any(|(i, c)| i != *c))
            .then_some(star),
        ..b.scope_so_far()
    };
    // One relation (or none): its rows as they come, the WHERE clause on top.
    if items.len() <= 1 && matches!(items.first(), None | Some(Item::Rel(_))) {
        let source = match b.rels.last() {
            Some(rel) => rel.source.clone(),
            None => Source::Nothing,
        };
        let filter = match selection {
            Some(w) => Some(
                Binder::in_query(&scope, cx)
                    .boolean(w, "WHERE")
                    .map_err(|e| window::in_clause(e, "WHERE"))?,
            ),
            None => None,
        };
        let rows = source.estimate() * filter.as_ref().map_or(1.0, |f| b.selectivity_on(f));
        return Ok(FromPlan {
            source,
            scope,
            filter,
            filter_text: selection.map(|w| w.to_string().into()),
            rows: rows.max(1.0),
            distinct: b.distinct_by_column(width),
        });
    }
    let mut conjs = match selection {
        Some(w) => bind_conjuncts(&mut Binder::in_query(&scope, cx), w, "WHERE")?,
        None => Vec::new(),
    };
    let mut units = Vec::new();
    for item in items {
        b.collect_group(item, &scope, width, &mut units, &mut conjs)?;
    }
    let (unit, rest) = b.plan_group(units, conjs)?;
    let rows = (unit.rows
        * rest
            .iter()
            .map(|c| b.selectivity_on(&c.expr))
            .product::<f64>())
    .max(1.0);
    Ok(FromPlan {
        source: unit.source,
        scope,
        filter_text: text_of(&rest).map(Into::into),
        filter: and_all(rest.into_iter().map(|c| c.expr).collect()),
        rows,
        distinct: b.distinct_by_column(width),
    })
}

/// What one index lookup costs, in rows read in order: an index nested loop is chosen
/// over a hash join when the outer side has at most 1/this of the inner table's rows.
/// (`walden bench queries`: 100k customers joined to 1M orders through orders'
/// customer index took 4.6× PostgreSQL's time; reading orders into a hash join does not.)
const INDEX_PROBE_COST: f64 = 20.0;

/// A part of a join being planned: its rows, the columns it fills, an estimate of its
/// rows, and, for a single table, the table (for index joins).
struct Unit {
    source: Source,
    cols: Vec<Range<usize>>,
    rows: f64,
    table: Option<usize>,
}

impl Unit {
    fn covers(&self, cols: &[usize]) -> bool {
        cols.iter().all(|c| self.cols.iter().any(|r| r.contains(c)))
    }
}

impl Builder<'_, '_> {
    /// A relation of FROM: its columns join the scope.
    fn relation(&mut self, t: &TableFactor) -> SqlResult<Item> {
        let (source, default_name, mut columns, alias, table) = match t {
            TableFactor::Table {
                name, alias, args, ..
            } => {
                crate::bind::check_table_reference(t)?;
                let virtual_rel = match args {
                    None => self.virtual_relation(name)?,
                    Some(_) => None,
                };
                if let Some((vname, rel)) = virtual_rel {
                    (
                        match rel.rows {
                            crate::pg_catalog::Rows::Made(rows) => Source::Values {
                                rows: Arc::new(rows),
                                name: vname.clone(),
                                superuser_only: rel.superuser_only,
                            },
                            crate::pg_catalog::Rows::Settings => Source::Settings,
                            crate::pg_catalog::Rows::Cursors => Source::Cursors,
                        },
                        Some(vname),
                        rel.columns,
                        alias.as_ref().map(|a| ident_name(&a.name)),
                        None,
                    )
                } else if let Some((func, args)) = args.as_ref().and_then(|a| {
                    let table = crate::bind::function_name(name).ok()?;
                    Some((crate::jsonb::JsonRows::lookup(&table)?, a))
                }) {
                    let src = json_rows(func, args, self.cx)?;
                    let names = alias.as_ref().map(|a| &a.columns);
                    let columns = func
                        .columns()
                        .into_iter()
                        .enumerate()
                        .map(|(i, (col, ty))| {
                            let named = names.and_then(|n| n.get(i)).map(|c| ident_name(&c.name));
                            let lone = (func == crate::jsonb::JsonRows::ObjectKeys)
                                .then(|| alias.as_ref().map(|a| ident_name(&a.name)))
                                .flatten();
                            (named.or(lone).unwrap_or_else(|| col.to_string()), ty)
                        })
                        .collect();
                    (
                        src,
                        Some(func.name().to_string()),
                        columns,
                        alias.as_ref().map(|a| ident_name(&a.name)),
                        None,
                    )
                } else if let Some(args) = args {
                    let table = crate::bind::function_name(name)?;
                    // A function in FROM may read the items before it (as LATERAL).
                    let ((src, col_ty), params) =
                        self.lateral(|inner| series(&table, name, args, inner))?;
                    let src = if params.is_empty() {
                        src
                    } else {
                        Source::Lateral {
                            body: LateralBody::Series(Box::new(src)),
                            params,
                            name: "generate_series".into(),
                        }
                    };
                    let col = alias
                        .as_ref()
                        .and_then(|a| a.columns.first())
                        .map(|c| ident_name(&c.name))
                        .or_else(|| alias.as_ref().map(|a| ident_name(&a.name)))
                        .unwrap_or_else(|| "generate_series".into());
                    (
                        src,
                        Some("generate_series".to_string()),
                        vec![(col, col_ty)],
                        alias.as_ref().map(|a| ident_name(&a.name)),
                        None,
                    )
                } else if let Some(cte) = object_name(name)
                    .ok()
                    .and_then(|table| self.cx.ctes.and_then(|c| c.find(&table)))
                {
                    let table = cte.name.clone();
                    let columns = cte.columns.clone();
                    let source = match &cte.body {
                        CteBody::Plan(plan) => Source::Derived {
                            plan: plan.clone(),
                            name: table.clone(),
                        },
                        CteBody::Recursive(plan) => Source::Recursive {
                            plan: plan.clone(),
                            label: label(&table, alias.as_ref()),
                        },
                        CteBody::SelfRef(s) => {
                            let mut source = s.reference(&table, self.cx, name.span().start)?;
                            if let Source::WorkTable { name, .. } = &mut source {
                                *name = label(&table, alias.as_ref());
                            }
                            source
                        }
                    };
                    (
                        source,
                        Some(table),
                        columns,
                        alias.as_ref().map(|a| ident_name(&a.name)),
                        None,
                    )
                } else if let Some((table, seq)) = object_name(name)
                    .ok()
                    .and_then(|t| self.cx.catalog.sequence(&t).map(|s| (t, s)))
                {
                    // A sequence reads as its one row, as PostgreSQL's does (what
                    // pg_dump reads of it: `SELECT last_value, is_called FROM s`).
                    let row = vec![
                        Value::Int8(seq.state.last_value),
                        Value::Int8(seq.log_cnt),
                        Value::Bool(seq.state.is_called),
                    ];
                    (
                        Source::Values {
                            rows: Arc::new(vec![row]),
                            name: table.clone(),
                            superuser_only: None,
                        },
                        Some(table),
                        vec![
                            ("last_value".to_string(), SqlType::Int8),
                            ("log_cnt".to_string(), SqlType::Int8),
                            ("is_called".to_string(), SqlType::Bool),
                        ],
                        alias.as_ref().map(|a| ident_name(&a.name)),
                        None,
                    )
                } else if let Some((table, view)) = object_name(name)
                    .ok()
                    .and_then(|t| self.cx.catalog.view(&t).map(|v| (t, v)))
                {
                    let plan = crate::view::plan_view(&view, self.cx.catalog)
                        .map_err(|e| e.at(name.span().start))?;
                    let columns = view
                        .columns
                        .iter()
                        .zip(plan.columns())
                        .map(|(n, (_, ty))| (n.clone(), *ty))
                        .collect();
                    (
                        Source::Derived {
                            plan: Arc::new(plan),
                            name: table.clone(),
                        },
                        Some(table),
                        columns,
                        alias.as_ref().map(|a| ident_name(&a.name)),
                        None,
                    )
                } else {
                    let table = object_name(name)?;
                    let scope = self
                        .cx
                        .catalog
                        .table_scope(&table)
                        .map_err(|e| e.at(name.span().start))?;
                    let row_id = std::mem::take(&mut self.row_id_next);
                    let mut columns = scope.columns;
                    let names = columns.iter().map(|(n, _)| n.clone()).collect();
                    if row_id {
                        self.hidden.push(self.columns.len() + columns.len());
                        columns.push(("ctid".to_string(), SqlType::Int8));
                    }
                    (
                        Source::Table(TableRead {
                            name: table.clone(),
                            alias: alias.as_ref().map(|a| ident_name(&a.name)),
                            access: Access::Scan,
                            filter: None,
                            filter_text: None,
                            names,
                            row_id,
                            est: 0.0,
                            needed: None,
                            top: None,
                            width: 0,
                        }),
                        Some(table.clone()),
                        columns,
                        alias.as_ref().map(|a| ident_name(&a.name)),
                        Some(table),
                    )
                }
            }
            TableFactor::Derived {
                lateral,
                subquery,
                alias,
                ..
            } => {
                let name = alias.as_ref().map(|a| ident_name(&a.name));
                let label = name.clone().unwrap_or_else(|| "unnamed_subquery".into());
                let (source, columns) = if *lateral {
                    let (plan, params) = self.lateral_subquery(subquery)?;
                    let columns = plan.columns().to_vec();
                    let source = Source::Lateral {
                        body: LateralBody::Query(Arc::new(plan)),
                        params,
                        name: label,
                    };
                    (source, columns)
                } else {
                    let plan = QueryPlan::plan_in(subquery, self.cx)?;
                    let columns = plan.columns().to_vec();
                    let source = Source::Derived {
                        plan: Arc::new(plan),
                        name: label,
                    };
                    (source, columns)
                };
                (source, None, columns, name, None)
            }
            TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => {
                if alias.is_some() {
                    return Err(SqlError::unsupported("an alias on a parenthesized join"));
                }
                let mut item = self.relation(&table_with_joins.relation)?;
                for j in &table_with_joins.joins {
                    let right = self.relation(&j.relation)?;
                    item = self.join(item, right, &j.join_operator)?;
                }
                return Ok(item);
            }
            other => {
                return Err(SqlError::unsupported(format!(
                    "the FROM item {}",
                    clip(&other.to_string())
                ))
                .at(other.span().start))
            }
        };
        // Column aliases: `AS x(a, b)` renames the first columns.
        if let TableFactor::Table {
            alias: Some(a),
            args: None,
            ..
        }
        | TableFactor::Derived { alias: Some(a), .. } = t
        {
            if a.columns.len() > columns.len() {
                return Err(SqlError::new(
                    code::INVALID_COLUMN_REFERENCE,
                    format!(
                        "table \"{}\" has {} columns available but {} columns specified",
                        ident_name(&a.name),
                        columns.len(),
                        a.columns.len()
                    ),
                ));
            }
            for (c, new) in columns.iter_mut().zip(&a.columns) {
                c.0 = ident_name(&new.name);
            }
        }
        let name = alias.or(default_name);
        if let Some(n) = &name {
            if self.relations.iter().any(|(r, _)| r == n) {
                return Err(SqlError::new(
                    code::DUPLICATE_ALIAS,
                    format!("table name \"{n}\" specified more than once"),
                )
                .at(t.span().start));
            }
        }
        let at = self.columns.len();
        let range = at..at + columns.len();
        if let Some(n) = &name {
            self.relations.push((n.clone(), range));
        }
        self.columns.extend(columns.iter().cloned());
        let (indexes, rows, distinct) = match &table {
            Some(tname) => (
                self.cx.catalog.indexes(tname),
                self.cx.catalog.rows(tname),
                self.cx.catalog.distinct(tname),
            ),
            None => (Vec::new(), 1000.0, Vec::new()),
        };
        let mut source = source;
        if let Source::Table(t) = &mut source {
            t.est = rows;
        }
        let types = columns.iter().map(|(_, t)| t.column_type()).collect();
        self.rels.push(Rel {
            source,
            name,
            columns,
            at,
            indexes,
            types,
            rows,
            distinct,
        });
        Ok(Item::Rel(self.rels.len() - 1))
    }

    /// A relation of `pg_catalog` or `information_schema`: a qualified name, or an
    /// unqualified one of `pg_catalog` that no WITH query takes (PostgreSQL searches
    /// `pg_catalog` before `public`).
    fn virtual_relation(
        &self,
        name: &ast::ObjectName,
    ) -> SqlResult<Option<(String, crate::pg_catalog::VirtualRelation)>> {
        let parts: Vec<String> = name
            .0
            .iter()
            .filter_map(|p| p.as_ident())
            .map(ident_name)
            .collect();
        let (schema, rel) = match parts.as_slice() {
            [s, n] if s == "pg_catalog" || s == "information_schema" => (Some(s.as_str()), n),
            [n] if crate::pg_catalog::is_pg_catalog_name(n)
                && self.cx.ctes.and_then(|c| c.find(n)).is_none() =>
            {
                (None, n)
            }
            _ => return Ok(None),
        };
        let snap = self.cx.catalog.pg_snapshot().unwrap_or_default();
        match crate::pg_catalog::lookup(schema, rel, &snap) {
            Some(r) => Ok(Some((rel.clone(), r))),
            None => Err(SqlError::new(
                code::UNDEFINED_TABLE,
                format!("relation \"{}\" does not exist", parts.join(".")),
            )
            .at(name.span().start)),
        }
    }

    /// Plans a LATERAL subquery: the columns of the FROM items before it are its outer
    /// scope, their values its parameters.
    fn lateral_subquery(&self, q: &ast::Query) -> SqlResult<(QueryPlan, Vec<Expr>)> {
        self.lateral(|inner| QueryPlan::plan_in(q, inner))
    }

    /// Plans with the columns of the FROM items before this one as the outer scope:
    /// what `plan` made, and the outer values it reads (its parameters).
    fn lateral<R>(&self, plan: impl FnOnce(&PlanCx) -> SqlResult<R>) -> SqlResult<(R, Vec<Expr>)> {
        let scope = self.scope_so_far();
        let outer = crate::bind::Outer {
            scope: &scope,
            params: std::cell::RefCell::new(Vec::new()),
            parent: self.cx.outer,
        };
        let inner = PlanCx {
            outer: Some(&outer),
            ..*self.cx
        };
        let made = plan(&inner)?;
        Ok((made, outer.params.into_inner()))
    }

    /// ANALYZE's distinct values of each of the clause's `width` columns (0: unknown).
    fn distinct_by_column(&self, width: usize) -> Vec<f64> {
        let mut out = vec![0.0; width];
        for rel in &self.rels {
            for (i, d) in rel.distinct.iter().enumerate() {
                if let Some(o) = out.get_mut(rel.at + i) {
                    *o = *d;
                }
            }
        }
        out
    }

    /// The scope of the FROM items planned so far, which a LATERAL item reads.
    fn scope_so_far(&self) -> Scope {
        Scope {
            table: match self.rels.as_slice() {
                [one] => one.name.clone(),
                _ => None,
            },
            columns: self.columns.clone(),
            relations: if self.rels.len() > 1 {
                self.relations.clone()
            } else {
                Vec::new()
            },
            hidden: self.hidden.clone(),
            merged: self.merged.clone(),
            star: None,
        }
    }

    /// True if the item is a LATERAL subquery.
    fn is_lateral(&self, item: &Item) -> bool {
        matches!(item, Item::Rel(r) if matches!(self.rels[*r].source, Source::Lateral { .. }))
    }

    /// The columns of a join's two sides, left then right.
    fn pair_columns(&self, left: &Item, right: &Item) -> Vec<usize> {
        let mut cols = self.item_columns(left);
        cols.extend(self.item_columns(right));
        cols
    }

    fn item_columns(&self, item: &Item) -> Vec<usize> {
        match item {
            Item::Rel(r) => {
                let rel = &self.rels[*r];
                (rel.at..rel.at + rel.columns.len()).collect()
            }
            Item::Join { left, right, .. } => {
                let mut v = self.item_columns(left);
                v.extend(self.item_columns(right));
                v
            }
        }
    }

    /// The columns `*` gives for an item: USING columns once, first.
    fn star(&self, item: &Item) -> Vec<usize> {
        match item {
            Item::Rel(r) => {
                let rel = &self.rels[*r];
                (rel.at..rel.at + rel.columns.len()).collect()
            }
            Item::Join {
                left,
                right,
                using,
                kind,
                ..
            } => {
                // The merged column: the left one, a RIGHT join's the right one.
                let mut v: Vec<usize> = using
                    .iter()
                    .map(|(l, r)| if *kind == Kind::Right { *r } else { *l })
                    .collect();
                v.extend(
                    self.star(left)
                        .into_iter()
                        .filter(|c| !using.iter().any(|(l, _)| l == c)),
                );
                v.extend(
                    self.star(right)
                        .into_iter()
                        .filter(|c| !using.iter().any(|(_, r)| r == c)),
                );
                v
            }
        }
    }

    /// A visible column called `name` among `cols`.
    fn find_in(&self, cols: &[usize], name: &str) -> SqlResult<usize> {
        let found: Vec<usize> = cols
            .iter()
            .copied()
            .filter(|c| self.columns[*c].0 == name && !self.hidden.contains(c))
            .collect();
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("column \"{name}\" specified in USING clause does not exist in left table"),
            )),
            _ => Err(SqlError::new(
                code::AMBIGUOUS_COLUMN,
                format!("common column name \"{name}\" appears more than once in left table"),
            )),
        }
    }

    fn join(&mut self, left: Item, right: Item, op: &JoinOperator) -> SqlResult<Item> {
        use JoinOperator as J;
        let (kind, constraint) = match op {
            J::Join(c) | J::Inner(c) => (Kind::Inner, Some(c)),
            J::Left(c) | J::LeftOuter(c) => (Kind::Left, Some(c)),
            J::Right(c) | J::RightOuter(c) => (Kind::Right, Some(c)),
            J::FullOuter(c) => (Kind::Full, Some(c)),
            J::CrossJoin(c) => (Kind::Inner, Some(c)),
            other => {
                return Err(SqlError::unsupported(format!(
                    "this kind of join ({})",
                    clip(&format!("{other:?}"))
                )))
            }
        };
        let kind = match (kind, self.is_lateral(&right)) {
            (k, false) => k,
            (Kind::Inner, true) => Kind::LateralInner,
            (Kind::Left, true) => Kind::LateralLeft,
            (_, true) => return Err(SqlError::unsupported("LATERAL in a RIGHT or FULL join")),
        };
        let mut on = None;
        let mut using = Vec::new();
        match constraint {
            Some(JoinConstraint::On(e)) => on = Some(Box::new(e.clone())),
            Some(JoinConstraint::Using(names)) => {
                let lcols = self.item_columns(&left);
                let rcols = self.item_columns(&right);
                for n in names {
                    let name = object_name(n)?;
                    let l = self.find_in(&lcols, &name)?;
                    let r = self.find_in(&rcols, &name).map_err(|e| {
                        SqlError::new(e.code, e.message.replace("left table", "right table"))
                    })?;
                    using.push((l, r));
                }
            }
            Some(JoinConstraint::Natural) => {
                let lcols = self.item_columns(&left);
                let rcols = self.item_columns(&right);
                for &l in &lcols {
                    let name = self.columns[l].0.clone();
                    if self.hidden.contains(&l) {
                        continue;
                    }
                    if let Ok(r) = self.find_in(&rcols, &name) {
                        using.push((l, r));
                    }
                }
            }
            Some(JoinConstraint::None) | None => {
                if !matches!(op, J::CrossJoin(_)) {
                    return Err(SqlError::syntax("a join needs ON or USING"));
                }
            }
        }
        for (l, r) in &using {
            let (lt, rt) = (self.columns[*l].1, self.columns[*r].1);
            if lt != rt && !(lt.is_numeric() && rt.is_numeric()) {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("operator does not exist: {} = {}", lt.name(), rt.name()),
                ));
            }
            // The merged column is the left one; a RIGHT join's is the right one.
            self.hidden.push(if kind == Kind::Right { *l } else { *r });
            if kind == Kind::Full {
                self.merged.push((*l, *r));
            }
        }
        Ok(Item::Join {
            kind,
            left: Box::new(left),
            right: Box::new(right),
            on,
            using,
        })
    }

    /// The conditions of a join: its ON clause and USING columns.
    fn join_conds(
        &self,
        on: Option<&ast::Expr>,
        using: &[(usize, usize)],
        scope: &Scope,
        cols: &[usize],
    ) -> SqlResult<Vec<Conj>> {
        let mut out = Vec::new();
        if let Some(e) = on {
            let conjs = bind_conjuncts(&mut Binder::in_query(scope, self.cx), e, "JOIN/ON")?;
            for c in &conjs {
                if let Some(bad) = c.cols.iter().find(|x| !cols.contains(x)) {
                    let rel = self
                        .relations
                        .iter()
                        .find(|(_, r)| r.contains(bad))
                        .map(|(n, _)| n.clone())
                        .unwrap_or_default();
                    return Err(SqlError::new(
                        code::UNDEFINED_TABLE,
                        format!("invalid reference to FROM-clause entry for table \"{rel}\""),
                    )
                    .with_hint("There is an entry for this table, but it cannot be referenced from this part of the query."));
                }
            }
            out.extend(conjs);
        }
        for (l, r) in using {
            let (lt, rt) = (self.columns[*l].1, self.columns[*r].1);
            out.push(Conj {
                expr: Expr::Cmp(
                    CmpOp::Eq,
                    Box::new(Expr::Column(*l, lt)),
                    Box::new(Expr::Column(*r, rt)),
                ),
                cols: vec![(*l).min(*r), (*l).max(*r)],
                text: format!("{} = {}", self.qualified(*l), self.qualified(*r)),
            });
        }
        Ok(out)
    }

    fn qualified(&self, c: usize) -> String {
        match self.relations.iter().find(|(_, r)| r.contains(&c)) {
            Some((n, _)) => format!("{n}.{}", self.columns[c].0),
            None => self.columns[c].0.clone(),
        }
    }

    /// Adds the units of an inner-join group (relations and outer joins, each planned
    /// on its own) and the group's join conditions.
    fn collect_group(
        &mut self,
        item: Item,
        scope: &Scope,
        width: usize,
        units: &mut Vec<Unit>,
        conjs: &mut Vec<Conj>,
    ) -> SqlResult<()> {
        match item {
            Item::Rel(r) => {
                units.push(self.rel_unit(r, width));
                Ok(())
            }
            Item::Join {
                kind: kind @ (Kind::LateralInner | Kind::LateralLeft),
                left,
                right,
                on,
                using,
            } => {
                let cols = self.pair_columns(&left, &right);
                let conds = self.join_conds(on.as_deref(), &using, scope, &cols)?;
                let kind = match kind {
                    Kind::LateralLeft => JoinKind::Left,
                    _ => JoinKind::Inner,
                };
                let l = self.item_unit(*left, scope, width)?;
                let r = self.item_unit(*right, scope, width)?;
                // The right side runs once per left row: its estimate is per run.
                let rows = l.rows * r.source.estimate();
                units.push(join_unit(
                    kind,
                    l,
                    r,
                    JoinMethod::Lateral,
                    None,
                    conds,
                    rows,
                ));
                Ok(())
            }
            Item::Join {
                kind: Kind::Inner,
                left,
                right,
                on,
                using,
            } => {
                let cols = self.pair_columns(&left, &right);
                conjs.extend(self.join_conds(on.as_deref(), &using, scope, &cols)?);
                self.collect_group(*left, scope, width, units, conjs)?;
                self.collect_group(*right, scope, width, units, conjs)
            }
            Item::Join {
                kind,
                left,
                right,
                on,
                using,
            } => {
                let cols = self.pair_columns(&left, &right);
                let conds = self.join_conds(on.as_deref(), &using, scope, &cols)?;
                // A right join is a left join the other way round (rows are as wide as
                // FROM whichever side they start on).
                let (kind, left, right) = match kind {
                    Kind::Right => (JoinKind::Left, right, left),
                    Kind::Left => (JoinKind::Left, left, right),
                    _ => (JoinKind::Full, left, right),
                };
                let l = self.item_unit(*left, scope, width)?;
                let r = self.item_unit(*right, scope, width)?;
                units.push(self.outer_join(kind, l, r, conds)?);
                Ok(())
            }
        }
    }

    /// An item planned alone (one side of an outer join).
    fn item_unit(&mut self, item: Item, scope: &Scope, width: usize) -> SqlResult<Unit> {
        let mut units = Vec::new();
        let mut conjs = Vec::new();
        self.collect_group(item, scope, width, &mut units, &mut conjs)?;
        let (mut unit, rest) = self.plan_group(units, conjs)?;
        add_filter(&mut unit, rest);
        Ok(unit)
    }

    fn rel_unit(&mut self, r: usize, width: usize) -> Unit {
        let rel = &mut self.rels[r];
        let mut source = std::mem::replace(&mut rel.source, Source::Nothing);
        if let Source::Table(t) = &mut source {
            t.width = width;
        }
        let n = rel.columns.len();
        let is_table = matches!(source, Source::Table(_));
        Unit {
            source: Source::Padded {
                inner: Box::new(source),
                at: rel.at,
                width,
            },
            cols: std::iter::once(rel.at..rel.at + n).collect(),
            rows: rel.rows,
            table: is_table.then_some(r),
        }
    }

    /// Joins the units of an inner-join group in an order chosen from their row
    /// estimates, each condition checked as soon as its columns are there. Returns the
    /// conditions on no column (checked once joined).
    fn plan_group(
        &mut self,
        mut units: Vec<Unit>,
        conjs: Vec<Conj>,
    ) -> SqlResult<(Unit, Vec<Conj>)> {
        let mut rest = Vec::new();
        let mut pending = Vec::new();
        // Conditions on one unit go into it.
        let mut own: Vec<Vec<Conj>> = units.iter().map(|_| Vec::new()).collect();
        for c in conjs {
            if c.cols.is_empty() {
                rest.push(c);
            } else if let Some(i) = units.iter().position(|u| u.covers(&c.cols)) {
                own[i].push(c);
            } else {
                pending.push(c);
            }
        }
        for (u, conds) in units.iter_mut().zip(own) {
            self.restrict(u, conds);
        }
        if units.is_empty() {
            return Ok((
                Unit {
                    source: Source::Nothing,
                    cols: Vec::new(),
                    rows: 1.0,
                    table: None,
                },
                rest,
            ));
        }
        let first = (0..units.len())
            .min_by(|a, b| units[*a].rows.total_cmp(&units[*b].rows))
            .unwrap_or(0);
        let mut current = units.swap_remove(first);
        while !units.is_empty() {
            let connected = |u: &Unit| pending.iter().any(|c| equi_sides(c, &current, u).is_some());
            let pick = (0..units.len())
                .filter(|i| connected(&units[*i]))
                .min_by(|a, b| units[*a].rows.total_cmp(&units[*b].rows))
                .or_else(|| {
                    (0..units.len()).min_by(|a, b| units[*a].rows.total_cmp(&units[*b].rows))
                })
                .unwrap_or(0);
            let next = units.swap_remove(pick);
            let mut cols = current.cols.clone();
            cols.extend(next.cols.iter().cloned());
            let (now, later): (Vec<Conj>, Vec<Conj>) = pending
                .into_iter()
                .partition(|c| c.cols.iter().all(|x| cols.iter().any(|r| r.contains(x))));
            pending = later;
            current = self.inner_join(current, next, now);
        }
        // Conditions whose columns never all met (cannot happen: every column is in
        // some unit) are checked at the end.
        rest.extend(pending);
        Ok((current, rest))
    }

    /// The distinct values ANALYZE estimated for a column of the FROM clause's rows,
    /// at most `rows` (the rows of the unit it is in); None when unknown.
    fn column_distinct(&self, e: &Expr, rows: f64) -> Option<f64> {
        let Expr::Column(i, _) = e else {
            return None;
        };
        let rel = self
            .rels
            .iter()
            .find(|r| (r.at..r.at + r.columns.len()).contains(i))?;
        let d = *rel.distinct.get(i - rel.at)?;
        (d > 0.0).then(|| d.min(rows.max(1.0)))
    }

    /// The share of a table's rows a condition on it keeps: for `column = constant`,
    /// one over the column's distinct values when ANALYZE estimated them (as
    /// PostgreSQL's eqsel without a most-common-values list); else a fixed guess.
    fn selectivity_on(&self, e: &Expr) -> f64 {
        match e {
            Expr::Cmp(CmpOp::Eq, a, b) => {
                let col = match (a.columns().is_empty(), b.columns().is_empty()) {
                    (false, true) => a,
                    (true, false) => b,
                    _ => return selectivity(e),
                };
                match self.column_distinct(col, f64::MAX) {
                    Some(d) => 1.0 / d,
                    None => selectivity(e),
                }
            }
            Expr::And(a, b) => self.selectivity_on(a) * self.selectivity_on(b),
            _ => selectivity(e),
        }
    }

    /// The rows an inner join on equal keys gives: each key pair divides the product of
    /// the sides' rows by the larger of its columns' distinct values (PostgreSQL's
    /// eqjoinsel without statistics of common values); the larger side's rows when no
    /// key's distinct values are known.
    fn equi_join_rows(&self, left: &Unit, right: &Unit, keys: &[(Expr, Expr, Conj)]) -> f64 {
        let mut rows = left.rows * right.rows;
        let mut known = false;
        for (l, r, _) in keys {
            let nd = match (
                self.column_distinct(l, left.rows),
                self.column_distinct(r, right.rows),
            ) {
                (Some(a), Some(b)) => a.max(b),
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => continue,
            };
            rows /= nd.max(1.0);
            known = true;
        }
        if known {
            rows.max(1.0)
        } else {
            left.rows.max(right.rows)
        }
    }

    /// Puts conditions on one unit into it: into a table's read (where an index may
    /// serve them), or as a filter over it.
    fn restrict(&mut self, u: &mut Unit, conds: Vec<Conj>) {
        let Some(r) = u.table else {
            add_filter(u, conds);
            return;
        };
        if conds.is_empty() {
            self.choose(u, r, None, None);
            return;
        }
        let at = self.rels[r].at;
        let text = text_of(&conds);
        let keep: f64 = conds.iter().map(|c| self.selectivity_on(&c.expr)).product();
        u.rows = (u.rows * keep).max(1.0);
        let narrow = and_all(
            conds
                .into_iter()
                .map(|c| c.expr.map_columns(&|i| i - at))
                .collect(),
        );
        self.choose(u, r, narrow, text);
    }

    /// Gives a table unit its filter and chooses how to read it.
    fn choose(&mut self, u: &mut Unit, r: usize, filter: Option<Expr>, text: Option<String>) {
        let rel = &self.rels[r];
        let Source::Padded { inner, .. } = &mut u.source else {
            return;
        };
        let Source::Table(read) = inner.as_mut() else {
            return;
        };
        if !rel.indexes.is_empty() && filter.is_some() {
            read.access = access_path::choose(
                &rel.indexes,
                &rel.types,
                &Wanted {
                    filter: filter.as_ref(),
                    order: None,
                    nulls_dropped: false,
                    few: false,
                },
            );
            if let Access::Index(ix) = &read.access {
                let unique_point = rel
                    .indexes
                    .iter()
                    .find(|i| i.name == ix.index)
                    .is_some_and(|i| i.unique && ix.ranges.iter().all(|(lo, hi)| lo == hi && matches!(lo, std::ops::Bound::Included(v) if v.len() == i.columns.len())));
                if unique_point {
                    u.rows = ix.ranges.len().max(1) as f64;
                }
            }
            // A plan cached with its parameters unknown: `id = $1` on a unique key is
            // still one row, whatever the run's value (the read is chosen per run).
            if self.cx.params.typed()
                && filter
                    .as_ref()
                    .is_some_and(|f| access_path::fixes_unique(&rel.indexes, f))
            {
                u.rows = 1.0;
            }
        }
        read.filter = filter;
        read.filter_text = text;
        read.est = u.rows;
    }

    fn inner_join(&mut self, left: Unit, right: Unit, conds: Vec<Conj>) -> Unit {
        let mut keys = Vec::new();
        let mut residual = Vec::new();
        for c in conds {
            match equi_sides(&c, &left, &right) {
                Some((l, r)) => keys.push((l, r, c)),
                None => residual.push(c),
            }
        }
        if keys.is_empty() {
            // A cross product: the smaller side is kept in memory.
            let (l, r) = if right.rows <= left.rows {
                (left, right)
            } else {
                (right, left)
            };
            let rows = l.rows * r.rows * if residual.is_empty() { 1.0 } else { 0.3 };
            return join_unit(
                JoinKind::Inner,
                l,
                r,
                JoinMethod::NestedLoop,
                None,
                residual,
                rows,
            );
        }
        let rows = self.equi_join_rows(&left, &right, &keys);
        // An index on the right (or the left) table's key columns, when the other side
        // is small enough that looking each of its rows up (a descent and reads at
        // random) costs less than reading the whole table once into a hash join.
        for swap in [false, true] {
            let (outer, inner) = if swap {
                (&right, &left)
            } else {
                (&left, &right)
            };
            if outer.rows * INDEX_PROBE_COST > inner.rows {
                continue;
            }
            let oriented: Vec<(Expr, Expr)> = keys
                .iter()
                .map(|(l, r, _)| {
                    if swap {
                        (r.clone(), l.clone())
                    } else {
                        (l.clone(), r.clone())
                    }
                })
                .collect();
            if let Some((index, used)) = self.index_for(inner, &oriented) {
                let (outer, inner) = if swap { (right, left) } else { (left, right) };
                return index_join(outer, inner, index, used, keys, residual, rows);
            }
        }
        // A hash join, building on the smaller side.
        let (probe, build, swap) = if right.rows <= left.rows {
            (left, right, false)
        } else {
            (right, left, true)
        };
        let (mut lk, mut rk, mut key_conds) = (Vec::new(), Vec::new(), Vec::new());
        for (l, r, c) in keys {
            let (l, r) = if swap { (r, l) } else { (l, r) };
            let (l, r) = hash_pair(l, r);
            lk.push(l);
            rk.push(r);
            key_conds.push(c);
        }
        join_unit(
            JoinKind::Inner,
            probe,
            build,
            JoinMethod::Hash {
                left_keys: lk,
                right_keys: rk,
            },
            text_of(&key_conds),
            residual,
            rows,
        )
    }

    /// An index of `inner`'s table whose first columns the keys' inner sides are; the
    /// index and, per index column used, the key (over the outer row).
    fn index_for(
        &self,
        inner: &Unit,
        keys: &[(Expr, Expr)],
    ) -> Option<(String, Vec<(Expr, ColumnType)>)> {
        let r = inner.table?;
        let rel = &self.rels[r];
        let mut best: Option<(String, Vec<(Expr, ColumnType)>)> = None;
        for ix in &rel.indexes {
            let mut used = Vec::new();
            for &c in &ix.columns {
                let found = keys
                    .iter()
                    .find(|(_, i)| matches!(i, Expr::Column(x, _) if *x == rel.at + c));
                match found {
                    Some((o, _)) => used.push((o.clone(), rel.types[c])),
                    None => break,
                }
            }
            if !used.is_empty() && best.as_ref().is_none_or(|(_, b)| used.len() > b.len()) {
                best = Some((ix.name.clone(), used));
            }
        }
        best
    }

    /// A left or full join of two units planned on their own.
    fn outer_join(
        &mut self,
        kind: JoinKind,
        left: Unit,
        mut right: Unit,
        conds: Vec<Conj>,
    ) -> SqlResult<Unit> {
        let mut keys = Vec::new();
        let mut residual = Vec::new();
        let mut right_only = Vec::new();
        for c in conds {
            if kind == JoinKind::Left && !c.cols.is_empty() && right.covers(&c.cols) {
                // An ON condition on the right side alone narrows that side.
                right_only.push(c);
                continue;
            }
            match equi_sides(&c, &left, &right) {
                Some((l, r)) => keys.push((l, r, c)),
                None => residual.push(c),
            }
        }
        self.restrict(&mut right, right_only);
        let rows = left.rows.max(right.rows);
        if keys.is_empty() {
            return Ok(join_unit(
                kind,
                left,
                right,
                JoinMethod::NestedLoop,
                None,
                residual,
                rows,
            ));
        }
        let (mut lk, mut rk, mut key_conds) = (Vec::new(), Vec::new(), Vec::new());
        for (l, r, c) in keys {
            let (l, r) = hash_pair(l, r);
            lk.push(l);
            rk.push(r);
            key_conds.push(c);
        }
        Ok(join_unit(
            kind,
            left,
            right,
            JoinMethod::Hash {
                left_keys: lk,
                right_keys: rk,
            },
            text_of(&key_conds),
            residual,
            rows,
        ))
    }
}

/// Conditions over a unit that is not one table: checked on its rows.
fn add_filter(u: &mut Unit, conds: Vec<Conj>) {
    if conds.is_empty() {
        return;
    }
    u.rows = (u.rows * selectivity_of(&conds)).max(1.0);
    let text = text_of(&conds).unwrap_or_default();
    if let Some(cond) = and_all(conds.into_iter().map(|c| c.expr).collect()) {
        let inner = std::mem::replace(&mut u.source, Source::Nothing);
        u.source = Source::Filter {
            inner: Box::new(inner),
            cond,
            text,
            est: u.rows,
        };
    }
    u.table = None;
}

/// An inner index nested-loop join: `inner`'s table looked up through `index` on the
/// values of `used` (over the outer row).
fn index_join(
    outer: Unit,
    inner: Unit,
    index: String,
    used: Vec<(Expr, ColumnType)>,
    keys: Vec<(Expr, Expr, Conj)>,
    residual: Vec<Conj>,
    rows: f64,
) -> Unit {
    // Every key condition is checked again on the joined row (the index finds the rows
    // equal in key order; the condition decides in SQL).
    let mut conds: Vec<Conj> = keys.into_iter().map(|(_, _, c)| c).collect();
    let key_text = text_of(&conds);
    conds.extend(residual);
    join_unit(
        JoinKind::Inner,
        outer,
        inner,
        JoinMethod::Index { index, keys: used },
        key_text,
        conds,
        rows,
    )
}

fn join_unit(
    kind: JoinKind,
    left: Unit,
    right: Unit,
    method: JoinMethod,
    key_text: Option<String>,
    residual: Vec<Conj>,
    rows: f64,
) -> Unit {
    let mut cols = left.cols.clone();
    cols.extend(right.cols.iter().cloned());
    let cond_text = text_of(&residual);
    let cond = and_all(residual.into_iter().map(|c| c.expr).collect());
    Unit {
        source: Source::Join(Box::new(Join {
            kind,
            left: left.source,
            right: right.source,
            method,
            cond,
            cond_text,
            key_text,
            right_cols: right.cols,
            rows,
        })),
        cols,
        rows,
        table: None,
    }
}

/// For `a = b` with one side over `l`'s columns and the other over `r`'s: the sides,
/// `l`'s first.
fn equi_sides(c: &Conj, l: &Unit, r: &Unit) -> Option<(Expr, Expr)> {
    let Expr::Cmp(CmpOp::Eq, a, b) = &c.expr else {
        return None;
    };
    if a.has_subquery() || b.has_subquery() {
        return None;
    }
    let (ca, cb) = (a.columns(), b.columns());
    if ca.is_empty() || cb.is_empty() || a.ty() == SqlType::Null || b.ty() == SqlType::Null {
        return None;
    }
    if l.covers(&ca) && r.covers(&cb) {
        Some(((**a).clone(), (**b).clone()))
    } else if l.covers(&cb) && r.covers(&ca) {
        Some(((**b).clone(), (**a).clone()))
    } else {
        None
    }
}

/// Hash keys of one type on both sides: numbers of two types compare as the wider (an
/// integer against a numeric as a numeric, anything against a float8 as a float8).
fn hash_pair(l: Expr, r: Expr) -> (Expr, Expr) {
    let (lt, rt) = (l.ty(), r.ty());
    if lt != rt && lt.is_numeric() && rt.is_numeric() && (!lt.is_integer() || !rt.is_integer()) {
        let to = SqlType::wider(lt, rt);
        let f = |e: Expr| Expr::Cast(Box::new(e), DeclaredType::plain(to));
        return (f(l), f(r));
    }
    (l, r)
}

/// A rough share of rows AND-ed conditions keep.
fn selectivity_of(conds: &[Conj]) -> f64 {
    conds.iter().map(|c| selectivity(&c.expr)).product()
}

/// A rough share of rows a condition keeps.
fn selectivity(e: &Expr) -> f64 {
    match e {
        Expr::Cmp(CmpOp::Eq, a, b) if a.columns().is_empty() || b.columns().is_empty() => 0.05,
        Expr::Cmp(CmpOp::Eq, ..) => 0.2,
        Expr::Cmp(..) => 0.33,
        Expr::InList(_, l, false) => (0.05 * l.len() as f64).min(0.5),
        Expr::And(a, b) => selectivity(a) * selectivity(b),
        _ => 0.5,
    }
}

/// A set-returning jsonb function's source: its one argument bound (a string literal
/// read as a jsonb) and checked to be a jsonb.
fn json_rows(
    func: crate::jsonb::JsonRows,
    args: &ast::TableFunctionArgs,
    cx: &PlanCx,
) -> SqlResult<Source> {
    let empty = Scope::default();
    let mut bound = Vec::new();
    for a in &args.args {
        let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = a else {
            return Err(SqlError::unsupported(format!(
                "this {} argument",
                func.name()
            )));
        };
        // As for generate_series: a column of another FROM item would need LATERAL.
        let b = Binder::in_query(&empty, cx).bind(e).map_err(|err| {
            if err.code == code::UNDEFINED_COLUMN || err.code == code::UNDEFINED_TABLE {
                SqlError::unsupported(format!(
                    "{} over a column of another FROM item (LATERAL)",
                    func.name()
                ))
                .at(e.span().start)
            } else {
                err
            }
        })?;
        bound.push(crate::bind::coerce_literal(cx.params, b, SqlType::Jsonb)?);
    }
    match bound.pop() {
        Some(arg) if bound.is_empty() && matches!(arg.ty(), SqlType::Jsonb | SqlType::Null) => {
            Ok(Source::JsonRows { func, arg })
        }
        other => {
            let mut types: Vec<&str> = bound.iter().map(|b| b.ty().name()).collect();
            types.extend(other.iter().map(|b| b.ty().name()));
            Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!(
                    "function {}({}) does not exist",
                    func.name(),
                    types.join(", ")
                ),
            ))
        }
    }
}

fn series(
    table: &str,
    name: &ast::ObjectName,
    args: &ast::TableFunctionArgs,
    cx: &PlanCx,
) -> SqlResult<(Source, SqlType)> {
    if table != "generate_series" {
        return Err(SqlError::new(
            code::UNDEFINED_FUNCTION,
            format!("function {table} does not exist"),
        )
        .at(name.span().start));
    }
    let mut vals = Vec::new();
    let mut bound = Vec::new();
    let empty = Scope::default();
    for a in &args.args {
        let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = a else {
            return Err(SqlError::unsupported("this generate_series argument"));
        };
        let b = Binder::in_query(&empty, cx).bind(e)?;
        bound.push((b, e));
    }
    // Bounds of unknown type (string literals, parameters) take the integer type of the
    // others, as PostgreSQL picks generate_series(int4, int4) beside an int4.
    let known = bound
        .iter()
        .map(|(b, _)| b.ty())
        .filter(|t| t.is_integer())
        .reduce(SqlType::wider);
    if let Some(ty) = known {
        for (b, _) in &mut bound {
            if crate::bind::is_unknown(cx.params, b) {
                let e = std::mem::replace(b, Expr::Const(Value::Null));
                *b = crate::bind::coerce_literal(cx.params, e, ty)?;
            }
        }
    }
    if let [_, _, (Expr::Const(Value::Interval(iv)), _)] = bound.as_slice() {
        return timestamp_series(cx.params, &bound[0].0, &bound[1].0, *iv);
    }
    // Bounds that read the enclosing query's row are taken when the series runs.
    let constant = bound.iter().all(|(b, _)| matches!(b, Expr::Const(_)));
    if !constant && matches!(bound.len(), 2 | 3) {
        if let Some((_, e)) = bound
            .iter()
            .find(|(b, _)| !b.ty().is_integer() && b.ty() != SqlType::Null)
        {
            return Err(
                SqlError::unsupported("generate_series over anything but integers")
                    .at(e.span().start),
            );
        }
        let ty = bound
            .iter()
            .map(|(b, _)| b.ty())
            .fold(SqlType::Int4, SqlType::wider);
        let args = bound.into_iter().map(|(b, _)| b).collect();
        return Ok((Source::SeriesOf { args, ty }, ty));
    }
    for (b, e) in bound {
        match b {
            Expr::Const(v) if as_i64(&v).is_some() => {
                vals.push((as_i64(&v).unwrap_or(0), value::type_of(&v)))
            }
            _ => {
                return Err(SqlError::unsupported(
                    "generate_series over anything but integer constants",
                )
                .at(e.span().start))
            }
        }
    }
    let (start, stop, step) = match vals.as_slice() {
        [a, b] => (a.0, b.0, 1),
        [a, b, c] => (a.0, b.0, c.0),
        _ => {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                "generate_series takes 2 or 3 arguments",
            ))
        }
    };
    if step == 0 {
        return Err(SqlError::new(
            code::INVALID_PARAMETER,
            "step size cannot equal zero",
        ));
    }
    let ty = vals.iter().map(|v| v.1).fold(SqlType::Int4, SqlType::wider);
    Ok((
        Source::Series {
            start,
            stop,
            step,
            ty,
            interval: None,
        },
        ty,
    ))
}

/// `generate_series(start, stop, interval)` over timestamps: of timestamps if both ends
/// are, else of timestamptz (a date or a string literal converts to one, PostgreSQL's
/// choice).
fn timestamp_series(
    params: Params,
    start: &Expr,
    stop: &Expr,
    step: walden::Interval,
) -> SqlResult<(Source, SqlType)> {
    let both_plain = start.ty() == SqlType::Timestamp && stop.ty() == SqlType::Timestamp;
    let ty = if both_plain {
        SqlType::Timestamp
    } else {
        SqlType::Timestamptz
    };
    let micros = |e: &Expr| -> SqlResult<i64> {
        let e = crate::bind::coerce_literal(params, e.clone(), ty)?;
        let v = match e {
            Expr::Const(v) => value::cast(v, &crate::types::DeclaredType::plain(ty), true)?,
            _ => Value::Null,
        };
        match v {
            Value::Timestamp(t) | Value::Timestamptz(t) => Ok(t),
            _ => Err(SqlError::unsupported(
                "generate_series over anything but constants",
            )),
        }
    };
    let (start, stop) = (micros(start)?, micros(stop)?);
    let sign = step.span_micros().signum() as i64;
    if sign == 0 {
        return Err(SqlError::new(
            code::INVALID_PARAMETER,
            "step size cannot equal zero",
        ));
    }
    Ok((
        Source::Series {
            start,
            stop,
            step: sign,
            ty,
            interval: Some(step),
        },
        ty,
    ))
}

/// Where produced rows go: false from it stops the producer. The sources that make rows
/// (tables, generate_series) check the statement's guard for each.
pub(crate) type Sink<'s> = dyn FnMut(&mut EvalCtx, Vec<Value>) -> SqlResult<bool> + 's;

fn merge(left: &[Value], right: &[Value], cols: &[Range<usize>]) -> Vec<Value> {
    let mut out = left.to_vec();
    fill(&mut out, right, cols);
    out
}

/// Copies the right side's columns into a left row.
fn fill(out: &mut [Value], right: &[Value], cols: &[Range<usize>]) {
    for r in cols {
        if r.end <= out.len() && r.end <= right.len() {
            out[r.clone()].clone_from_slice(&right[r.clone()]);
        }
    }
}

/// The columns of `cols` that `used` names, as runs of neighbouring columns in order.
fn kept_cols(cols: &[Range<usize>], used: &[usize]) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for c in cols.iter().flat_map(|r| r.clone()) {
        if !used.contains(&c) {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.end == c => last.end = c + 1,
            _ => out.push(c..c + 1),
        }
    }
    out
}

/// A join's right side in memory: of each row only the columns the right side fills
/// (`Join::right_cols`), the rows one after another in one vector. A hash join's probe
/// reads a row it found in one place (a vector per row, each padded to the joined
/// width, cost a second cache miss per probe and four times the memory).
pub(crate) struct RightRows {
    values: Vec<Value>,
    /// Values per row.
    stride: usize,
    /// The joined row's width, for a full join's right rows that matched nothing.
    width: usize,
    rows: usize,
}

impl RightRows {
    /// Reads a join's right side: each row's key into the hash table (for a hash
    /// join, `keys`), its columns `cols` into the rows kept; the memory they take is
    /// charged to the guard.
    pub(crate) fn collect(
        right: &Source,
        keys: Option<&Vec<Expr>>,
        cols: &[Range<usize>],
        cx: &mut EvalCtx,
    ) -> SqlResult<(RightRows, Option<KeyTable>)> {
        let guard = cx.run.map(|r| r.guard);
        let stride: usize = cols.iter().map(|r| r.len()).sum();
        // Room for the rows the planner expects, so that the table and the rows are
        // not grown and copied again and again; but an estimate is no promise: at most
        // a million rows, and at most half of what statement_mem has left (reserved, not
        // charged: rows and table are charged as they are used).
        let row_room = (stride * std::mem::size_of::<Value>() + 64) as u64;
        let affordable = guard.map_or(u64::MAX, |g| g.remaining() / 2 / row_room);
        let expected = (right.estimate().clamp(16.0, 1_000_000.0) as u64).min(affordable) as usize;
        let mut values = Vec::new();
        // Without the room (no memory for it) the vector grows as rows come.
        let _ = values.try_reserve(expected.saturating_mul(stride));
        let mut rows = RightRows {
            values,
            stride,
            width: 0,
            rows: 0,
        };
        let mut table = keys.map(|_| KeyTable::for_build(expected.max(16)));
        let mut buf = Vec::new();
        right.produce(cx, &mut |cx, mut row| {
            if let (Some(keys), Some(table)) = (keys, table.as_mut()) {
                if hash_key(keys, &row, cx, &mut buf)? {
                    table.insert(&buf, rows.rows);
                }
            }
            rows.width = row.len();
            let start = rows.values.len();
            for r in cols {
                match row.get_mut(r.clone()) {
                    Some(vals) => rows
                        .values
                        .extend(vals.iter_mut().map(|v| std::mem::replace(v, Value::Null))),
                    None => rows.values.extend((0..r.len()).map(|_| Value::Null)),
                }
            }
            rows.rows += 1;
            if let Some(g) = guard {
                g.charge(row_bytes(&rows.values[start..]))?;
            }
            Ok(true)
        })?;
        if let Some(t) = table.as_mut() {
            t.seal();
        }
        if let (Some(g), Some(t)) = (guard, &table) {
            g.charge(t.bytes())?;
        }
        Ok((rows, table))
    }

    pub(crate) fn len(&self) -> usize {
        self.rows
    }

    /// Copies right row `i`'s columns into a joined row.
    pub(crate) fn fill(&self, i: usize, out: &mut [Value], cols: &[Range<usize>]) {
        let Some(mut vals) = self.values.get(i * self.stride..(i + 1) * self.stride) else {
            return;
        };
        for r in cols {
            let (these, rest) = vals.split_at(r.len().min(vals.len()));
            vals = rest;
            if let Some(slots) = out.get_mut(r.clone()) {
                slots.clone_from_slice(these);
            }
        }
    }

    /// Right row `i` alone, NULL elsewhere (a full join's row that matched nothing).
    pub(crate) fn padded(&self, i: usize, cols: &[Range<usize>]) -> Vec<Value> {
        let mut row = Vec::with_capacity(self.width);
        row.resize_with(self.width, || Value::Null);
        self.fill(i, &mut row, cols);
        row
    }
}

/// Runs the engine's read with a callback, keeping the first error the callback met.
/// Reads a table's rows into `sink`. `read` is the table's read as planned: a row of
/// another width than its columns means ALTER TABLE changed the table since the
/// statement was planned (readers take no lock), which fails the statement rather than
/// read columns in the wrong places.
pub(crate) fn read_rows(
    cx: &mut EvalCtx,
    read_of: &TableRead,
    read: impl FnOnce(&mut dyn FnMut(walden::RowId, walden::Row) -> bool) -> SqlResult<()>,
    sink: &mut dyn FnMut(&mut EvalCtx, Vec<Value>) -> SqlResult<bool>,
) -> SqlResult<bool> {
    let mut failed = None;
    let mut stopped = false;
    read(&mut |id, row| {
        let row = match read_of.shape(id, row) {
            Ok(row) => row,
            Err(e) => {
                failed = Some(e);
                return false;
            }
        };
        match sink(cx, row) {
            Ok(true) => true,
            Ok(false) => {
                stopped = true;
                false
            }
            Err(e) => {
                failed = Some(e);
                false
            }
        }
    })?;
    match failed {
        Some(e) => Err(e),
        None => Ok(!stopped),
    }
}

impl Source {
    /// Produces the rows into `sink`; false when the sink stopped it.
    pub(crate) fn produce(&self, cx: &mut EvalCtx, sink: &mut Sink) -> SqlResult<bool> {
        let analysis = cx.run.and_then(|r| r.stats.as_ref());
        let Some(stats) = analysis.filter(|_| !matches!(self, Source::Padded { .. })) else {
            return crate::depth::recurse(|| self.produce_node(cx, sink));
        };
        // EXPLAIN ANALYZE: the rows given, and the time in this node less the time its
        // consumers took (rows are pushed up: the consumer runs inside this call).
        let start = std::time::Instant::now();
        let mut above = std::time::Duration::ZERO;
        let mut rows = 0u64;
        let r = crate::depth::recurse(|| {
            self.produce_node(cx, &mut |cx, row| {
                rows += 1;
                let t = std::time::Instant::now();
                let r = sink(cx, row);
                above += t.elapsed();
                r
            })
        });
        let nanos = start.elapsed().saturating_sub(above).as_nanos();
        record(stats, self.key(), rows, 1, nanos);
        r
    }

    /// Produces the rows of a LATERAL item (placed among other relations' columns,
    /// perhaps filtered) for the row `left` of the items before it.
    pub(crate) fn produce_for(
        &self,
        cx: &mut EvalCtx,
        left: &[Value],
        sink: &mut Sink,
    ) -> SqlResult<bool> {
        match self {
            Source::Padded { inner, at, width } => {
                let (at, width) = (*at, *width);
                inner.produce_for(cx, left, &mut |cx, row| sink(cx, pad_row(row, at, width)))
            }
            Source::Filter { inner, cond, .. } => inner.produce_for(cx, left, &mut |cx, row| {
                if cond.test(&row, cx)? {
                    sink(cx, row)
                } else {
                    Ok(true)
                }
            }),
            Source::Lateral { body, params, .. } => {
                let mut values = Vec::with_capacity(params.len());
                for p in params {
                    values.push(p.eval(left, cx)?);
                }
                let rows = {
                    let mut inner = cx.nested(&values);
                    match body {
                        LateralBody::Query(plan) => plan.run(&mut inner)?,
                        LateralBody::Series(series) => {
                            let mut rows = Vec::new();
                            series.produce(&mut inner, &mut |_, row| {
                                rows.push(row);
                                Ok(true)
                            })?;
                            rows
                        }
                    }
                };
                for row in rows {
                    if !sink(cx, row)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            other => other.produce(cx, sink),
        }
    }

    /// This node's key in EXPLAIN ANALYZE's measurements (a table placed among other
    /// relations' columns is its table read).
    pub(crate) fn key(&self) -> NodeKey {
        match self {
            Source::Padded { inner, .. } => inner.key(),
            other => (other as *const Source as usize, 0),
        }
    }

    fn produce_node(&self, cx: &mut EvalCtx, sink: &mut Sink) -> SqlResult<bool> {
        match self {
            Source::Nothing => sink(cx, Vec::new()),
            Source::Series { .. } => {
                let guard = cx.run.map(|r| r.guard);
                for v in SeriesIter::new(self) {
                    if let Some(g) = guard {
                        g.check()?;
                    }
                    if !sink(cx, vec![v])? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Source::Table(t) => {
                let run = cx.run.ok_or_else(no_reader)?;
                let reader = run.reader.ok_or_else(no_reader)?;
                let guard = run.guard;
                let mut f = |cx: &mut EvalCtx, row: Vec<Value>| -> SqlResult<bool> {
                    guard.check()?;
                    if let Some(f) = &t.filter {
                        if !f.test(&row, cx)? {
                            return Ok(true);
                        }
                    }
                    if let Some(top) = &t.top {
                        if !top.admits(&row, cx) {
                            return Ok(true);
                        }
                    }
                    sink(cx, row)
                };
                match &t.access {
                    Access::Scan => read_rows(
                        cx,
                        t,
                        |g| {
                            let shape = walden::RowShape {
                                needed: t.needed.as_deref(),
                                capacity: t.width,
                            };
                            Ok(reader.scan_shaped(&t.name, shape, g)?)
                        },
                        &mut f,
                    ),
                    Access::Index(r) => {
                        let keys = (run.params, cx.outer);
                        read_rows(cx, t, |g| read_index(&reader, r, t.width, keys, g), &mut f)
                    }
                }
            }
            Source::JsonRows { func, arg } => {
                let Value::Jsonb(doc) = arg.eval(&[], cx)? else {
                    // A NULL document gives no rows.
                    return Ok(true);
                };
                let guard = cx.run.map(|r| r.guard);
                for row in func.rows(&doc)? {
                    if let Some(g) = guard {
                        g.check()?;
                    }
                    if !sink(cx, row)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Source::SeriesOf { args, ty } => {
                let mut bounds = Vec::with_capacity(3);
                for a in args {
                    match as_i64(&a.eval(&[], cx)?) {
                        Some(x) => bounds.push(x),
                        // A NULL bound gives no rows, as in PostgreSQL.
                        None => return Ok(true),
                    }
                }
                let step = bounds.get(2).copied().unwrap_or(1);
                if step == 0 {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER,
                        "step size cannot equal zero",
                    ));
                }
                let series = Source::Series {
                    start: bounds[0],
                    stop: bounds[1],
                    step,
                    ty: *ty,
                    interval: None,
                };
                series.produce_node(cx, sink)
            }
            Source::Settings => {
                let settings = cx.settings.ok_or_else(|| {
                    SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        "pg_settings is not supported here (it reads the session's settings)",
                    )
                })?;
                for row in crate::pg_catalog::settings_rows(settings.all()) {
                    if !sink(cx, row)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Source::Cursors => {
                let rows = cx
                    .settings
                    .map(|s| crate::pg_catalog::cursor_rows(s.cursors()))
                    .unwrap_or_default();
                for row in rows {
                    if !sink(cx, row)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Source::Values {
                rows,
                superuser_only,
                ..
            } => {
                if let (Some(what), Some(settings)) = (superuser_only, cx.settings) {
                    if settings.current("is_superuser", false)?.as_deref() != Some("on") {
                        return Err(SqlError::new(
                            code::INSUFFICIENT_PRIVILEGE,
                            format!("permission denied for {what}"),
                        ));
                    }
                }
                let guard = cx.run.map(|r| r.guard);
                for row in rows.iter() {
                    if let Some(g) = guard {
                        g.check()?;
                    }
                    if !sink(cx, row.clone())? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Source::Derived { plan, .. } => {
                for row in plan.run(cx)? {
                    if !sink(cx, row)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Source::Padded { inner, at, width } => {
                let (at, width) = (*at, *width);
                inner.produce(cx, &mut |cx, row| sink(cx, pad_row(row, at, width)))
            }
            Source::Filter { inner, cond, .. } => inner.produce(cx, &mut |cx, row| {
                if cond.test(&row, cx)? {
                    sink(cx, row)
                } else {
                    Ok(true)
                }
            }),
            Source::Join(j) => j.produce(cx, sink),
            Source::Recursive { plan, .. } => plan.produce(cx, sink),
            // First in FROM, a LATERAL subquery has nothing before it to read.
            Source::Lateral { .. } => self.produce_for(cx, &[], sink),
            Source::WorkTable { id, .. } => crate::recursive::produce_work_table(*id, cx, sink),
        }
    }

    /// A table read placed among other relations' columns: the read, where its columns
    /// start, and the row width.
    pub(crate) fn padded_table(&self) -> Option<(&TableRead, usize, usize)> {
        match self {
            Source::Padded { inner, at, width } => match inner.as_ref() {
                Source::Table(t) => Some((t, *at, *width)),
                _ => None,
            },
            _ => None,
        }
    }
}

/// A relation's row placed at columns `at..` of a row `width` wide, NULL elsewhere (at
/// 0 in place: the row's own vector, grown).
pub(crate) fn pad_row(mut row: Vec<Value>, at: usize, width: usize) -> Vec<Value> {
    if at == 0 {
        row.resize_with(width, || Value::Null);
        return row;
    }
    let mut out = Vec::with_capacity(width);
    out.resize_with(at, || Value::Null);
    out.extend(row);
    out.resize_with(width, || Value::Null);
    out
}

fn no_reader() -> SqlError {
    SqlError::new(code::INTERNAL, "no transaction to read a table with")
}

pub(crate) fn passes(cond: &Option<Expr>, row: &[Value], cx: &mut EvalCtx) -> SqlResult<bool> {
    match cond {
        Some(c) => c.test(row, cx),
        None => Ok(true),
    }
}

/// The key of a row for a hash join; None if a key is NULL (it matches nothing).
pub(crate) fn hash_key(
    keys: &[Expr],
    row: &[Value],
    cx: &mut EvalCtx,
    buf: &mut Vec<u8>,
) -> SqlResult<bool> {
    buf.clear();
    for k in keys {
        let v = match k {
            // A column needs no copy.
            Expr::Column(i, _) => match row.get(*i) {
                Some(v) => {
                    if matches!(v, Value::Null) {
                        return Ok(false);
                    }
                    push_key(v, buf);
                    continue;
                }
                None => k.eval(row, cx)?,
            },
            _ => k.eval(row, cx)?,
        };
        if matches!(v, Value::Null) {
            return Ok(false);
        }
        push_key(&v, buf);
    }
    Ok(true)
}

/// What an index join reads the right table with for each left row.
pub(crate) struct IndexProbe<'a> {
    pub reader: walden::Reader<'a>,
    pub index: &'a str,
    /// The right table's read, placed at columns `at..` of rows `width` wide.
    pub read: &'a TableRead,
    pub at: usize,
    pub width: usize,
    /// The join's conditions besides the key.
    pub cond: &'a Option<Expr>,
}

impl IndexProbe<'_> {
    /// The joined rows of left row `l`: the right table's rows `key` finds through the
    /// index that pass the table's own conditions (counted in `found`), each placed in a
    /// copy of `l`, to `f` if it passes the join's conditions. False when `f` stopped it.
    pub(crate) fn matches(
        &self,
        cx: &mut EvalCtx,
        key: &[Value],
        l: &[Value],
        found: &mut u64,
        f: &mut Sink,
    ) -> SqlResult<bool> {
        let bound = std::ops::Bound::Included(key);
        let (read, reader) = (self.read, &self.reader);
        read_rows(
            cx,
            read,
            |g| Ok(reader.index_scan_in(self.index, bound, bound, false, g)?),
            &mut |cx, r| {
                if let Some(c) = &read.filter {
                    if !c.test(&r, cx)? {
                        return Ok(true);
                    }
                }
                *found += 1;
                let mut row = l.to_vec();
                row.resize_with(self.width, || Value::Null);
                for (slot, v) in row[self.at..].iter_mut().zip(r) {
                    *slot = v;
                }
                if !passes(self.cond, &row, cx)? {
                    return Ok(true);
                }
                f(cx, row)
            },
        )
    }
}

/// An index join's key for the left row `l`: each key expression's value as the index
/// column's type; None when one is NULL, or a value no key equals (1.5 for an integer):
/// it matches nothing.
pub(crate) fn index_key(
    keys: &[(Expr, ColumnType)],
    l: &[Value],
    cx: &mut EvalCtx,
) -> SqlResult<Option<Vec<Value>>> {
    let mut key = Vec::with_capacity(keys.len());
    for (e, ty) in keys {
        match access_path::key_value(&e.eval(l, cx)?, *ty) {
            Some(k) => key.push(k),
            None => return Ok(None),
        }
    }
    Ok(Some(key))
}

impl Join {
    fn produce(&self, cx: &mut EvalCtx, sink: &mut Sink) -> SqlResult<bool> {
        let (left_keys, right_keys) = match &self.method {
            JoinMethod::Index { index, keys } => return self.index_loop(index, keys, cx, sink),
            JoinMethod::Lateral => return self.lateral_loop(cx, sink),
            JoinMethod::NestedLoop => (None, None),
            JoinMethod::Hash {
                left_keys,
                right_keys,
            } => (Some(left_keys), Some(right_keys)),
        };
        // The right side in memory (the columns it fills); for a hash join, its rows
        // by key.
        let (rights, table) = RightRows::collect(&self.right, right_keys, &self.right_cols, cx)?;
        let every: Vec<usize> = match right_keys {
            None => (0..rights.len()).collect(),
            Some(_) => Vec::new(),
        };
        let mut buf = Vec::new();
        let full = self.kind == JoinKind::Full;
        let mut matched = vec![false; if full { rights.len() } else { 0 }];
        let mut found = Vec::new();
        let more = self.left.produce(cx, &mut |cx, l| {
            let candidates: &[usize] = match (left_keys, &table) {
                (Some(keys), Some(table)) => {
                    if hash_key(keys, &l, cx, &mut buf)? {
                        table.find(&buf, &mut found);
                    } else {
                        found.clear();
                    }
                    &found
                }
                _ => &every,
            };
            let mut any = false;
            let mut left = Some(l);
            for (n, &i) in candidates.iter().enumerate() {
                let Some(l) = left.as_ref() else { break };
                // The last candidate takes the left row itself rather than a copy.
                let row = if n + 1 == candidates.len() && self.kind == JoinKind::Inner {
                    let mut row = left.take().unwrap_or_default();
                    rights.fill(i, &mut row, &self.right_cols);
                    row
                } else {
                    let mut row = l.clone();
                    rights.fill(i, &mut row, &self.right_cols);
                    row
                };
                if !passes(&self.cond, &row, cx)? {
                    continue;
                }
                any = true;
                if let Some(m) = matched.get_mut(i) {
                    *m = true;
                }
                if !sink(cx, row)? {
                    return Ok(false);
                }
            }
            if !any && self.kind != JoinKind::Inner {
                if let Some(l) = left {
                    return sink(cx, l);
                }
            }
            Ok(true)
        })?;
        if !more || !full {
            return Ok(more);
        }
        // A full join's right rows that matched nothing.
        for (i, m) in matched.into_iter().enumerate() {
            if !m && !sink(cx, rights.padded(i, &self.right_cols))? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// An index nested-loop join: each left row's key looked up in the right table.
    /// A LATERAL join: the right side run for each left row, over that row.
    fn lateral_loop(&self, cx: &mut EvalCtx, sink: &mut Sink) -> SqlResult<bool> {
        self.left.produce(cx, &mut |cx, l| {
            let mut any = false;
            let more = self.right.produce_for(cx, &l, &mut |cx, r| {
                let row = merge(&l, &r, &self.right_cols);
                if !passes(&self.cond, &row, cx)? {
                    return Ok(true);
                }
                any = true;
                sink(cx, row)
            })?;
            if !more {
                return Ok(false);
            }
            if !any && self.kind == JoinKind::Left {
                return sink(cx, l);
            }
            Ok(true)
        })
    }

    /// What this index join reads its right table with, in `cx`'s command.
    pub(crate) fn index_probe<'a>(
        &'a self,
        cx: &EvalCtx<'a>,
        index: &'a str,
    ) -> SqlResult<IndexProbe<'a>> {
        let Some((read, at, width)) = self.right.padded_table() else {
            return Err(SqlError::new(code::INTERNAL, "an index join over no table"));
        };
        let reader = cx.run.and_then(|r| r.reader).ok_or_else(no_reader)?;
        Ok(IndexProbe {
            reader,
            index,
            read,
            at,
            width,
            cond: &self.cond,
        })
    }

    fn index_loop(
        &self,
        index: &str,
        keys: &[(Expr, ColumnType)],
        cx: &mut EvalCtx,
        sink: &mut Sink,
    ) -> SqlResult<bool> {
        let probe = self.index_probe(cx, index)?;
        let stats = cx.run.and_then(|r| r.stats.as_ref());
        let inner_key = self.right.key();
        self.left.produce(cx, &mut |cx, l| {
            let started = stats.map(|_| std::time::Instant::now());
            let mut found = 0u64;
            let key = index_key(keys, &l, cx)?;
            let mut any = false;
            if let Some(key) = key {
                let more = probe.matches(cx, &key, &l, &mut found, &mut |cx, row| {
                    any = true;
                    sink(cx, row)
                })?;
                if let (Some(stats), Some(t)) = (stats, started) {
                    // The lookup's time includes the rows' consumers: an estimate
                    // that errs high, as a pushed row's consumer runs inside it.
                    record(stats, inner_key, found, 1, t.elapsed().as_nanos());
                }
                if !more {
                    return Ok(false);
                }
            }
            if !any && self.kind != JoinKind::Inner {
                return sink(cx, l);
            }
            Ok(true)
        })
    }
}

/// EXPLAIN's lines, PostgreSQL's layout: a node per line, `->` under its parent, its
/// details indented below it.
#[derive(Default)]
pub struct Explain<'s> {
    pub lines: Vec<String>,
    /// EXPLAIN ANALYZE: what each node measured.
    pub stats: Option<&'s std::collections::HashMap<NodeKey, NodeStats>>,
    /// Whether nodes show the planner's row estimates (EXPLAIN without `COSTS OFF`).
    pub costs: bool,
    /// The estimate for the next node (`est`).
    pending: Option<f64>,
}

impl<'s> Explain<'s> {
    /// An EXPLAIN showing estimates (`costs`), and what each node measured (`stats`).
    pub fn new(
        costs: bool,
        stats: Option<&'s std::collections::HashMap<NodeKey, NodeStats>>,
    ) -> Explain<'s> {
        Explain {
            lines: Vec::new(),
            stats,
            costs,
            pending: None,
        }
    }

    /// The planner's estimate of the rows of the next node written.
    pub fn est(&mut self, rows: f64) {
        self.pending = Some(rows);
    }

    /// The next node's label with its estimate (`  (rows=N)`, as PostgreSQL prints the
    /// rows of its cost estimate; Walden has no cost figures to show).
    fn label(&mut self, text: &str) -> (String, bool) {
        match self.pending.take() {
            Some(rows) if self.costs => {
                (format!("{text}  (rows={:.0})", rows.max(1.0).round()), true)
            }
            _ => (text.to_string(), false),
        }
    }

    fn push_node(&mut self, depth: usize, text: &str) {
        if depth == 0 {
            self.lines.push(text.to_string());
        } else {
            self.lines
                .push(format!("{}->  {text}", " ".repeat(depth * 6 - 4)));
        }
    }

    pub fn node(&mut self, depth: usize, text: &str) {
        let (label, _) = self.label(text);
        self.push_node(depth, &label);
    }

    /// A node with what it measured under EXPLAIN ANALYZE: PostgreSQL's figures, time
    /// in milliseconds per loop (the node and those below it), rows per loop.
    pub fn node_at(&mut self, depth: usize, text: &str, key: NodeKey) {
        let (label, estimated) = self.label(text);
        let Some(stats) = self.stats else {
            return self.push_node(depth, &label);
        };
        let gap = if estimated { " " } else { "  " };
        let actual = match stats.get(&key) {
            Some(s) if s.loops > 0 => format!(
                "{gap}(actual time={:.3} rows={} loops={})",
                s.nanos as f64 / 1e6 / s.loops as f64,
                s.rows / s.loops,
                s.loops
            ),
            _ => format!("{gap}(never executed)"),
        };
        self.push_node(depth, &format!("{label}{actual}"));
    }

    pub fn detail(&mut self, depth: usize, text: &str) {
        self.lines.push(Explain::detail_line(depth, text));
    }

    /// A detail of the node at `depth` as its line.
    pub fn detail_line(depth: usize, text: &str) -> String {
        let pad = if depth == 0 { 2 } else { depth * 6 + 2 };
        format!("{}{text}", " ".repeat(pad))
    }
}

impl Source {
    /// Columns of the FROM clause's rows that this source's own joins and filters read
    /// (a table read's own filter is over its own columns, and counted by `prune`).
    /// False when a part of it cannot say (a subquery in a condition).
    fn read_columns(&self, out: &mut Vec<usize>) -> bool {
        let mut add = |e: &Expr| {
            out.extend(e.columns());
            !e.has_subquery()
        };
        match self {
            Source::Nothing
            | Source::Series { .. }
            | Source::Values { .. }
            | Source::Settings
            | Source::Cursors
            | Source::Derived { .. } => true,
            Source::SeriesOf { args, .. } => args.iter().all(add),
            Source::JsonRows { arg, .. } => add(arg),
            Source::Lateral { params, .. } => params.iter().all(add),
            Source::Recursive { .. } | Source::WorkTable { .. } => true,
            Source::Table(t) => !t.row_id && t.filter.as_ref().is_none_or(|f| !f.has_subquery()),
            Source::Padded { inner, .. } => inner.read_columns(out),
            Source::Filter { inner, cond, .. } => add(cond) && inner.read_columns(out),
            Source::Join(j) => {
                let mut ok = j.cond.as_ref().is_none_or(&mut add);
                match &j.method {
                    JoinMethod::NestedLoop | JoinMethod::Lateral => {}
                    JoinMethod::Hash {
                        left_keys,
                        right_keys,
                    } => ok &= left_keys.iter().chain(right_keys).all(&mut add),
                    JoinMethod::Index { keys, .. } => ok &= keys.iter().all(|(e, _)| add(e)),
                }
                ok && j.left.read_columns(out) && j.right.read_columns(out)
            }
        }
    }

    /// Column pruning: given the columns of the FROM clause's rows read above this
    /// source (`used`, by column number), marks in each table read the columns nobody
    /// reads, which are then made NULL as rows are read instead of being copied through
    /// the joins. Nothing is pruned when a condition holds a subquery.
    pub(crate) fn prune(&mut self, used: &[usize]) {
        let mut all = used.to_vec();
        if !self.read_columns(&mut all) {
            return;
        }
        self.mark(&all, 0);
        self.keep_right_cols(used);
    }

    /// Column pruning in joins: a hash or nested-loop join keeps in memory, and copies
    /// into each joined row, only the right side's columns read above it (`above`, by
    /// column number) or by its own condition. A column only its keys read (hashed
    /// before the row is kept) or no one reads takes neither room nor a copy per joined
    /// row: in `walden bench queries`' GROUP BY, the customers' id (read as the key
    /// only) and name (NULL, 32 bytes still) tripled the rows kept, and the probe's
    /// copy of a row found, a cache miss, took a quarter of the query's time.
    fn keep_right_cols(&mut self, above: &[usize]) {
        // What this source and everything below it read, beside what is read above:
        // each side of a join keeps that (a superset of what it needs).
        let mut below = above.to_vec();
        if !self.read_columns(&mut below) {
            return;
        }
        match self {
            Source::Filter { inner, .. } => inner.keep_right_cols(&below),
            Source::Join(j) => {
                let mut here = above.to_vec();
                if let Some(c) = &j.cond {
                    here.extend(c.columns());
                }
                if matches!(j.method, JoinMethod::Hash { .. } | JoinMethod::NestedLoop) {
                    j.right_cols = kept_cols(&j.right_cols, &here);
                }
                j.left.keep_right_cols(&below);
                j.right.keep_right_cols(&below);
            }
            // A relation's rows (`Padded`) are numbered from its own first column, and
            // hold no join of this FROM clause.
            _ => {}
        }
    }

    /// Whether a prepared statement may keep this FROM clause's plan and fill in its
    /// parameters at each run (`filled_params`): tables, joins by any method, and
    /// filters over them (subqueries, set-returning functions and views are bound with
    /// the values written in instead).
    pub(crate) fn cacheable(&self) -> bool {
        match self {
            Source::Table(_) => true,
            Source::Padded { inner, .. } | Source::Filter { inner, .. } => inner.cacheable(),
            Source::Join(j) => {
                !matches!(j.method, JoinMethod::Lateral)
                    && j.left.cacheable()
                    && j.right.cacheable()
            }
            _ => false,
        }
    }

    /// The tables this FROM clause reads, into `out`.
    pub(crate) fn table_names(&self, out: &mut Vec<String>) {
        match self {
            Source::Table(t) => out.push(t.name.clone()),
            Source::Padded { inner, .. } | Source::Filter { inner, .. } => inner.table_names(out),
            Source::Join(j) => {
                j.left.table_names(out);
                j.right.table_names(out);
            }
            _ => {}
        }
    }

    /// The FROM clause of a cached plan with a run's parameter values in place of its
    /// parameters (in tables' conditions, join conditions and keys).
    pub(crate) fn filled_params(&self, values: &[Value]) -> SqlResult<Source> {
        let fill = |e: &Expr| e.clone().filled(values, false);
        Ok(match self {
            Source::Table(t) => Source::Table(TableRead {
                filter: t.filter.as_ref().map(fill).transpose()?,
                ..t.clone()
            }),
            Source::Padded { inner, at, width } => Source::Padded {
                inner: Box::new(inner.filled_params(values)?),
                at: *at,
                width: *width,
            },
            Source::Filter {
                inner,
                cond,
                text,
                est,
            } => Source::Filter {
                inner: Box::new(inner.filled_params(values)?),
                cond: fill(cond)?,
                text: text.clone(),
                est: *est,
            },
            Source::Join(j) => {
                let method = match &j.method {
                    JoinMethod::Hash {
                        left_keys,
                        right_keys,
                    } => JoinMethod::Hash {
                        left_keys: left_keys.iter().map(fill).collect::<SqlResult<_>>()?,
                        right_keys: right_keys.iter().map(fill).collect::<SqlResult<_>>()?,
                    },
                    JoinMethod::Index { index, keys } => JoinMethod::Index {
                        index: index.clone(),
                        keys: keys
                            .iter()
                            .map(|(e, ty)| Ok((fill(e)?, *ty)))
                            .collect::<SqlResult<_>>()?,
                    },
                    m => m.clone(),
                };
                Source::Join(Box::new(Join {
                    kind: j.kind,
                    left: j.left.filled_params(values)?,
                    right: j.right.filled_params(values)?,
                    method,
                    cond: j.cond.as_ref().map(fill).transpose()?,
                    cond_text: j.cond_text.clone(),
                    key_text: j.key_text.clone(),
                    right_cols: j.right_cols.clone(),
                    rows: j.rows,
                }))
            }
            other => other.clone(),
        })
    }

    /// Chooses again how each table of a cached plan's FROM clause is read, now that
    /// its conditions hold the run's values (`o.id = $1` became `o.id = 5`, which an
    /// index serves); `tables` gives each table's indexes and column types. A table
    /// an index join looks rows up in keeps its lookups.
    pub(crate) fn choose_access(&mut self, tables: &[TableIndexes]) {
        match self {
            Source::Table(read) => {
                let Some(filter) = &read.filter else { return };
                let Some((_, ixs, types)) = tables
                    .iter()
                    .find(|(n, ixs, _)| *n == read.name && !ixs.is_empty())
                else {
                    return;
                };
                read.access = access_path::choose(
                    ixs,
                    types,
                    &Wanted {
                        filter: Some(filter),
                        order: None,
                        few: false,
                        nulls_dropped: false,
                    },
                );
            }
            Source::Padded { inner, .. } | Source::Filter { inner, .. } => {
                inner.choose_access(tables)
            }
            Source::Join(j) => {
                j.left.choose_access(tables);
                if !matches!(j.method, JoinMethod::Index { .. }) {
                    j.right.choose_access(tables);
                }
            }
            _ => {}
        }
    }

    /// The table read whose columns hold every one of `cols` (numbered in this source's
    /// rows, which start at `at`), if dropping one of its rows can only drop the rows
    /// made from it: reached through inner joins, filters and the kept side of outer
    /// joins (a row dropped from the NULL-filled side could make another row appear).
    pub(crate) fn top_target(
        &mut self,
        cols: &[usize],
        at: usize,
    ) -> Option<(&mut TableRead, usize)> {
        match self {
            Source::Table(t) => {
                let inside = cols.iter().all(|&c| c >= at && c - at < t.names.len());
                inside.then_some((t, at))
            }
            Source::Padded { inner, at, .. } => inner.top_target(cols, *at),
            Source::Filter { inner, .. } => inner.top_target(cols, at),
            Source::Join(j) => match j.kind {
                JoinKind::Inner => {
                    if j.left.top_target(cols, at).is_some() {
                        j.left.top_target(cols, at)
                    } else {
                        j.right.top_target(cols, at)
                    }
                }
                JoinKind::Left => j.left.top_target(cols, at),
                JoinKind::Full => None,
            },
            _ => None,
        }
    }

    fn mark(&mut self, used: &[usize], at: usize) {
        match self {
            Source::Table(t) => {
                let mut needed = vec![false; t.names.len()];
                for &c in used {
                    if let Some(n) = c.checked_sub(at).and_then(|i| needed.get_mut(i)) {
                        *n = true;
                    }
                }
                for c in t.filter.iter().flat_map(|f| f.columns()) {
                    if let Some(n) = needed.get_mut(c) {
                        *n = true;
                    }
                }
                if needed.iter().any(|n| !n) {
                    t.needed = Some(needed.into());
                }
            }
            Source::Padded { inner, at, .. } => inner.mark(used, *at),
            Source::Filter { inner, .. } => inner.mark(used, at),
            Source::Join(j) => {
                j.left.mark(used, at);
                j.right.mark(used, at);
            }
            _ => {}
        }
    }

    /// The planner's estimate of the rows this source gives (EXPLAIN's `rows=`).
    pub(crate) fn estimate(&self) -> f64 {
        match self {
            Source::Nothing => 1.0,
            Source::Series {
                start,
                stop,
                step,
                interval: None,
                ..
            } if *step != 0 => {
                (((*stop as f64 - *start as f64) / *step as f64).floor() + 1.0).max(1.0)
            }
            Source::Series { .. } | Source::SeriesOf { .. } => 1000.0,
            // PostgreSQL's guess for a set-returning function.
            Source::JsonRows { .. } => 100.0,
            Source::Table(t) => t.est,
            Source::Values { rows, .. } => rows.len() as f64,
            Source::Settings => crate::settings::DEFS.len() as f64,
            Source::Cursors => 1000.0,
            Source::Derived { plan, .. } => plan.estimate(),
            Source::Padded { inner, .. } => inner.estimate(),
            Source::Filter { est, .. } => *est,
            Source::Join(j) => j.rows,
            Source::Lateral { body, .. } => match body {
                LateralBody::Query(plan) => plan.estimate(),
                LateralBody::Series(s) => s.estimate(),
            },
            // Fixed guesses: a recursive query's rounds are not known before it runs.
            Source::Recursive { .. } => 1000.0,
            Source::WorkTable { .. } => 100.0,
        }
        .max(1.0)
    }

    pub(crate) fn explain(&self, out: &mut Explain, depth: usize) {
        let key = self.key();
        out.est(self.estimate());
        match self {
            Source::Nothing => out.node_at(depth, "Result", key),
            Source::Series { .. } | Source::SeriesOf { .. } => {
                out.node_at(depth, "Function Scan on generate_series", key)
            }
            Source::JsonRows { func, .. } => {
                out.node_at(depth, &format!("Function Scan on {}", func.name()), key)
            }
            Source::Values { name, .. } => out.node_at(depth, &format!("Seq Scan on {name}"), key),
            Source::Settings => out.node_at(depth, "Function Scan on pg_show_all_settings a", key),
            Source::Cursors => out.node_at(depth, "Function Scan on pg_cursor c", key),
            Source::Table(t) => {
                crate::select::explain_access(
                    out,
                    &t.access,
                    &t.label(),
                    depth,
                    t.filter_text.as_deref(),
                    &t.names,
                    Some(key),
                );
                if let Some(top) = &t.top {
                    let qualifier = t.alias.as_deref().unwrap_or(&t.name);
                    let keys: Vec<String> = top
                        .keys
                        .iter()
                        .map(|&(c, desc, nulls_first)| {
                            let name = t.names.get(c).map_or("?", String::as_str);
                            let dir = match (desc, nulls_first) {
                                (false, false) => "",
                                (false, true) => " NULLS FIRST",
                                (true, true) => " DESC",
                                (true, false) => " DESC NULLS LAST",
                            };
                            format!("{qualifier}.{name}{dir}")
                        })
                        .collect();
                    // Rows that sort after the last row the top-N above keeps are
                    // dropped as they are read.
                    out.detail(depth, &format!("Top-N Filter: {}", keys.join(", ")));
                }
            }
            Source::Derived { plan, name } => {
                out.node_at(depth, &format!("Subquery Scan on {name}"), key);
                plan.explain_into(out, depth + 1);
            }
            Source::Lateral { body, name, .. } => match body {
                LateralBody::Query(plan) => {
                    out.node_at(depth, &format!("Subquery Scan on {name}"), key);
                    plan.explain_into(out, depth + 1);
                }
                LateralBody::Series(series) => series.explain(out, depth),
            },
            Source::Recursive { plan, label } => {
                out.node_at(depth, &format!("CTE Scan on {label}"), key);
                plan.explain_into(out, depth);
            }
            Source::WorkTable { name, .. } => {
                out.node_at(depth, &format!("WorkTable Scan on {name}"), key);
            }
            Source::Padded { inner, .. } => inner.explain(out, depth),
            Source::Filter { inner, text, .. } => {
                out.node_at(depth, "Result", key);
                out.detail(depth, &format!("Filter: ({text})"));
                inner.explain(out, depth + 1);
            }
            Source::Join(j) => {
                let kind = match j.kind {
                    JoinKind::Inner => "",
                    JoinKind::Left => " Left",
                    JoinKind::Full => " Full",
                };
                match &j.method {
                    JoinMethod::Lateral => {
                        out.node_at(depth, &nested_loop(kind), key);
                        if let Some(t) = &j.cond_text {
                            out.detail(depth, &format!("Join Filter: ({t})"));
                        }
                        j.left.explain(out, depth + 1);
                        j.right.explain(out, depth + 1);
                    }
                    JoinMethod::NestedLoop => {
                        out.node_at(depth, &nested_loop(kind), key);
                        if let Some(t) = &j.cond_text {
                            out.detail(depth, &format!("Join Filter: ({t})"));
                        }
                        j.left.explain(out, depth + 1);
                        out.est(j.right.estimate());
                        out.node_at(depth + 1, "Materialize", j.right.key());
                        j.right.explain(out, depth + 2);
                    }
                    JoinMethod::Hash { .. } => {
                        out.node_at(depth, &format!("Hash{kind} Join"), key);
                        if let Some(t) = &j.key_text {
                            out.detail(depth, &format!("Hash Cond: ({t})"));
                        }
                        if let Some(t) = &j.cond_text {
                            out.detail(depth, &format!("Join Filter: ({t})"));
                        }
                        j.left.explain(out, depth + 1);
                        out.est(j.right.estimate());
                        out.node_at(depth + 1, "Hash", j.right.key());
                        j.right.explain(out, depth + 2);
                    }
                    JoinMethod::Index { index, .. } => {
                        out.node_at(depth, &nested_loop(kind), key);
                        j.left.explain(out, depth + 1);
                        let table = j.right.padded_table();
                        let label = table.map(|(t, ..)| t.label()).unwrap_or_default();
                        // Per lookup, as PostgreSQL shows an inner index scan's rows.
                        out.est(j.rows / j.left.estimate());
                        out.node_at(
                            depth + 1,
                            &format!("Index Scan using {index} on {label}"),
                            j.right.key(),
                        );
                        if let Some(t) = &j.key_text {
                            out.detail(depth + 1, &format!("Index Cond: ({t})"));
                        }
                        if let Some(f) = table.and_then(|(t, ..)| t.filter_text.as_ref()) {
                            out.detail(depth + 1, &format!("Filter: ({f})"));
                        }
                    }
                }
            }
        }
    }
}

fn nested_loop(kind: &str) -> String {
    if kind.is_empty() {
        "Nested Loop".into()
    } else {
        format!("Nested Loop{kind} Join")
    }
}

#[cfg(test)]
mod tests {
    use super::kept_cols;

    /// A join's right columns are cut down to those read, in runs of neighbours.
    #[test]
    // One run of columns is what these say.
    #[allow(clippy::single_range_in_vec_init)]
    fn kept_cols_keeps_the_read_columns_in_runs() {
        assert_eq!(kept_cols(&[4..7], &[6, 0, 1]), vec![6..7]);
        assert_eq!(
            kept_cols(&[2..4, 5..9], &[3, 5, 6, 8]),
            vec![3..4, 5..7, 8..9]
        );
        assert_eq!(
            kept_cols(&[2..4], &[]),
            Vec::<std::ops::Range<usize>>::new()
        );
        assert_eq!(kept_cols(&[2..4, 4..6], &[3, 4]), vec![3..5]);
    }
}
