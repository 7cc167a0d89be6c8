//! Choosing how a statement reads its table: a sequential scan, or a B-tree index read
//! over key ranges taken from the WHERE clause (`=`, `IN`, `<`, `<=`, `>`, `>=`,
//! `BETWEEN`, on a prefix of the index's columns), in either direction when that gives
//! the ORDER BY order. Keys are in each column's declared order (ascending or
//! descending, NULLs first or last), and so are the ranges: on a descending column a
//! larger value is a lower key. The ranges only narrow what is read: the whole WHERE
//! clause is still checked on every row, so a range may safely cover more than the
//! clause keeps (NULL keys, for one).

use std::cmp::Ordering;
use std::fmt::Write as _;
use std::ops::Bound;

use walden::{ColumnType, KeyOrder, Value};

use crate::catalog::IndexMeta;
use crate::expr::{CmpOp, Expr};
use crate::optimize::index_cost::{self, TableStats};
use crate::types::SqlType;
use crate::value;

impl IndexMeta {
    /// The order of the index's column `n`.
    fn order_of(&self, n: usize) -> KeyOrder {
        KeyOrder::of(&self.order, n)
    }
}

/// A range of keys: bounds on the first columns of the index.
pub type KeyRange = (Bound<Vec<Value>>, Bound<Vec<Value>>);

/// How rows are read.
#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    Scan,
    Index(IndexRead),
}

#[derive(Debug, Clone, PartialEq)]
pub struct IndexRead {
    pub index: String,
    /// Key ranges, in key order, not overlapping; empty means the whole index.
    pub ranges: Vec<KeyRange>,
    pub backward: bool,
    /// The conditions of the WHERE clause it uses, one per AND-ed part (EXPLAIN shows
    /// them: `cond_text`).
    pub cond: Vec<IndexCond>,
    /// The rows come in the statement's ORDER BY order (its sort is dropped).
    pub ordered: bool,
    /// The WHERE clause has conditions the key ranges do not express.
    pub residual: bool,
    /// A generic read (`generic_point`): its one key (prefix) is the values its
    /// conditions (`CondTest::Key`, in key order) name, taken from the run's parameters
    /// or outer values as it starts (`key_of`); `ranges` is then empty.
    pub generic: bool,
}

/// A condition an index read uses: on column `col` of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexCond {
    col: usize,
    test: CondTest,
}

#[derive(Debug, Clone, PartialEq)]
enum CondTest {
    /// `col op value` (`=` included).
    Cmp(CmpOp, Value),
    /// `col = ANY (values)`: an IN list.
    Any(Vec<Value>),
    /// `col = $n` (n from 0; a parameter, or an outer value) in a generic read, with
    /// the key column's type.
    Key(KeyFrom, usize, ColumnType),
}

impl IndexRead {
    /// A generic read's key (a prefix of the index's columns) for a run's parameter
    /// values and outer values: None when a value is NULL or cannot equal a key (then
    /// no row matches `col = value`).
    pub(crate) fn key_of(&self, params: &[Value], outer: &[Value]) -> Option<Vec<Value>> {
        self.cond
            .iter()
            .map(|c| match c.test {
                CondTest::Key(KeyFrom::Param, n, ty) => key_value(params.get(n)?, ty),
                CondTest::Key(KeyFrom::Outer, n, ty) => key_value(outer.get(n)?, ty),
                _ => None,
            })
            .collect()
    }

    /// The conditions as EXPLAIN shows them, given the table's column names.
    pub fn cond_text(&self, names: &[String]) -> String {
        let parts: Vec<String> = self
            .cond
            .iter()
            .map(|c| {
                let name = names.get(c.col).map_or("?", String::as_str);
                match &c.test {
                    CondTest::Cmp(op, v) => format!("{name} {} {}", op_text(*op), literal(v)),
                    CondTest::Any(vs) => {
                        let list: Vec<String> = vs.iter().map(plain).collect();
                        format!("{name} = ANY ('{{{}}}')", list.join(","))
                    }
                    CondTest::Key(KeyFrom::Param, n, _) => format!("{name} = ${}", n + 1),
                    CondTest::Key(KeyFrom::Outer, n, _) => format!("{name} = (outer ${})", n + 1),
                }
            })
            .collect();
        let mut text = String::new();
        if !parts.is_empty() {
            let _ = write!(text, "({})", parts.join(") AND ("));
        }
        text
    }
}

