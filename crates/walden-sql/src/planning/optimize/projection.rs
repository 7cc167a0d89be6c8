//! Projection pushdown (PostgreSQL's targetlist pruning, DataFusion's projection
//! pushdown): a planned FROM clause told which of its columns are read above it marks,
//! in each table read, the columns nobody reads (made NULL as rows are read, and not
//! decoded: `walden::RowShape`), and cuts each hash or nested-loop join's kept right
//! side down to the columns read above it or by its own condition (`Source::prune`).
//! Nothing is pruned where a condition holds a subquery (its columns are not known).

use std::ops::Range;

use crate::expr::Expr;
use crate::from::{JoinMethod, Source};

/// The columns of `cols` that `used` names, as runs of neighbouring columns in order.
fn kept_cols(cols: &[Range<usize>], used: &[usize]) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for c in cols.iter().flat_map(|r| r.clone()) {
        if !used.contains(&c) {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.end == c => last.end = c + 1,
            _ => out.push(c..c + 1),
        }
    }
    out
}

impl Source {
    /// Columns of the FROM clause's rows that this source's own joins and filters read
    /// (a table read's own filter is over its own columns, and counted by `prune`).
    /// False when a part of it cannot say (a subquery in a condition).
    fn read_columns(&self, out: &mut Vec<usize>) -> bool {
        let mut add = |e: &Expr| {
            out.extend(e.columns());
            !e.has_subquery()
        };
        match self {
            Source::Nothing
            | Source::Empty
            | Source::Series { .. }
            | Source::Values { .. }
            | Source::Settings
            | Source::Cursors
            | Source::Locks
            | Source::Derived { .. } => true,
            Source::SeriesOf { args, .. } => args.iter().all(add),
            Source::JsonRows { arg, .. } => add(arg),
            Source::Lateral { params, .. } => params.iter().all(add),
            Source::Recursive { .. } | Source::WorkTable { .. } => true,
            Source::Table(t) => !t.row_id && t.filter.as_ref().is_none_or(|f| !f.has_subquery()),
            Source::Padded { inner, .. } => inner.read_columns(out),
            Source::Filter { inner, cond, .. } => add(cond) && inner.read_columns(out),
            Source::Join(j) => {
                let mut ok = j.cond.as_ref().is_none_or(&mut add);
                match &j.method {
                    JoinMethod::NestedLoop | JoinMethod::Lateral => {}
                    JoinMethod::Hash {
                        left_keys,
                        right_keys,
                    } => ok &= left_keys.iter().chain(right_keys).all(&mut add),
                    JoinMethod::Index { keys, .. } => ok &= keys.iter().all(|(e, _)| add(e)),
                }
                ok && j.left.read_columns(out) && j.right.read_columns(out)
            }
        }
    }

    /// Column pruning: given the columns of the FROM clause's rows read above this
    /// source (`used`, by column number), marks in each table read the columns nobody
    /// reads, which are then made NULL as rows are read instead of being copied through
    /// the joins. Nothing is pruned when a condition holds a subquery.
    pub(crate) fn prune(&mut self, used: &[usize]) {
        let mut all = used.to_vec();
        if !self.read_columns(&mut all) {
            return;
        }
        self.mark(&all, 0);
        self.keep_right_cols(used);
    }

    /// Column pruning in joins: a hash or nested-loop join keeps in memory, and copies
    /// into each joined row, only the right side's columns read above it (`above`, by
    /// column number) or by its own condition. A column only its keys read (hashed
    /// before the row is kept) or no one reads takes neither room nor a copy per joined
    /// row: in `walden bench queries`' GROUP BY, the customers' id (read as the key
    /// only) and name (NULL, 32 bytes still) tripled the rows kept, and the probe's
    /// copy of a row found, a cache miss, took a quarter of the query's time.
    fn keep_right_cols(&mut self, above: &[usize]) {
        // What this source and everything below it read, beside what is read above:
        // each side of a join keeps that (a superset of what it needs).
        let mut below = above.to_vec();
        if !self.read_columns(&mut below) {
            return;
        }
        match self {
            Source::Filter { inner, .. } => inner.keep_right_cols(&below),
            Source::Join(j) => {
                let mut here = above.to_vec();
                if let Some(c) = &j.cond {
                    here.extend(c.columns());
                }
                if matches!(j.method, JoinMethod::Hash { .. } | JoinMethod::NestedLoop) {
                    j.right_cols = kept_cols(&j.right_cols, &here);
                }
                j.left.keep_right_cols(&below);
                j.right.keep_right_cols(&below);
            }
            // A relation's rows (`Padded`) are numbered from its own first column, and
            // hold no join of this FROM clause.
            _ => {}
        }
    }

