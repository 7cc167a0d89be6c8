//! Planning: a query bound and planned (`select`, its FROM clause `from`, WITH RECURSIVE
//! `recursive`, views `view`), rewritten by the optimizer's rules (`optimize`)
//! and given its access paths (`access_path`).

pub mod access_path;
pub mod from;
pub(crate) mod optimize;
pub(crate) mod recursive;
pub mod select;
pub(crate) mod view;
