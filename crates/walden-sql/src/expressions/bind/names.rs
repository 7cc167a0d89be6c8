//! Names in expressions: columns and qualified columns, record fields and subscripts,
//! function names, a FROM item's refused options, and the names of result columns.

use sqlparser::ast::{self, Spanned};

use super::literals::coerce_literal;
use super::{unsupported_expression, Binder};
use crate::catalog::{ident_name, object_name};
use crate::depth;
use crate::error::{clip, code, SqlError, SqlResult};
use crate::expr::Expr;
use crate::functions::Func;
use crate::types::{declared_type, SqlType};

/// A function's name: `pg_catalog.` (where every function lives) and `public.` may
/// qualify it; `information_schema._pg_expandarray` is qualified.
pub fn function_name(name: &ast::ObjectName) -> SqlResult<String> {
    let parts: Vec<&ast::Ident> = name.0.iter().filter_map(|p| p.as_ident()).collect();
    match parts.as_slice() {
        [schema, id] if ident_name(schema) == "pg_catalog" => Ok(ident_name(id)),
        // information_schema's function (not on the search path: always qualified).
        [schema, id]
            if ident_name(schema) == "information_schema"
                && ident_name(id) == "_pg_expandarray" =>
        {
            Ok("information_schema._pg_expandarray".into())
        }
        _ => object_name(name),
    }
}

/// Refuses what a table reference in FROM may carry that Walden does not do, rather
/// than reading the whole table as if it were not there (`TABLESAMPLE SYSTEM (10)`
/// returning every row).
pub fn check_table_reference(t: &ast::TableFactor) -> SqlResult<()> {
    let ast::TableFactor::Table {
        name,
        sample,
        with_ordinality,
        version,
        partitions,
        with_hints,
        index_hints,
        json_path,
        ..
    } = t
    else {
        return Ok(());
    };
    let unsupported = [
        (sample.is_some(), "TABLESAMPLE"),
        (*with_ordinality, "WITH ORDINALITY"),
        (
            version.is_some(),
            "a table version (FOR SYSTEM_TIME, AT, BEFORE)",
        ),
        (!partitions.is_empty(), "PARTITION"),
        (
            !with_hints.is_empty() || !index_hints.is_empty(),
            "table hints",
        ),
        (json_path.is_some(), "a JSON path on a table"),
    ];
    match unsupported.iter().find(|(set, _)| *set) {
        Some((_, what)) => Err(SqlError::unsupported(what).at(name.span().start)),
        None => Ok(()),
    }
}

/// The name PostgreSQL gives a result column for an unaliased expression.
pub fn output_name(e: &ast::Expr) -> String {
    figure_name(e).0
}

/// A column name as PostgreSQL's FigureColname finds it, with how strongly the
/// expression gives it: 2 names it (a column, a function, EXISTS), 1 only types it (a
/// cast, a typed literal, CASE), 0 gives none (`?column?`). A cast of what names a
/// column weakly or not at all is named for the outermost cast's type, and CASE for its
/// ELSE where that names it.
fn figure_name(e: &ast::Expr) -> (String, u8) {
    use ast::Expr as A;
    let type_name = |dt: &ast::DataType| {
        declared_type(dt, false)
            .map(|d| d.ty.short_name().to_string())
            .unwrap_or_else(|_| "?column?".into())
    };
    // Parentheses and casts are looked through (in a loop: they may nest thousands of
    // levels deep).
    let mut inner = e;
    let mut outer_cast = None;
    let (name, strength) = loop {
        // A value a prepared statement's run wrote in for `$n`, which has no name.
        if crate::infer::is_written_in(inner) {
            break ("?column?".to_string(), 0);
        }
        match inner {
            A::Nested(x) => inner = x,
            A::Cast {
                expr, data_type, ..
            } => {
                outer_cast.get_or_insert(data_type);
                inner = expr;
            }
            _ => break name_of(inner, &type_name),
        }
    };
    match outer_cast {
        Some(data_type) if strength <= 1 => (type_name(data_type), 1),
        _ => (name, strength),
    }
}