/// The number of AND-ed parts of a condition.
fn conjuncts(e: &Expr) -> usize {
    match e {
        Expr::And(a, b) => conjuncts(a) + conjuncts(b),
        _ => 1,
    }
}

/// One condition of the WHERE clause on a column: `col op value` or `col IN (values)`.
#[derive(Debug, Clone)]
enum Cond {
    Cmp(CmpOp, Value),
    In(Vec<Value>),
}

/// The constant of an operand, if it is one.
fn constant(e: &Expr) -> Option<&Value> {
    match e {
        Expr::Const(v) if !matches!(v, Value::Null) => Some(v),
        // A float8 literal is a numeric value kept under a cast to float8.
        Expr::Cast(inner, d) if d.ty == SqlType::Float8 => match &**inner {
            Expr::Const(v @ (Value::Float8(_) | Value::Numeric(_))) => Some(v),
            _ => None,
        },
        _ => None,
    }
}

/// `v` as a key value of a column of type `ty`, if it is exactly equal to one (so that
/// comparing it in key order is comparing it in SQL).
pub(crate) fn key_value(v: &Value, ty: ColumnType) -> Option<Value> {
    let int = |v: &Value| -> Option<i64> {
        match v {
            Value::Int2(x) => Some(*x as i64),
            Value::Int4(x) => Some(*x as i64),
            Value::Int8(x) => Some(*x),
            Value::Float8(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => Some(*x as i64),
            Value::Numeric(n) if n.trunc(0).ok() == Some(*n) => n.to_i64(),
            _ => None,
        }
    };
    match ty {
        ColumnType::Int2 => int(v).and_then(|x| i16::try_from(x).ok()).map(Value::Int2),
        ColumnType::Int4 => int(v).and_then(|x| i32::try_from(x).ok()).map(Value::Int4),
        ColumnType::Int8 => int(v).map(Value::Int8),
        ColumnType::Float8 => match v {
            Value::Float8(x) if !x.is_nan() => Some(Value::Float8(*x)),
            // A numeric meets a float8 as a float8, as PostgreSQL casts it.
            Value::Numeric(n) => Some(Value::Float8(n.to_f64())),
            // Exact up to 2^53.
            _ => int(v)
                .filter(|x| x.unsigned_abs() <= 1 << 53)
                .map(|x| Value::Float8(x as f64)),
        },
        ColumnType::Bool => matches!(v, Value::Bool(_)).then(|| v.clone()),
        ColumnType::Text => matches!(v, Value::Text(_)).then(|| v.clone()),
        ColumnType::Uuid => matches!(v, Value::Uuid(_)).then(|| v.clone()),
        ColumnType::Date => matches!(v, Value::Date(_)).then(|| v.clone()),
        // The session's time zone is UTC: a timestamp and a timestamptz of the same
        // microseconds are equal.
        ColumnType::Timestamp => match v {
            Value::Timestamp(t) | Value::Timestamptz(t) => Some(Value::Timestamp(*t)),
            _ => None,
        },
        ColumnType::Timestamptz => match v {
            Value::Timestamp(t) | Value::Timestamptz(t) => Some(Value::Timestamptz(*t)),
            _ => None,
        },
        ColumnType::Interval => matches!(v, Value::Interval(_)).then(|| v.clone()),
        ColumnType::Bytea => matches!(v, Value::Bytea(_)).then(|| v.clone()),
        // Integers are exact numerics; a float8 makes PostgreSQL compare as float8.
        ColumnType::Numeric => value::as_numeric(v).map(Value::Numeric),
        ColumnType::Jsonb => matches!(v, Value::Jsonb(_)).then(|| v.clone()),
    }
}

fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::LtEq => CmpOp::GtEq,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::GtEq => CmpOp::LtEq,
        other => other,
    }
}

