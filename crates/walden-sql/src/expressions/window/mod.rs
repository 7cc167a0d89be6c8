//! Window functions: calls with OVER, bound over the rows a SELECT block hands on after
//! its grouping and HAVING (`Binder::window`), and computed over all those rows at once
//! (`compute`): the rows are sorted by each window's PARTITION BY and ORDER BY, peers
//! (rows equal in ORDER BY) are found, and each row's frame is cut from its partition.
//!
//! What PostgreSQL 15 offers is here except: RANGE frames with an interval offset over
//! a date or time, EXCLUDE,
//! IGNORE NULLS; and DISTINCT and ORDER BY in a window aggregate, FILTER on a window
//! function that is not an aggregate (PostgreSQL refuses those too).

mod bind;

use std::cmp::Ordering;

use sqlparser::ast::{self, NamedWindowExpr, WindowType};
use walden::Value;

use crate::aggregate::Acc;
use crate::bind::AggCall;
use crate::error::{code, SqlError, SqlResult};
use crate::expr::{EvalCtx, Expr};
use crate::guard::{row_bytes, Guard};
use crate::sort_key::{compare_keys, key_bytes};
use crate::types::SqlType;
use crate::value::{as_f64, as_i64};

/// Column numbers from here on stand for window call `n - WINDOW_PLACEHOLDER` while a
/// SELECT block is bound; the block renumbers them to follow the row they are computed
/// over (see `SelectPlan::bind_block`). Above the aggregates' placeholders.
pub const WINDOW_PLACEHOLDER: usize = usize::MAX / 4 * 3;

#[derive(Debug, Clone, PartialEq)]
pub enum WindowFunc {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    Ntile,
    Lag,
    Lead,
    FirstValue,
    LastValue,
    NthValue,
    /// An aggregate over the frame.
    Agg(Box<AggCall>),
}

/// One end of a frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    UnboundedPreceding,
    Preceding(u64),
    CurrentRow,
    Following(u64),
    UnboundedFollowing,
}

/// The rows of its partition a row's aggregate (or first/last/nth_value) sees. RANGE
/// (not `rows`) counts CURRENT ROW as the row and its peers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    pub rows: bool,
    /// GROUPS: offsets count peer groups (CURRENT ROW is the row's peers, as in RANGE).
    pub groups: bool,
    /// RANGE with an offset: the start's and end's offsets from the row's ORDER BY
    /// value (the bounds say PRECEDING or FOLLOWING).
    pub range_offsets: (f64, f64),
    pub start: Bound,
    pub end: Bound,
}

impl Frame {
    /// True for a RANGE frame with an offset PRECEDING or FOLLOWING.
    pub fn range_offset(&self) -> bool {
        let offset = |b: Bound| matches!(b, Bound::Preceding(_) | Bound::Following(_));
        !self.rows && !self.groups && (offset(self.start) || offset(self.end))
    }
}

/// PARTITION BY and ORDER BY (each key descending, NULLs first) of a window.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowSpec {
    pub partition: Vec<Expr>,
    pub order: Vec<(Expr, bool, bool)>,
}

/// A window function call; its expressions read the row the windows are computed over.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowCall {
    pub func: WindowFunc,
    pub args: Vec<Expr>,
    pub spec: WindowSpec,
    pub frame: Frame,
    pub ty: SqlType,
}

impl WindowCall {
    /// The call with its parameters (or outer values) filled in.
    pub(crate) fn filled(&self, values: &[Value], outer: bool) -> SqlResult<WindowCall> {
        let fill = |e: &Expr| e.clone().filled(values, outer);
        let func = match &self.func {
            WindowFunc::Agg(a) => WindowFunc::Agg(Box::new(a.filled(values, outer)?)),
            f => f.clone(),
        };
        Ok(WindowCall {
            func,
            args: self.args.iter().map(fill).collect::<SqlResult<_>>()?,
            spec: WindowSpec {
                partition: self
                    .spec
                    .partition
                    .iter()
                    .map(fill)
                    .collect::<SqlResult<_>>()?,
                order: self
                    .spec
                    .order
                    .iter()
                    .map(|(e, d, n)| Ok((fill(e)?, *d, *n)))
                    .collect::<SqlResult<_>>()?,
            },
            frame: self.frame,
            ty: self.ty,
        })
    }