/// The function SQL's TRIM is.
pub(super) fn trim_name(ends: crate::strings::Ends) -> &'static str {
    match ends {
        crate::strings::Ends::Both => "btrim",
        crate::strings::Ends::Leading => "ltrim",
        crate::strings::Ends::Trailing => "rtrim",
    }
}

/// [`figure_name`] of an expression other than parentheses and casts.
fn name_of(e: &ast::Expr, type_name: &dyn Fn(&ast::DataType) -> String) -> (String, u8) {
    use ast::Expr as A;
    let strong = |name: String| (name, 2);
    match e {
        A::Identifier(id) => strong(ident_name(id)),
        A::CompoundIdentifier(parts) => strong(parts.last().map(ident_name).unwrap_or_default()),
        A::Function(f) => strong(
            f.name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(ident_name)
                .unwrap_or_default(),
        ),
        A::Case { else_result, .. } => {
            let otherwise = else_result
                .as_deref()
                .map(|x| depth::recurse(|| figure_name(x)));
            match otherwise {
                Some((name, 2)) => strong(name),
                _ => ("case".into(), 1),
            }
        }
        A::Substring { .. } => strong("substr".into()),
        A::Trim { trim_where, .. } => strong(
            trim_name(match trim_where {
                Some(ast::TrimWhereField::Leading) => crate::strings::Ends::Leading,
                Some(ast::TrimWhereField::Trailing) => crate::strings::Ends::Trailing,
                _ => crate::strings::Ends::Both,
            })
            .into(),
        ),
        A::Position { .. } => strong("position".into()),
        // `(r).field` is named for the field; `a[i]` and `t.a[i]` for the array.
        A::CompoundFieldAccess { root, access_chain } => {
            match access_chain.iter().rev().find_map(|a| match a {
                ast::AccessExpr::Dot(ast::Expr::Identifier(id)) => Some(id),
                _ => None,
            }) {
                Some(id) => strong(ident_name(id)),
                None => depth::recurse(|| figure_name(root)),
            }
        }
        A::Extract { .. } => strong("extract".into()),
        A::Ceil { .. } => strong("ceil".into()),
        A::Floor { .. } => strong("floor".into()),
        A::AtTimeZone { .. } => strong("timezone".into()),
        A::Exists { .. } => strong("exists".into()),
        // A scalar subquery is named for its one column.
        A::Subquery(q) => match q.body.as_ref() {
            ast::SetExpr::Select(s) => match s.projection.first() {
                Some(ast::SelectItem::UnnamedExpr(x)) => {
                    strong(depth::recurse(|| figure_name(x)).0)
                }
                Some(ast::SelectItem::ExprWithAlias { alias, .. }) => strong(ident_name(alias)),
                _ => ("?column?".into(), 0),
            },
            _ => ("?column?".into(), 0),
        },
        A::TypedString(ts) => (type_name(&ts.data_type), 1),
        A::Interval(_) => ("interval".into(), 1),
        _ => ("?column?".into(), 0),
    }
}

