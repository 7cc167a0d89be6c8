//! The generator's statements over both tables, `t` and `u`: joins of every kind (ON
//! with equalities and other comparisons, USING, CROSS, a comma), subqueries (IN,
//! correlated EXISTS, scalar ones with an aggregate, so at most one row), grouped joins,
//! set operations, and UPDATE and DELETE with subqueries.
//!
//! Every expression in them is one that cannot fail (`guarded`): which joined rows,
//! subquery rows or arms of a set operation an engine evaluates, and in what order, is
//! the engine's choice, so an expression that can fail would make the engines disagree
//! about whether the statement fails, not about SQL.
//!
//! Dialects: both engines take the same text, except that SQLite gives every compound
//! operator the same precedence where PostgreSQL binds INTERSECT tighter (its text gets
//! a subquery in FROM), and SQLite lacks INTERSECT ALL and EXCEPT ALL (PostgreSQL only).

use super::{
    bx, limit_offset, order_item, sql, Check, Gen, Kind, Part, Scope, Stmt, Ty, E, JOINED,
    ONE_TABLE, T_QUALIFIED, U_QUALIFIED,
};
use super::{Sub, SubItem};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Join {
    Inner,
    Left,
    Right,
    Full,
    Cross,
    /// `FROM t, u` with the condition in WHERE.
    Comma,
}

/// The qualified columns of one table.
fn qualified(table: &str) -> Scope {
    if table == "t" {
        T_QUALIFIED
    } else {
        U_QUALIFIED
    }
}

/// Conditions AND-ed together (None when there are none).
fn all_of(conditions: Vec<E>) -> Option<E> {
    conditions.into_iter().reduce(|x, y| E::And(bx(x), bx(y)))
}

impl Gen {
    /// A boolean expression that cannot fail, over the scope's columns.
    fn safe_predicate(&mut self) -> E {
        let depth = self.range(1, 2) as u32;
        self.expr(Ty::Bool, depth, true, false)
    }

    /// An expression of `ty` that cannot fail and reads a column of the scope.
    fn safe_column_expr(&mut self, ty: Ty) -> E {
        let e = self.expr(ty, 2, true, false);
        if e.has_column() {
            return e;
        }
        match ty {
            Ty::Text => E::Col(self.text_col()),
            _ => E::Col(self.int_col()),
        }
    }

    /// A select item over the scope: mostly a column, else an expression that cannot fail.
    fn select_item(&mut self) -> E {
        if self.rng.chance(70) {
            E::Col(self.any_col())
        } else {
            let ty = self.pick(&[Ty::Int, Ty::Text, Ty::Bool]);
            self.safe_column_expr(ty)
        }
    }

    /// `FROM t <join> u [ON ... | USING (...)]`, and the USING columns. The left side is
    /// now and then a subquery in FROM named `t`, so that the qualified names still hold.
    fn join_from_clause(&mut self) -> (Join, Vec<Part>, Option<&'static str>) {
        let join = self.pick(&[
            Join::Inner,
            Join::Inner,
            Join::Inner,
            Join::Left,
            Join::Left,
            Join::Right,
            Join::Full,
            Join::Cross,
            Join::Comma,
        ]);
        let mut parts = vec![sql(" FROM ")];
        if self.rng.chance(15) {
            parts.extend([
                sql("(SELECT a, b, c FROM t WHERE "),
                Part::Expr(self.safe_predicate()),
                sql(") AS t"),
            ]);
        } else {
            parts.push(sql("t"));
        }
        let keyword = match join {
            Join::Inner => self.pick(&["JOIN", "INNER JOIN"]),
            Join::Left => self.pick(&["LEFT JOIN", "LEFT OUTER JOIN"]),
            Join::Right => self.pick(&["RIGHT JOIN", "RIGHT OUTER JOIN"]),
            Join::Full => self.pick(&["FULL JOIN", "FULL OUTER JOIN"]),
            Join::Cross => "CROSS JOIN",
            Join::Comma => ",",
        };
        parts.push(sql(format!(" {keyword} u")));
        if matches!(join, Join::Cross | Join::Comma) {
            return (join, parts, None);
        }
        if self.rng.chance(20) {
            let columns = self.pick(&["a", "b", "c", "a, b"]);
            parts.push(sql(format!(" USING ({columns})")));
            return (join, parts, Some(columns));
        }
        parts.push(sql(" ON "));
        parts.push(Part::Expr(self.join_condition(join == Join::Full)));
        (join, parts, None)
    }