    /// The expressions of the call, for the visitors of a plan.
    pub(crate) fn exprs(&self) -> Vec<&Expr> {
        let mut out: Vec<&Expr> = self.args.iter().collect();
        if let WindowFunc::Agg(a) = &self.func {
            out.extend(a.arg.iter());
            out.extend(a.extra.iter());
        }
        out.extend(self.spec.partition.iter());
        out.extend(self.spec.order.iter().map(|(e, _, _)| e));
        out
    }
}

/// The window calls of one SELECT block, found as it is bound, and its WINDOW clause.
#[derive(Debug, Default)]
pub struct Windows {
    pub calls: Vec<WindowCall>,
    named: Vec<ast::NamedWindowDefinition>,
}

impl Windows {
    pub fn new(named: &[ast::NamedWindowDefinition]) -> SqlResult<Windows> {
        for (i, w) in named.iter().enumerate() {
            if named[..i].iter().any(|o| o.0.value == w.0.value) {
                return Err(SqlError::new(
                    code::WINDOWING_ERROR,
                    format!("window \"{}\" is already defined", w.0.value),
                ));
            }
        }
        Ok(Windows {
            calls: Vec::new(),
            named: named.to_vec(),
        })
    }

    fn named(&self, name: &ast::Ident) -> SqlResult<ast::WindowSpec> {
        let def = self.named.iter().find(|d| d.0.value == name.value);
        match def.map(|d| &d.1) {
            Some(NamedWindowExpr::WindowSpec(spec)) => Ok(spec.clone()),
            Some(NamedWindowExpr::NamedWindow(other)) => self.named(other),
            None => Err(SqlError::new(
                code::UNDEFINED_OBJECT,
                format!("window \"{}\" does not exist", name.value),
            )
            .at(name.span.start)),
        }
    }

    /// The window an OVER clause names or writes: `OVER w`, `OVER (w ORDER BY ...)`
    /// (w's PARTITION BY with an ORDER BY of its own), or `OVER (...)`.
    fn resolve(&self, over: &WindowType) -> SqlResult<ast::WindowSpec> {
        let spec = match over {
            WindowType::NamedWindow(name) => return self.named(name),
            WindowType::WindowSpec(spec) => spec,
        };
        let Some(base_name) = &spec.window_name else {
            return Ok(spec.clone());
        };
        let base = self.named(base_name)?;
        let refuse = |what: &str| {
            Err(SqlError::new(
                code::WINDOWING_ERROR,
                format!("{what} of window \"{}\"", base_name.value),
            ))
        };
        if !spec.partition_by.is_empty() {
            return refuse("cannot override PARTITION BY clause");
        }
        if !base.order_by.is_empty() && !spec.order_by.is_empty() {
            return refuse("cannot override ORDER BY clause");
        }
        if base.window_frame.is_some() {
            return Err(SqlError::new(
                code::WINDOWING_ERROR,
                format!(
                    "cannot copy window \"{}\" because it has a frame clause",
                    base_name.value
                ),
            ));
        }
        Ok(ast::WindowSpec {
            window_name: None,
            partition_by: base.partition_by,
            order_by: if spec.order_by.is_empty() {
                base.order_by
            } else {
                spec.order_by.clone()
            },
            window_frame: spec.window_frame.clone(),
        })
    }
}

/// The functions that exist only with OVER, by name.
fn window_func(name: &str) -> Option<WindowFunc> {
    Some(match name {
        "row_number" => WindowFunc::RowNumber,
        "rank" => WindowFunc::Rank,
        "dense_rank" => WindowFunc::DenseRank,
        "percent_rank" => WindowFunc::PercentRank,
        "cume_dist" => WindowFunc::CumeDist,
        "ntile" => WindowFunc::Ntile,
        "lag" => WindowFunc::Lag,
        "lead" => WindowFunc::Lead,
        "first_value" => WindowFunc::FirstValue,
        "last_value" => WindowFunc::LastValue,
        "nth_value" => WindowFunc::NthValue,
        _ => return None,
    })
}

/// True for the functions that exist only with OVER.
pub fn is_window_function(name: &str) -> bool {
    window_func(name).is_some()
}

fn windowing(message: impl Into<String>) -> SqlError {
    SqlError::new(code::WINDOWING_ERROR, message)
}

/// What a window call where none may stand says, until the clause is known.
const NOT_HERE: &str = "window functions are not allowed here";