    fn mark(&mut self, used: &[usize], at: usize) {
        match self {
            Source::Table(t) => {
                let mut needed = vec![false; t.names.len()];
                for &c in used {
                    if let Some(n) = c.checked_sub(at).and_then(|i| needed.get_mut(i)) {
                        *n = true;
                    }
                }
                for c in t.filter.iter().flat_map(|f| f.columns()) {
                    if let Some(n) = needed.get_mut(c) {
                        *n = true;
                    }
                }
                if needed.iter().any(|n| !n) {
                    t.needed = Some(needed.into());
                }
            }
            Source::Padded { inner, at, .. } => inner.mark(used, *at),
            Source::Filter { inner, .. } => inner.mark(used, at),
            Source::Join(j) => {
                j.left.mark(used, at);
                j.right.mark(used, at);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
// One run of columns is what these say.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::kept_cols;
    use crate::access_path::Access;
    use crate::expr::{CmpOp, Expr};
    use crate::from::{Join, JoinKind, JoinMethod, Source, TableRead};
    use crate::types::SqlType;

    fn table(name: &str, columns: usize, at: usize, width: usize) -> Source {
        Source::Padded {
            inner: Box::new(Source::Table(TableRead {
                name: name.into(),
                alias: None,
                access: Access::Scan,
                filter: None,
                filter_text: None,
                names: (0..columns).map(|c| format!("c{c}")).collect(),
                row_id: false,
                est: 100.0,
                needed: None,
                top: None,
                width,
                stats: None,
            })),
            at,
            width,
        }
    }

    fn col(c: usize) -> Expr {
        Expr::Column(c, SqlType::Int4)
    }

    /// `t(0..4) JOIN u(4..7) ON t.c0 = u.c0`, by hash, with `cond` on the pair.
    fn hash_join(cond: Option<Expr>) -> Source {
        Source::Join(Box::new(Join {
            kind: JoinKind::Inner,
            left: table("t", 4, 0, 7),
            right: table("u", 3, 4, 7),
            method: JoinMethod::Hash {
                left_keys: vec![col(0)],
                right_keys: vec![col(4)],
            },
            cond,
            cond_text: None,
            key_text: None,
            right_cols: vec![4..7],
            rows: 100.0,
        }))
    }

    /// (t's needed columns, u's needed columns, the join's kept right columns).
    type Pruned = (
        Option<Vec<bool>>,
        Option<Vec<bool>>,
        Vec<std::ops::Range<usize>>,
    );

    fn pruned(s: &Source) -> Pruned {
        let Source::Join(j) = s else { panic!("a join") };
        let needed = |s: &Source| match s {
            Source::Padded { inner, .. } => match inner.as_ref() {
                Source::Table(t) => t.needed.as_deref().map(<[bool]>::to_vec),
                _ => panic!("a table"),
            },
            _ => panic!("a padded table"),
        };
        (needed(&j.left), needed(&j.right), j.right_cols.clone())
    }

    #[test]
    // One run of columns is what these say.
    fn columns_nobody_reads_are_marked_and_the_kept_side_is_cut() {
        // SELECT t.c2, u.c2: t reads its key and c2, u its key and c2; the hash table
        // keeps u's c2 only (its key is hashed before the row is kept).
        let mut s = hash_join(None);
        s.prune(&[2, 6]);
        assert_eq!(
            pruned(&s),
            (
                Some(vec![true, false, true, false]),
                Some(vec![true, false, true]),
                vec![6..7]
            )
        );
    }

    #[test]
    fn a_join_condition_keeps_its_columns() {
        // ON … AND t.c1 < u.c1: both c1 are read, and u's is kept for the test.
        let cond = Expr::Cmp(CmpOp::Lt, Box::new(col(1)), Box::new(col(5)));
        let mut s = hash_join(Some(cond));
        s.prune(&[2]);
        assert_eq!(
            pruned(&s),
            (
                Some(vec![true, true, true, false]),
                Some(vec![true, true, false]),
                vec![5..6]
            )
        );
    }

    #[test]
    fn every_column_read_marks_nothing() {
        let mut s = hash_join(None);
        s.prune(&(0..7).collect::<Vec<_>>());
        assert_eq!(pruned(&s), (None, None, vec![4..7]));
    }

    /// A join's right columns are cut down to those read, in runs of neighbours.
    #[test]
    // One run of columns is what these say.
    fn kept_cols_keeps_the_read_columns_in_runs() {
        assert_eq!(kept_cols(&[4..7], &[6, 0, 1]), vec![6..7]);
        assert_eq!(
            kept_cols(&[2..4, 5..9], &[3, 5, 6, 8]),
            vec![3..4, 5..7, 8..9]
        );
        assert_eq!(
            kept_cols(&[2..4], &[]),
            Vec::<std::ops::Range<usize>>::new()
        );
        assert_eq!(kept_cols(&[2..4, 4..6], &[3, 4]), vec![3..5]);
    }
}
