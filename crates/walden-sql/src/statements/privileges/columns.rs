//! Which columns of which relations a statement uses, and how (PostgreSQL's
//! `selectedCols`, `insertedCols` and `updatedCols` of each range table entry): what
//! column privileges are checked against when a role lacks a table-level privilege.
//!
//! Worked out from the syntax tree, name by name as PostgreSQL's parse analysis
//! resolves them: a column name belongs to the innermost FROM item that has a column
//! of that name (a qualified one to the item of that name or alias), `*` and `t.*` to
//! every column of the items they expand, a bare item name (a whole-row reference) to
//! all of its columns, ORDER BY's output names to nothing. It never misses a use:
//! where it cannot tell which item a name belongs to (a name qualified by something
//! that is no item, a USING or NATURAL join) it counts the name for every item at that
//! level that has such a column, so at worst a role is refused what PostgreSQL would
//! allow, never allowed what it would refuse. Names of WITH queries, subqueries in FROM
//! and table functions belong to no relation: the uses are counted where their queries
//! read the relations.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::ControlFlow;

use sqlparser::ast::{
    self, Expr, FromTable, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectName, Query,
    Select, SelectItem, SelectItemQualifiedWildcardKind, SetExpr, Statement, TableFactor,
    TableObject, TableWithJoins, Visit, Visitor,
};
use walden::Database;

use crate::catalog::{ident_name, object_name};

/// What a statement does with one relation's columns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Uses {
    pub select: BTreeSet<String>,
    pub insert: BTreeSet<String>,
    pub update: BTreeSet<String>,
    /// Referenced by a foreign key being made.
    pub references: BTreeSet<String>,
    /// The statement's target (INSERT, UPDATE, DELETE): SELECT is needed only for
    /// columns it reads; a relation only read needs SELECT on some column even when
    /// it reads none (`SELECT count(*) FROM t`).
    pub target: bool,
    /// Read as a FROM item (a target named again as a source needs SELECT on some
    /// column, as any relation read does).
    pub source: bool,
}

/// Each relation's uses, by the name the catalog knows it by.
pub type ColumnUses = HashMap<String, Uses>;

/// One FROM item at one level of a query.
#[derive(Debug, Clone)]
struct Item {
    /// The name references qualify it with (its alias, or its name).
    alias: String,
    /// The relation it is, when it is a table or a view of the database.
    relation: Option<String>,
    /// Its columns as references name them, each with the relation's column it is;
    /// None when not known (a table function, a catalog relation).
    columns: Option<Vec<(String, String)>>,
}

impl Item {
    fn column(&self, name: &str) -> Option<&str> {
        self.columns
            .as_ref()?
            .iter()
            .find(|(r, _)| r == name)
            .map(|(_, c)| c.as_str())
    }

    fn has(&self, name: &str) -> bool {
        self.columns
            .as_ref()
            .is_some_and(|cs| cs.iter().any(|(r, _)| r == name))
    }
}

/// The column uses of a statement.
pub fn column_uses(db: &Database, stmt: &Statement) -> ColumnUses {
    let mut v = Walker {
        db,
        levels: Vec::new(),
        ctes: Vec::new(),
        pending_ctes: Vec::new(),
        bodies: Vec::new(),
        order_aliases: Vec::new(),
        uses: HashMap::new(),
    };
    match stmt {
        Statement::Insert(ins) => v.insert(ins),
        Statement::Update(u) => {
            let mut level = Vec::new();
            v.items_of(&u.table, &mut level);
            if let Some(
                ast::UpdateTableFromKind::BeforeSet(f) | ast::UpdateTableFromKind::AfterSet(f),
            ) = &u.from
            {
                for t in f {
                    v.items_of(t, &mut level);
                }
            }
            let target = level.first().and_then(|i| i.relation.clone());
            v.sources(&level[1.min(level.len())..]);
            if let Some(t) = &target {
                let uses = v.uses.entry(t.clone()).or_default();
                uses.target = true;
                for a in &u.assignments {
                    for c in assignment_columns(&a.target) {
                        uses.update.insert(c);
                    }
                }
            }
            v.levels.push(level);
            // RETURNING * shows the FROM items' columns too.
            if let Some(ret) = &u.returning {
                v.wildcards(ret, None);
            }
            let _ = stmt.visit(&mut v);
        }
        Statement::Delete(d) => {
            let tables = match &d.from {
                FromTable::WithFromKeyword(v) | FromTable::WithoutKeyword(v) => v,
            };
            let mut level = Vec::new();
            for t in tables.iter().chain(d.using.iter().flatten()) {
                v.items_of(t, &mut level);
            }
            let target = level.first().and_then(|i| i.relation.clone());
            v.sources(&level[1.min(level.len())..]);
            if let Some(t) = &target {
                v.uses.entry(t.clone()).or_default().target = true;
            }
            v.levels.push(level);
            if let Some(ret) = &d.returning {
                v.wildcards(ret, None);
            }
            let _ = stmt.visit(&mut v);
        }
        Statement::Explain { statement, .. } => return column_uses(db, statement),
        _ => {
            let _ = stmt.visit(&mut v);
        }
    }
    v.uses
}