/// The conditions of a WHERE clause (its AND-ed parts) that bound one column.
fn conditions(filter: &Expr, types: &[ColumnType], out: &mut Vec<(usize, Cond)>) {
    match filter {
        Expr::And(a, b) => {
            conditions(a, types, out);
            conditions(b, types, out);
        }
        Expr::Cmp(op, a, b) if *op != CmpOp::NotEq => {
            let (col, op, v) = match (&**a, &**b) {
                (Expr::Column(c, _), other) => (*c, *op, constant(other)),
                (other, Expr::Column(c, _)) => (*c, flip(*op), constant(other)),
                _ => return,
            };
            if let Some(v) = v.and_then(|v| key_value(v, *types.get(col)?)) {
                out.push((col, Cond::Cmp(op, v)));
            }
        }
        Expr::InList(x, items, false) => {
            let Expr::Column(col, _) = &**x else { return };
            let Some(&ty) = types.get(*col) else { return };
            let mut vals = Vec::with_capacity(items.len());
            for item in items {
                match constant(item) {
                    Some(v) => match key_value(v, ty) {
                        Some(k) => vals.push(k),
                        // A value no key can equal (1.5 for an integer) matches nothing.
                        None if matches!(v, Value::Float8(_)) && ty != ColumnType::Float8 => {}
                        None => return,
                    },
                    // NULL in the list matches nothing.
                    None if matches!(item, Expr::Const(Value::Null)) => {}
                    None if item.is_folded_constant() => {}
                    None => return,
                }
            }
            vals.sort_by(value::sort_cmp);
            vals.dedup_by(|a, b| value::sort_cmp(a, b) == Ordering::Equal);
            out.push((*col, Cond::In(vals)));
        }
        _ => {}
    }
}

/// The most ranges an IN list (or several) may expand to.
const MAX_RANGES: usize = 10_000;

/// What a statement asks of its rows, for choosing how to read them.
pub struct Wanted<'a> {
    pub filter: Option<&'a Expr>,
    /// ORDER BY as columns of the table, each (column, descending, nulls first); None
    /// when some key is not a plain column.
    pub order: Option<Vec<(usize, bool, bool)>>,
    /// Rows with a NULL in the ORDER BY columns are filtered out (min and max read the
    /// first row with a value), so where an index puts NULLs does not matter.
    pub nulls_dropped: bool,
    /// A LIMIT (or a min/max that needs one row) makes an ordered read worth it alone.
    pub few: bool,
    /// The table's statistics, when ANALYZE gathered them: an index read of
    /// equalities that finds too many rows gives way to a scan (`optimize::index_cost`).
    pub(crate) stats: Option<&'a TableStats>,
}

/// Chooses how to read a table with these indexes: the best index by what it serves
/// (a point, fixed columns, a range, the order), of those the statistics do not price
/// above a scan.
pub fn choose(indexes: &[IndexMeta], types: &[ColumnType], wanted: &Wanted) -> Access {
    let mut conds = Vec::new();
    if let Some(f) = wanted.filter {
        conditions(f, types, &mut conds);
    }
    let total = wanted.filter.map_or(0, conjuncts);
    let mut best: Option<(u32, IndexRead)> = None;
    for ix in indexes {
        let Some((score, mut read)) = plan_index(ix, &conds, wanted) else {
            continue;
        };
        read.residual = total > read.cond.len();
        if scan_is_cheaper_than(&read, wanted.stats) {
            continue;
        }
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((score, read));
        }
    }
    match best {
        Some((_, read)) => Access::Index(read),
        None => Access::Scan,
    }
}

/// Whether the statistics say a scan costs less than this index read: a read of
/// equalities only (no range, no order it serves) whose rows are estimated.
fn scan_is_cheaper_than(read: &IndexRead, stats: Option<&TableStats>) -> bool {
    let Some(stats) = stats else {
        return false;
    };
    if read.ordered || read.generic {
        return false;
    }
    let mut fixed = Vec::new();
    for c in &read.cond {
        match &c.test {
            CondTest::Cmp(CmpOp::Eq, _) | CondTest::Any(_) => fixed.push(c.col),
            _ => return false,
        }
    }
    index_cost::expected_rows(stats, &fixed, read.ranges.len())
        .is_some_and(|rows| index_cost::scan_is_cheaper(rows, stats))
}

fn plan_index(
    ix: &IndexMeta,
    conds: &[(usize, Cond)],
    wanted: &Wanted,
) -> Option<(u32, IndexRead)> {
    let mut used = Vec::new();
    let mut single_valued = Vec::new();
    // Equalities (or IN lists) on a prefix of the columns, then a range on the next.
    let (prefixes, eq_cols) = equality_prefixes(ix, conds, &mut used, &mut single_valued);
    let (lower, upper) = range_bounds(ix, eq_cols, conds, &mut used);
    let ranged = lower.is_some() || upper.is_some();
    let (ordered, backward) = index_order(ix, eq_cols, prefixes.len(), &single_valued, wanted);
    if eq_cols == 0 && !ranged && !(ordered && wanted.few) {
        return None;
    }
    let point = ix.unique && eq_cols == ix.columns.len();
    // Points first, then more fixed columns, a range, the order wanted; fewer columns
    // break ties.
    let score = (point as u32) << 24
        | (eq_cols as u32).min(255) << 16
        | (ranged as u32) << 15
        | (ordered as u32) << 14
        | (255 - ix.columns.len().min(255) as u32);
    Some((
        score,
        IndexRead {
            index: ix.name.clone(),
            ranges: key_ranges(prefixes, &lower, &upper),
            backward,
            cond: used,
            ordered,
            residual: false,
            generic: false,
        },
    ))
}

