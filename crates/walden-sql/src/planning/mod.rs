//! Planning: a query bound and planned (`select`, its FROM clause `from`, WITH RECURSIVE
//! `recursive`, views `view`), rewritten by the optimizer's rules (`optimize`, `flatten`)
//! and given its access paths (`access_path`).

pub mod access_path;
pub(crate) mod flatten;
pub mod from;
pub(crate) mod optimize;
pub(crate) mod recursive;
pub mod select;
pub(crate) mod view;
