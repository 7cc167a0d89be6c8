//! Statements: what each statement does (DML, DDL, ALTER, VACUUM, ANALYZE, GRANT, roles,
//! foreign keys and checks), the statement's context and output (`statement`), prepared
//! statements and their descriptions, and the script splitter and parser (`script`).

pub(crate) mod alter;
pub(crate) mod analyze;
pub(crate) mod checks;
pub(crate) mod ddl;
pub(crate) mod describe;
pub(crate) mod dml;
pub(crate) mod explain_json;
pub(crate) mod fkeys;
pub(crate) mod lock;
pub mod prepared;
pub mod privileges;
pub mod roles;
pub mod script;
pub(crate) mod statement;
pub mod vacuum;