/// The key prefixes equalities (or IN lists) on the index's first columns fix, each
/// in key order (at most `MAX_RANGES` of them), and how many columns they fix; the
/// conditions used go to `used`, the columns fixed to one value to `single_valued`.
fn equality_prefixes(
    ix: &IndexMeta,
    conds: &[(usize, Cond)],
    used: &mut Vec<IndexCond>,
    single_valued: &mut Vec<usize>,
) -> (Vec<Vec<Value>>, usize) {
    let mut prefixes: Vec<Vec<Value>> = vec![Vec::new()];
    let mut eq_cols = 0usize;
    for &col in &ix.columns {
        let found = conds.iter().find_map(|(c, cond)| match cond {
            Cond::Cmp(CmpOp::Eq, v) if *c == col => Some(vec![v.clone()]),
            _ => None,
        });
        let found = found.or_else(|| {
            conds.iter().find_map(|(c, cond)| match cond {
                Cond::In(vs) if *c == col => Some(vs.clone()),
                _ => None,
            })
        });
        let Some(vals) = found else { break };
        // An IN list of NULLs only matches nothing; the scan finds that out.
        if vals.is_empty() {
            break;
        }
        if prefixes.len().saturating_mul(vals.len().max(1)) > MAX_RANGES {
            break;
        }
        if vals.len() == 1 {
            used.push(IndexCond {
                col,
                test: CondTest::Cmp(CmpOp::Eq, vals[0].clone()),
            });
            single_valued.push(col);
        } else {
            used.push(IndexCond {
                col,
                test: CondTest::Any(vals.clone()),
            });
        }
        // `vals` ascend; a descending column's keys take them the other way round, so
        // that the ranges stay in key order.
        let in_key_order: Vec<&Value> = if ix.order_of(eq_cols).desc {
            vals.iter().rev().collect()
        } else {
            vals.iter().collect()
        };
        let mut next = Vec::with_capacity(prefixes.len() * vals.len());
        for p in &prefixes {
            for &v in &in_key_order {
                let mut q = p.clone();
                q.push(v.clone());
                next.push(q);
            }
        }
        prefixes = next;
        eq_cols += 1;
    }
    (prefixes, eq_cols)
}

/// A key bound: a value, and whether it is included.
type KeyBound = Option<(Value, bool)>;

/// The range on the column after the `eq_cols` fixed ones: its lower and upper bound
/// in key order, so on a descending column `col > v` bounds the keys from above. The
/// conditions used go to `used`.
fn range_bounds(
    ix: &IndexMeta,
    eq_cols: usize,
    conds: &[(usize, Cond)],
    used: &mut Vec<IndexCond>,
) -> (KeyBound, KeyBound) {
    let mut lower: KeyBound = None;
    let mut upper: KeyBound = None;
    if let Some(&col) = ix.columns.get(eq_cols) {
        let desc = ix.order_of(eq_cols).desc;
        for (c, cond) in conds {
            let Cond::Cmp(op, v) = cond else { continue };
            if *c != col {
                continue;
            }
            let side = match (op, desc) {
                (CmpOp::Gt | CmpOp::GtEq, false) | (CmpOp::Lt | CmpOp::LtEq, true) => &mut lower,
                (CmpOp::Lt | CmpOp::LtEq, false) | (CmpOp::Gt | CmpOp::GtEq, true) => &mut upper,
                _ => continue,
            };
            if side.is_none() {
                *side = Some((v.clone(), matches!(op, CmpOp::GtEq | CmpOp::LtEq)));
                used.push(IndexCond {
                    col,
                    test: CondTest::Cmp(*op, v.clone()),
                });
            }
        }
    }
    (lower, upper)
}

