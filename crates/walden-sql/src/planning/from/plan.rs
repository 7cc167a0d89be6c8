//! Planning a FROM clause (`plan_from`): its items bound in turn into relations and joins,
//! the scope they make so far, and the columns a name or `*` finds among them.

use sqlparser::ast::{self};

use crate::bind::Binder;
use crate::catalog::Scope;
use crate::error::{code, SqlError, SqlResult};
use crate::optimize::simplify::{is_constant_false, simplify_condition};
use crate::select::PlanCx;
use crate::window;

use super::conjuncts::{and_all, bind_conjuncts, text_of};
use super::{Builder, FromPlan, Item, Kind, Source};

pub(crate) fn plan_from(
    from: &[ast::TableWithJoins],
    selection: Option<&ast::Expr>,
    cx: &PlanCx,
) -> SqlResult<FromPlan> {
    plan_from_in(from, selection, cx, false)
}

/// As `plan_from`, the first relation being a table whose rows are followed by their
/// row ids: a column `ctid` after its own, which only a qualified name finds.
pub(crate) fn plan_from_with_row_id(
    from: &[ast::TableWithJoins],
    selection: Option<&ast::Expr>,
    cx: &PlanCx,
) -> SqlResult<FromPlan> {
    plan_from_in(from, selection, cx, true)
}

fn plan_from_in(
    from: &[ast::TableWithJoins],
    selection: Option<&ast::Expr>,
    cx: &PlanCx,
    row_id: bool,
) -> SqlResult<FromPlan> {
    let mut b = Builder {
        cx,
        rels: Vec::new(),
        columns: Vec::new(),
        relations: Vec::new(),
        hidden: Vec::new(),
        merged: Vec::new(),
        join_aliases: Vec::new(),
        row_id_next: row_id,
    };
    let mut items = Vec::new();
    for twj in from {
        let mut item = b.relation(&twj.relation)?;
        if b.is_lateral(&item) {
            // A LATERAL item in a comma list is joined to all the items before it.
            let before = items.drain(..).reduce(|left, right| Item::Join {
                kind: Kind::Inner,
                left: Box::new(left),
                right: Box::new(right),
                on: None,
                using: Vec::new(),
            });
            if let Some(left) = before {
                item = Item::Join {
                    kind: Kind::LateralInner,
                    left: Box::new(left),
                    right: Box::new(item),
                    on: None,
                    using: Vec::new(),
                };
            }
        }
        for j in &twj.joins {
            let right = b.relation(&j.relation)?;
            item = b.join(item, right, &j.join_operator)?;
        }
        items.push(item);
    }
    let star: Vec<usize> = items.iter().flat_map(|i| b.star(i)).collect();
    let width = b.columns.len();
    let scope = Scope {
        star: (star.len() != width || star.iter().enumerate().any(|(i, c)| i != *c))
            .then_some(star),
        ..b.scope_so_far()
    };
    if items.len() <= 1 && matches!(items.first(), None | Some(Item::Rel(_))) {
        return b.plan_one(selection, scope);
    }
    let mut conjs = match selection {
        Some(w) => bind_conjuncts(&mut Binder::in_query(&scope, cx), w, "WHERE")?,
        None => Vec::new(),
    };
    let mut units = Vec::new();
    for item in items {
        b.collect_group(item, &scope, width, &mut units, &mut conjs)?;
    }
    let (unit, rest) = b.plan_group(units, conjs)?;
    let rows = (unit.rows
        * rest
            .iter()
            .map(|c| b.selectivity_on(&c.expr))
            .product::<f64>())
    .max(1.0);
    Ok(FromPlan {
        source: unit.source,
        scope,
        filter_text: text_of(&rest).map(Into::into),
        filter: and_all(rest.into_iter().map(|c| c.expr).collect()),
        rows,
        distinct: b.distinct_by_column(width),
    })
}

