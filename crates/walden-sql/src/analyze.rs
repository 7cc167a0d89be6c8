//! ANALYZE: counts a table's live rows and estimates each column's distinct values, and
//! hands them to the engine to keep (`Database::set_table_stats`). The planner's row
//! estimates (`Catalog::rows`, `Catalog::distinct`) read them back.
//!
//! Every live row is read (PostgreSQL samples 30,000); distinct values are counted
//! exactly by their 64-bit hashes until a column has `CAP` of them, after which the
//! column is taken to keep the share of distinct values it had then (PostgreSQL's
//! negative `n_distinct`: the count grows with the table).

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use walden::{Transaction, Value};

use crate::error::{SqlError, SqlResult};
use crate::session::Ctx;

/// Distinct hashes kept per column before it is taken to be a share of the rows.
const CAP: usize = 100_000;

/// One column's distinct values so far.
struct Distinct {
    seen: HashSet<u64>,
    /// The share of rows that were distinct when `seen` reached `CAP`.
    share: Option<f64>,
}

fn hash_value(v: &Value) -> u64 {
    let mut h = DefaultHasher::new();
    std::mem::discriminant(v).hash(&mut h);
    match v {
        Value::Null => {}
        Value::Int2(x) => x.hash(&mut h),
        Value::Int4(x) => x.hash(&mut h),
        Value::Int8(x) => x.hash(&mut h),
        Value::Float8(x) => x.to_bits().hash(&mut h),
        Value::Bool(x) => x.hash(&mut h),
        Value::Text(x) => x.hash(&mut h),
        Value::Uuid(x) => x.hash(&mut h),
        Value::Date(x) => x.hash(&mut h),
        Value::Timestamp(x) | Value::Timestamptz(x) => x.hash(&mut h),
        Value::Bytea(x) => x.hash(&mut h),
        Value::Interval(_) => v.to_string().hash(&mut h),
        Value::Numeric(n) => n.normalized().hash(&mut h),
        // Documents equal as jsonb (`1`, `1.0`) share their sort key.
        Value::Jsonb(j) => j.sort_key().hash(&mut h),
    }
    h.finish()
}

/// Analyzes one table in `t`'s snapshot and keeps what it found.
pub(crate) fn analyze_table(cx: &mut Ctx, t: &mut Transaction, table: &str) -> SqlResult<()> {
    let columns = cx.db.schema(table)?.columns.len();
    let mut distinct: Vec<Distinct> = (0..columns)
        .map(|_| Distinct {
            seen: HashSet::new(),
            share: None,
        })
        .collect();
    let mut rows = 0u64;
    let mut cancelled: Option<SqlError> = None;
    t.scan_with(table, |_, row| {
        rows += 1;
        if rows.is_multiple_of(4096) {
            if let Err(e) = cx.guard.check() {
                cancelled = Some(e);
                return false;
            }
        }
        for (d, v) in distinct.iter_mut().zip(&row) {
            if d.share.is_some() || matches!(v, Value::Null) {
                continue;
            }
            d.seen.insert(hash_value(v));
            if d.seen.len() >= CAP {
                d.share = Some(d.seen.len() as f64 / rows as f64);
                d.seen = HashSet::new();
            }
        }
        true
    })?;
    if let Some(e) = cancelled {
        return Err(e);
    }
    let n = rows as f64;
    let found: Vec<f64> = distinct
        .iter()
        .map(|d| match d.share {
            Some(share) => -share.min(1.0),
            // Mostly distinct: the count grows with the table, as PostgreSQL assumes
            // above a tenth.
            None if n > 0.0 && d.seen.len() as f64 > 0.1 * n => -(d.seen.len() as f64 / n),
            None => d.seen.len() as f64,
        })
        .collect();
    cx.db.set_table_stats(table, n, &found)?;
    Ok(())
}
