//! Queries: a query expression planned — WITH, set operations (UNION, INTERSECT,
//! EXCEPT), VALUES, and SELECT blocks over their FROM clause (see `from`) — and run:
//! filter, grouping and aggregates, projection, DISTINCT, ORDER BY, OFFSET and LIMIT;
//! and the subqueries expressions hold. This file holds the plans' types (`QueryPlan`,
//! `Combined`, `SelectPlan`) and a run's state (`Run`); the parts are in the files beside it.

mod access;
mod block;
mod cached;
mod execute;
mod explain;
mod finish;
mod hashed;
mod plan;
mod rows;
mod set_op;
mod subquery;
mod top_n;

pub use crate::from::SeriesIter;
pub use crate::from::Source;
pub(crate) use crate::sort_key::key_bytes;
pub(crate) use access::read_index;
pub use block::bind_condition;
pub(crate) use cached::CachedSelect;
pub(crate) use execute::{with_run, with_run_params};
pub(crate) use explain::{explain_access, explain_source};
pub(crate) use plan::plan_set_expr;
pub(crate) use set_op::{cast_rows, union_type};
pub(crate) use subquery::Subqueries;

use std::collections::HashSet;
use std::sync::Arc;

use sqlparser::ast;
use walden::Value;

use crate::aggregate::Acc;
use crate::bind::{Grouping, Outer, SubqueryPlanner};
use crate::catalog::{Catalog, IndexMeta, Scope};
use crate::error::SqlResult;
use crate::expr::{Expr, SubqueryPlan};
use crate::guard::Guard;
use crate::infer::Params;
use crate::types::SqlType;
use crate::window::WindowCall;

use top_n::TopN;

#[derive(Debug, Clone, PartialEq)]
enum SortKey {
    Output(usize),
    Expr(Expr),
}

/// A WITH query, by name.
pub struct Cte {
    pub name: String,
    pub body: CteBody,
    pub columns: Vec<(String, SqlType)>,
}

/// What a WITH query's name reads.
pub enum CteBody {
    /// Its query, run where it is read.
    Plan(Arc<QueryPlan>),
    /// A WITH RECURSIVE query that reads itself.
    Recursive(Arc<crate::recursive::RecursivePlan>),
    /// A WITH RECURSIVE query seen from inside its own definition.
    SelfRef(crate::recursive::SelfRef),
}

/// The WITH queries in reach of a query: its own, then its enclosing queries'.
pub struct Ctes<'a> {
    pub list: Vec<Cte>,
    pub parent: Option<&'a Ctes<'a>>,
}

impl Ctes<'_> {
    pub fn find(&self, name: &str) -> Option<&Cte> {
        match self.list.iter().find(|c| c.name == name) {
            Some(c) => Some(c),
            None => self.parent?.find(name),
        }
    }
}

/// What planning a query needs: the catalog, the WITH queries in reach, and the query it
/// is a subquery of. Binding reaches the planner through it (`bind::SubqueryPlanner`).
#[derive(Clone, Copy)]
pub struct PlanCx<'a> {
    pub catalog: &'a dyn Catalog,
    pub ctes: Option<&'a Ctes<'a>>,
    /// Set while a subquery is bound: the query it is inside.
    pub outer: Option<&'a Outer<'a>>,
    /// What binding knows of the statement's parameters.
    pub params: Params<'a>,
}

impl<'a> PlanCx<'a> {
    /// The context of a statement's top query.
    pub fn of(catalog: &'a dyn Catalog) -> PlanCx<'a> {
        PlanCx {
            catalog,
            ctes: None,
            outer: None,
            params: Params::Absent,
        }
    }
}

impl SubqueryPlanner for PlanCx<'_> {
    fn catalog(&self) -> &dyn Catalog {
        self.catalog
    }

    fn outer(&self) -> Option<&Outer<'_>> {
        self.outer
    }

    fn params(&self) -> Params<'_> {
        self.params
    }

    fn plan_subquery(&self, q: &ast::Query, outer: &Outer) -> SqlResult<Arc<dyn SubqueryPlan>> {
        let inner = PlanCx {
            outer: Some(outer),
            ..*self
        };
        Ok(Arc::new(QueryPlan::plan_in(q, &inner)?))
    }
}

/// A planned query expression.
#[derive(Debug)]
pub enum QueryPlan {
    Select(Box<SelectPlan>),
    /// A set operation, VALUES or a parenthesized query, with the ORDER BY, OFFSET and
    /// LIMIT written after it.
    Combined(Box<Combined>),
}

#[derive(Debug)]
pub struct Combined {
    body: Body,
    columns: Vec<(String, SqlType)>,
    /// Sort keys over the output row.
    order: Vec<(Expr, bool, bool)>,
    limit: Option<u64>,
    offset: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    Union,
    Intersect,
    Except,
}

#[derive(Debug)]
enum Body {
    Query(QueryPlan),
    Values(Vec<Vec<Expr>>),
    SetOp {
        op: SetOp,
        all: bool,
        left: QueryPlan,
        right: QueryPlan,
        /// Each column's type where a side's differs from the result's.
        left_casts: Vec<Option<SqlType>>,
        right_casts: Vec<Option<SqlType>>,
    },
}

/// PostgreSQL's MaxTupleAttributeNumber: the most columns a query may return (the wire
/// protocol counts them in 16 bits).
pub const MAX_TARGET_COLUMNS: usize = 1664;

/// A SELECT list item: an expression as written, or a column `*` stands for.
#[derive(Clone)]
enum Item<'q> {
    Ast(&'q ast::Expr),
    Column(usize),
}