/// Whether the index gives the order wanted, after the columns fixed to one value (one
/// prefix of `eq_cols` columns, `prefixes` of them): read forward, or read backward.
fn index_order(
    ix: &IndexMeta,
    eq_cols: usize,
    prefixes: usize,
    single_valued: &[usize],
    wanted: &Wanted,
) -> (bool, bool) {
    let Some(order) = wanted.order.as_ref().filter(|o| !o.is_empty()) else {
        return (false, false);
    };
    let rest: Vec<&(usize, bool, bool)> = order
        .iter()
        .filter(|(c, _, _)| !single_valued.contains(c))
        .collect();
    let fits = prefixes == 1
        && rest.len() <= ix.columns.len() - eq_cols
        && rest
            .iter()
            .zip(&ix.columns[eq_cols..])
            .all(|((c, _, _), ic)| c == ic);
    // Each ORDER BY item against its key column's order: the same direction
    // and NULLs placement (read forward), or both reversed (read backward).
    let matches = |backward: bool| {
        rest.iter().enumerate().all(|(n, (_, desc, nulls_first))| {
            let o = ix.order_of(eq_cols + n);
            (o.desc != *desc) == backward
                && (wanted.nulls_dropped || (o.nulls_first != *nulls_first) == backward)
        })
    };
    let forward = fits && matches(false);
    let backward = fits && !forward && matches(true);
    (forward || backward, backward)
}

/// The key ranges to read: each prefix, with the range's bounds on the next column if
/// it has them; none for the whole index.
fn key_ranges(prefixes: Vec<Vec<Value>>, lower: &KeyBound, upper: &KeyBound) -> Vec<KeyRange> {
    let ranges: Vec<KeyRange> = prefixes
        .into_iter()
        .map(|p| {
            // The prefix, with the range's bound on the next column if it has one.
            let bound = |side: &Option<(Value, bool)>| match side {
                Some((v, incl)) => {
                    let mut k = p.clone();
                    k.push(v.clone());
                    if *incl {
                        Bound::Included(k)
                    } else {
                        Bound::Excluded(k)
                    }
                }
                None if p.is_empty() => Bound::Unbounded,
                None => Bound::Included(p.clone()),
            };
            (bound(lower), bound(upper))
        })
        .collect();
    if ranges.len() == 1 && ranges[0] == (Bound::Unbounded, Bound::Unbounded) {
        Vec::new()
    } else {
        ranges
    }
}

/// The key column types a generic point read takes a parameter of the same type for:
/// those whose `key_value` is the value itself for every value but NULL (a float8's NaN,
/// a numeric's scale and json's forms make the others choose per value).
/// (`character(n)` compares without its padding: not here.)
fn exact_key_type(ty: SqlType) -> bool {
    matches!(
        ty,
        SqlType::Int2
            | SqlType::Int4
            | SqlType::Int8
            | SqlType::Bool
            | SqlType::Text
            | SqlType::Uuid
            | SqlType::Date
            | SqlType::Timestamp
            | SqlType::Timestamptz
            | SqlType::Bytea
    )
}

/// What a generic read's key is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyFrom {
    /// A prepared statement's parameters (`Expr::Param`): the run's values.
    Param,
    /// A correlated subquery's outer values (`Expr::Outer`): the enclosing row's.
    Outer,
}