impl Binder<'_> {
    /// A name: a column, qualified or not, a record's field or an array's element, or
    /// an expression with a COLLATE clause.
    pub(super) fn name(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        use ast::Expr as A;
        match e {
            A::Identifier(id) => self.column(None, id),
            A::CompoundIdentifier(parts) => match parts.as_slice() {
                [t, c] => self.column(Some(t), c),
                _ => Err(SqlError::unsupported(format!(
                    "the qualified name {}",
                    clip(&e.to_string())
                ))),
            },
            A::CompoundFieldAccess { root, access_chain } => self.access(root, access_chain),
            A::Collate { expr, collation } => self.collate(expr, collation),
            other => Err(unsupported_expression(other)),
        }
    }

    /// `x COLLATE name`: Walden compares text bytewise, which is what the collations
    /// named here are; psql writes `COLLATE pg_catalog.default` after its patterns.
    fn collate(&mut self, expr: &ast::Expr, collation: &ast::ObjectName) -> SqlResult<Expr> {
        let name = collation
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(ident_name)
            .unwrap_or_default();
        if !matches!(name.as_str(), "default" | "C" | "POSIX") {
            return Err(SqlError::unsupported(format!("the collation {collation}")));
        }
        self.bind(expr)
    }

    pub(super) fn column(&self, table: Option<&ast::Ident>, id: &ast::Ident) -> SqlResult<Expr> {
        let through_alias = |t: &ast::Ident| self.scope.join_alias(&ident_name(t)).is_some();
        if let Some((i, ty)) = self.scope.resolve(table, id)? {
            // A JOIN … USING alias's column is the merged one, as the plain name is.
            if table.is_none_or(through_alias) {
                return Ok(self.scope.column_expr(i));
            }
            return Ok(Expr::Column(i, ty));
        }
        if let Some(outer) = self.cx.and_then(|c| c.outer()) {
            if let Some(e) = outer.resolve(table, id)? {
                return Ok(e);
            }
        }
        let name = ident_name(id);
        match table {
            Some(t) if self.scope.relation(&ident_name(t)).is_none() && !through_alias(t) => {
                Err(SqlError::new(
                    code::UNDEFINED_TABLE,
                    format!("missing FROM-clause entry for table \"{}\"", ident_name(t)),
                )
                .at(t.span.start))
            }
            // PostgreSQL's errorMissingColumn: a qualified name as written, unquoted.
            Some(t) => Err(SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("column {}.{name} does not exist", ident_name(t)),
            )
            .at(t.span.start)),
            None => Err(SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("column \"{name}\" does not exist"),
            )
            .at(id.span.start)),
        }
    }

    /// `(record).name`: the field of that name of a record.
    pub(super) fn field(&self, record: Expr, name: &ast::Ident) -> SqlResult<Expr> {
        let field = ident_name(name);
        let SqlType::Record(shape) = record.ty() else {
            return Err(SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!(
                    "column notation .{field} applied to type {}, which is not a composite type",
                    record.ty().name()
                ),
            ));
        };
        let i = shape.field(&field).ok_or_else(|| {
            SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("could not identify column \"{field}\" in record data type"),
            )
        })?;
        Ok(Expr::Call(
            Func::Field(shape, i),
            vec![record],
            shape.fields()[i].1,
        ))
    }

    /// `root` followed by `.field`s and `[subscript]`s: a qualified column name's
    /// parts first, then each access in turn.
    fn access(&mut self, root: &ast::Expr, chain: &[ast::AccessExpr]) -> SqlResult<Expr> {
        // `t.col[i]` comes as `t` then `.col`: a column's qualified name.
        let (mut e, rest) = match (root, chain.first()) {
            (ast::Expr::Identifier(t), Some(ast::AccessExpr::Dot(ast::Expr::Identifier(c)))) => {
                (self.column(Some(t), c)?, &chain[1..])
            }
            _ => (self.bind(root)?, chain),
        };
        for a in rest {
            e = match a {
                ast::AccessExpr::Dot(ast::Expr::Identifier(f)) => self.field(e, f)?,
                ast::AccessExpr::Subscript(ast::Subscript::Index { index }) => {
                    let arr = coerce_literal(self.params, e, SqlType::Text)?;
                    let i = coerce_literal(self.params, self.bind(index)?, SqlType::Int4)?;
                    let types = [arr.ty(), i.ty()];
                    let ty = Func::ArrayElement.result_type("array subscript", &types)?;
                    Expr::Call(Func::ArrayElement, vec![arr, i], ty)
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "the expression {}",
                        clip(&other.to_string())
                    )))
                }
            };
        }
        Ok(e)
    }
}
