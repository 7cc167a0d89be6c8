//! ANALYZE: counts a table's live rows and estimates each column's distinct values, and
//! hands them to the engine to keep (`Database::set_table_stats`). The planner's row
//! estimates (`Catalog::rows`, `Catalog::distinct`) read them back.
//!
//! Every live row is counted; a sample of `SAMPLE` rows (reservoir sampling over the
//! scan, from a fixed seed, so an ANALYZE of the same rows finds the same statistics)
//! is decoded and its distinct values counted by their 64-bit hashes, as PostgreSQL
//! samples 30,000 rows. A table of at most `SAMPLE` rows is read whole and counted
//! exactly. From a sample, the count is PostgreSQL's estimate (Haas and Stokes'
//! Duj1): n·d / (n − f1 + f1·n/N), for d distinct values among n sampled, f1 of them
//! seen once, N rows in all; a sample whose values are all distinct is taken for a
//! unique column. Above a tenth of the rows, a count becomes a share (PostgreSQL's
//! negative `n_distinct`: it grows with the table).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::ops::ControlFlow;

use walden::rng::SimRng;
use walden::{RowShape, Rows, Transaction, Value};

use crate::error::{SqlError, SqlResult};
use crate::statement::Ctx;

/// Rows sampled (PostgreSQL: 300 × default_statistics_target, 100).
const SAMPLE: usize = 30_000;

/// A value's 64-bit hash, built as its `Hash` writes it: each write's words (8 bytes at
/// a time) folded in and the result mixed, as `keytable::hash_bytes` does. Far cheaper than
/// SipHash, which ANALYZE had spent a third of its time in; a statistic needs no
/// defence against chosen collisions.
#[derive(Default)]
struct ValueHasher(u64);

impl ValueHasher {
    fn word(&mut self, w: u64) {
        self.0 = crate::keytable::fold(self.0, w);
    }
}

impl Hasher for ValueHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.word(u64::from_le_bytes([
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
            ]));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 61));
        }
    }
    fn write_u8(&mut self, x: u8) {
        self.word(u64::from(x));
    }
    fn write_u16(&mut self, x: u16) {
        self.word(u64::from(x));
    }
    fn write_u32(&mut self, x: u32) {
        self.word(u64::from(x));
    }
    fn write_u64(&mut self, x: u64) {
        self.word(x);
    }
    fn write_usize(&mut self, x: usize) {
        self.word(x as u64);
    }
    fn finish(&self) -> u64 {
        crate::keytable::finalize(self.0)
    }
}

/// The set's own hasher: its keys are hashes already.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = x;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type HashMap64<V> = HashMap<u64, V, BuildHasherDefault<Prehashed>>;