    /// A join condition: an equality of a column of each table, or another comparison,
    /// perhaps with a second condition. A FULL JOIN gets equalities only: PostgreSQL runs
    /// a full join only by merging or hashing, and refuses other conditions (0A000).
    fn join_condition(&mut self, equalities_only: bool) -> E {
        let first = if equalities_only || self.rng.chance(60) {
            self.join_equality()
        } else {
            let op = self.pick(&["<", "<=", ">", ">=", "<>"]);
            let (x, y) = (self.pick(T_QUALIFIED.ints), self.pick(U_QUALIFIED.ints));
            E::Cmp(op, bx(E::Col(x)), bx(E::Col(y)))
        };
        if !self.rng.chance(30) {
            return first;
        }
        let second = if equalities_only {
            self.join_equality()
        } else {
            self.in_scope(JOINED, Gen::safe_predicate)
        };
        E::And(bx(first), bx(second))
    }

    fn join_equality(&mut self) -> E {
        if self.rng.chance(25) {
            return E::Cmp("=", bx(E::Col("t.c")), bx(E::Col("u.c")));
        }
        let (x, y) = (self.pick(T_QUALIFIED.ints), self.pick(U_QUALIFIED.ints));
        E::Cmp("=", bx(E::Col(x)), bx(E::Col(y)))
    }

    /// The WHERE of a join: the condition of a comma join, and perhaps a filter.
    fn join_where(&mut self, join: Join, parts: &mut Vec<Part>) {
        let mut conditions = Vec::new();
        if join == Join::Comma {
            conditions.push(self.join_condition(false));
        }
        if self.rng.chance(40) {
            conditions.push(self.in_scope(JOINED, Gen::safe_predicate));
        }
        if let Some(condition) = all_of(conditions) {
            parts.extend([sql(" WHERE "), Part::Expr(condition)]);
        }
    }

    /// Ends a query of `n` result columns: ordered by all of them by position (a full
    /// order), perhaps with LIMIT and OFFSET; or compared as a multiset.
    fn order_all(&mut self, mut parts: Vec<Part>, n: usize) -> Stmt {
        if self.rng.chance(40) {
            return Stmt::build(&parts, Kind::Query(Check::Unordered));
        }
        parts.push(sql(" ORDER BY "));
        for i in 0..n {
            if i > 0 {
                parts.push(sql(", "));
            }
            parts.extend(order_item(self, sql((i + 1).to_string())));
        }
        if self.rng.chance(50) {
            parts.extend(limit_offset(self));
        }
        Stmt::build(&parts, Kind::Query(Check::Ordered))
    }

    /// SELECT [DISTINCT] of columns and expressions of both tables, joined; or
    /// `SELECT *`. A USING column may be named unqualified: the one merged column.
    pub(super) fn join_query(&mut self) -> Stmt {
        let (join, from, using) = self.join_from_clause();
        // A FULL JOIN's merged column is the value of whichever side has one, and `*`
        // of a RIGHT JOIN gives the right side's (NOTES-pg-oracle.md, discrepancies 3
        // and 4, fixed).
        let merged = using;
        let star = self.rng.chance(10);
        let distinct = self.rng.chance(15);
        let mut parts = vec![sql(if distinct {
            "SELECT DISTINCT "
        } else {
            "SELECT "
        })];
        let n = if star {
            parts.push(sql("*"));
            // USING's columns come once, first.
            6 - using.map_or(0, |u| u.split(", ").count())
        } else {
            let n = self.range(1, 4) as usize;
            for i in 0..n {
                if i > 0 {
                    parts.push(sql(", "));
                }
                match merged {
                    Some(columns) if self.rng.chance(30) => {
                        let names: Vec<&str> = columns.split(", ").collect();
                        parts.push(sql(self.pick(&names)));
                    }
                    _ => parts.push(Part::Expr(self.in_scope(JOINED, Gen::select_item))),
                }
            }
            n
        };
        parts.extend(from);
        self.join_where(join, &mut parts);
        let stmt = self.order_all(parts, n);
        if star && using.is_some() {
            // SQLite keeps a USING column where its left table has it; PostgreSQL puts
            // the USING columns first.
            stmt.without_sqlite()
        } else {
            stmt
        }
    }

