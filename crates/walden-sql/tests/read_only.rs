//! READ ONLY transactions as PostgreSQL 15 runs them: what could go wrong is a write
//! that a READ ONLY transaction lets through (a row, the catalog, a sequence, a row
//! lock), a read it refuses, a mode that does not reach the block (BEGIN, START
//! TRANSACTION, SET TRANSACTION, `default_transaction_read_only`, AND CHAIN), or READ
//! WRITE set after the block's first query. Every outcome is PostgreSQL 15's, checked on
//! PostgreSQL itself when it is installed.
#![allow(clippy::unwrap_used)]

mod support;
use support::check_on_both;

const CASES: &[(&str, &str)] = &[
    ("create table t (a int)", ""),
    ("create sequence s", ""),
    ("select pg_is_in_recovery()", "f"),
    ("show transaction_read_only", "off"),
    ("begin read only", ""),
    ("show transaction_read_only", "on"),
    ("select count(*) from t", "0"),
    (
        "insert into t values (1)",
        "ERROR 25006: cannot execute INSERT in a read-only transaction",
    ),
    ("rollback", ""),
    (
        "start transaction isolation level repeatable read, read only",
        "",
    ),
    ("show transaction_isolation", "repeatable read"),
    (
        "update t set a = 1",
        "ERROR 25006: cannot execute UPDATE in a read-only transaction",
    ),
    ("rollback", ""),
    ("begin", ""),
    ("set transaction read only", ""),
    (
        "delete from t",
        "ERROR 25006: cannot execute DELETE in a read-only transaction",
    ),
    ("rollback", ""),
    ("begin read only", ""),
    (
        "create table u (a int)",
        "ERROR 25006: cannot execute CREATE TABLE in a read-only transaction",
    ),
    ("rollback", ""),
    ("begin read only", ""),
    (
        "select nextval('s')",
        "ERROR 25006: cannot execute nextval() in a read-only transaction",
    ),
    ("rollback", ""),
    ("begin read only", ""),
    (
        "truncate t",
        "ERROR 25006: cannot execute TRUNCATE TABLE in a read-only transaction",
    ),
    ("rollback", ""),
    ("begin read only", ""),
    (
        "select * from t for update",
        "ERROR 25006: cannot execute SELECT FOR UPDATE in a read-only transaction",
    ),
    ("rollback", ""),
    ("begin read only", ""),
    (
        "drop table t",
        "ERROR 25006: cannot execute DROP TABLE in a read-only transaction",
    ),
    ("rollback", ""),
    // READ WRITE only before the first query; READ ONLY at any time.
    ("begin read only", ""),
    ("select 1", "1"),
    (
        "set transaction read write",
        "ERROR 25001: transaction read-write mode must be set before any query",
    ),
    ("rollback", ""),
    ("begin", ""),
    ("set transaction read only", ""),
    ("set transaction read write", ""),
    ("insert into t values (2)", ""),
    ("set transaction read only", ""),
    (
        "insert into t values (20)",
        "ERROR 25006: cannot execute INSERT in a read-only transaction",
    ),
    ("rollback", ""),
    ("begin", ""),
    ("insert into t values (2)", ""),
    ("commit", ""),
    // The session's default, and a block that overrides it.
    ("set default_transaction_read_only = on", ""),
    ("show transaction_read_only", "on"),
    (
        "insert into t values (3)",
        "ERROR 25006: cannot execute INSERT in a read-only transaction",
    ),
    ("begin read write", ""),
    ("insert into t values (4)", ""),
    ("commit and chain", ""),
    ("show transaction_read_only", "off"),
    ("commit", ""),
    ("begin", ""),
    ("show transaction_read_only", "on"),
    ("commit", ""),
    ("set default_transaction_read_only = off", ""),
    ("set session characteristics as transaction read only", ""),
    ("show default_transaction_read_only", "on"),
    ("set session characteristics as transaction read write", ""),
    ("select a from t order by a", "2\n4"),
];

#[test]
fn read_only_transactions_as_postgresql() {
    check_on_both("read_only", CASES);
}