/// A dotted name's parts, each as the catalog spells it.
fn name_parts(n: &ObjectName) -> Vec<String> {
    n.0.iter()
        .filter_map(|p| p.as_ident())
        .map(ident_name)
        .collect()
}

fn assignment_columns(t: &ast::AssignmentTarget) -> Vec<String> {
    let names: Vec<&ObjectName> = match t {
        ast::AssignmentTarget::ColumnName(n) => vec![n],
        ast::AssignmentTarget::Tuple(ns) => ns.iter().collect(),
    };
    names
        .into_iter()
        // The last part: `SET t.c = …` is the column c to Walden's executor.
        .filter_map(|n| n.0.last().and_then(|p| p.as_ident()).map(ident_name))
        .collect()
}

struct Walker<'a> {
    db: &'a Database,
    /// The FROM items of each query level, innermost last.
    levels: Vec<Vec<Item>>,
    /// WITH queries in scope: name → output columns (None: not known).
    ctes: Vec<HashMap<String, Option<Vec<String>>>>,
    /// For each query being walked: its WITH queries not walked yet (not in scope).
    #[allow(clippy::type_complexity)]
    pending_ctes: Vec<Vec<(*const Query, String, Option<Vec<String>>)>>,
    /// For each query being walked: its body's SELECT, whose level stays until the
    /// query's ORDER BY has been walked.
    bodies: Vec<Option<*const Select>>,
    /// For each query being walked: its ORDER BY expressions that are output names.
    order_aliases: Vec<HashSet<*const Expr>>,
    uses: ColumnUses,
}