    /// An aggregate over joined rows: count, count(DISTINCT), sum, min, max or avg of a
    /// column or an expression that cannot fail.
    fn join_aggregate(&mut self) -> Vec<Part> {
        let (func, ty) = self.pick(&[
            ("count(", Ty::Int),
            ("count(DISTINCT ", Ty::Text),
            ("count(DISTINCT ", Ty::Int),
            ("sum(", Ty::Int),
            ("min(", Ty::Int),
            ("max(", Ty::Text),
            ("max(", Ty::Int),
            ("avg(", Ty::Int),
        ]);
        let arg = if self.rng.chance(60) {
            match ty {
                Ty::Text => E::Col(self.text_col()),
                _ => E::Col(self.int_col()),
            }
        } else {
            self.safe_column_expr(ty)
        };
        vec![sql(func), Part::Expr(arg), sql(")")]
    }

    /// GROUP BY over a join, perhaps with HAVING; ordered by the key, which is unique
    /// among the groups (a full order), perhaps with LIMIT.
    pub(super) fn grouped_join(&mut self) -> Stmt {
        let key = self.in_scope(JOINED, |g| {
            if g.rng.chance(70) {
                E::Col(g.any_col())
            } else {
                let ty = g.pick(&[Ty::Int, Ty::Text]);
                g.safe_column_expr(ty)
            }
        });
        let mut parts = vec![sql("SELECT "), Part::Expr(key.clone()), sql(", count(*)")];
        for _ in 0..self.range(1, 3) {
            parts.push(sql(", "));
            parts.extend(self.in_scope(JOINED, Gen::join_aggregate));
        }
        let (join, from, _) = self.join_from_clause();
        parts.extend(from);
        self.join_where(join, &mut parts);
        parts.extend([sql(" GROUP BY "), Part::Expr(key)]);
        if self.rng.chance(30) {
            let having = match self.rng.below(5) {
                0 => format!("count(*) > {}", self.range(0, 3)),
                1 => format!("count(DISTINCT u.c) >= {}", self.range(0, 2)),
                2 => format!("sum(u.b) > {}", self.range(-10, 10)),
                3 => format!("max(t.a) < {}", self.range(-10, 10)),
                _ => format!("min(u.c) > '{}'", self.text_literal()),
            };
            parts.push(sql(format!(" HAVING {having}")));
        }
        parts.push(sql(" ORDER BY "));
        parts.extend(order_item(self, sql("1")));
        if self.rng.chance(30) {
            parts.extend(limit_offset(self));
        }
        Stmt::build(&parts, Kind::Query(Check::Ordered))
    }

    /// A column of `inner` compared with one of `outer` (both qualified): what makes a
    /// subquery correlated.
    fn correlation(&mut self, outer: &str, inner: &'static str) -> E {
        let (o, i) = (qualified(outer), qualified(inner));
        if self.rng.chance(25) {
            let op = self.pick(&["=", "<>", "<"]);
            return E::Cmp(op, bx(E::Col(i.texts[0])), bx(E::Col(o.texts[0])));
        }
        let op = self.pick(&["=", "=", "<", ">=", "<>"]);
        let (x, y) = (self.pick(i.ints), self.pick(o.ints));
        E::Cmp(op, bx(E::Col(x)), bx(E::Col(y)))
    }

    /// A subquery's WHERE: perhaps a correlation, perhaps a filter on its own table.
    fn sub_filter(&mut self, outer: &str, inner: &'static str, correlated: bool) -> Option<E> {
        let mut conditions = Vec::new();
        if correlated {
            conditions.push(self.correlation(outer, inner));
        }
        if self.rng.chance(40) {
            conditions.push(self.in_scope(qualified(inner), Gen::safe_predicate));
        }
        all_of(conditions)
    }

