//! A query's run as the expressions it evaluates see it (`RunCx`, carried by each
//! `EvalCtx` of the run): the reads of its command, its guard, what EXPLAIN ANALYZE
//! measures, WITH RECURSIVE's working tables, the top-N bounds, and its subqueries with
//! what they found. A subquery is run by the planner through the `SubqueryRunner` the
//! run carries, so evaluation never names the planner.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use walden::{Reader, Value};

use crate::error::SqlResult;
use crate::expr::{EvalCtx, Subquery};
use crate::guard::Guard;

/// Runs the subqueries an expression holds, where the query holding them runs: the
/// planner's (`select::Subqueries`), handed to every run it makes.
pub trait SubqueryRunner {
    /// Evaluates subquery `s` on `row` of the query holding it.
    fn eval_subquery(&self, s: &Subquery, row: &[Value], cx: &mut EvalCtx) -> SqlResult<Value>;
}

/// What a query's run shares with the subqueries it runs: the reads of its command,
/// its guard, and subquery results already found.
pub struct RunCx<'a> {
    pub(crate) reader: Option<Reader<'a>>,
    pub(crate) guard: &'a Guard,
    /// Runs the subqueries of the query's expressions.
    pub(crate) subqueries: &'a dyn SubqueryRunner,
    /// Subquery results found so far, for the runner to reuse.
    pub(crate) cache: RefCell<SubqueryCache>,
    /// Correlated EXISTS and scalar aggregate subqueries read as hash probes
    /// (`hashed`), by plan;
    /// None for one that is not of that shape.
    pub(crate) hashed: RefCell<HashMap<usize, Option<Rc<Hashed>>>>,
    /// The working table of each WITH RECURSIVE query being run, by its id: the rows its
    /// previous round added.
    pub(crate) work_tables: RefCell<HashMap<usize, Rc<Vec<Vec<Value>>>>>,
    /// EXPLAIN ANALYZE: what each plan node measured.
    pub(crate) stats: Option<PlanStats>,
    /// A prepared statement's values, for a generic plan's parameters (`Expr::Param`,
    /// a generic read's key); empty otherwise.
    pub(crate) params: &'a [Value],
    /// The sort keys of the last row each running top-N keeps once it is full, by its
    /// plan's `top_id`: the table read the top-N was pushed down to drops rows that
    /// sort after them (`TopFilter`).
    pub(crate) top_bounds: RefCell<Vec<(u64, Vec<Value>)>>,
}

impl<'a> RunCx<'a> {
    pub(crate) fn new(
        reader: Option<Reader<'a>>,
        guard: &'a Guard,
        subqueries: &'a dyn SubqueryRunner,
    ) -> RunCx<'a> {
        RunCx {
            reader,
            guard,
            subqueries,
            cache: RefCell::new(HashMap::new()),
            hashed: RefCell::new(HashMap::new()),
            work_tables: RefCell::new(HashMap::new()),
            stats: None,
            top_bounds: RefCell::new(Vec::new()),
            params: &[],
        }
    }
}

/// Subquery results by (plan, parameter values).
pub(crate) type SubqueryCache = HashMap<(usize, Vec<u8>), Rc<SubResult>>;

/// What a subquery gave, as its expression needs it.
pub(crate) enum SubResult {
    Scalar(Value),
    Exists(bool),
    /// The column's values; for `= ANY`, also as a set of keys.
    Values {
        values: Vec<Value>,
        set: Option<HashSet<Vec<u8>>>,
        has_null: bool,
    },
}

/// A correlated subquery read as a hash probe: its inner rows read once per statement
/// and kept by the values of the columns it compares with outer values; for each key
/// column, the parameter it is compared with.
pub(crate) struct Hashed {
    pub(crate) probe: Vec<usize>,
    pub(crate) by: HashedBy,
}

pub(crate) enum HashedBy {
    /// EXISTS (PostgreSQL's hashed semi-join): the keys of the inner rows that pass its
    /// conditions free of outer values.
    Exists(HashSet<Vec<u8>>),
    /// A scalar aggregate over the rows of each key (the inner query grouped by its key
    /// columns), and its value over no rows for a key none has.
    Scalar {
        values: HashMap<Vec<u8>, Value>,
        empty: Value,
    },
}

/// What EXPLAIN ANALYZE measured of one plan node.
#[derive(Debug, Default, Clone, Copy)]
pub struct NodeStats {
    /// Rows the node gave, over all its loops.
    pub rows: u64,
    /// Times the node ran.
    pub loops: u64,
    /// Time in the node and the nodes below it (not above it), over all loops.
    pub nanos: u128,
    /// A sort or grouping past `work_mem`: bytes it wrote to temporary files, and (a
    /// grouping) the partitions it grouped in passes of their own.
    pub disk_bytes: u64,
    pub batches: u64,
}

/// A plan node's key: its address and, for the nodes a SELECT adds over its FROM clause
/// (Limit, Sort, ...), which of them.
pub type NodeKey = (usize, u8);

/// EXPLAIN ANALYZE's measurements, by node.
pub type PlanStats = RefCell<HashMap<NodeKey, NodeStats>>;

/// Adds a run's figures to a node's.
pub(crate) fn record(stats: &PlanStats, key: NodeKey, rows: u64, loops: u64, nanos: u128) {
    let mut s = stats.borrow_mut();
    let e = s.entry(key).or_default();
    e.rows += rows;
    e.loops += loops;
    e.nanos += nanos;
}
