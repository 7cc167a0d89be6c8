//! Transaction isolation as SQL names it: the levels of `BEGIN ISOLATION LEVEL …`,
//! `SET TRANSACTION …`, `transaction_isolation` and `default_transaction_isolation`,
//! and the transaction modes of BEGIN and SET TRANSACTION, checked as PostgreSQL checks
//! them. The session (`session.rs`) keeps the levels and takes the snapshots.
//!
//! READ COMMITTED (the default, as PostgreSQL's) takes a snapshot per statement and
//! writes rows changed concurrently in their newest versions; REPEATABLE READ is
//! snapshot isolation (the engine's `engine/isolation.rs`). READ UNCOMMITTED runs as
//! READ COMMITTED, as in PostgreSQL. SERIALIZABLE is refused (0A000): PostgreSQL's is
//! snapshot isolation plus the detection of the dangerous structures SSI looks for,
//! which Walden does not have, and running it as REPEATABLE READ would let the write
//! skews an application asked to be protected from through silently.

use sqlparser::ast::{TransactionAccessMode, TransactionIsolationLevel, TransactionMode};
use walden::Isolation;

use crate::error::{code, SqlError, SqlResult};

/// An isolation level a session may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IsolationLevel {
    /// Runs as READ COMMITTED; shown as asked.
    ReadUncommitted,
    ReadCommitted,
    RepeatableRead,
}

impl IsolationLevel {
    /// The level's name as SHOW gives it.
    pub fn name(self) -> &'static str {
        match self {
            IsolationLevel::ReadUncommitted => "read uncommitted",
            IsolationLevel::ReadCommitted => "read committed",
            IsolationLevel::RepeatableRead => "repeatable read",
        }
    }

    /// The engine's level it runs at.
    pub fn engine(self) -> Isolation {
        match self {
            IsolationLevel::ReadUncommitted | IsolationLevel::ReadCommitted => {
                Isolation::ReadCommitted
            }
            IsolationLevel::RepeatableRead => Isolation::RepeatableRead,
        }
    }

    /// A setting's value (`transaction_isolation`, `default_transaction_isolation`):
    /// PostgreSQL's names in any case, `default` for READ COMMITTED.
    pub fn parse_setting(name: &str, value: &str) -> SqlResult<IsolationLevel> {
        let words: Vec<String> = value
            .split_whitespace()
            .map(|w| w.to_ascii_lowercase())
            .collect();
        match words.join(" ").as_str() {
            "read uncommitted" => Ok(IsolationLevel::ReadUncommitted),
            "read committed" | "default" => Ok(IsolationLevel::ReadCommitted),
            "repeatable read" => Ok(IsolationLevel::RepeatableRead),
            "serializable" => Err(serializable_refused()),
            _ => Err(SqlError::new(
                code::INVALID_PARAMETER,
                format!(
                    "invalid value for parameter \"{name}\": \"{}\"",
                    crate::error::clip(value)
                ),
            )
            .with_hint(
                "Available values: serializable, repeatable read, read committed, read uncommitted.",
            )),
        }
    }

    /// A level of a transaction mode.
    fn of(level: &TransactionIsolationLevel) -> SqlResult<IsolationLevel> {
        match level {
            TransactionIsolationLevel::ReadUncommitted => Ok(IsolationLevel::ReadUncommitted),
            TransactionIsolationLevel::ReadCommitted => Ok(IsolationLevel::ReadCommitted),
            TransactionIsolationLevel::RepeatableRead => Ok(IsolationLevel::RepeatableRead),
            TransactionIsolationLevel::Serializable => Err(serializable_refused()),
            TransactionIsolationLevel::Snapshot => {
                Err(SqlError::syntax("syntax error at or near \"SNAPSHOT\""))
            }
        }
    }
}

/// The isolation level transaction modes ask for (the last one, as PostgreSQL takes
/// them); None when they name none. READ WRITE is what every transaction is; READ ONLY
/// is not supported.
pub fn level_of_modes(modes: &[TransactionMode]) -> SqlResult<Option<IsolationLevel>> {
    Ok(modes_of(modes)?.0)
}

/// The isolation level and the access mode (true: READ ONLY) transaction modes name,
/// each None when they do not (the last of each kind counts).
pub fn modes_of(modes: &[TransactionMode]) -> SqlResult<(Option<IsolationLevel>, Option<bool>)> {
    let (mut level, mut read_only) = (None, None);
    for m in modes {
        match m {
            TransactionMode::IsolationLevel(l) => level = Some(IsolationLevel::of(l)?),
            TransactionMode::AccessMode(TransactionAccessMode::ReadWrite) => {
                read_only = Some(false)
            }
            TransactionMode::AccessMode(TransactionAccessMode::ReadOnly) => read_only = Some(true),
        }
    }
    Ok((level, read_only))
}

/// 25006: a command that writes, in a READ ONLY transaction.
pub fn read_only_refusal(command: &str) -> SqlError {
    SqlError::new(
        code::READ_ONLY_SQL_TRANSACTION,
        format!("cannot execute {command} in a read-only transaction"),
    )
}

/// SERIALIZABLE asked for anywhere.
pub fn serializable_refused() -> SqlError {
    SqlError::new(
        code::FEATURE_NOT_SUPPORTED,
        "isolation level SERIALIZABLE is not supported",
    )
    .with_hint(
        "Walden offers READ COMMITTED and REPEATABLE READ (snapshot isolation, which \
         PostgreSQL's SERIALIZABLE extends with checks for serialization anomalies).",
    )
}

/// SET TRANSACTION ISOLATION LEVEL (or `SET transaction_isolation`) after the block's
/// first query, to another level than the block's.
pub fn too_late() -> SqlError {
    SqlError::new(
        code::ACTIVE_TRANSACTION,
        "SET TRANSACTION ISOLATION LEVEL must be called before any query",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_take_postgresql_names_and_refuse_serializable() {
        let p = |v| IsolationLevel::parse_setting("transaction_isolation", v);
        assert_eq!(p("READ  Committed"), Ok(IsolationLevel::ReadCommitted));
        assert_eq!(p("default"), Ok(IsolationLevel::ReadCommitted));
        assert_eq!(p("repeatable read"), Ok(IsolationLevel::RepeatableRead));
        assert_eq!(p("read uncommitted"), Ok(IsolationLevel::ReadUncommitted));
        assert_eq!(
            IsolationLevel::ReadUncommitted.engine(),
            Isolation::ReadCommitted
        );
        assert_eq!(p("serializable").map_err(|e| e.code), Err("0A000"));
        let bogus = p("bogus").unwrap_err();
        assert_eq!(bogus.code, "22023");
        assert_eq!(
            bogus.message,
            "invalid value for parameter \"transaction_isolation\": \"bogus\""
        );
    }
}