    /// A scalar subquery over `inner`: an aggregate, so exactly one row.
    fn scalar_subquery(&mut self, outer: &str, inner: &'static str, int_only: bool) -> E {
        let scope = qualified(inner);
        let item = match self.rng.below(if int_only { 2 } else { 5 }) {
            0 => SubItem::Agg("min", Some(E::Col(self.pick(scope.ints)))),
            1 => SubItem::Agg("max", Some(E::Col(self.pick(scope.ints)))),
            2 => SubItem::Agg("max", Some(E::Col(scope.texts[0]))),
            3 => SubItem::Agg("sum", Some(E::Col(self.pick(scope.ints)))),
            _ => SubItem::Agg("count", None),
        };
        let correlated = self.rng.chance(70);
        let filter = self.sub_filter(outer, inner, correlated);
        E::Scalar(Box::new(Sub {
            item,
            table: inner,
            filter,
        }))
    }

    /// A condition on rows of `outer` (its columns unqualified) with a subquery over
    /// `inner`: `x [NOT] IN (SELECT ...)`, `EXISTS (SELECT 1 ... correlated)`, or a
    /// comparison with a scalar subquery.
    fn subquery_predicate(&mut self, outer: &str, inner: &'static str) -> E {
        match self.rng.below(5) {
            4 => {
                let op = self.pick(&["=", "<>", "<", ">="]);
                let x = E::Col(self.pick(qualified(outer).ints));
                let y = self.in_scope(qualified(inner), |g| {
                    if g.rng.chance(70) {
                        E::Col(g.int_col())
                    } else {
                        g.safe_column_expr(Ty::Int)
                    }
                });
                let correlated = self.rng.chance(25);
                let filter = self.sub_filter(outer, inner, correlated);
                let sub = Sub {
                    item: SubItem::Expr(y),
                    table: inner,
                    filter,
                };
                E::Quantified {
                    op,
                    x: bx(x),
                    sub: Box::new(sub),
                    all: self.rng.chance(50),
                }
            }
            0 | 1 => {
                let ty = self.pick(&[Ty::Int, Ty::Int, Ty::Text]);
                let x = self.in_scope(ONE_TABLE, |g| {
                    if g.rng.chance(70) {
                        match ty {
                            Ty::Text => E::Col("c"),
                            _ => E::Col(g.int_col()),
                        }
                    } else {
                        g.safe_column_expr(ty)
                    }
                });
                let item = self.in_scope(qualified(inner), |g| {
                    if g.rng.chance(70) {
                        match ty {
                            Ty::Text => E::Col(g.text_col()),
                            _ => E::Col(g.int_col()),
                        }
                    } else {
                        g.safe_column_expr(ty)
                    }
                });
                let correlated = self.rng.chance(25);
                let filter = self.sub_filter(outer, inner, correlated);
                let sub = Sub {
                    item: SubItem::Expr(item),
                    table: inner,
                    filter,
                };
                E::InSelect(bx(x), Box::new(sub), self.rng.chance(30))
            }
            2 => {
                let filter = self.sub_filter(outer, inner, true);
                E::Exists(Box::new(Sub {
                    item: SubItem::One,
                    table: inner,
                    filter,
                }))
            }
            _ => {
                let op = self.pick(&["=", "<", ">=", "<>"]);
                let x = E::Col(self.pick(&["a", "b"]));
                E::Cmp(op, bx(x), bx(self.scalar_subquery(outer, inner, true)))
            }
        }
    }

    /// The other table of a subquery, and the outer one.
    fn outer_and_inner(&mut self) -> (&'static str, &'static str) {
        if self.rng.chance(70) {
            ("t", "u")
        } else {
            ("u", "t")
        }
    }

    /// A subquery condition, alone, negated, or with a condition on the outer table.
    fn where_subquery(&mut self, outer: &str, inner: &'static str) -> E {
        let p = self.subquery_predicate(outer, inner);
        match self.rng.below(5) {
            0 => E::And(bx(p), bx(self.in_scope(ONE_TABLE, Gen::safe_predicate))),
            1 => E::Or(bx(p), bx(self.in_scope(ONE_TABLE, Gen::safe_predicate))),
            2 => E::Not(bx(p)),
            _ => p,
        }
    }

    /// SELECT over one table with a subquery over the other, in WHERE and perhaps in the
    /// select list.
    pub(super) fn subquery_query(&mut self) -> Stmt {
        let (outer, inner) = self.outer_and_inner();
        let mut parts = vec![sql("SELECT a, b, c")];
        let mut n = 3;
        if self.rng.chance(40) {
            parts.push(sql(", "));
            parts.push(Part::Expr(self.scalar_subquery(outer, inner, false)));
            n += 1;
        }
        parts.push(sql(format!(" FROM {outer}")));
        if self.rng.chance(85) {
            parts.push(sql(" WHERE "));
            parts.push(Part::Expr(self.where_subquery(outer, inner)));
        }
        self.order_all(parts, n)
    }

