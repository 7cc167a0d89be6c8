//! Join order of a group of inner joins (PostgreSQL's join search, greedily, as its GEQO
//! does past `geqo_threshold`): the unit with the fewest estimated rows first, then at
//! each step the smallest unit joined to what is already joined by an equality, else the
//! smallest of those left (a cross product, put off as long as possible).
//!
//! Units are the group's parts, each a table, a subquery or an outer join planned on its
//! own; their rows are the planner's estimates with their own conditions applied (from
//! `ANALYZE`'s counts and distinct values where it ran). An equality between two sides
//! is an `EquiEdge`: the units each side's columns lie in.

/// An equality condition `a = b` of the group, by the units each side reads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EquiEdge {
    pub a: Vec<usize>,
    pub b: Vec<usize>,
}

impl EquiEdge {
    /// Whether this equality joins unit `u` to the units in `joined`: one side over the
    /// joined units alone, the other over `u` alone.
    fn joins(&self, joined: &[usize], u: usize) -> bool {
        let within = |side: &[usize]| !side.is_empty() && side.iter().all(|x| joined.contains(x));
        let only_u = |side: &[usize]| !side.is_empty() && side.iter().all(|x| *x == u);
        (within(&self.a) && only_u(&self.b)) || (within(&self.b) && only_u(&self.a))
    }
}

/// The order to join the units in, given each one's estimated rows and the group's
/// equalities. Ties go to the unit listed first, after the units taken so far are
/// removed by moving the last one into the gap (as the planner holds them).
pub(crate) fn join_order(rows: &[f64], edges: &[EquiEdge]) -> Vec<usize> {
    let mut left: Vec<usize> = (0..rows.len()).collect();
    let mut order = Vec::with_capacity(rows.len());
    let smallest = |cands: &mut dyn Iterator<Item = usize>, left: &[usize]| {
        cands.min_by(|a, b| rows[left[*a]].total_cmp(&rows[left[*b]]))
    };
    let Some(first) = smallest(&mut (0..left.len()), &left) else {
        return order;
    };
    order.push(left.swap_remove(first));
    while !left.is_empty() {
        let connected = |i: &usize| edges.iter().any(|e| e.joins(&order, left[*i]));
        let pick = smallest(&mut (0..left.len()).filter(connected), &left)
            .or_else(|| smallest(&mut (0..left.len()), &left))
            .unwrap_or(0);
        order.push(left.swap_remove(pick));
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(a: &[usize], b: &[usize]) -> EquiEdge {
        EquiEdge {
            a: a.to_vec(),
            b: b.to_vec(),
        }
    }

    #[test]
    fn the_smallest_first_then_the_smallest_joined_to_it() {
        // orders (1M) joined to customers (100k) and to nations (25) through customers.
        let rows = [1_000_000.0, 100_000.0, 25.0];
        let edges = [edge(&[0], &[1]), edge(&[1], &[2])];
        assert_eq!(join_order(&rows, &edges), vec![2, 1, 0]);
    }

    #[test]
    fn with_no_equality_to_the_joined_the_smallest_left_is_crossed() {
        // A small unit joined to nothing comes last, after the chain 0–1.
        let rows = [500.0, 1000.0, 10.0, 100.0];
        let edges = [edge(&[0], &[1]), edge(&[1], &[3])];
        // 2 first (the smallest); nothing is joined to it, so the smallest left, 3;
        // then 1 (joined to 3), then 0 (joined to 1).
        assert_eq!(join_order(&rows, &edges), vec![2, 3, 1, 0]);
    }

    #[test]
    fn an_edge_over_two_units_joins_only_when_both_are_in() {
        // a.x + b.y = c.z: c joins once a and b are both joined.
        let rows = [10.0, 20.0, 5.0, 30.0];
        let edges = [edge(&[0, 1], &[2]), edge(&[0], &[3])];
        // 2 first; nothing joins to {2} alone (the edge needs 0 and 1 in), so the
        // smallest left, 0; then 3, joined to 0 (1 is smaller but joined to nothing
        // yet); then 1.
        assert_eq!(join_order(&rows, &edges), vec![2, 0, 3, 1]);
    }

    #[test]
    fn ties_go_to_the_unit_listed_first() {
        let rows = [7.0, 7.0, 7.0];
        assert_eq!(join_order(&rows, &[]), vec![0, 2, 1]);
        assert!(join_order(&[], &[]).is_empty());
    }
}
