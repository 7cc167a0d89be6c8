//! Set-returning functions in a select list (PostgreSQL's ProjectSet):
//! `select generate_series(1, n) from t`, `select (_pg_expandarray(indkey)).n from
//! pg_index`. Each input row gives as many output rows as its longest function gives,
//! the functions running in lockstep and a shorter one's columns NULL past its end, as
//! PostgreSQL 10 and later run them; a row for which every function gives nothing
//! gives no row.
//!
//! While a select list is bound, a call is collected ([`SetReturning`]) and stands in
//! as placeholder columns, renumbered once the list is bound to follow the input row;
//! the plan appends each row's function values to the row before the outputs are
//! computed from it.

use walden::Value;

use crate::error::{code, SqlError, SqlResult};
use crate::expr::{EvalCtx, Expr};
use crate::record::RecordShape;
use crate::types::SqlType;
use crate::value::as_i64;

/// What a call where none may stand says, until the clause is known
/// (`window::in_clause` names it).
pub const NOT_HERE: &str = "set-returning functions are not allowed here";

/// Column numbers from here on stand for set-returning function columns while a select
/// list is bound (between the aggregates' and the windows' placeholders).
pub const SRF_PLACEHOLDER: usize = usize::MAX / 8 * 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SrfFunc {
    /// generate_series(start, stop [, step]) over integers.
    GenerateSeries,
    /// information_schema._pg_expandarray(array): a row `(x, n)` per element, `x` the
    /// element, `n` its 1-based place.
    ExpandArray,
}

impl SrfFunc {
    /// The function of a (qualified) name as `bind::function_name` gives it.
    pub fn lookup(name: &str) -> Option<SrfFunc> {
        match name {
            "generate_series" => Some(SrfFunc::GenerateSeries),
            "information_schema._pg_expandarray" => Some(SrfFunc::ExpandArray),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SrfFunc::GenerateSeries => "generate_series",
            SrfFunc::ExpandArray => "_pg_expandarray",
        }
    }

    /// Checks the argument types; the columns each row has and the result's type (a
    /// record for a function of several columns).
    pub fn signature(self, args: &[SqlType]) -> SqlResult<(Vec<SqlType>, SqlType)> {
        let int = |t: &SqlType| t.is_integer() || *t == SqlType::Null;
        match (self, args) {
            (SrfFunc::GenerateSeries, [a, b] | [a, b, _]) if args.iter().all(int) => {
                let ty = if [a, b]
                    .iter()
                    .all(|t| matches!(t, SqlType::Int4 | SqlType::Int2))
                {
                    SqlType::Int4
                } else {
                    SqlType::Int8
                };
                Ok((vec![ty], ty))
            }
            (SrfFunc::ExpandArray, [a]) if a.is_text() || *a == SqlType::Null => {
                let shape = RecordShape::ExpandArray;
                let columns = shape.fields().iter().map(|(_, t)| *t).collect();
                Ok((columns, SqlType::Record(shape)))
            }
            _ => {
                let list: Vec<&str> = args.iter().map(|t| t.name()).collect();
                Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {}({}) does not exist", self.name(), list.join(", ")),
                )
                .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."))
            }
        }
    }
}

/// One call in a select list.
#[derive(Debug, Clone, PartialEq)]
pub struct SrfCall {
    pub func: SrfFunc,
    pub args: Vec<Expr>,
    /// The types of the columns each of its rows has.
    pub columns: Vec<SqlType>,
}

impl SrfCall {
    /// Its rows for the input row `row`.
    fn start(&self, row: &[Value], cx: &mut EvalCtx) -> SqlResult<Rows> {
        let mut args = Vec::with_capacity(self.args.len());
        for a in &self.args {
            args.push(a.eval(row, cx)?);
        }
        match self.func {
            SrfFunc::GenerateSeries => {
                // A NULL bound or step gives no rows, as in PostgreSQL.
                let Some(bounds) = args.iter().map(as_i64).collect::<Option<Vec<i64>>>() else {
                    return Ok(Rows::Done);
                };
                let step = bounds.get(2).copied().unwrap_or(1);
                if step == 0 {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER,
                        "step size cannot equal zero",
                    ));
                }
                Ok(Rows::Series {
                    next: bounds[0],
                    stop: bounds[1],
                    step,
                    ty: self.columns[0],
                })
            }
            SrfFunc::ExpandArray => match &args[0] {
                Value::Text(t) => Ok(Rows::Elements {
                    items: crate::array::parse(t)?.items.into_iter(),
                    n: 0,
                }),
                _ => Ok(Rows::Done),
            },
        }
    }
}

/// A call's rows for one input row, made as they are taken.
enum Rows {
    Series {
        next: i64,
        stop: i64,
        step: i64,
        ty: SqlType,
    },
    Elements {
        items: std::vec::IntoIter<Option<String>>,
        n: i32,
    },
    Done,
}

impl Rows {
    /// Appends the next row's columns to `out`; false (and nothing appended) when
    /// there are no more.
    fn next_into(&mut self, out: &mut Vec<Value>) -> bool {
        match self {
            Rows::Series {
                next,
                stop,
                step,
                ty,
            } => {
                let past = if *step > 0 {
                    *next > *stop
                } else {
                    *next < *stop
                };
                if past {
                    *self = Rows::Done;
                    return false;
                }
                out.push(match ty {
                    SqlType::Int4 => Value::Int4(*next as i32),
                    _ => Value::Int8(*next),
                });
                match next.checked_add(*step) {
                    Some(n) => *next = n,
                    None => *self = Rows::Done,
                }
                true
            }
            Rows::Elements { items, n } => match items.next() {
                Some(item) => {
                    *n += 1;
                    out.push(item.map_or(Value::Null, Value::Text));
                    out.push(Value::Int4(*n));
                    true
                }
                None => false,
            },
            Rows::Done => false,
        }
    }
}

/// The calls a select list makes, collected while it is bound.
#[derive(Debug, Default)]
pub struct SetReturning {
    pub calls: Vec<SrfCall>,
}

impl SetReturning {
    /// Adds a call (or finds the same one, which gives the same rows in lockstep): the
    /// placeholder column of its first column.
    pub fn add(&mut self, call: SrfCall) -> usize {
        let mut at = 0;
        for c in &self.calls {
            if *c == call {
                return SRF_PLACEHOLDER + at;
            }
            at += c.columns.len();
        }
        self.calls.push(call);
        SRF_PLACEHOLDER + at
    }
}

/// Gives `emit` each row that `row` makes: `row` followed by one row of each call,
/// until every call is done. Stops when `emit` returns false; so does the result.
pub fn expand(
    calls: &[SrfCall],
    row: &[Value],
    cx: &mut EvalCtx,
    emit: &mut dyn FnMut(&[Value], &mut EvalCtx) -> SqlResult<bool>,
) -> SqlResult<bool> {
    let mut running = Vec::with_capacity(calls.len());
    for c in calls {
        running.push(c.start(row, cx)?);
    }
    let width: usize = calls.iter().map(|c| c.columns.len()).sum();
    let mut out = Vec::with_capacity(row.len() + width);
    loop {
        if let Some(run) = cx.run {
            run.guard.check()?;
        }
        out.clear();
        out.extend_from_slice(row);
        let mut any = false;
        for (c, rows) in calls.iter().zip(&mut running) {
            if rows.next_into(&mut out) {
                any = true;
            } else {
                out.extend(std::iter::repeat_n(Value::Null, c.columns.len()));
            }
        }
        if !any {
            return Ok(true);
        }
        if !emit(&out, cx)? {
            return Ok(false);
        }
    }
}