fn hash_value(v: &Value) -> u64 {
    let mut h = ValueHasher::default();
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

/// A sampled value as the sample keeps it: its hash, or `NULL_HASH` for NULL (a value
/// hashing to it is moved to 1).
fn sampled(v: &Value) -> u64 {
    match v {
        Value::Null => NULL_HASH,
        v => match hash_value(v) {
            NULL_HASH => 1,
            h => h,
        },
    }
}

const NULL_HASH: u64 = 0;

/// A column's distinct values estimated from `sample` (its values' hashes in the sampled
/// rows, `sampled`) for a table of `total` rows, as PostgreSQL's `n_distinct`.
fn estimate_distinct(sample: impl ExactSizeIterator<Item = u64>, total: f64) -> f64 {
    let mut counts: HashMap64<u32> = HashMap64::default();
    let mut nulls = 0usize;
    let len = sample.len();
    for h in sample {
        match h {
            NULL_HASH => nulls += 1,
            h => *counts.entry(h).or_insert(0) += 1,
        }
    }
    let n = (len - nulls) as f64;
    if len == 0 || n == 0.0 {
        return 0.0;
    }
    let null_share = nulls as f64 / len as f64;
    let d = counts.len() as f64;
    let f1 = counts.values().filter(|&&c| c == 1).count() as f64;
    // Every sampled value once: a unique column (as many values as non-NULL rows).
    if f1 == d && len < total as usize {
        return -(1.0 - null_share);
    }
    let nonnull_total = total * (1.0 - null_share);
    let estimate = if nonnull_total > 0.0 {
        let denom = (n - f1) + f1 * n / nonnull_total;
        if denom > 0.0 {
            ((n * d) / denom).clamp(d, nonnull_total.max(d))
        } else {
            d
        }
    } else {
        d
    };
    let estimate = (estimate + 0.5).floor();
    if estimate > 0.1 * total {
        -(estimate / total).min(1.0)
    } else {
        estimate
    }
}

/// Analyzes one table in `t`'s snapshot and keeps what it found.
pub(crate) fn analyze_table(cx: &mut Ctx, t: &mut Transaction, table: &str) -> SqlResult<()> {
    let columns = cx.db.schema(table)?.columns.len();
    // The sampled rows' values as hashes (`sampled`), `columns` per row: a row is hashed
    // as it is decoded and dropped at once, so the sample holds no values.
    let mut sample: Vec<u64> = Vec::new();
    let hash_row = |row: Vec<Value>, into: &mut [u64]| {
        for (slot, v) in into
            .iter_mut()
            .zip(row.iter().chain(std::iter::repeat(&Value::Null)))
        {
            *slot = sampled(v);
        }
    };
    let mut rows = 0u64;
    let mut random = SimRng::new(0x5eed_a11a);
    // Rows are read without their values (`nothing`), and the rows sampled read again
    // whole, so a row that does not enter the sample is never decoded.
    let nothing = vec![false; columns];
    let shape = RowShape {
        needed: Some(&nothing),
        capacity: 0,
    };
    let reader = t.reader()?;
    reader.read(Rows::Table(table), shape, |id, _| {
        rows += 1;
        if rows.is_multiple_of(4096) {
            cx.guard.check()?;
        }
        // Reservoir sampling: the row takes a random place among the first `rows`, and
        // stays when that place is in the sample.
        let at = if sample.len() < SAMPLE * columns {
            let at = sample.len() / columns;
            sample.resize((at + 1) * columns, NULL_HASH);
            at
        } else {
            random.below(rows) as usize
        };
        if at < SAMPLE {
            // The version the scan found: the reader sees it as the scan did.
            let row = reader.get(table, id)?.unwrap_or_default();
            hash_row(row, &mut sample[at * columns..(at + 1) * columns]);
        }
        Ok::<_, SqlError>(ControlFlow::Continue(()))
    })?;
    let n = rows as f64;
    let found: Vec<f64> = (0..columns)
        .map(|c| estimate_distinct(sample.iter().skip(c).step_by(columns).copied(), n))
        .collect();
    cx.db.set_table_stats(table, n, &found)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(values: impl Iterator<Item = Option<i32>>) -> Vec<u64> {
        values
            .map(|v| sampled(&v.map_or(Value::Null, Value::Int4)))
            .collect()
    }

    fn estimate_distinct(sample: &[u64], total: f64) -> f64 {
        super::estimate_distinct(sample.iter().copied(), total)
    }

    /// A table read whole is counted exactly, as before sampling: a count, or a share
    /// above a tenth of the rows.
    #[test]
    fn a_whole_table_is_counted_exactly() {
        let s = column((0..1000).map(|i| Some(i % 7)));
        assert_eq!(estimate_distinct(&s, 1000.0), 7.0);
        let s = column((0..1000).map(|i| Some(i % 400)));
        assert_eq!(estimate_distinct(&s, 1000.0), -0.4);
        let s = column((0..1000).map(|i| if i % 2 == 0 { None } else { Some(i) }));
        assert_eq!(estimate_distinct(&s, 1000.0), -0.5);
        assert_eq!(estimate_distinct(&column(std::iter::empty()), 0.0), 0.0);
        assert_eq!(
            estimate_distinct(&column([None, None].into_iter()), 2.0),
            0.0
        );
    }

    /// From a sample: values all distinct make a unique column; few values repeated
    /// often are counted; Duj1 scales what lies between.
    #[test]
    fn a_sample_is_scaled_as_postgresql_does() {
        let total = 1_000_000.0;
        let unique = column((0..30_000).map(Some));
        assert_eq!(estimate_distinct(&unique, total), -1.0);
        let ten = column((0..30_000).map(|i| Some(i % 10)));
        assert_eq!(estimate_distinct(&ten, total), 10.0);
        // n = 30,000: values 0..10,000 twice and 10,000..20,000 once.
        let mixed = column((0..30_000).map(|i| Some(if i < 20_000 { i } else { i - 20_000 })));
        let d = 20_000.0;
        let f1 = 10_000.0;
        let n = 30_000.0;
        let want = ((n * d) / ((n - f1) + f1 * n / total) + 0.5_f64).floor();
        assert_eq!(want, 29_557.0);
        assert_eq!(estimate_distinct(&mixed, total), want);
    }
}
