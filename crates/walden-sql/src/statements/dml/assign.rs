//! Column values as a table takes them: defaults, serial and identity columns,
//! assignment conversions and limits, NOT NULL, and `RowBuilder`, which makes a full row
//! from the target columns' values.

use sqlparser::ast::{self, Spanned};
use walden::{Column, Row, Schema, Transaction, Value};

use super::insert::keeps;
use super::returning::Returning;
use crate::bind::{coerce_literal, Binder};
use crate::catalog::Scope;
use crate::error::{clip, code, SqlError, SqlResult};
use crate::expr::Expr;
use crate::fkeys::enforce::Written;
use crate::guard::row_bytes;
use crate::statement::Ctx;
use crate::types::{DeclaredType, SqlType};
use crate::value;

/// Can a value of type `from` be assigned to `col`? (Numbers convert, anything becomes
/// text; text does not silently become a number; date, timestamp and timestamptz
/// convert to each other, as PostgreSQL's assignment casts do: `CURRENT_TIMESTAMP`
/// goes into a timestamp column.)
pub(super) fn check_assignable(
    from: SqlType,
    col: &Column,
    at: Option<sqlparser::tokenizer::Location>,
) -> SqlResult<()> {
    let to = SqlType::from_column(col.ty);
    let ok = from == to
        || from == SqlType::Null
        || to == SqlType::Text
        || (from.is_numeric() && to.is_numeric())
        || (from.is_datetime() && to.is_datetime());
    if ok {
        return Ok(());
    }
    let e = SqlError::new(
        code::DATATYPE_MISMATCH,
        format!(
            "column \"{}\" is of type {} but expression is of type {}",
            col.name,
            to.name(),
            from.name()
        ),
    )
    .with_hint("You will need to rewrite or cast the expression.");
    Err(match at {
        Some(l) => e.at(l),
        None => e,
    })
}

/// Binds a value expression for a column: literals take the column's type, and a
/// numeric converts to an integer column where its type is known (rounding halves away
/// from zero, where a float8 rounds them to even).
pub(super) fn bind_for_column(b: &mut Binder, e: &ast::Expr, col: &Column) -> SqlResult<Expr> {
    let to = SqlType::from_column(col.ty);
    let x = coerce_literal(b.params, b.bind(e)?, to).map_err(|err| err.at(e.span().start))?;
    check_assignable(x.ty(), col, Some(e.span().start))?;
    if x.ty() == SqlType::Numeric && to.is_integer() {
        return Ok(Expr::Cast(Box::new(x), DeclaredType::plain(to)));
    }
    Ok(x)
}

/// True for the keyword DEFAULT standing as a value (VALUES, UPDATE's SET).
pub(super) fn is_default(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(id)
        if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
}

/// A column's default bound for the column (its SQL text is parsed again: the catalog
/// keeps it as text); NULL for a column without one. A serial column's next value is
/// not an expression: callers fill it (`RowBuilder`).
pub(crate) fn column_default(col: &Column) -> SqlResult<Expr> {
    let Some(text) = &col.default else {
        return Ok(Expr::Const(Value::Null));
    };
    let parsed = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| {
            SqlError::new(
                code::DATA_CORRUPTED,
                format!(
                    "the stored default of column \"{}\" does not parse: {e}",
                    col.name
                ),
            )
        })?;
    bind_default(&parsed, col)
}

/// Binds a DEFAULT expression for `col`: no column may appear in it, nor a subquery.
pub(crate) fn bind_default(e: &ast::Expr, col: &Column) -> SqlResult<Expr> {
    let empty = Scope::default();
    bind_for_column(&mut Binder::plain(&empty), e, col).map_err(|err| {
        if err.code == code::UNDEFINED_COLUMN || err.code == code::UNDEFINED_TABLE {
            SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                "cannot use column reference in DEFAULT expression",
            )
        } else {
            err
        }
    })
}

/// The defaults of the columns a row is not given (`targets` are the ones it is):
/// those with a default, serial columns aside.
pub(super) fn defaults_for(schema: &Schema, targets: &[usize]) -> SqlResult<Vec<(usize, Expr)>> {
    let mut out = Vec::new();
    for (i, c) in schema.columns.iter().enumerate() {
        if c.default.is_some() && !targets.contains(&i) {
            out.push((i, column_default(c)?));
        }
    }
    Ok(out)
}

