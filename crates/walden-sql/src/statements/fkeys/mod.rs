//! Foreign keys as statements meet them: `ddl` checks a new one against the referenced
//! table and the stored rows, and refuses DROP and TRUNCATE of a referenced table;
//! `enforce` checks and acts on the rows each statement writes. Their stored form, which
//! the catalog reads too, is `crate::foreign_keys`'s.

pub(crate) mod ddl;
pub(crate) mod enforce;

pub(crate) use crate::foreign_keys::*;