impl Builder<'_, '_> {
    /// A FROM clause of one relation (or none): its rows as they come, the WHERE clause
    /// on top, or nothing read when that clause passes no row.
    fn plan_one(&self, selection: Option<&ast::Expr>, scope: Scope) -> SqlResult<FromPlan> {
        let source = match self.rels.last() {
            Some(rel) => rel.source.clone(),
            None => Source::Nothing,
        };
        let filter = match selection {
            Some(w) => Some(
                Binder::in_query(&scope, self.cx)
                    .boolean(w, "WHERE")
                    .map(simplify_condition)
                    .map_err(|e| window::in_clause(e, "WHERE"))?,
            ),
            None => None,
        };
        let (source, filter) = match filter {
            Some(f) if is_constant_false(&f) && !source.refusable() => (Source::Empty, None),
            f => (source, f),
        };
        let rows = source.estimate() * filter.as_ref().map_or(1.0, |f| self.selectivity_on(f));
        Ok(FromPlan {
            source,
            scope,
            filter_text: filter.as_ref().and(selection).map(|w| w.to_string().into()),
            filter,
            rows: rows.max(1.0),
            distinct: self.distinct_by_column(self.columns.len()),
        })
    }

    /// ANALYZE's distinct values of each of the clause's `width` columns (0: unknown).
    fn distinct_by_column(&self, width: usize) -> Vec<f64> {
        let mut out = vec![0.0; width];
        for rel in &self.rels {
            for (i, d) in rel.distinct.iter().enumerate() {
                if let Some(o) = out.get_mut(rel.at + i) {
                    *o = *d;
                }
            }
        }
        out
    }

    /// The scope of the FROM items planned so far, which a LATERAL item reads.
    pub(super) fn scope_so_far(&self) -> Scope {
        Scope {
            table: match self.rels.as_slice() {
                [one] => one.name.clone(),
                _ => None,
            },
            columns: self.columns.clone(),
            relations: if self.rels.len() > 1 {
                self.relations.clone()
            } else {
                Vec::new()
            },
            hidden: self.hidden.clone(),
            merged: self.merged.clone(),
            star: None,
            join_aliases: self.join_aliases.clone(),
        }
    }

    /// True if the item is a LATERAL subquery.
    pub(super) fn is_lateral(&self, item: &Item) -> bool {
        matches!(item, Item::Rel(r) if matches!(self.rels[*r].source, Source::Lateral { .. }))
    }

    /// The columns of a join's two sides, left then right.
    pub(super) fn pair_columns(&self, left: &Item, right: &Item) -> Vec<usize> {
        let mut cols = self.item_columns(left);
        cols.extend(self.item_columns(right));
        cols
    }

    pub(super) fn item_columns(&self, item: &Item) -> Vec<usize> {
        match item {
            Item::Rel(r) => {
                let rel = &self.rels[*r];
                (rel.at..rel.at + rel.columns.len()).collect()
            }
            Item::Join { left, right, .. } => {
                let mut v = self.item_columns(left);
                v.extend(self.item_columns(right));
                v
            }
        }
    }

    /// The columns `*` gives for an item: USING columns once, first.
    fn star(&self, item: &Item) -> Vec<usize> {
        match item {
            Item::Rel(r) => {
                let rel = &self.rels[*r];
                (rel.at..rel.at + rel.columns.len()).collect()
            }
            Item::Join {
                left,
                right,
                using,
                kind,
                ..
            } => {
                // The merged column: the left one, a RIGHT join's the right one.
                let mut v: Vec<usize> = using
                    .iter()
                    .map(|(l, r)| if *kind == Kind::Right { *r } else { *l })
                    .collect();
                v.extend(
                    self.star(left)
                        .into_iter()
                        .filter(|c| !using.iter().any(|(l, _)| l == c)),
                );
                v.extend(
                    self.star(right)
                        .into_iter()
                        .filter(|c| !using.iter().any(|(_, r)| r == c)),
                );
                v
            }
        }
    }

    /// A visible column called `name` among `cols`.
    pub(super) fn find_in(&self, cols: &[usize], name: &str) -> SqlResult<usize> {
        let found: Vec<usize> = cols
            .iter()
            .copied()
            .filter(|c| self.columns[*c].0 == name && !self.hidden.contains(c))
            .collect();
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("column \"{name}\" specified in USING clause does not exist in left table"),
            )),
            _ => Err(SqlError::new(
                code::AMBIGUOUS_COLUMN,
                format!("common column name \"{name}\" appears more than once in left table"),
            )),
        }
    }

    pub(super) fn qualified(&self, c: usize) -> String {
        match self.relations.iter().find(|(_, r)| r.contains(&c)) {
            Some((n, _)) => format!("{n}.{}", self.columns[c].0),
            None => self.columns[c].0.clone(),
        }
    }
}