/// Checks the foreign keys of rows a statement inserted into `table` (COPY FROM's,
/// gathered over its batches).
pub(crate) fn check_inserted_keys(
    cx: &mut Ctx,
    t: &mut Transaction,
    table: &str,
    rows: Vec<Row>,
) -> SqlResult<()> {
    let mut w = Written::new(table);
    w.inserted = rows;
    crate::fkeys::enforce::after(cx, t, w)
}

pub(crate) fn assign(v: Value, col: &Column) -> SqlResult<Value> {
    let from = value::type_of(&v);
    assign_from(v, from, col)
}

/// The most bytes of text one value may hold when stored: 2^30 - 1, as PostgreSQL's 1 GB
/// (the engine stores long values out of line, `Schema::check`).
const MAX_STORED_TEXT_BYTES: usize = walden::schema::MAX_VALUE_BYTES;

/// Converts a value of SQL type `from` for storing in `col`.
pub(crate) fn assign_from(v: Value, from: SqlType, col: &Column) -> SqlResult<Value> {
    let v = value::cast_from(v, from, &DeclaredType::of_column(col), false)?;
    match &v {
        Value::Text(s) if s.len() > MAX_STORED_TEXT_BYTES => Err(too_long(s.len(), col)),
        _ => Ok(v),
    }
}

fn too_long(len: usize, col: &Column) -> SqlError {
    SqlError::new(
        code::PROGRAM_LIMIT,
        format!(
            "value of {len} bytes is too long for column \"{}\"",
            col.name
        ),
    )
    .with_hint(format!(
        "Walden stores at most {MAX_STORED_TEXT_BYTES} bytes of text in one value."
    ))
}

/// For each target column, the type of value it takes as it is, with no conversion
/// (`assign_from` would hand it back unchanged): a column with no length, precision or
/// blank padding.
pub(super) fn as_is(schema: &Schema, targets: &[usize]) -> Vec<Option<SqlType>> {
    targets
        .iter()
        .map(|&i| {
            let col = &schema.columns[i];
            let to = DeclaredType::of_column(col);
            (to.max_chars.is_none() && !to.blank_padded && to.ty != SqlType::Bpchar)
                .then_some(to.ty)
        })
        .collect()
}

pub(crate) fn row_text(row: &[Value]) -> String {
    let parts: Vec<String> = row
        .iter()
        .map(|v| match v {
            Value::Null => "null".to_string(),
            other => clip(&value::display(other)).into_owned(),
        })
        .collect();
    parts.join(", ")
}

/// NOT NULL, checked here so the error names the column as PostgreSQL does.
pub(crate) fn check_not_null(
    checks: &crate::checks::CheckCache,
    table: &str,
    schema: &Schema,
    row: &[Value],
) -> SqlResult<()> {
    for (c, v) in schema.columns.iter().zip(row) {
        if !c.nullable && matches!(v, Value::Null) {
            return Err(SqlError::new(
                code::NOT_NULL_VIOLATION,
                format!("null value in column \"{}\" of relation \"{table}\" violates not-null constraint", c.name),
            )
            .with_detail(format!("Failing row contains ({}).", row_text(row))));
        }
    }
    crate::checks::verify(checks, table, schema, row)
}

/// Builds a full row from the target columns' values: defaults (NULL, or the next serial
/// value), assignment conversions, NOT NULL.
pub(crate) struct RowBuilder<'a> {
    pub(super) table: &'a str,
    pub(super) schema: &'a Schema,
    pub(super) targets: &'a [usize],
    /// The SQL types of the values, where their representation does not show it (a
    /// numeric is held as a float8); empty when it does.
    pub(super) source_types: Vec<SqlType>,
    /// Columns not given that have a default, and the default.
    pub(super) defaults: Vec<(usize, Expr)>,
    /// For each target, the type of value its column takes as it is (no length,
    /// precision or padding to apply), if any: such a value skips the conversion.
    pub(super) as_is: Vec<Option<SqlType>>,
    pub(super) returning: Option<&'a Returning>,
    /// The RETURNING rows of the rows built so far.
    pub(super) returned: std::cell::RefCell<Vec<Vec<Value>>>,
    /// The rows built so far, kept when the table takes part in a foreign key.
    pub(super) kept: Option<std::cell::RefCell<Vec<Row>>>,
}