    /// DELETE, or UPDATE of one column, of rows of one table chosen by a subquery over
    /// the other; an UPDATE may also take its new value from a scalar subquery (min or
    /// max of a column, within the columns' bounds).
    pub(super) fn write_with_subquery(&mut self) -> Stmt {
        let (outer, inner) = self.outer_and_inner();
        let condition = self.where_subquery(outer, inner);
        let mut parts = if self.rng.chance(40) {
            vec![sql(format!("DELETE FROM {outer}"))]
        } else {
            let col = self.pick(&["a", "b"]);
            let value = if self.rng.chance(60) {
                self.scalar_subquery(outer, inner, true)
            } else {
                E::Arith(super::Op::Add, bx(E::Col(col)), bx(E::Int(1)))
            };
            vec![
                sql(format!("UPDATE {outer} SET {col} = ")),
                Part::Expr(value),
            ]
        };
        parts.extend([sql(" WHERE "), Part::Expr(condition)]);
        Stmt::build(&parts, Kind::Write)
    }

    /// One arm of a set operation: `SELECT <items of types> FROM t|u [WHERE ...]`.
    fn set_arm(&mut self, types: &[Ty]) -> Vec<Part> {
        let table = self.pick(&["t", "u"]);
        let mut parts = vec![sql("SELECT ")];
        for (i, ty) in types.iter().enumerate() {
            if i > 0 {
                parts.push(sql(", "));
            }
            let item = if self.rng.chance(70) {
                match ty {
                    Ty::Text => E::Col("c"),
                    _ => E::Col(self.int_col()),
                }
            } else {
                self.safe_column_expr(*ty)
            };
            parts.push(Part::Expr(item));
        }
        parts.push(sql(format!(" FROM {table}")));
        if self.rng.chance(50) {
            parts.extend([sql(" WHERE "), Part::Expr(self.safe_predicate())]);
        }
        parts
    }

    /// Two or three SELECTs joined by UNION [ALL], INTERSECT [ALL] or EXCEPT [ALL].
    pub(super) fn set_operation(&mut self) -> Stmt {
        let n = self.range(1, 2) as usize;
        let types: Vec<Ty> = (0..n).map(|_| self.pick(&[Ty::Int, Ty::Text])).collect();
        let operators = [
            "UNION",
            "UNION",
            "UNION ALL",
            "UNION ALL",
            "INTERSECT",
            "EXCEPT",
            "EXCEPT",
            "INTERSECT ALL",
            "EXCEPT ALL",
        ];
        let first_op = self.pick(&operators);
        let second_op = self.rng.chance(25).then(|| self.pick(&operators));
        let arms: Vec<Vec<Part>> = (0..2 + second_op.is_some() as usize)
            .map(|_| self.set_arm(&types))
            .collect();
        let mut parts = arms[0].clone();
        parts.push(sql(format!(" {first_op} ")));
        match second_op {
            // PostgreSQL binds INTERSECT tighter than UNION and EXCEPT; SQLite reads
            // every compound operator left to right, so its text groups the last two
            // arms in a subquery.
            Some(op) if op.starts_with("INTERSECT") && !first_op.starts_with("INTERSECT") => {
                parts.push(Part::Both(String::new(), "SELECT * FROM (".into()));
                parts.extend(arms[1].clone());
                parts.push(sql(format!(" {op} ")));
                parts.extend(arms[2].clone());
                parts.push(Part::Both(String::new(), ")".into()));
            }
            Some(op) => {
                parts.extend(arms[1].clone());
                parts.push(sql(format!(" {op} ")));
                parts.extend(arms[2].clone());
            }
            None => parts.extend(arms[1].clone()),
        }
        let stmt = self.order_all(parts, n);
        let all_variant = [Some(first_op), second_op]
            .iter()
            .flatten()
            .any(|op| matches!(*op, "INTERSECT ALL" | "EXCEPT ALL"));
        if all_variant {
            // SQLite has neither INTERSECT ALL nor EXCEPT ALL.
            stmt.without_sqlite()
        } else {
            stmt
        }
    }
}