fn is_not_here(e: &SqlError) -> bool {
    e.code == code::WINDOWING_ERROR && e.message == NOT_HERE
}

/// A window call or a set-returning function refused in `clause` (WHERE, HAVING,
/// GROUP BY, JOIN/ON), named as PostgreSQL names it; other errors as they are.
pub(crate) fn in_clause(mut e: SqlError, clause: &str) -> SqlError {
    let clause = if clause == "JOIN/ON" {
        "JOIN conditions"
    } else {
        clause
    };
    if is_not_here(&e) {
        e.message = format!("window functions are not allowed in {clause}");
    } else if e.code == code::FEATURE_NOT_SUPPORTED && e.message == crate::srf::NOT_HERE {
        e.message = format!("set-returning functions are not allowed in {clause}");
    }
    e
}

/// A window call inside an aggregate's argument.
pub(crate) fn in_aggregate(mut e: SqlError) -> SqlError {
    if is_not_here(&e) {
        e.code = code::GROUPING_ERROR;
        e.message = "aggregate function calls cannot contain window function calls".into();
    }
    e
}

/// Computes the window calls over `rows` (the rows after grouping and HAVING) and
/// appends their values to each row, in call order. The rows come back in the order of
/// the last window's sort.
pub(crate) fn compute(
    mut rows: Vec<Vec<Value>>,
    calls: &[WindowCall],
    cx: &mut EvalCtx,
    guard: &Guard,
) -> SqlResult<Vec<Vec<Value>>> {
    let n = rows.len();
    let mut values: Vec<Vec<Value>> = vec![vec![Value::Null; calls.len()]; n];
    let slots = (n * calls.len() * std::mem::size_of::<Value>()) as u64;
    guard.charge(slots)?;
    let mut order: Vec<usize> = (0..n).collect();
    let mut done = vec![false; calls.len()];
    for first in 0..calls.len() {
        if done[first] {
            continue;
        }
        let spec = &calls[first].spec;
        let mine: Vec<usize> = (first..calls.len())
            .filter(|&c| !done[c] && calls[c].spec == *spec)
            .collect();
        for &c in &mine {
            done[c] = true;
        }
        // Each row's partition key (as bytes) and sort key.
        let mut parts: Vec<Vec<u8>> = Vec::with_capacity(n);
        let mut keys: Vec<Vec<Value>> = Vec::with_capacity(n);
        for row in &rows {
            guard.check()?;
            let mut p = Vec::with_capacity(spec.partition.len());
            for e in &spec.partition {
                p.push(e.eval(row, cx)?);
            }
            let mut bytes = Vec::new();
            key_bytes(&p, &mut bytes);
            parts.push(bytes);
            let mut k = Vec::with_capacity(spec.order.len());
            for (e, _, _) in &spec.order {
                k.push(e.eval(row, cx)?);
            }
            keys.push(k);
        }
        guard.charge(parts.iter().map(|p| p.len() as u64).sum::<u64>())?;
        // A stable sort: rows equal in both keep the order the last window gave them.
        // A cancel request is honoured before it, not inside: a comparison that gave up
        // early would not be a total order, which Rust's sorts may panic on.
        guard.check()?;
        order.sort_by(|&a, &b| {
            parts[a]
                .cmp(&parts[b])
                .then_with(|| compare_keys(&spec.order, &keys[a], &keys[b]))
        });
        let mut start = 0;
        while start < n {
            let mut end = start + 1;
            while end < n && parts[order[end]] == parts[order[start]] {
                end += 1;
            }
            let part = Partition::new(&order[start..end], &keys, spec);
            for &c in &mine {
                part.compute(&calls[c], c, &rows, &mut values, cx, guard)?;
            }
            start = end;
        }
        guard.release(parts.iter().map(|p| p.len() as u64).sum::<u64>());
    }
    let mut out = Vec::with_capacity(n);
    for &i in &order {
        let mut row = std::mem::take(&mut rows[i]);
        let extra = std::mem::take(&mut values[i]);
        guard.charge(row_bytes(&extra))?;
        row.extend(extra);
        out.push(row);
    }
    // The values are in the rows now, charged with them.
    guard.release(slots);
    Ok(out)
}

