//! EXPLAIN of a SELECT block: its row estimates and the nodes over its FROM clause, and a
//! table read's lines (`explain_access`).

use crate::access_path::Access;
use crate::from::{Explain, Source};
use crate::optimize::simplify::is_constant_false;
use crate::run::NodeKey;

use super::{limited, Distinct, SelectPlan, Upper};

impl SelectPlan {
    /// The plan as EXPLAIN shows it; with `costs`, each node's estimated rows.
    pub fn explain(&self, costs: bool) -> Vec<String> {
        let mut out = Explain::new(costs, None);
        self.explain_into(&mut out, 0);
        out.lines
    }

    /// The planner's estimates of the rows read (past the WHERE clause), after grouping,
    /// after DISTINCT and after LIMIT. Groups are the product of the keys' distinct
    /// values when ANALYZE knows them all (`groups`); otherwise groups and distinct
    /// rows are PostgreSQL's guess without statistics (200 per key); at most the rows.
    fn estimates(&self) -> [f64; 4] {
        let read = self
            .input_limit
            .map_or(self.from_rows, |n| self.from_rows.min(n as f64))
            .max(1.0);
        let grouped = match &self.grouping {
            None => read,
            Some(g) if g.keys.is_empty() => 1.0,
            Some(g) => read.min(
                self.groups
                    .unwrap_or_else(|| 200f64.powi(g.keys.len().min(8) as i32)),
            ),
        };
        let distinct = match self.distinct {
            Distinct::None => grouped,
            _ => grouped.min(200.0),
        };
        [
            read,
            grouped,
            distinct,
            limited(distinct, self.limit, self.offset),
        ]
    }

    /// The planner's estimate of the rows the query gives.
    pub(crate) fn estimate(&self) -> f64 {
        self.estimates()[3]
    }

    pub(super) fn explain_into(&self, out: &mut Explain, mut depth: usize) {
        let me = self as *const SelectPlan as usize;
        let [read, grouped, distinct, limited] = self.estimates();
        if self.limit.is_some() || self.offset > 0 {
            out.est(limited);
            out.node_at(depth, "Limit", (me, Upper::Limit as u8));
            depth += 1;
        }
        if self.distinct != Distinct::None {
            let name = if self.order.is_empty() {
                "HashAggregate"
            } else {
                "Unique"
            };
            out.est(distinct);
            out.node_at(depth, name, (me, Upper::Distinct as u8));
            depth += 1;
        }
        if !self.order.is_empty() {
            out.est(grouped);
            out.node_at(depth, "Sort", (me, Upper::Sort as u8));
            if let Some(s) = out.stats.and_then(|s| s.get(&(me, Upper::Sort as u8))) {
                if s.disk_bytes > 0 {
                    let line = format!(
                        "Sort Method: external merge  Disk: {}kB",
                        s.disk_bytes.div_ceil(1024)
                    );
                    out.detail(depth, &line);
                }
            }
            depth += 1;
        }
        if !self.windows.is_empty() {
            out.est(grouped);
            out.node_at(depth, "WindowAgg", (me, Upper::Window as u8));
            depth += 1;
        }
        if !self.srfs.is_empty() {
            out.est(grouped);
            out.node_at(depth, "ProjectSet", (me, Upper::ProjectSet as u8));
            depth += 1;
        }
        if self.grouping.is_some() {
            self.explain_aggregate(out, depth, grouped);
            depth += 1;
        }
        out.est(read);
        match &self.source {
            Source::Table(t) => {
                explain_access(
                    out,
                    &t.access,
                    &t.label(),
                    depth,
                    self.filter_text.as_deref(),
                    &self.source_names,
                    Some(self.source.key()),
                );
            }
            other => {
                let text = self.filter.as_ref().and(self.filter_text.as_deref());
                explain_source(out, other, text, depth, read);
            }
        }
    }

    /// The grouping's node (`rows` its estimate), at `depth`.
    fn explain_aggregate(&self, out: &mut Explain, depth: usize, rows: f64) {
        let me = self as *const SelectPlan as usize;
        let plain = self.grouping.as_ref().is_some_and(|g| g.keys.is_empty());
        let name = if plain { "Aggregate" } else { "HashAggregate" };
        out.est(rows);
        out.node_at(depth, name, (me, Upper::Aggregate as u8));
        if plain && self.having.as_ref().is_some_and(is_constant_false) {
            // A HAVING that is the constant false, as PostgreSQL shows it above the
            // Result that reads nothing (no other HAVING is shown here yet).
            out.detail(depth, "Filter: false");
        }
        if let Some(s) = out.stats.and_then(|s| s.get(&(me, Upper::Aggregate as u8))) {
            if s.disk_bytes > 0 {
                let line = format!(
                    "Batches: {}  Disk Usage: {}kB",
                    s.batches + 1,
                    s.disk_bytes.div_ceil(1024)
                );
                out.detail(depth, &line);
            }
        }
    }
}

/// The lines of a FROM clause's rows that are not one table's read (a join, a subquery,
/// a function), with `filter` (its text), the WHERE clause left for the rows it gives:
/// on a join, its `Filter`; on anything else, a `Result` node above it (`rows` its
/// estimate).
pub(crate) fn explain_source(
    out: &mut Explain,
    source: &Source,
    filter: Option<&str>,
    depth: usize,
    rows: f64,
) {
    if let Some(text) = filter {
        if !matches!(source, Source::Join(_)) {
            out.est(rows);
            out.node(depth, "Result");
            out.detail(depth, &format!("Filter: ({text})"));
            source.explain(out, depth + 1);
            return;
        }
    }
    let before = out.lines.len();
    source.explain(out, depth);
    // Conditions left for the joined rows belong to the top join.
    if let (Some(text), Source::Join(_)) = (filter, source) {
        let line = Explain::detail_line(depth, &format!("Filter: ({text})"));
        out.lines.insert(before + 1, line);
    }
}

/// The lines of a table read: `Seq Scan on t` or `Index Scan [Backward] using i on t`,
/// with its index condition and whether a filter is checked on each row.
pub(crate) fn explain_access(
    out: &mut Explain,
    access: &Access,
    table: &str,
    depth: usize,
    filter: Option<&str>,
    names: &[String],
    key: Option<NodeKey>,
) {
    let node = |out: &mut Explain, text: &str| match key {
        Some(k) => out.node_at(depth, text, k),
        None => out.node(depth, text),
    };
    match access {
        Access::Scan => {
            node(out, &format!("Seq Scan on {table}"));
            if let Some(f) = filter {
                out.detail(depth, &format!("Filter: ({f})"));
            }
        }
        Access::Index(r) => {
            let dir = if r.backward { " Backward" } else { "" };
            node(
                out,
                &format!("Index Scan{dir} using {} on {table}", r.index),
            );
            if !r.cond.is_empty() {
                out.detail(depth, &format!("Index Cond: {}", r.cond_text(names)));
            }
            if let Some(f) = filter.filter(|_| r.residual) {
                out.detail(depth, &format!("Filter: ({f})"));
            }
        }
    }
}