/// A read chosen once for every run (PostgreSQL's generic plan), its key made of the
/// values each run brings (`from`): parameters of a prepared statement, or the outer
/// values of a correlated subquery.
///
/// Parameters: when the WHERE clause fixes every column of a unique index by
/// `col = $n` with a parameter of the column's own type, and names no parameter
/// elsewhere, each run reads the one key its values make, as `choose` would choose for
/// any of them (a point read scores above any other), with no plan made per run.
///
/// Outer values: when `col = outer` parts of the column's own type fix the first
/// columns of an index (a unique one whole, else the index with most of them) and no
/// constant bounds an indexed column (`choose` might prefer that index given the
/// values), each run reads that key prefix; the other parts are tested per row.
pub(crate) fn generic_point(
    indexes: &[IndexMeta],
    types: &[SqlType],
    filter: &Expr,
    from: KeyFrom,
) -> Option<IndexRead> {
    let leaf = |e: &Expr| match (e, from) {
        (Expr::Param(n, t), KeyFrom::Param) | (Expr::Outer(n, t), KeyFrom::Outer) => Some((*n, *t)),
        _ => None,
    };
    let mut parts = Vec::new();
    filter.and_parts(&mut parts);
    let mut fixed: Vec<(usize, usize, ColumnType)> = Vec::new();
    for part in &parts {
        let mut leaves = 0;
        part.visit(&mut |e| leaves += leaf(e).is_some() as usize);
        if leaves == 0 {
            continue;
        }
        let key = match part {
            Expr::Cmp(CmpOp::Eq, a, b) => match (&**a, &**b) {
                (Expr::Column(c, _), other) | (other, Expr::Column(c, _)) => {
                    leaf(other).map(|(n, t)| (*c, n, t))
                }
                _ => None,
            },
            _ => None,
        };
        let exact = key.filter(|&(c, _, t)| {
            types
                .get(c)
                .is_some_and(|&ty| ty == t && exact_key_type(ty))
        });
        match exact {
            Some((c, n, t)) => fixed.push((c, n, t.column_type())),
            // A parameter anywhere else: its value would choose (and fold) per run.
            None if from == KeyFrom::Param => return None,
            // An outer value anywhere else is tested per row.
            None => {}
        }
    }
    let covered = |ix: &IndexMeta| {
        ix.columns
            .iter()
            .take_while(|col| fixed.iter().any(|(c, _, _)| c == *col))
            .count()
    };
    let whole = |ix: &&IndexMeta| ix.unique && covered(ix) == ix.columns.len();
    let ix = match indexes.iter().find(whole) {
        Some(ix) => ix,
        None if from == KeyFrom::Outer => {
            let ix = indexes
                .iter()
                .filter(|ix| covered(ix) > 0)
                .max_by_key(|ix| (covered(ix), std::cmp::Reverse(ix.columns.len())))?;
            let mut conds = Vec::new();
            let column_types: Vec<ColumnType> = types.iter().map(|t| t.column_type()).collect();
            conditions(filter, &column_types, &mut conds);
            if conds
                .iter()
                .any(|(c, _)| indexes.iter().any(|ix| ix.columns.contains(c)))
            {
                return None;
            }
            ix
        }
        None => return None,
    };
    let mut cond = Vec::new();
    for col in ix.columns.iter().take(covered(ix)) {
        let &(_, n, ty) = fixed.iter().find(|(c, _, _)| c == col)?;
        cond.push(IndexCond {
            col: *col,
            test: CondTest::Key(from, n, ty),
        });
    }
    Some(IndexRead {
        index: ix.name.clone(),
        ranges: Vec::new(),
        backward: false,
        residual: parts.len() > cond.len(),
        cond,
        ordered: false,
        generic: true,
    })
}

fn op_text(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "=",
        CmpOp::NotEq => "<>",
        CmpOp::Lt => "<",
        CmpOp::LtEq => "<=",
        CmpOp::Gt => ">",
        CmpOp::GtEq => ">=",
    }
}

/// A value as EXPLAIN writes it in a condition.
fn literal(v: &Value) -> String {
    match v {
        Value::Text(_)
        | Value::Uuid(_)
        | Value::Date(_)
        | Value::Timestamp(_)
        | Value::Timestamptz(_)
        | Value::Interval(_)
        | Value::Bytea(_)
        | Value::Jsonb(_) => {
            format!("'{}'::{}", plain(v).replace('\'', "''"), type_name(v))
        }
        _ => plain(v),
    }
}

fn type_name(v: &Value) -> &'static str {
    value::type_of(v).name()
}

fn plain(v: &Value) -> String {
    match v {
        Value::Float8(x) => value::float_text(*x),
        other => other.to_string(),
    }
}

/// Whether `filter` fixes every column of one of the unique `indexes` to one value — a
/// constant, or a prepared statement's parameter whose value comes with each run — so
/// that at most one row passes (a cached plan's estimate for `id = $1`).
pub(crate) fn fixes_unique(indexes: &[IndexMeta], filter: &Expr) -> bool {
    fn fixed(e: &Expr, out: &mut Vec<usize>) {
        match e {
            Expr::And(a, b) => {
                fixed(a, out);
                fixed(b, out);
            }
            Expr::Cmp(CmpOp::Eq, a, b) => {
                let one_value = |e: &Expr| match e {
                    Expr::Param(..) => true,
                    Expr::Cast(inner, _) => matches!(**inner, Expr::Param(..)),
                    other => constant(other).is_some(),
                };
                match (&**a, &**b) {
                    (Expr::Column(c, _), other) | (other, Expr::Column(c, _))
                        if one_value(other) =>
                    {
                        out.push(*c)
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let mut cols = Vec::new();
    fixed(filter, &mut cols);
    indexes
        .iter()
        .any(|ix| ix.unique && ix.columns.iter().all(|c| cols.contains(c)))
}