impl<'a> RowBuilder<'a> {
    /// A builder for rows whose `targets` the caller fills itself, already converted
    /// (COPY FROM): `complete` adds the rest. No RETURNING; the rows are kept for the
    /// table's foreign keys as an INSERT keeps them (`take_kept`).
    pub(crate) fn filled_by_caller(
        cx: &mut Ctx,
        table: &'a str,
        schema: &'a Schema,
        targets: &'a [usize],
    ) -> SqlResult<RowBuilder<'a>> {
        Ok(RowBuilder {
            table,
            schema,
            targets,
            source_types: Vec::new(),
            defaults: defaults_for(schema, targets)?,
            as_is: as_is(schema, targets),
            returning: None,
            returned: Default::default(),
            kept: keeps(cx, table)?,
        })
    }

    /// The rows built so far that the table's foreign keys need checked (none when it
    /// has none).
    pub(crate) fn take_kept(&mut self) -> Option<Vec<Row>> {
        self.kept.as_mut().map(|k| std::mem::take(k.get_mut()))
    }

    pub(super) fn build(
        &self,
        cx: &mut Ctx,
        values: impl IntoIterator<Item = Value>,
        row: &mut Vec<Value>,
    ) -> SqlResult<()> {
        let width = self.schema.columns.len();
        // Every column is set below when the targets are all of them (they are distinct).
        if row.len() != width || self.targets.len() != width {
            row.clear();
            row.resize(width, Value::Null);
        }
        for (k, (&i, v)) in self.targets.iter().zip(values).enumerate() {
            let from = self.source_types.get(k).copied();
            let as_is = self.as_is[k].filter(|&ty| {
                from != Some(SqlType::Bpchar)
                    && (matches!(v, Value::Null) || value::type_of(&v) == ty)
            });
            row[i] = match (as_is, v) {
                (Some(_), Value::Text(s)) if s.len() > MAX_STORED_TEXT_BYTES => {
                    return Err(too_long(s.len(), &self.schema.columns[i]))
                }
                (Some(_), v) => v,
                (None, v) => {
                    let from = from.unwrap_or_else(|| value::type_of(&v));
                    assign_from(v, from, &self.schema.columns[i])?
                }
            };
        }
        self.complete(cx, row)
    }

    /// Completes a row whose target columns are set: the other columns' defaults and
    /// serial values, then NOT NULL and CHECK; keeps it for RETURNING and foreign keys.
    pub(crate) fn complete(&self, cx: &mut Ctx, row: &mut [Value]) -> SqlResult<()> {
        for (i, e) in &self.defaults {
            let v = e.eval(&[], &mut cx.eval_ctx())?;
            row[*i] = assign(v, &self.schema.columns[*i])?;
        }
        check_not_null(cx.checks, self.table, self.schema, row)?;
        if let Some(r) = self.returning {
            let out = r.project(row, &mut cx.eval_ctx())?;
            cx.guard.charge(row_bytes(&out) + 24)?;
            self.returned.borrow_mut().push(out);
        }
        if let Some(k) = &self.kept {
            cx.guard.charge(row_bytes(row) + 24)?;
            k.borrow_mut().push(row.to_vec());
        }
        Ok(())
    }

    /// Checks the foreign keys of the rows built (and inserted), if it kept them.
    pub(super) fn after(self, cx: &mut Ctx, t: &mut Transaction) -> SqlResult<Vec<Vec<Value>>> {
        if let Some(k) = self.kept {
            let mut w = Written::new(self.table);
            w.inserted = k.into_inner();
            crate::fkeys::enforce::after(cx, t, w)?;
        }
        Ok(self.returned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use walden::{Column, ColumnType};

    use super::column_default;
    use crate::code;

    /// A default read back from the catalog is untrusted: text that does not parse, or
    /// names a column, is a clear error, never a panic.
    #[test]
    fn a_damaged_stored_default_is_an_error() {
        for text in ["1 +", "(select", "nope", "'x'"] {
            let col = Column {
                default: Some(text.into()),
                ..Column::new("a", ColumnType::Int4)
            };
            let e = column_default(&col).unwrap_err();
            assert!(
                [
                    code::DATA_CORRUPTED,
                    code::FEATURE_NOT_SUPPORTED,
                    code::INVALID_TEXT
                ]
                .contains(&e.code),
                "{text}: {e:?}"
            );
        }
        let col = Column {
            default: Some("2 * 3".into()),
            ..Column::new("a", ColumnType::Int4)
        };
        assert!(column_default(&col).is_ok());
    }
}
