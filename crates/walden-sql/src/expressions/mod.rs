//! Expressions: binding parsed expressions against a scope (`bind`, with parameter
//! inference, `infer`), evaluating bound ones (`expr`, `functions`, set-returning calls
//! `srf`, window calls `window`, aggregates `aggregate`, sort keys `sort_key`) within a
//! query's run (`run`). A subquery is reached through the run context, never by calling
//! the planner.

pub(crate) mod aggregate;
pub mod bind;
pub mod expr;
pub mod functions;
pub(crate) mod infer;
pub(crate) mod run;
pub(crate) mod sort_key;
pub(crate) mod srf;
pub mod window;