impl Walker<'_> {
    fn uses_of(&mut self, relation: &str) -> &mut Uses {
        self.uses.entry(relation.to_string()).or_default()
    }

    /// FROM items read: their relations are sources.
    fn sources(&mut self, items: &[Item]) {
        for i in items {
            if let Some(rel) = &i.relation {
                self.uses_of(rel).source = true;
            }
        }
    }

    fn select_column(&mut self, item: &Item, column: &str) {
        if let (Some(rel), Some(c)) = (&item.relation, item.column(column)) {
            let c = c.to_string();
            self.uses_of(rel).select.insert(c);
        }
    }

    fn select_all(&mut self, item: &Item) {
        if let (Some(rel), Some(cols)) = (&item.relation, &item.columns) {
            let cols: Vec<String> = cols.iter().map(|(_, c)| c.clone()).collect();
            self.uses_of(rel).select.extend(cols);
        }
    }

    /// The columns of a table or view of the database, as (name, name).
    fn relation_columns(&self, name: &str) -> Option<Vec<(String, String)>> {
        let names: Vec<String> = if let Ok(schema) = self.db.schema(name) {
            schema.columns.iter().map(|c| c.name.clone()).collect()
        } else {
            self.db.view(name)?.columns
        };
        Some(names.into_iter().map(|n| (n.clone(), n)).collect())
    }

    fn cte(&self, name: &str) -> Option<Option<Vec<String>>> {
        self.ctes.iter().rev().find_map(|m| m.get(name).cloned())
    }

    /// The items a FROM entry brings (a join: each side's).
    fn items_of(&self, t: &TableWithJoins, out: &mut Vec<Item>) {
        self.factor_items(&t.relation, out);
        for j in &t.joins {
            self.factor_items(&j.relation, out);
        }
    }

    fn factor_items(&self, f: &TableFactor, out: &mut Vec<Item>) {
        let renamed = |mut cols: Option<Vec<(String, String)>>, alias: &Option<ast::TableAlias>| {
            if let (Some(cols), Some(a)) = (&mut cols, alias) {
                for (c, new) in cols.iter_mut().zip(&a.columns) {
                    c.0 = ident_name(&new.name);
                }
            }
            cols
        };
        match f {
            TableFactor::Table {
                name, alias, args, ..
            } => {
                let Ok(rel) = object_name(name) else {
                    out.push(Item {
                        alias: name.to_string(),
                        relation: None,
                        columns: None,
                    });
                    return;
                };
                let alias_name = alias
                    .as_ref()
                    .map_or_else(|| rel.clone(), |a| ident_name(&a.name));
                let single = name.0.len() == 1;
                if single && args.is_none() {
                    if let Some(cols) = self.cte(&rel) {
                        let cols = cols.map(|c| c.into_iter().map(|n| (n.clone(), n)).collect());
                        out.push(Item {
                            alias: alias_name,
                            relation: None,
                            columns: renamed(cols, alias),
                        });
                        return;
                    }
                }
                let columns = if args.is_none() {
                    self.relation_columns(&rel)
                } else {
                    None
                };
                out.push(Item {
                    alias: alias_name,
                    relation: columns.is_some().then_some(rel),
                    columns: renamed(columns, alias),
                });
            }
            TableFactor::Derived {
                subquery, alias, ..
            } => {
                let cols = self
                    .output_names(subquery)
                    .map(|c| c.into_iter().map(|n| (n.clone(), n)).collect());
                out.push(Item {
                    alias: alias
                        .as_ref()
                        .map_or_else(String::new, |a| ident_name(&a.name)),
                    relation: None,
                    columns: renamed(cols, alias),
                });
            }
            TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => {
                self.items_of(table_with_joins, out);
                if let Some(a) = alias {
                    // The join's alias names no relation: references through it
                    // fall back to every item with the column (see `qualified`).
                    out.push(Item {
                        alias: ident_name(&a.name),
                        relation: None,
                        columns: Some(Vec::new()),
                    });
                }
            }
            other => {
                let alias = match other {
                    TableFactor::Function { alias, .. }
                    | TableFactor::TableFunction { alias, .. }
                    | TableFactor::UNNEST { alias, .. }
                    | TableFactor::JsonTable { alias, .. } => alias.as_ref(),
                    _ => None,
                };
                out.push(Item {
                    alias: alias.map_or_else(String::new, |a| ident_name(&a.name)),
                    relation: None,
                    columns: None,
                });
            }
        }
    }

    /// A query's output column names, as far as the syntax tells them.
    fn output_names(&self, q: &Query) -> Option<Vec<String>> {
        let mut body = &*q.body;
        loop {
            match body {
                SetExpr::SetOperation { left, .. } => body = left,
                SetExpr::Query(q) => body = &q.body,
                _ => break,
            }
        }
        let SetExpr::Select(s) = body else {
            return None;
        };
        let mut level = Vec::new();
        for t in &s.from {
            self.items_of(t, &mut level);
        }
        let mut out = Vec::new();
        for p in &s.projection {
            match p {
                SelectItem::UnnamedExpr(e) => out.push(match e {
                    Expr::Identifier(i) => ident_name(i),
                    Expr::CompoundIdentifier(is) => is.last().map(ident_name).unwrap_or_default(),
                    Expr::Function(f) => f.name.to_string().to_lowercase(),
                    _ => "?column?".to_string(),
                }),
                SelectItem::ExprWithAlias { alias, .. } => out.push(ident_name(alias)),
                SelectItem::ExprWithAliases { aliases, .. } => {
                    out.extend(aliases.iter().map(ident_name))
                }
                SelectItem::Wildcard(_) => {
                    for i in &level {
                        out.extend(i.columns.as_ref()?.iter().map(|(r, _)| r.clone()));
                    }
                }
                SelectItem::QualifiedWildcard(
                    SelectItemQualifiedWildcardKind::ObjectName(n),
                    _,
                ) => {
                    let q = n.0.last().and_then(|p| p.as_ident()).map(ident_name);
                    for i in level.iter().filter(|i| Some(&i.alias) == q.as_ref()) {
                        out.extend(i.columns.as_ref()?.iter().map(|(r, _)| r.clone()));
                    }
                }
                SelectItem::QualifiedWildcard(..) => return None,
            }
        }
        Some(out)
    }

    /// `*` and `t.*` of a select list (or RETURNING, `target` its relation).
    fn wildcards(&mut self, items: &[SelectItem], target: Option<&str>) {
        for p in items {
            match p {
                SelectItem::Wildcard(_) => {
                    let level = self.levels.last().cloned().unwrap_or_default();
                    for i in level
                        .iter()
                        .filter(|i| target.is_none() || i.relation.as_deref() == target)
                    {
                        self.select_all(i);
                    }
                }
                SelectItem::QualifiedWildcard(
                    SelectItemQualifiedWildcardKind::ObjectName(n),
                    _,
                ) => {
                    let parts = name_parts(n);
                    self.whole_row(&parts);
                }
                SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::Expr(_), _) => {
                    // `(expr).*`: the expression's own names are walked.
                }
                _ => {}
            }
        }
    }

    /// A reference to a whole row (`t.*`, or a bare item name `t`): every column of
    /// the item it names, the innermost of that name; true when one was found.
    fn whole_row(&mut self, parts: &[String]) -> bool {
        let Some(name) = parts.last() else {
            return false;
        };
        let found = self
            .levels
            .iter()
            .rev()
            .find_map(|l| l.iter().find(|i| &i.alias == name).cloned());
        match found {
            Some(i) => {
                self.select_all(&i);
                true
            }
            None => false,
        }
    }

    /// An unqualified column name: the innermost level with an item that has it; every
    /// such item of that level (more than one: a USING column, or an error the
    /// statement gets anyway). A name no item has may be a whole row.
    fn unqualified(&mut self, name: &str) {
        let level = self
            .levels
            .iter()
            .rev()
            .find(|l| l.iter().any(|i| i.has(name)))
            .cloned();
        match level {
            Some(l) => {
                for i in l.iter().filter(|i| i.has(name)) {
                    self.select_column(i, name);
                }
            }
            None => {
                self.whole_row(&[name.to_string()]);
            }
        }
    }

    /// `q.c` (or `schema.q.c`, or `q.c.field`): the column of the innermost item named
    /// q; when there is none (or it is a join's alias), each part as a column name.
    fn qualified(&mut self, parts: &[String]) {
        let n = parts.len();
        for (q, c) in [(n - 2, n - 1), (0, 1)] {
            let found = self
                .levels
                .iter()
                .rev()
                .find_map(|l| l.iter().find(|i| i.alias == parts[q]).cloned());
            let Some(i) = found else {
                continue;
            };
            match &i.columns {
                // Columns not known (a table function, VALUES, a catalog relation):
                // which item the name is of cannot be told.
                None => break,
                // A join's alias.
                Some(cs) if cs.is_empty() => break,
                Some(_) if i.has(&parts[c]) => {
                    self.select_column(&i, &parts[c]);
                    return;
                }
                Some(_) => {}
            }
        }
        for p in parts {
            self.unqualified(p);
        }
    }

    /// `TABLE t` (a query body that reads every column).
    fn table_commands(&mut self, body: &SetExpr) {
        match body {
            SetExpr::Table(t) => {
                if let Some(name) = &t.table_name {
                    let rel = name.to_lowercase();
                    let item = Item {
                        alias: rel.clone(),
                        relation: Some(rel.clone()),
                        columns: self.relation_columns(&rel),
                    };
                    self.select_all(&item);
                }
            }
            SetExpr::SetOperation { left, right, .. } => {
                self.table_commands(left);
                self.table_commands(right);
            }
            _ => {}
        }
    }

    fn insert(&mut self, ins: &ast::Insert) {
        let TableObject::TableName(name) = &ins.table else {
            let _ = ins.visit(self);
            return;
        };
        let Ok(rel) = object_name(name) else {
            return;
        };
        let Some(cols) = self.relation_columns(&rel) else {
            let _ = ins.visit(self);
            return;
        };
        let alias = ins
            .table_alias
            .as_ref()
            .map_or_else(|| rel.clone(), |a| ident_name(&a.alias));
        // The columns given values: those listed, or as many of the table's first
        // columns as the source gives (all when that cannot be told).
        let inserted: Vec<String> = if !ins.columns.is_empty() {
            ins.columns
                .iter()
                .filter_map(|n| n.0.first().and_then(|p| p.as_ident()).map(ident_name))
                .collect()
        } else {
            let width = ins.source.as_ref().and_then(|q| match &*q.body {
                SetExpr::Values(v) => v.rows.iter().map(|r| r.len()).max(),
                _ => self.output_names(q).map(|o| o.len()),
            });
            match (&ins.source, width) {
                (None, _) => Vec::new(),
                (Some(_), Some(w)) => cols.iter().take(w).map(|(_, c)| c.clone()).collect(),
                (Some(_), None) => cols.iter().map(|(_, c)| c.clone()).collect(),
            }
        };
        let uses = self.uses_of(&rel);
        uses.target = true;
        uses.insert.extend(inserted);
        if let Some(ast::OnInsert::OnConflict(on)) = &ins.on {
            if let Some(ast::ConflictTarget::Columns(cs)) = &on.conflict_target {
                let cs: Vec<String> = cs.iter().map(ident_name).collect();
                self.uses_of(&rel).select.extend(cs);
            }
            if let ast::OnConflictAction::DoUpdate(up) = &on.action {
                for a in &up.assignments {
                    let cs = assignment_columns(&a.target);
                    self.uses_of(&rel).update.extend(cs);
                }
            }
        }
        self.levels.push(vec![
            Item {
                alias,
                relation: Some(rel.clone()),
                columns: Some(cols.clone()),
            },
            // EXCLUDED's columns are the target's, read with its SELECT privilege (as
            // PostgreSQL has it since CVE-2017-15099).
            Item {
                alias: "excluded".to_string(),
                relation: Some(rel.clone()),
                columns: Some(cols.clone()),
            },
        ]);
        if let Some(ret) = &ins.returning {
            self.wildcards(ret, Some(&rel));
        }
        let _ = ins.visit(self);
    }
}