/// One partition, in window order: its rows, and each position's peers (the first and
/// last position whose ORDER BY keys equal its own) and peer group number.
struct Partition<'a> {
    rows: &'a [usize],
    peer_first: Vec<usize>,
    peer_last: Vec<usize>,
    group: Vec<usize>,
    /// Each peer group's first position (for GROUPS frames).
    group_first: Vec<usize>,
    /// Each position's first ORDER BY value as a number (None for NULL), and whether it
    /// sorts descending (for RANGE frames with an offset).
    values: Vec<Option<f64>>,
    desc: bool,
}

impl<'a> Partition<'a> {
    fn new(rows: &'a [usize], keys: &[Vec<Value>], spec: &WindowSpec) -> Partition<'a> {
        let m = rows.len();
        let mut peer_first = vec![0; m];
        let mut peer_last = vec![0; m];
        let mut group = vec![0; m];
        let mut group_first = Vec::new();
        let mut j = 0;
        let mut g = 0;
        while j < m {
            let mut k = j + 1;
            while k < m
                && compare_keys(&spec.order, &keys[rows[j]], &keys[rows[k]]) == Ordering::Equal
            {
                k += 1;
            }
            for x in j..k {
                peer_first[x] = j;
                peer_last[x] = k - 1;
                group[x] = g;
            }
            group_first.push(j);
            g += 1;
            j = k;
        }
        let values = if spec.order.len() == 1 {
            rows.iter().map(|&r| as_f64(&keys[r][0])).collect()
        } else {
            Vec::new()
        };
        Partition {
            rows,
            peer_first,
            peer_last,
            group,
            group_first,
            values,
            desc: spec.order.first().is_some_and(|o| o.1),
        }
    }

    /// The positions of position `j`'s frame, None when it is empty.
    fn frame(&self, f: &Frame, j: usize) -> Option<(usize, usize)> {
        let m = self.rows.len() as i128;
        let here = j as i128;
        if f.groups {
            return self.groups_frame(f, j);
        }
        if f.range_offset() {
            return self.range_frame(f, j);
        }
        let lo = match f.start {
            Bound::UnboundedPreceding => 0,
            Bound::Preceding(k) => here - k as i128,
            Bound::CurrentRow if f.rows => here,
            Bound::CurrentRow => self.peer_first[j] as i128,
            Bound::Following(k) => here + k as i128,
            Bound::UnboundedFollowing => m,
        };
        let hi = match f.end {
            Bound::UnboundedFollowing => m - 1,
            Bound::Following(k) => here + k as i128,
            Bound::CurrentRow if f.rows => here,
            Bound::CurrentRow => self.peer_last[j] as i128,
            Bound::Preceding(k) => here - k as i128,
            Bound::UnboundedPreceding => -1,
        };
        let (lo, hi) = (lo.max(0), hi.min(m - 1));
        (lo <= hi).then_some((lo as usize, hi as usize))
    }

    /// A RANGE frame with an offset: the rows whose ORDER BY value is within the offsets
    /// of position `j`'s (NULLs are within no offset of a value; a NULL row's offset
    /// bounds are its peers').
    fn range_frame(&self, f: &Frame, j: usize) -> Option<(usize, usize)> {
        let m = self.rows.len();
        let Some(x) = self.values.get(j).copied().flatten() else {
            let start = match f.start {
                Bound::UnboundedPreceding => 0,
                Bound::UnboundedFollowing => m,
                _ => self.peer_first[j],
            };
            let end = match f.end {
                Bound::UnboundedFollowing => m as i128 - 1,
                Bound::UnboundedPreceding => -1,
                _ => self.peer_last[j] as i128,
            };
            return (start as i128 <= end).then_some((start, end as usize));
        };
        // The value a bound stands at: PRECEDING is towards the start of the order.
        let dir = if self.desc { -1.0 } else { 1.0 };
        let at = |b: Bound, k: f64| match b {
            Bound::Preceding(_) => x - dir * k,
            _ => x + dir * k,
        };
        // Positions whose value sorts before `t` (lo) or at or before it (hi), among the
        // non-NULL values, which are contiguous and sorted in the window's direction.
        let before = |v: f64, t: f64| if self.desc { v > t } else { v < t };
        let nulls_before = self.values.iter().take_while(|v| v.is_none()).count();
        let nulls_after = self.values.iter().rev().take_while(|v| v.is_none()).count();
        let known = self
            .values
            .get(nulls_before..m.saturating_sub(nulls_after))
            .unwrap_or(&[]);
        let count = |pred: &dyn Fn(f64) -> bool| known.partition_point(|v| v.is_some_and(pred));
        let lo = match f.start {
            Bound::UnboundedPreceding => 0,
            Bound::CurrentRow => self.peer_first[j],
            Bound::UnboundedFollowing => m,
            b => {
                let t = at(b, f.range_offsets.0);
                nulls_before + count(&|v| before(v, t))
            }
        };
        let hi = match f.end {
            Bound::UnboundedFollowing => m as i128 - 1,
            Bound::CurrentRow => self.peer_last[j] as i128,
            Bound::UnboundedPreceding => -1,
            b => {
                let t = at(b, f.range_offsets.1);
                (nulls_before + count(&|v| before(v, t) || v == t)) as i128 - 1
            }
        };
        (lo as i128 <= hi).then_some((lo, hi as usize))
    }

    /// A GROUPS frame: its offsets count peer groups from position `j`'s.
    fn groups_frame(&self, f: &Frame, j: usize) -> Option<(usize, usize)> {
        let m = self.rows.len() as i128;
        let groups = self.group_first.len() as i128;
        let here = self.group[j] as i128;
        // The first and the last position of group `g` (past either end: the
        // partition's edge beyond it).
        let first = |g: i128| match g {
            g if g < 0 => 0,
            g if g >= groups => m,
            g => self.group_first[g as usize] as i128,
        };
        let last = |g: i128| match g {
            g if g < 0 => -1,
            g if g >= groups => m - 1,
            g => self.peer_last[self.group_first[g as usize]] as i128,
        };
        let lo = match f.start {
            Bound::UnboundedPreceding => 0,
            Bound::Preceding(k) => first(here - k as i128),
            Bound::CurrentRow => self.peer_first[j] as i128,
            Bound::Following(k) => first(here + k as i128),
            Bound::UnboundedFollowing => m,
        };
        let hi = match f.end {
            Bound::UnboundedFollowing => m - 1,
            Bound::Following(k) => last(here + k as i128),
            Bound::CurrentRow => self.peer_last[j] as i128,
            Bound::Preceding(k) => last(here - k as i128),
            Bound::UnboundedPreceding => -1,
        };
        let (lo, hi) = (lo.max(0), hi.min(m - 1));
        (lo <= hi).then_some((lo as usize, hi as usize))
    }

    /// Call `c`'s value for each row of the partition, into `values[row][c]`.
    fn compute(
        &self,
        call: &WindowCall,
        c: usize,
        rows: &[Vec<Value>],
        values: &mut [Vec<Value>],
        cx: &mut EvalCtx,
        guard: &Guard,
    ) -> SqlResult<()> {
        let m = self.rows.len();
        if let WindowFunc::Agg(a) = &call.func {
            return self.aggregate(a, &call.frame, c, rows, values, cx, guard);
        }
        let ntile = match call.func {
            WindowFunc::Ntile => positive(
                call.args[0].eval(&rows[self.rows[0]], cx)?,
                code::INVALID_NTILE_ARGUMENT,
                "ntile",
            )?,
            _ => None,
        };
        for j in 0..m {
            guard.check()?;
            let row = &rows[self.rows[j]];
            let v = match call.func {
                WindowFunc::RowNumber => Value::Int8(j as i64 + 1),
                WindowFunc::Rank => Value::Int8(self.peer_first[j] as i64 + 1),
                WindowFunc::DenseRank => Value::Int8(self.group[j] as i64 + 1),
                WindowFunc::PercentRank if m <= 1 => Value::Float8(0.0),
                WindowFunc::PercentRank => {
                    Value::Float8(self.peer_first[j] as f64 / (m - 1) as f64)
                }
                WindowFunc::CumeDist => Value::Float8((self.peer_last[j] + 1) as f64 / m as f64),
                WindowFunc::Ntile => match ntile {
                    None => Value::Null,
                    Some(k) => Value::Int4(ntile_bucket(j, m, k) as i32),
                },
                WindowFunc::Lag | WindowFunc::Lead => {
                    let offset = match call.args.get(1) {
                        None => Some(1),
                        Some(e) => as_i64(&e.eval(row, cx)?),
                    };
                    match offset {
                        None => Value::Null,
                        Some(k) => {
                            let k = k as i128;
                            let target = if call.func == WindowFunc::Lag {
                                j as i128 - k
                            } else {
                                j as i128 + k
                            };
                            if (0..m as i128).contains(&target) {
                                call.args[0].eval(&rows[self.rows[target as usize]], cx)?
                            } else {
                                match call.args.get(2) {
                                    Some(d) => d.eval(row, cx)?,
                                    None => Value::Null,
                                }
                            }
                        }
                    }
                }
                WindowFunc::FirstValue | WindowFunc::LastValue | WindowFunc::NthValue => {
                    let nth = match call.func {
                        WindowFunc::NthValue => positive(
                            call.args[1].eval(row, cx)?,
                            code::INVALID_NTH_VALUE_ARGUMENT,
                            "nth_value",
                        )?,
                        _ => Some(1),
                    };
                    let at = match (self.frame(&call.frame, j), nth) {
                        (Some((_, hi)), Some(_)) if call.func == WindowFunc::LastValue => Some(hi),
                        (Some((lo, hi)), Some(k)) => lo.checked_add(k - 1).filter(|p| *p <= hi),
                        _ => None,
                    };
                    match at {
                        Some(p) => call.args[0].eval(&rows[self.rows[p]], cx)?,
                        None => Value::Null,
                    }
                }
                WindowFunc::Agg(_) => Value::Null,
            };
            values[self.rows[j]][c] = v;
        }
        Ok(())
    }

    /// An aggregate over each row's frame: added up as the frame grows when it starts
    /// at the partition's first row, else taken again for each row.
    #[allow(clippy::too_many_arguments)]
    fn aggregate(
        &self,
        a: &AggCall,
        frame: &Frame,
        c: usize,
        rows: &[Vec<Value>],
        values: &mut [Vec<Value>],
        cx: &mut EvalCtx,
        guard: &Guard,
    ) -> SqlResult<()> {
        let m = self.rows.len();
        let running = frame.start == Bound::UnboundedPreceding;
        let mut acc = Acc::new(a);
        let mut added = 0;
        let mut charged = 0;
        for j in 0..m {
            guard.check()?;
            let range = self.frame(frame, j);
            let v = if running {
                if let Some((_, hi)) = range {
                    while added <= hi {
                        let grew = acc.add(a, &rows[self.rows[added]], cx)?;
                        guard.charge(grew)?;
                        charged += grew;
                        added += 1;
                    }
                }
                acc.result()?
            } else {
                let mut fresh = Acc::new(a);
                let mut grew = 0;
                if let Some((lo, hi)) = range {
                    for p in lo..=hi {
                        let g = fresh.add(a, &rows[self.rows[p]], cx)?;
                        guard.charge(g)?;
                        grew += g;
                    }
                }
                let v = fresh.result()?;
                guard.release(grew);
                v
            };
            values[self.rows[j]][c] = v;
        }
        guard.release(charged);
        Ok(())
    }
}

/// The count argument of ntile or nth_value: None for NULL, an error unless positive.
fn positive(v: Value, sqlstate: &'static str, name: &str) -> SqlResult<Option<usize>> {
    match v {
        Value::Null => Ok(None),
        v => match as_i64(&v) {
            Some(k) if k > 0 => Ok(Some(usize::try_from(k).unwrap_or(usize::MAX))),
            _ => Err(SqlError::new(
                sqlstate,
                format!("argument of {name} must be greater than zero"),
            )),
        },
    }
}

/// ntile's bucket (from 1) for position `j` of `m` rows in `k` buckets: the first
/// `m % k` buckets hold one row more than the rest.
fn ntile_bucket(j: usize, m: usize, k: usize) -> usize {
    let per = m / k;
    let extra = m % k;
    let big = extra * (per + 1);
    if j < big {
        j / (per + 1) + 1
    } else {
        extra + (j - big) / per.max(1) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::ntile_bucket;

    #[test]
    fn ntile_spreads_rows_as_postgresql_does() {
        // 10 rows in 4 buckets: 3, 3, 2, 2.
        let b: Vec<usize> = (0..10).map(|j| ntile_bucket(j, 10, 4)).collect();
        assert_eq!(b, [1, 1, 1, 2, 2, 2, 3, 3, 4, 4]);
        // More buckets than rows: one row each.
        let b: Vec<usize> = (0..3).map(|j| ntile_bucket(j, 3, 5)).collect();
        assert_eq!(b, [1, 2, 3]);
    }
}
