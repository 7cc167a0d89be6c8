//! EXPLAIN's lines (`Explain`) and the FROM clause's nodes in them (`Source::explain`).

use crate::run::{NodeKey, NodeStats};

use super::{Explain, Join, JoinKind, JoinMethod, LateralBody, Source, TableRead};

impl<'s> Explain<'s> {
    /// An EXPLAIN showing estimates (`costs`), and what each node measured (`stats`).
    pub fn new(
        costs: bool,
        stats: Option<&'s std::collections::HashMap<NodeKey, NodeStats>>,
    ) -> Explain<'s> {
        Explain {
            lines: Vec::new(),
            stats,
            costs,
            pending: None,
            exact: false,
        }
    }

    /// The planner's estimate of the rows of the next node written.
    pub fn est(&mut self, rows: f64) {
        self.pending = Some(rows);
        self.exact = false;
    }

    /// The next node written gives no rows whatever it reads (`Source::Empty`): shown
    /// as `rows=0`, as PostgreSQL shows it, where an estimate is at least 1.
    pub fn est_none(&mut self) {
        self.pending = Some(0.0);
        self.exact = true;
    }

    /// The next node's label with its estimate (`  (rows=N)`, as PostgreSQL prints the
    /// rows of its cost estimate; Walden has no cost figures to show).
    fn label(&mut self, text: &str) -> (String, bool) {
        let exact = std::mem::take(&mut self.exact);
        match self.pending.take() {
            Some(rows) if self.costs => {
                let rows = if exact { rows } else { rows.max(1.0).round() };
                (format!("{text}  (rows={rows:.0})"), true)
            }
            _ => (text.to_string(), false),
        }
    }

    fn push_node(&mut self, depth: usize, text: &str) {
        if depth == 0 {
            self.lines.push(text.to_string());
        } else {
            self.lines
                .push(format!("{}->  {text}", " ".repeat(depth * 6 - 4)));
        }
    }

    pub fn node(&mut self, depth: usize, text: &str) {
        let (label, _) = self.label(text);
        self.push_node(depth, &label);
    }

    /// A node with what it measured under EXPLAIN ANALYZE: PostgreSQL's figures, time
    /// in milliseconds per loop (the node and those below it), rows per loop.
    pub fn node_at(&mut self, depth: usize, text: &str, key: NodeKey) {
        let (label, estimated) = self.label(text);
        let Some(stats) = self.stats else {
            return self.push_node(depth, &label);
        };
        let gap = if estimated { " " } else { "  " };
        let actual = match stats.get(&key) {
            Some(s) if s.loops > 0 => format!(
                "{gap}(actual time={:.3} rows={} loops={})",
                s.nanos as f64 / 1e6 / s.loops as f64,
                s.rows / s.loops,
                s.loops
            ),
            _ => format!("{gap}(never executed)"),
        };
        self.push_node(depth, &format!("{label}{actual}"));
    }

    pub fn detail(&mut self, depth: usize, text: &str) {
        self.lines.push(Explain::detail_line(depth, text));
    }

    /// A detail of the node at `depth` as its line.
    pub fn detail_line(depth: usize, text: &str) -> String {
        let pad = if depth == 0 { 2 } else { depth * 6 + 2 };
        format!("{}{text}", " ".repeat(pad))
    }
}

impl Source {
    pub(crate) fn explain(&self, out: &mut Explain, depth: usize) {
        let key = self.key();
        out.est(self.estimate());
        match self {
            Source::Nothing => out.node_at(depth, "Result", key),
            Source::Empty => {
                out.est_none();
                out.node_at(depth, "Result", key);
                out.detail(depth, "One-Time Filter: false");
            }
            Source::Series { .. } | Source::SeriesOf { .. } => {
                out.node_at(depth, "Function Scan on generate_series", key)
            }
            Source::JsonRows { func, .. } => {
                out.node_at(depth, &format!("Function Scan on {}", func.name()), key)
            }
            Source::Values { name, .. } => out.node_at(depth, &format!("Seq Scan on {name}"), key),
            Source::Settings => out.node_at(depth, "Function Scan on pg_show_all_settings a", key),
            Source::Cursors => out.node_at(depth, "Function Scan on pg_cursor c", key),
            Source::Locks => out.node_at(depth, "Function Scan on pg_lock_status l", key),
            Source::Table(t) => explain_table(t, out, depth, key),
            Source::Derived { plan, name } => {
                out.node_at(depth, &format!("Subquery Scan on {name}"), key);
                plan.explain_into(out, depth + 1);
            }
            Source::Lateral { body, name, .. } => match body {
                LateralBody::Query(plan) => {
                    out.node_at(depth, &format!("Subquery Scan on {name}"), key);
                    plan.explain_into(out, depth + 1);
                }
                LateralBody::Series(series) => series.explain(out, depth),
            },
            Source::Recursive { plan, label } => {
                out.node_at(depth, &format!("CTE Scan on {label}"), key);
                plan.explain_into(out, depth);
            }
            Source::WorkTable { name, .. } => {
                out.node_at(depth, &format!("WorkTable Scan on {name}"), key);
            }
            Source::Padded { inner, .. } => inner.explain(out, depth),
            Source::Filter { inner, text, .. } => {
                out.node_at(depth, "Result", key);
                out.detail(depth, &format!("Filter: ({text})"));
                inner.explain(out, depth + 1);
            }
            Source::Join(j) => j.explain(out, depth, key),
        }
    }
}