impl Visitor for Walker<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        // A WITH query's name is in scope for the queries after it and the body (and
        // in its own body only when RECURSIVE): inside its own, or an earlier one's,
        // a relation of that name is the relation.
        let mut ctes = HashMap::new();
        let mut pending = Vec::new();
        if let Some(with) = &q.with {
            for c in &with.cte_tables {
                let mut cols = self.output_names(&c.query);
                if !c.alias.columns.is_empty() {
                    cols = Some(
                        c.alias
                            .columns
                            .iter()
                            .map(|a| ident_name(&a.name))
                            .collect(),
                    );
                }
                let name = ident_name(&c.alias.name);
                if with.recursive {
                    ctes.insert(name, cols);
                } else {
                    pending.push((&*c.query as *const Query, name, cols));
                }
            }
        }
        self.ctes.push(ctes);
        self.pending_ctes.push(pending);
        self.table_commands(&q.body);
        let body = match &*q.body {
            SetExpr::Select(s) => Some(&**s as *const Select),
            _ => None,
        };
        self.bodies.push(body);
        // ORDER BY names of output columns refer to them, not to the FROM items.
        let mut aliases = HashSet::new();
        if let (SetExpr::Select(s), Some(ob)) = (&*q.body, &q.order_by) {
            // An output name refers to the output when one output has it (two are
            // the FROM column's, when there is one); only aliases and plain columns
            // are counted as sure.
            let mut outputs: HashMap<String, usize> = HashMap::new();
            let mut star = false;
            for p in &s.projection {
                let name = match p {
                    SelectItem::ExprWithAlias { alias, .. } => ident_name(alias),
                    SelectItem::UnnamedExpr(Expr::Identifier(i)) => ident_name(i),
                    SelectItem::UnnamedExpr(Expr::CompoundIdentifier(is)) => {
                        is.last().map(ident_name).unwrap_or_default()
                    }
                    // `*` names columns too, and an expression may be named as the
                    // column or function it holds: a name may then be one of two
                    // outputs, which the executor reads as the FROM items' column.
                    _ => {
                        star = true;
                        continue;
                    }
                };
                *outputs.entry(name).or_default() += 1;
            }
            if star {
                outputs.clear();
            }
            if let ast::OrderByKind::Expressions(es) = &ob.kind {
                for e in es {
                    if let Expr::Identifier(i) = &e.expr {
                        let name = ident_name(i);
                        if outputs.get(&name) == Some(&1) {
                            aliases.insert(&e.expr as *const Expr);
                        }
                    }
                }
            }
        }
        self.order_aliases.push(aliases);
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        self.ctes.pop();
        self.pending_ctes.pop();
        self.order_aliases.pop();
        if let Some(Some(_)) = self.bodies.pop() {
            self.levels.pop();
        }
        // A WITH query walked: its name comes into scope for what follows it.
        let me = q as *const Query;
        if let Some(pending) = self.pending_ctes.last_mut() {
            if let Some(at) = pending.iter().position(|(p, _, _)| *p == me) {
                let (_, name, cols) = pending.remove(at);
                if let Some(frame) = self.ctes.last_mut() {
                    frame.insert(name, cols);
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, s: &Select) -> ControlFlow<()> {
        let mut level = Vec::new();
        for t in &s.from {
            self.items_of(t, &mut level);
        }
        self.levels.push(level.clone());
        self.sources(&level);
        self.wildcards(&s.projection, None);
        // USING and NATURAL join columns: each item that has them.
        let mut joined: Vec<String> = Vec::new();
        for t in &s.from {
            for j in &t.joins {
                let c = match &j.join_operator {
                    ast::JoinOperator::Join(c)
                    | ast::JoinOperator::Inner(c)
                    | ast::JoinOperator::Left(c)
                    | ast::JoinOperator::LeftOuter(c)
                    | ast::JoinOperator::Right(c)
                    | ast::JoinOperator::RightOuter(c)
                    | ast::JoinOperator::FullOuter(c) => Some(c),
                    _ => None,
                };
                match c {
                    Some(ast::JoinConstraint::Using(names)) => joined.extend(
                        names
                            .iter()
                            .filter_map(|n| n.0.last().and_then(|p| p.as_ident()).map(ident_name)),
                    ),
                    Some(ast::JoinConstraint::Natural) => {
                        let mut seen: HashMap<String, usize> = HashMap::new();
                        for i in &level {
                            for (r, _) in i.columns.iter().flatten() {
                                *seen.entry(r.clone()).or_default() += 1;
                            }
                        }
                        joined.extend(seen.into_iter().filter(|(_, n)| *n > 1).map(|(c, _)| c));
                    }
                    _ => {}
                }
            }
        }
        for c in joined {
            for i in level.iter().filter(|i| i.has(&c)) {
                self.select_column(i, &c);
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_select(&mut self, s: &Select) -> ControlFlow<()> {
        // The body of the query being walked keeps its level for ORDER BY.
        let body = self.bodies.last().copied().flatten();
        if body != Some(s as *const Select) {
            self.levels.pop();
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        match e {
            Expr::Identifier(i) => {
                let skip = self
                    .order_aliases
                    .last()
                    .is_some_and(|a| a.contains(&(e as *const Expr)));
                if !skip {
                    self.unqualified(&ident_name(i));
                }
            }
            Expr::CompoundIdentifier(is) => {
                let parts: Vec<String> = is.iter().map(ident_name).collect();
                if parts.len() >= 2 {
                    self.qualified(&parts);
                }
            }
            Expr::QualifiedWildcard(n, _) => {
                let parts = name_parts(n);
                self.whole_row(&parts);
            }
            Expr::Function(f) => {
                if let FunctionArguments::List(list) = &f.args {
                    for a in &list.args {
                        let arg = match a {
                            FunctionArg::Named { arg, .. }
                            | FunctionArg::ExprNamed { arg, .. }
                            | FunctionArg::Unnamed(arg) => arg,
                        };
                        if let FunctionArgExpr::QualifiedWildcard(n) = arg {
                            let parts = name_parts(n);
                            self.whole_row(&parts);
                        }
                    }
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}
