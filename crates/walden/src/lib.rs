//! Walden: a transactional storage engine that logs only what changed.
//!
//! Layers, lowest first: `vfs` (files) → `page`, `store`, `buffer` (pages) → `wal`,
//! `clog` (logs) → `heap`, `undo` (table kinds) → `txn` → `engine` (the public [`Database`]).
//! See docs/ARCHITECTURE.md.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod access;
pub mod buffer;
pub mod calendar;
pub mod catalog;
pub mod clock;
pub mod clog;
pub mod codec;
pub mod control;
pub mod crashsim;
pub mod directory;
pub mod engine;
pub mod error;
pub mod fuzzing;
pub mod index_page;
pub mod jsonb;
pub mod lock_order;
pub mod numeric;
pub mod options;
pub mod owners;
pub mod page;
pub mod poison;
pub mod privilege;
pub mod recovery;
pub mod rng;
pub mod schema;
pub mod sequence;
pub mod stats;
pub mod store;
pub mod temp;
pub mod txn;
pub mod undo_log;
pub mod vfs;
pub mod wal;

#[cfg(test)]
mod testing {
    /// Cases of the decoder proptests: 2,000 by default, `WALDEN_PROPTEST_CASES` for a
    /// long run.
    pub fn proptest_cases() -> u32 {
        std::env::var("WALDEN_PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2000)
    }
}

pub use calendar::Interval;
pub use catalog::{RoleDef, TableKind, TableStats, ViewDef};
pub use engine::SeqValues;
pub use engine::{
    AdvisoryKey, AdvisoryMode, AlterOp, CheckReport, Database, HeldSnapshot, IndexCheck, IndexInfo,
    IndexSpec, Isolation, MemberChange, Modified, Newest, Options, Reader, RecoveryReport,
    RelationKind, RowAction, Rows, TableCheck, TableCursor, Transaction, VacuumReport,
};
pub use error::{Error, Result};
pub use jsonb::Json;
pub use numeric::Numeric;
pub use privilege::{AclItem, Membership, ObjectAcl, ObjectKind, Privileges};
pub use schema::{Column, ColumnType, Constraint, KeyOrder, Row, RowShape, Schema, Value};
pub use sequence::{Identity, SeqState, SeqType, SequenceDef, SequenceInfo};
pub use stats::{StatsSnapshot, TxnStats};
pub use store::Protection;
pub use temp::{TempFile, TempSpace};
pub use txn::{KeyLockMode, RelLockMode};
pub use txn::{WaitLimits, WaitStop};
pub use wal::WalCompression;

/// Where a row version lives: page and slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RowId {
    pub page: u64,
    pub slot: u16,
}

impl std::fmt::Display for RowId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({},{})", self.page, self.slot)
    }
}
