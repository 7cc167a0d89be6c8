//! The base layer: values and their types (`value`, `types`, numbers, text, dates and
//! times, `bytea`, `jsonb`, arrays, records), errors, and the helpers every layer above
//! uses (the stack-depth guard, memory budgets, spill files, SCRAM). It imports no other
//! layer.

pub mod array;
pub mod budget;
pub mod bytea;
pub mod datetime;
pub mod depth;
pub mod error;
pub mod isolation;
pub mod jsonb;
pub(crate) mod keytable;
pub mod record;
pub mod regex;
pub mod scram;
pub(crate) mod spill;
pub(crate) mod strings;
pub(crate) mod to_char;
pub mod types;
pub mod value;
pub(crate) mod words;
