//! Walden's SQL front end: the PostgreSQL dialect (parsed by `sqlparser`) over the
//! engine's public API. A [`Session`] runs scripts statement by statement, keeps
//! transaction blocks as PostgreSQL does, and reports what each statement wrote.
//!
//! Layers inside: `script` (split and parse) → `bind` (names and types) → `expr`,
//! `functions`, `value` (evaluation) → `select`, `dml`, `ddl` (statements) → `session`.

pub mod access_path;
pub mod acl;
mod aggregate;
mod alter;
mod analyze;
pub mod array;
pub mod bind;
pub mod budget;
pub mod bytea;
pub mod catalog;
mod checks;
pub mod copy;
pub mod cursors;
pub mod datetime;
mod ddl;
pub mod depth;
mod describe;
mod dml;
pub mod error;
mod exec;
mod explain_json;
pub mod expr;
mod fkeys;
mod flatten;
mod foreign_keys;
pub mod from;
pub mod functions;
pub mod guard;
mod infer;
pub mod isolation;
pub mod jsonb;
mod keytable;
mod optimize;
pub mod pg_catalog;
pub mod prepared;
pub mod privileges;
pub mod record;
mod recursive;
pub mod regex;
pub mod roles;
mod run;
pub mod scram;
pub mod script;
pub mod select;
pub mod sequences;
pub mod session;
pub mod settings;
mod sort_key;
mod spill;
mod srf;
mod statement;
mod strings;
mod to_char;
pub mod types;
pub mod vacuum;
pub mod value;
mod view;
pub mod window;
mod words;

pub use copy::{CopyFormat, CopyIn, CopyOut, CopyStart};
pub use describe::Description;
pub use error::{code, SqlError, SqlResult};
pub use guard::CancelHandle;
pub use prepared::Prepared;
pub use session::{Outcome, RowSink, Session, StatementResult};
pub use types::SqlType;
