//! Optimizer rules: rewrites of what binding made that give the same rows, each its own
//! file with its own tests (plan or expression in, plan or expression out). The planner
//! applies them in its order; a rule never reads a table or runs a query.
//!
//! - `simplify`: constants through operators (`x = NULL` is NULL without evaluating
//!   `x`), AND/OR/NOT with constant operands, and a condition's NULL taken as false,
//!   as PostgreSQL's eval_const_expressions and canonicalize_qual do.
//! - `flatten`: subqueries in WHERE flattened into joins (PostgreSQL's
//!   pull_up_sublinks): `x IN (SELECT …)`, `EXISTS (… inner = outer …)` and `NOT
//!   EXISTS` become semi- and anti-joins with the subquery's distinct keys. (A
//!   correlated scalar subquery that stays is decorrelated at run time: its results
//!   kept by its outer values, or read as a hash probe: `select::hashed`.)
//! - `pushdown`: each AND-ed condition checked as low in the join tree as its columns
//!   allow (into a table's read, at the join where its columns meet, above).
//! - `join_order`: inner joins ordered greedily from the units' row estimates, joined
//!   units first.
//! - `join_method`: index nested loop, hash or nested loop, and which side does what,
//!   from the two sides' row estimates.
//! - `index_cost`: an index read of equalities turned into a scan where ANALYZE's
//!   statistics say the rows it finds cost more fetched at random than the whole
//!   table read in order.
//! - `projection`: columns nobody reads above a table read made NULL as it reads (not
//!   decoded), and a join's kept side cut down to the columns read above it.

pub(crate) mod flatten;
pub(crate) mod index_cost;
pub(crate) mod join_method;
pub(crate) mod join_order;
pub(crate) mod projection;
pub(crate) mod pushdown;
pub(crate) mod simplify;
