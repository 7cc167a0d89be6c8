//! Index or scan, by cost (PostgreSQL's cost_index against cost_seqscan, reduced): an
//! index read of equalities is worth it only when the rows it finds, each fetched from
//! the table at random, cost less than reading the whole table in order.
//!
//! The rows an index read finds are estimated from `ANALYZE`'s statistics: the table's
//! rows over the distinct values of each column the read fixes, times the keys it looks
//! up (an IN list gives several). Without statistics for every fixed column (a table
//! never analyzed), or for a read bounded by a range (no histogram to estimate it
//! with), the index is kept, as before statistics existed: the rule only ever turns an
//! index read into a scan where the statistics say the scan is cheaper.

/// What reading one row through an index costs, in rows read in order: PostgreSQL's
/// `random_page_cost` over `seq_page_cost`.
pub(crate) const RANDOM_ROW_COST: f64 = 4.0;

/// A table's statistics as ANALYZE left them (scaled to the table's size now).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TableStats {
    pub rows: f64,
    /// Each column's distinct values (0: unknown).
    pub distinct: Vec<f64>,
}

/// The rows an index read finds that fixes `fixed` columns by equality, looking up
/// `keys` keys: None when some fixed column's distinct values are unknown.
pub(crate) fn expected_rows(stats: &TableStats, fixed: &[usize], keys: usize) -> Option<f64> {
    if fixed.is_empty() {
        return None;
    }
    let mut rows = stats.rows;
    for &c in fixed {
        let d = *stats.distinct.get(c)?;
        if d <= 0.0 {
            return None;
        }
        rows /= d;
    }
    Some((rows * keys.max(1) as f64).min(stats.rows))
}

/// Whether a scan of the whole table costs less than an index read finding `rows`.
pub(crate) fn scan_is_cheaper(rows: f64, stats: &TableStats) -> bool {
    rows * RANDOM_ROW_COST > stats.rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(rows: f64, distinct: &[f64]) -> TableStats {
        TableStats {
            rows,
            distinct: distinct.to_vec(),
        }
    }

    #[test]
    fn rows_over_each_fixed_columns_distinct_values() {
        let s = stats(100_000.0, &[100_000.0, 3.0, 50.0]);
        assert_eq!(expected_rows(&s, &[0], 1), Some(1.0));
        assert_eq!(expected_rows(&s, &[1], 1), Some(100_000.0 / 3.0));
        let both = expected_rows(&s, &[1, 2], 1).unwrap();
        assert!((both - 100_000.0 / 150.0).abs() < 1e-9, "{both}");
        // `status IN ('a', 'b')`: two keys.
        assert_eq!(expected_rows(&s, &[1], 2), Some(200_000.0 / 3.0));
        // Never more than the table.
        assert_eq!(expected_rows(&s, &[1], 5), Some(100_000.0));
    }

    #[test]
    fn without_statistics_nothing_is_estimated() {
        let s = stats(100_000.0, &[100_000.0, 0.0]);
        assert_eq!(expected_rows(&s, &[1], 1), None);
        assert_eq!(expected_rows(&s, &[7], 1), None);
        assert_eq!(expected_rows(&s, &[], 1), None);
    }

    #[test]
    fn a_scan_wins_past_a_quarter_of_the_table() {
        let s = stats(100_000.0, &[]);
        assert!(!scan_is_cheaper(1.0, &s));
        assert!(!scan_is_cheaper(25_000.0, &s));
        assert!(scan_is_cheaper(25_001.0, &s));
        assert!(scan_is_cheaper(100_000.0 / 3.0, &s));
    }
}
