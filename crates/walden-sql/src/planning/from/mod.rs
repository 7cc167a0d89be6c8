//! FROM: the relations a query reads — tables, subqueries, WITH queries,
//! `generate_series` — joined (inner, left, right, full, cross; `ON`, `USING`, `NATURAL`,
//! comma lists) in an order chosen from row estimates, by nested-loop, hash or index
//! nested-loop joins; and producing their rows.
//!
//! With several relations, every row is as wide as the whole FROM clause: each relation
//! fills its own columns and a join copies the right side's columns into the left
//! side's row. Expressions are therefore bound once, over the FROM clause's scope, and
//! hold at every level of the join tree, whichever order it joins in.
//!
//! This file holds the planned clause's types (`Source`, `TableRead`, `Join`) and the
//! planner's (`Builder`, `Rel`, `Unit`); the parts are in the files beside it.

mod conjuncts;
mod estimate;
mod explain;
mod join;
mod join_plan;
mod join_run;
mod plan;
mod produce;
mod relation;
mod rewrite;
mod series;
mod table;

pub(crate) use conjuncts::split_and;
pub(crate) use join_run::{hash_key, index_key};
pub(crate) use plan::{plan_from, plan_from_with_row_id};
pub(crate) use produce::{pad_row, passes};
pub use series::SeriesIter;
pub(crate) use table::row_id_of;

use std::ops::Range;
use std::sync::Arc;

use sqlparser::ast::{self};
use walden::{ColumnType, Value};

use crate::access_path::Access;
use crate::catalog::{IndexMeta, Scope};
use crate::error::SqlResult;
use crate::expr::{EvalCtx, Expr};
use crate::recursive::RecursivePlan;
use crate::run::{NodeKey, NodeStats};
use crate::select::{PlanCx, QueryPlan};
use crate::types::SqlType;

/// Where a query's rows come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// No FROM: one row with no columns.
    Nothing,
    /// No rows, and nothing read: what a FROM clause (or an outer join's side) becomes
    /// whose condition is the constant false or NULL (`simplify::is_constant_false`).
    /// EXPLAIN shows PostgreSQL's node for it, `Result` with `One-Time Filter: false`.
    Empty,
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
    /// `pg_locks`: the locks held, read when it runs.
    Locks,
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
    pub top: Option<Box<TopFilter>>,
    /// The width of the joined rows this table's rows are placed in (0: its own): each
    /// row is read into a vector with that much room.
    pub width: usize,
    /// The table's statistics when ANALYZE gathered them, for choosing its access by
    /// cost (`optimize::index_cost`), now and at each run of a cached plan.
    pub(crate) stats: Option<Arc<crate::optimize::index_cost::TableStats>>,
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

/// A table's name, indexes and column types (a cached plan's, to choose its reads with).
pub(crate) type TableIndexes = (String, Vec<IndexMeta>, Vec<ColumnType>);

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

struct Builder<'c, 'a> {
    cx: &'c PlanCx<'a>,
    rels: Vec<Rel>,
    columns: Vec<(String, SqlType)>,
    relations: Vec<(String, Range<usize>)>,
    hidden: Vec<usize>,
    /// FULL JOIN USING columns: (visible, hidden).
    merged: Vec<(usize, usize)>,
    /// `JOIN … USING (…) AS j`: the alias and the join's merged columns.
    join_aliases: Vec<(String, Vec<usize>)>,
    /// The next table read also gives its row ids (see `plan_from_with_row_id`).
    row_id_next: bool,
}

/// A part of a join being planned: its rows, the columns it fills, an estimate of its
/// rows, and, for a single table, the table (for index joins).
struct Unit {
    source: Source,
    cols: Vec<Range<usize>>,
    rows: f64,
    table: Option<usize>,
}

impl Unit {
    /// A unit that fills columns `cols` and gives no rows (`Source::Empty`).
    pub(super) fn empty(cols: Vec<Range<usize>>) -> Unit {
        Unit {
            source: Source::Empty,
            cols,
            rows: 1.0,
            table: None,
        }
    }

    pub(super) fn covers(&self, cols: &[usize]) -> bool {
        cols.iter().all(|c| self.cols.iter().any(|r| r.contains(c)))
    }
}

/// Where produced rows go: false from it stops the producer. The sources that make rows
/// (tables, generate_series) check the statement's guard for each.
pub(crate) type Sink<'s> = dyn FnMut(&mut EvalCtx, Vec<Value>) -> SqlResult<bool> + 's;

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

/// EXPLAIN's lines, PostgreSQL's layout: a node per line, `->` under its parent, its
/// details indented below it.
#[derive(Default)]
pub struct Explain<'s> {
    pub lines: Vec<String>,
    /// EXPLAIN ANALYZE: what each node measured.
    pub stats: Option<&'s std::collections::HashMap<NodeKey, NodeStats>>,
    /// Whether nodes show the planner's row estimates (EXPLAIN without `COSTS OFF`).
    pub costs: bool,
    /// The estimate for the next node (`est`), and whether it is exact (`est_none`).
    pending: Option<f64>,
    exact: bool,
}