#[derive(Debug, Clone, PartialEq)]
enum Distinct {
    None,
    All,
    /// DISTINCT ON: the first row (in ORDER BY order) of each set of equal keys.
    On(Vec<Expr>),
}

#[derive(Debug, Clone)]
pub struct SelectPlan {
    pub source: Source,
    /// The WHERE clause as written, and the source's column names, for EXPLAIN.
    filter_text: Option<Arc<str>>,
    source_names: Arc<[String]>,
    /// Stop reading after this many rows passed the filter (min/max read through an
    /// index need one).
    input_limit: Option<u64>,
    filter: Option<Expr>,
    grouping: Option<Grouping>,
    having: Option<Expr>,
    outputs: Vec<Expr>,
    distinct: Distinct,
    /// Names and types of the result columns.
    pub columns: Vec<(String, SqlType)>,
    order: Vec<(SortKey, bool, bool)>,
    limit: Option<u64>,
    offset: u64,
    /// FETCH FIRST n ROWS WITH TIES: n, and the rows after the n-th that sort equal to
    /// it (`limit` is then None).
    ties: Option<u64>,
    /// A correlated subquery over one table with indexes, whose WHERE clause reads outer
    /// values: the scope and indexes to choose its access path with again once the
    /// values are known, each run (an index lookup per outer row, not a scan).
    reaccess: Option<Arc<(Scope, Vec<IndexMeta>)>>,
    /// Window function calls, computed over the rows after grouping and HAVING; the
    /// outputs and sort keys read their values after those rows' columns.
    windows: Vec<WindowCall>,
    /// Set-returning functions of the select list (`crate::srf`): each input row
    /// becomes the rows they make, their columns after the row's.
    srfs: Vec<crate::srf::SrfCall>,
    /// The planner's estimate of the rows that pass the WHERE clause.
    from_rows: f64,
    /// The groups GROUP BY makes, when ANALYZE's distinct values of every key (each a
    /// column) are known: their product.
    groups: Option<f64>,
    /// ORDER BY … LIMIT pushed down to a table read (`push_top`): the id under which
    /// the top-N publishes the keys of the last row it keeps.
    top_id: Option<u64>,
}

/// A streaming plan's parts (`SelectPlan::stream_parts`).
pub(crate) struct StreamParts<'p> {
    pub source: &'p Source,
    pub filter: Option<&'p Expr>,
    pub outputs: &'p [Expr],
    pub offset: u64,
    pub limit: Option<u64>,
}

/// The rows LIMIT and OFFSET leave of `rows` (at least 1, as PostgreSQL's estimates).
fn limited(rows: f64, limit: Option<u64>, offset: u64) -> f64 {
    let after = (rows - offset as f64).max(1.0);
    limit.map_or(after, |n| after.min(n as f64)).max(1.0)
}

/// The nodes a SELECT puts over its FROM clause, as parts of their EXPLAIN ANALYZE key.
#[derive(Clone, Copy)]
enum Upper {
    Limit = 1,
    Distinct,
    Sort,
    Window,
    Aggregate,
    ProjectSet,
}

struct Group {
    keys: Vec<Value>,
    accs: Vec<Acc>,
    /// The bytes charged to the guard for this group.
    bytes: u64,
}

/// Where a run keeps its output rows.
enum Kept<'p> {
    /// In arrival order, with their sort keys when there is an ORDER BY.
    All(Vec<(Vec<Value>, Vec<Value>)>),
    /// ORDER BY with LIMIT.
    Top(TopN<'p>),
}

struct Run<'p, 'g> {
    plan: &'p SelectPlan,
    guard: &'g Guard,
    kept: Kept<'p>,
    /// Rows emitted so far (when there is no ORDER BY, to know when LIMIT is reached).
    emitted: u64,
    skipped: u64,
    /// Input rows that passed the filter.
    fed: u64,
    groups: Vec<Group>,
    /// Each group's number by its key's bytes (made at the first group).
    index: Option<crate::keytable::KeyTable>,
    key_buf: Vec<u8>,
    /// Output rows seen, for DISTINCT.
    seen: HashSet<Vec<u8>>,
    /// With window functions: the rows after grouping and HAVING, all of which the
    /// windows see before any is projected; and the bytes charged for them.
    pending: Vec<Vec<Value>>,
    pending_bytes: u64,
    /// A sort's rows past `work_mem`: sorted runs in temporary files; and the bytes
    /// charged for the rows `kept` holds now.
    runs: Option<crate::spill::Runs>,
    kept_bytes: u64,
    /// A grouping past `work_mem`: the bytes its groups hold; the rows of groups that
    /// did not fit, by partition of their key (this pass's), and partitions waiting
    /// for a pass of their own; and the pass (0 for the first).
    group_bytes: u64,
    parts: Vec<Option<crate::spill::Spool>>,
    waiting: Vec<(u32, crate::spill::Spool)>,
    pass: u32,
    /// In a partition's pass: its rows not yet grouped (they bound the groups still to
    /// come, so the partitions it needs in turn).
    pass_rows_left: Option<u64>,
    /// For EXPLAIN ANALYZE: groups made in all passes, partitions grouped, and bytes a
    /// grouping and a sort wrote to temporary files.
    groups_made: u64,
    batches: u64,
    group_disk_bytes: u64,
    sort_disk_bytes: u64,
}

/// What a run measured, for EXPLAIN ANALYZE.
struct Measured {
    groups: u64,
    batches: u64,
    group_disk_bytes: u64,
    sort_disk_bytes: u64,
}