fn nested_loop(kind: &str) -> String {
    if kind.is_empty() {
        "Nested Loop".into()
    } else {
        format!("Nested Loop{kind} Join")
    }
}

/// A table read's lines: its scan or index scan, and the pushed-down top-N's filter.
fn explain_table(t: &TableRead, out: &mut Explain, depth: usize, key: NodeKey) {
    crate::select::explain_access(
        out,
        &t.access,
        &t.label(),
        depth,
        t.filter_text.as_deref(),
        &t.names,
        Some(key),
    );
    if let Some(top) = &t.top {
        let qualifier = t.alias.as_deref().unwrap_or(&t.name);
        let keys: Vec<String> = top
            .keys
            .iter()
            .map(|&(c, desc, nulls_first)| {
                let name = t.names.get(c).map_or("?", String::as_str);
                let dir = match (desc, nulls_first) {
                    (false, false) => "",
                    (false, true) => " NULLS FIRST",
                    (true, true) => " DESC",
                    (true, false) => " DESC NULLS LAST",
                };
                format!("{qualifier}.{name}{dir}")
            })
            .collect();
        // Rows that sort after the last row the top-N above keeps are
        // dropped as they are read.
        out.detail(depth, &format!("Top-N Filter: {}", keys.join(", ")));
    }
}

impl Join {
    /// A join's lines (`key` its node's): its method's node and conditions, then its
    /// sides.
    fn explain(&self, out: &mut Explain, depth: usize, key: NodeKey) {
        let kind = match self.kind {
            JoinKind::Inner => "",
            JoinKind::Left => " Left",
            JoinKind::Full => " Full",
        };
        match &self.method {
            JoinMethod::Lateral => {
                out.node_at(depth, &nested_loop(kind), key);
                if let Some(t) = &self.cond_text {
                    out.detail(depth, &format!("Join Filter: ({t})"));
                }
                self.left.explain(out, depth + 1);
                self.right.explain(out, depth + 1);
            }
            JoinMethod::NestedLoop if matches!(self.right, Source::Empty) => {
                // An outer join whose ON condition is the constant false: its right
                // side reads nothing, and needs no Materialize (PostgreSQL shows the
                // constant as it is, unparenthesized).
                out.node_at(depth, &nested_loop(kind), key);
                if let Some(t) = &self.cond_text {
                    out.detail(depth, &format!("Join Filter: {t}"));
                }
                self.left.explain(out, depth + 1);
                self.right.explain(out, depth + 1);
            }
            JoinMethod::NestedLoop => {
                out.node_at(depth, &nested_loop(kind), key);
                if let Some(t) = &self.cond_text {
                    out.detail(depth, &format!("Join Filter: ({t})"));
                }
                self.left.explain(out, depth + 1);
                out.est(self.right.estimate());
                out.node_at(depth + 1, "Materialize", self.right.key());
                self.right.explain(out, depth + 2);
            }
            JoinMethod::Hash { .. } => {
                out.node_at(depth, &format!("Hash{kind} Join"), key);
                if let Some(t) = &self.key_text {
                    out.detail(depth, &format!("Hash Cond: ({t})"));
                }
                if let Some(t) = &self.cond_text {
                    out.detail(depth, &format!("Join Filter: ({t})"));
                }
                self.left.explain(out, depth + 1);
                out.est(self.right.estimate());
                out.node_at(depth + 1, "Hash", self.right.key());
                self.right.explain(out, depth + 2);
            }
            JoinMethod::Index { index, .. } => {
                out.node_at(depth, &nested_loop(kind), key);
                self.left.explain(out, depth + 1);
                let table = self.right.padded_table();
                let label = table.map(|(t, ..)| t.label()).unwrap_or_default();
                // Per lookup, as PostgreSQL shows an inner index scan's rows.
                out.est(self.rows / self.left.estimate());
                out.node_at(
                    depth + 1,
                    &format!("Index Scan using {index} on {label}"),
                    self.right.key(),
                );
                if let Some(t) = &self.key_text {
                    out.detail(depth + 1, &format!("Index Cond: ({t})"));
                }
                if let Some(f) = table.and_then(|(t, ..)| t.filter_text.as_ref()) {
                    out.detail(depth + 1, &format!("Filter: ({f})"));
                }
            }
        }
    }
}
