//! Walden's SQL front end: the PostgreSQL dialect (parsed by `sqlparser`) over the
//! engine's public API. A [`Session`] runs scripts statement by statement, keeps
//! transaction blocks as PostgreSQL does, and reports what each statement wrote.
//!
//! Layers inside, each a folder, each importing only from those before it (held by
//! `tests/layering.rs` against docs/ARCHITECTURE.md's layer table): `base` (values,
//! types, errors) → `catalog` (names, the catalog, `pg_catalog`) → `context` (guard,
//! settings, sequences) → `expressions` (binding and evaluation) → `planning` (plans and
//! the optimizer) → `exec` (the executor's streams, cursors) → `statements` → `session`.

mod base;
pub mod catalog;
mod context;
mod exec;
mod expressions;
mod planning;
pub mod session;
mod statements;

// The modules by their own names (`crate::value`, `crate::select`), wherever their
// layer's folder keeps them.
pub use {
    base::array, base::budget, base::bytea, base::datetime, base::depth, base::error,
    base::isolation, base::jsonb, base::record, base::regex, base::scram, base::types, base::value,
    catalog::acl, catalog::pg_catalog, context::guard, context::sequences, context::settings,
    exec::cursors, expressions::bind, expressions::expr, expressions::functions,
    expressions::window, planning::access_path, planning::from, planning::select, session::copy,
    statements::prepared, statements::privileges, statements::roles, statements::script,
    statements::vacuum,
};
use {
    base::keytable, base::spill, base::strings, base::to_char, base::words, catalog::foreign_keys,
    expressions::aggregate, expressions::infer, expressions::run, expressions::sort_key,
    expressions::srf, planning::optimize, planning::recursive, planning::view, statements::alter,
    statements::analyze, statements::checks, statements::ddl, statements::describe,
    statements::dml, statements::explain_json, statements::fkeys, statements::lock,
    statements::statement,
};

pub use copy::{CopyFormat, CopyIn, CopyOut, CopyStart};
pub use describe::Description;
pub use error::{code, SqlError, SqlResult};
pub use guard::CancelHandle;
pub use prepared::Prepared;
pub use session::{Outcome, RowSink, Session, StatementResult};
pub use types::SqlType;
