//! How two units are joined, from their row estimates (PostgreSQL's cost comparison of
//! nested loop, hash and merge joins, reduced to the cases Walden has):
//!
//! - With an equality key and an index on the key columns of one side's table, an
//!   index nested loop from the other (outer) side when that side has at most
//!   1/`INDEX_PROBE_COST` of the indexed side's rows: a descent and reads at random per
//!   outer row cost less than reading the whole table into a hash table.
//! - Else with a key, a hash join that builds its table on the smaller side.
//! - Without a key, a nested loop that keeps the smaller side in memory.

/// What one index lookup costs, in rows read in order. (`walden bench queries`: 100k
/// customers joined to 1M orders through orders' customer index took 4.6× PostgreSQL's
/// time; reading orders into a hash join does not.)
pub(crate) const INDEX_PROBE_COST: f64 = 20.0;

/// A join's method, with which side plays which part (`swap`: the sides turned round).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method<I> {
    /// Look the inner side up through its index (`index`) for each outer row; `swap`:
    /// the left side is the inner one.
    Index { swap: bool, index: I },
    /// Build a hash table on one side, probe with the other; `swap`: build on the left.
    Hash { swap: bool },
    /// Keep one side in memory and test each pair; `swap`: keep the left.
    NestedLoop { swap: bool },
}

/// Chooses the method of an inner join. `keyed`: an equality joins the sides;
/// `indexed[0]`: the right side's index on its key columns, when it is one table that
/// has one; `indexed[1]`: the left side's.
pub(crate) fn inner_method<I>(
    left_rows: f64,
    right_rows: f64,
    keyed: bool,
    indexed: [Option<I>; 2],
) -> Method<I> {
    if !keyed {
        return Method::NestedLoop {
            swap: right_rows > left_rows,
        };
    }
    for (swap, index) in [false, true].into_iter().zip(indexed) {
        let (outer, inner) = if swap {
            (right_rows, left_rows)
        } else {
            (left_rows, right_rows)
        };
        if let Some(index) = index {
            if outer * INDEX_PROBE_COST <= inner {
                return Method::Index { swap, index };
            }
        }
    }
    Method::Hash {
        swap: right_rows > left_rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_outer_rows_look_the_indexed_side_up() {
        // 1,000 customers joined to 1M orders with an index on orders' key.
        assert_eq!(
            inner_method(1000.0, 1e6, true, [Some('r'), None]),
            Method::Index {
                swap: false,
                index: 'r'
            }
        );
        // The same the other way round: the left side is the indexed one.
        assert_eq!(
            inner_method(1e6, 1000.0, true, [None, Some('l')]),
            Method::Index {
                swap: true,
                index: 'l'
            }
        );
    }

    #[test]
    fn many_outer_rows_hash_on_the_smaller_side() {
        // 100k customers against 1M orders: 100k × 20 > 1M, the index loses.
        assert_eq!(
            inner_method(1e5, 1e6, true, [Some('r'), None]),
            Method::Hash { swap: true }
        );
        assert_eq!(
            inner_method(1e6, 1e5, true, [None::<char>, None]),
            Method::Hash { swap: false }
        );
        // Equal sides build on the right.
        assert_eq!(
            inner_method(10.0, 10.0, true, [None::<char>, None]),
            Method::Hash { swap: false }
        );
    }

    #[test]
    fn no_key_keeps_the_smaller_side_in_a_nested_loop() {
        assert_eq!(
            inner_method(10.0, 500.0, false, [Some('r'), Some('l')]),
            Method::NestedLoop { swap: true }
        );
        assert_eq!(
            inner_method(500.0, 10.0, false, [Some('r'), Some('l')]),
            Method::NestedLoop { swap: false }
        );
    }
}
