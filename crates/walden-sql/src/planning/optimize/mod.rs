//! Optimizer rules: rewrites of what binding made that give the same rows, each its own
//! file with its own tests (plan or expression in, plan or expression out). The planner
//! applies them in its order; a rule never reads a table or runs a query.
//!
//! - `simplify`: constants through operators (`x = NULL` is NULL without evaluating
//!   `x`), AND/OR/NOT with constant operands, and a condition's NULL taken as false,
//!   as PostgreSQL's eval_const_expressions and canonicalize_qual do.

pub(crate) mod simplify;
