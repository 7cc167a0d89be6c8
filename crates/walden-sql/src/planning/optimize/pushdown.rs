//! Predicate pushdown (PostgreSQL's distribute_qual_to_rels): each AND-ed part of WHERE
//! and of an inner join's ON is checked as low in the join tree as its columns allow.
//!
//! - A condition on one unit's columns goes into that unit: into a table's read, where
//!   an index may serve it, or as a filter over a subquery or an outer join.
//! - A condition over several units is checked at the join where its columns first all
//!   meet (an equality there may become the join's hash or index key).
//! - A condition on no column is checked once, above the joins.
//! - An ON condition of a LEFT join over its inner (right) side alone narrows that side
//!   before the join; a condition of WHERE never goes below an outer join's nullable
//!   side (the planner plans each outer join as a unit of its own, so none can).
//!
//! Units fill column ranges of the FROM clause's row; a condition is known by the
//! columns it reads.

use std::ops::Range;

/// Where each condition of an inner-join group is checked, by the conditions' indexes.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Placement {
    /// Per unit, the conditions on its columns alone.
    pub on_unit: Vec<Vec<usize>>,
    /// Conditions over several units: checked at a join (`due_at`).
    pub at_joins: Vec<usize>,
    /// Conditions on no column: checked above the joins.
    pub above: Vec<usize>,
}

fn covers(ranges: &[Range<usize>], cols: &[usize]) -> bool {
    cols.iter().all(|c| ranges.iter().any(|r| r.contains(c)))
}

/// Places conditions (each the columns it reads) among units (each the columns it
/// fills). A condition on one unit goes to the first unit that covers it.
pub(crate) fn place(conds: &[&[usize]], units: &[&[Range<usize>]]) -> Placement {
    let mut p = Placement {
        on_unit: vec![Vec::new(); units.len()],
        ..Placement::default()
    };
    for (i, cols) in conds.iter().enumerate() {
        if cols.is_empty() {
            p.above.push(i);
        } else if let Some(u) = units.iter().position(|u| covers(u, cols)) {
            p.on_unit[u].push(i);
        } else {
            p.at_joins.push(i);
        }
    }
    p
}

/// Whether a condition waiting for a join is checked at the join that fills `joined`:
/// all its columns are there.
pub(crate) fn due_at(cols: &[usize], joined: &[Range<usize>]) -> bool {
    covers(joined, cols)
}

/// Whether an ON condition of a LEFT join narrows its inner side before the join: it
/// reads columns, all of the inner side.
pub(crate) fn narrows_inner_side(cols: &[usize], inner: &[Range<usize>]) -> bool {
    !cols.is_empty() && covers(inner, cols)
}

#[cfg(test)]
// Units of one run of columns are what these say.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    #[test]
    fn each_condition_goes_as_low_as_its_columns_allow() {
        // t(0..3) join u(3..5) join v(5..9).
        let units: [&[Range<usize>]; 3] = [&[0..3], &[3..5], &[5..9]];
        let conds: [&[usize]; 6] = [
            &[1],    // t.b = 1: into t
            &[3, 4], // u.a < u.b: into u
            &[0, 3], // t.a = u.a: at the join of t and u
            &[2, 8], // t.c = v.d: at the join of t and v
            &[],     // 1 = 1 after folding: above
            &[6],    // v.b > 0: into v
        ];
        assert_eq!(
            place(&conds, &units),
            Placement {
                on_unit: vec![vec![0], vec![1], vec![5]],
                at_joins: vec![2, 3],
                above: vec![4],
            }
        );
    }

    #[test]
    fn a_unit_of_several_ranges_takes_conditions_over_all_of_them() {
        // An outer join planned as one unit fills t's and u's columns.
        let units: [&[Range<usize>]; 2] = [&[0..2, 4..6], &[2..4]];
        let p = place(&[&[0, 5], &[1, 2]], &units);
        assert_eq!(p.on_unit, vec![vec![0], vec![]]);
        assert_eq!(p.at_joins, vec![1]);
    }

    #[test]
    fn a_waiting_condition_is_due_where_its_columns_meet() {
        assert!(!due_at(&[0, 7], &[0..3]));
        assert!(!due_at(&[0, 7], &[0..3, 3..5]));
        assert!(due_at(&[0, 7], &[0..3, 3..5, 5..9]));
    }

    #[test]
    fn an_on_condition_over_the_inner_side_alone_narrows_it() {
        assert!(narrows_inner_side(&[3, 4], &[3..5]));
        assert!(!narrows_inner_side(&[0, 3], &[3..5]));
        // On no column (`ON false`): it stays on the join, where it keeps the left rows.
        assert!(!narrows_inner_side(&[], &[3..5]));
    }
}
