//! Privileges as statements meet them: `check`, what each statement needs, checked
//! before it runs (every run of a prepared statement too): SELECT on what it reads,
//! INSERT/UPDATE/DELETE/TRUNCATE on what it writes, ownership for DDL, CREATE on the
//! schema to make a relation; views read their relations with their owner's privileges
//! (the columns a statement uses, `columns`); `grant`, GRANT and REVOKE (on tables,
//! views, sequences and the schema, and of roles to roles), ALTER … OWNER TO. What
//! privileges allow (`Authority`, ACLs) is `crate::acl`'s, re-exported here.

pub(crate) mod check;
pub(crate) mod columns;
pub(crate) mod grant;

pub use crate::acl::*;
