//! Differential test of the SQL layer: random statement sequences over two tables, `t` and
//! `u` (a int, b int, c text), run on Walden and on SQLite (in memory), and when
//! PostgreSQL 15 is installed also on a throwaway PostgreSQL cluster, must give the same
//! rows, the same affected-row counts and the same errors. What could go wrong is any
//! expression, filter, aggregate, sort, join, subquery, set operation, write or
//! transaction block that Walden evaluates differently from PostgreSQL.
//!
//! Statements: INSERT (VALUES, SELECT, generate_series), UPDATE and DELETE (of either
//! table; with subqueries over the other), BEGIN/COMMIT/ROLLBACK, and queries: ordered,
//! limited, projections (DISTINCT too), aggregates (count(DISTINCT) and FILTER too), GROUP BY with
//! HAVING, joins of `t` and `u` (inner, LEFT, RIGHT, FULL, CROSS, a comma; ON with
//! equalities and other comparisons, USING; the left side now and then a subquery in
//! FROM), GROUP BY over joins, subqueries (IN, correlated EXISTS, ANY/ALL, scalar ones
//! with an aggregate), UNION/INTERSECT/EXCEPT [ALL] of two or three SELECTs, and window
//! functions (ranking, offsets, first/last/nth value, aggregates OVER, ROWS frames, named
//! windows, over rows or groups). The statements over both tables are
//! `differential/relations.rs`'s; PostgreSQL is driven by `differential/on_postgres.rs`.
//!
//! PostgreSQL runs Walden's text as it is. Its rows compare as SQLite's do (integers of
//! any width alike, booleans as 1 and 0, numeric as float8 within 1e-9); an error must
//! have Walden's SQLSTATE, except that the two data errors the generator causes (22012,
//! 22003) stand for each other, as which failing row or operand an engine meets first is
//! its own choice. In an aborted block PostgreSQL must refuse statements (25P02) as
//! Walden does. VACUUM, CHECKPOINT and crashes are Walden's alone; after a crash the
//! harness rolls back PostgreSQL's block too. A construct PostgreSQL runs differently from
//! Walden, where Walden is wrong, is left out of the generator with a comment naming its
//! entry in NOTES-pg-oracle.md (and an ignored test below shows it).
//!
//! The generator writes every statement twice, once in PostgreSQL's dialect for Walden and
//! once for SQLite, and bridges the places where the two engines legitimately differ:
//! - Integers: PostgreSQL's `int` is 32 bits and its `+ - *`, unary minus and `abs` raise
//!   "integer out of range"; its `/` and `%` raise "division by zero". SQLite computes in
//!   64 bits and gives NULL for `x / 0`, so its side calls the functions `i4`, `pgdiv` and
//!   `pgmod` registered below, which raise the same errors.
//! - NULL ordering: PostgreSQL sorts NULLs last in ascending order and first in descending
//!   order, SQLite the other way round; SQLite's ORDER BY spells NULLS FIRST/LAST out.
//! - `OFFSET` without `LIMIT` is `LIMIT -1 OFFSET` in SQLite.
//! - Booleans come back as `t`/`f` from Walden and 1/0 from SQLite: both compare as 1/0.
//! - An error inside BEGIN ... COMMIT aborts the whole block in PostgreSQL and only the
//!   statement in SQLite: the harness rolls SQLite back and expects Walden to refuse every
//!   statement until the block ends.
//! - PostgreSQL may evaluate the operands of AND, OR, CASE, COALESCE, IN and BETWEEN in any
//!   order and stop early (its top-level WHERE stops at a NULL operand, SQLite's too, but
//!   nested ones do not), so an expression that can fail is only generated where both
//!   engines must evaluate it; beneath those operators every expression is safe.
//! - PostgreSQL folds constant subexpressions when planning (so `1/0` fails even over an
//!   empty table) and SQLite does not: every arithmetic node reads a column. It also folds
//!   a strict operator with a NULL operand to NULL, leaving the others unevaluated (Walden
//!   evaluates them): an expression that can fail has no such NULL.
//! - Joins, subqueries and set operations leave to each engine which rows (and arms) it
//!   evaluates and in what order: every expression in them cannot fail.
//! - SQLite lacks INTERSECT ALL and EXCEPT ALL (those queries run on Walden and
//!   PostgreSQL only), and ANY/ALL (its text says the same with EXISTS and CASE); it reads
//!   compound operators left to right where PostgreSQL binds INTERSECT tighter (its text
//!   puts the tighter pair in a subquery in FROM); and `SELECT *` over USING keeps the
//!   column where the left table has it (PostgreSQL only).
//! - Under LIMIT without a full ORDER BY, and under GROUP BY with LIMIT, each engine may
//!   stop reading (or aggregating) at a row of its own choosing: such a query must not be
//!   able to fail, and without a full ORDER BY only the number of rows is compared (and
//!   that each of Walden's rows is in the unlimited result). A HAVING condition on the
//!   grouping key moves into WHERE in both engines, with the same consequence.
//!
//! Walden's text has only the parentheses PostgreSQL's operator precedence needs, so the
//! parser's precedence is tested too; SQLite's has them all.
//!
//! Walden alone also runs VACUUM and CHECKPOINT now and then, and loses power and
//! recovers (on the simulated file layer): neither may change any result, except that a
//! crash ends an open transaction block, which the harness rolls back in SQLite too.
//!
//! Each sequence runs on heap tables and on undo tables (in-place updates with an undo
//! log; the kind comes from `SET default_table_kind`), without and with indexes: all
//! four must agree with SQLite.
//!
//! `WALDEN_SQL_DIFF_CASES=n` runs the sequences of seeds 0..n (200 by default) against
//! SQLite on each of the four configurations; `WALDEN_SQL_DIFF_PG_CASES=n` runs seeds
//! 0..n (500 by default, about 15 s in a debug build) against SQLite and PostgreSQL, seed
//! `s` on configuration `s % 4`; without PostgreSQL 15 that test says "skipped:
//! PostgreSQL 15 not found" and passes. `WALDEN_SQL_DIFF_SEED=s` replays one seed (in both
//! tests); `WALDEN_SQL_DIFF_KIND=heap` (or `undo`, `+indexes`) runs only that
//! configuration. A failure prints its seed and the statement list shrunk to the
//! statements that still show it.
#![allow(clippy::unwrap_used)]

#[path = "differential/on_postgres.rs"]
mod on_postgres;
#[path = "differential/relations.rs"]
mod relations;
mod support;

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use rusqlite::functions::{Context, FunctionFlags};
use rusqlite::types::ValueRef;
use rusqlite::Connection;
use walden::rng::SimRng;
use walden::vfs::{CrashMode, SimVfs};
use walden::{Database, Options, TableKind, Value};
use walden_sql::{code, Session, StatementResult};

const CREATE_TABLE: &str = "CREATE TABLE t (a int, b int, c text)";
/// Both tables of the generated statements.
const CREATE_TABLES: &str =
    "CREATE TABLE t (a int, b int, c text); CREATE TABLE u (a int, b int, c text)";
/// Every integer in the table stays within this magnitude: inserted values are at most
/// 1000, `SET a` and INSERT ... SELECT reduce larger results `% 1000`, and `SET b = b + k`
/// adds at most 9 per statement. The table check asserts it.
const COLUMN_BOUND: i128 = 5000;
/// Every text in the table stays within this many characters: a text assigned to a
/// column mentions that column at most once. The table check asserts it.
const TEXT_BOUND: i128 = 1000;
const INT4_MAX: i128 = i32::MAX as i128;

// ---------------------------------------------------------------------------------------
// Expressions, written in either dialect.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    Int,
    Text,
    Bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    /// `mod(x, y)`: the same as `x % y`.
    ModFn,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dialect {
    Walden,
    Sqlite,
}

#[derive(Clone, Debug)]
enum E {
    Col(&'static str),
    Int(i64),
    Text(String),
    /// An integer in quotes, which PostgreSQL reads as an integer when it is compared
    /// with one, and SQLite too when it is compared with an integer column.
    QuotedInt(i64),
    Bool(bool),
    Null,
    Neg(Box<E>),
    Arith(Op, Box<E>, Box<E>),
    Cmp(&'static str, Box<E>, Box<E>),
    And(Box<E>, Box<E>),
    Or(Box<E>, Box<E>),
    Not(Box<E>),
    IsNull(Box<E>, bool),
    In(Box<E>, Vec<E>, bool),
    Between(Box<E>, Box<E>, Box<E>, bool),
    Case {
        operand: Option<Box<E>>,
        whens: Vec<(E, E)>,
        otherwise: Option<Box<E>>,
    },
    Coalesce(Vec<E>),
    /// abs, length (or char_length), upper or lower.
    Call(&'static str, Box<E>),
    /// Text and text, or text and an integer (which PostgreSQL turns into text).
    Concat(Box<E>, Box<E>),
    /// An integer as text.
    CastText(Box<E>),
    /// A boolean as an integer (1 or 0).
    BoolInt(Box<E>),
    /// `substr(x, start, length)`, with start >= 1 and length >= 0, where SQLite and
    /// PostgreSQL agree.
    Substr(Box<E>, i64, Option<i64>),
    /// `x [NOT] IN (SELECT ...)`.
    InSelect(Box<E>, Box<Sub>, bool),
    /// `EXISTS (SELECT ...)` (negated by an enclosing NOT).
    Exists(Box<Sub>),
    /// `x op ANY (SELECT y ...)` or `x op ALL (...)`. SQLite has neither: its text says
    /// the same with EXISTS and CASE, three-valued as PostgreSQL's (`x` names its
    /// columns qualified, as inside the EXISTS they would otherwise be the subquery's).
    Quantified {
        op: &'static str,
        x: Box<E>,
        sub: Box<Sub>,
        all: bool,
    },
    /// `(SELECT agg(...) FROM ...)`: one row of one value. Only ever compared, never an
    /// operand of arithmetic: PostgreSQL's count is a bigint, which SQLite's `i4` bridge
    /// would not know.
    Scalar(Box<Sub>),
}

/// A subquery over one table, `SELECT item FROM table [WHERE filter]`, for IN, EXISTS and
/// scalar subqueries. None of its expressions can fail: each engine decides how many of
/// its rows to read, and whether to run it at all.
#[derive(Clone, Debug)]
struct Sub {
    item: SubItem,
    table: &'static str,
    filter: Option<E>,
}

#[derive(Clone, Debug)]
enum SubItem {
    /// `SELECT 1`, for EXISTS.
    One,
    Expr(E),
    /// An aggregate (min, max, count) of an expression, or `count(*)` (None): one row.
    Agg(&'static str, Option<E>),
}

impl Sub {
    fn exprs(&self) -> Vec<&E> {
        let item = match &self.item {
            SubItem::Expr(e) | SubItem::Agg(_, Some(e)) => Some(e),
            SubItem::One | SubItem::Agg(_, None) => None,
        };
        item.into_iter().chain(self.filter.as_ref()).collect()
    }

    fn sql(&self, d: Dialect) -> String {
        let item = match &self.item {
            SubItem::One => "1".to_string(),
            SubItem::Expr(e) => e.sql(d),
            SubItem::Agg(f, Some(e)) => format!("{f}({})", e.sql(d)),
            SubItem::Agg(f, None) => format!("{f}(*)"),
        };
        let filter = match &self.filter {
            Some(f) => format!(" WHERE {}", f.sql(d)),
            None => String::new(),
        };
        format!("SELECT {item} FROM {}{filter}", self.table)
    }
}

/// PostgreSQL's operator precedence, loosest first.
mod prec {
    pub const TOP: u8 = 0;
    pub const OR: u8 = 1;
    pub const AND: u8 = 2;
    pub const NOT: u8 = 3;
    pub const IS: u8 = 4;
    pub const CMP: u8 = 5;
    /// IN and BETWEEN.
    pub const RANGE: u8 = 6;
    /// `||`, like any other operator.
    pub const OTHER: u8 = 7;
    pub const ADD: u8 = 8;
    pub const MUL: u8 = 9;
    pub const NEG: u8 = 10;
    pub const ATOM: u8 = 11;
}

fn bx(e: E) -> Box<E> {
    Box::new(e)
}

impl E {
    fn children(&self) -> Vec<&E> {
        match self {
            E::Col(_) | E::Int(_) | E::Text(_) | E::QuotedInt(_) | E::Bool(_) | E::Null => {
                vec![]
            }
            E::Neg(x)
            | E::Not(x)
            | E::IsNull(x, _)
            | E::Call(_, x)
            | E::CastText(x)
            | E::BoolInt(x)
            | E::Substr(x, _, _) => vec![x],
            E::Arith(_, x, y) | E::Cmp(_, x, y) | E::And(x, y) | E::Or(x, y) | E::Concat(x, y) => {
                vec![x, y]
            }
            E::In(x, list, _) => std::iter::once(&**x).chain(list).collect(),
            E::Between(x, lo, hi, _) => vec![x, lo, hi],
            E::Case {
                operand,
                whens,
                otherwise,
            } => operand
                .iter()
                .map(|o| &**o)
                .chain(whens.iter().flat_map(|(w, t)| [w, t]))
                .chain(otherwise.iter().map(|o| &**o))
                .collect(),
            E::Coalesce(args) => args.iter().collect(),
            E::InSelect(x, sub, _) => std::iter::once(&**x).chain(sub.exprs()).collect(),
            E::Exists(sub) | E::Scalar(sub) => sub.exprs(),
            E::Quantified { x, sub, .. } => std::iter::once(&**x).chain(sub.exprs()).collect(),
        }
    }

    fn column_refs(&self, name: &str) -> usize {
        let own = matches!(self, E::Col(c) if *c == name) as usize;
        own + self
            .children()
            .iter()
            .map(|c| c.column_refs(name))
            .sum::<usize>()
    }

    fn has_column(&self) -> bool {
        matches!(self, E::Col(_)) || self.children().iter().any(|c| c.has_column())
    }

    /// An upper bound of the magnitude of an integer expression's value.
    fn bound(&self) -> i128 {
        match self {
            E::Col(_) => COLUMN_BOUND,
            E::Int(k) => k.unsigned_abs() as i128,
            E::Neg(x) | E::Call("abs", x) => x.bound(),
            E::Call("length" | "char_length", _) => TEXT_BOUND,
            E::BoolInt(_) => 1,
            E::Arith(Op::Add | Op::Sub, x, y) => x.bound() + y.bound(),
            E::Arith(Op::Mul, x, y) => x.bound().saturating_mul(y.bound()),
            E::Arith(Op::Div, x, _) => x.bound(),
            E::Arith(Op::Mod | Op::ModFn, x, y) => x.bound().min(y.bound()),
            E::Case {
                whens, otherwise, ..
            } => whens
                .iter()
                .map(|(_, t)| t)
                .chain(otherwise.iter().map(|o| &**o))
                .map(E::bound)
                .max()
                .unwrap_or(0),
            E::Coalesce(args) => args.iter().map(E::bound).max().unwrap_or(0),
            // min or max of a column (never an operand of arithmetic: see `E::Scalar`).
            E::Scalar(_) => COLUMN_BOUND,
            _ => 0,
        }
    }

    /// Whether PostgreSQL folds the expression to a NULL constant when planning: NULL
    /// itself, or a strict operator or function with such an operand.
    fn folds_to_null(&self) -> bool {
        match self {
            E::Null => true,
            E::Neg(x) | E::Call(_, x) | E::CastText(x) | E::BoolInt(x) | E::Substr(x, _, _) => {
                x.folds_to_null()
            }
            E::Arith(_, x, y) | E::Cmp(_, x, y) | E::Concat(x, y) => {
                x.folds_to_null() || y.folds_to_null()
            }
            _ => false,
        }
    }

    /// Whether some part of the expression folds to NULL (see `folds_to_null`).
    fn has_null_fold(&self) -> bool {
        self.folds_to_null() || self.children().iter().any(|c| c.has_null_fold())
    }

    /// True if evaluating the expression may raise an error (division by zero or
    /// integer overflow) for some table contents.
    fn can_fail(&self) -> bool {
        let own = match self {
            E::Arith(Op::Div | Op::Mod | Op::ModFn, _, y) => !matches!(**y, E::Int(k) if k != 0),
            E::Arith(..) | E::Neg(_) | E::Call("abs", _) => self.bound() > INT4_MAX,
            _ => false,
        };
        own || self.children().iter().any(|c| c.can_fail())
    }

    fn sql(&self, d: Dialect) -> String {
        match d {
            Dialect::Walden => self.pg().0,
            Dialect::Sqlite => self.lite(),
        }
    }

    /// PostgreSQL's text with only the parentheses its precedence needs (so that the
    /// parser's precedence is tested too), and the precedence of the outermost operator.
    fn pg(&self) -> (String, u8) {
        use prec::*;
        let wrap = |e: &E, min: u8| {
            let (text, p) = e.pg();
            if p >= min {
                text
            } else {
                format!("({text})")
            }
        };
        let list = |es: &[E]| {
            es.iter()
                .map(|e| wrap(e, TOP))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let not = |negated: bool| if negated { "NOT " } else { "" };
        match self {
            E::Int(k) if *k < 0 => (k.to_string(), NEG),
            E::Neg(x) => (format!("- {}", wrap(x, NEG)), NEG),
            E::Arith(Op::ModFn, x, y) => (format!("mod({}, {})", wrap(x, TOP), wrap(y, TOP)), ATOM),
            E::Arith(op, x, y) => {
                let p = if matches!(op, Op::Add | Op::Sub) {
                    ADD
                } else {
                    MUL
                };
                let text = format!("{} {} {}", wrap(x, p), op.symbol(), wrap(y, p + 1));
                (text, p)
            }
            E::Concat(x, y) => (
                format!("{} || {}", wrap(x, OTHER), wrap(y, OTHER + 1)),
                OTHER,
            ),
            // Comparisons do not associate.
            E::Cmp(op, x, y) => (
                format!("{} {op} {}", wrap(x, CMP + 1), wrap(y, CMP + 1)),
                CMP,
            ),
            E::And(x, y) => (format!("{} AND {}", wrap(x, AND), wrap(y, AND + 1)), AND),
            E::Or(x, y) => (format!("{} OR {}", wrap(x, OR), wrap(y, OR + 1)), OR),
            E::Not(x) => (format!("NOT {}", wrap(x, NOT)), NOT),
            E::IsNull(x, negated) => (format!("{} IS {}NULL", wrap(x, IS + 1), not(*negated)), IS),
            E::In(x, items, negated) => (
                format!(
                    "{} {}IN ({})",
                    wrap(x, RANGE + 1),
                    not(*negated),
                    list(items)
                ),
                RANGE,
            ),
            E::Between(x, lo, hi, negated) => (
                format!(
                    "{} {}BETWEEN {} AND {}",
                    wrap(x, RANGE + 1),
                    not(*negated),
                    wrap(lo, RANGE + 1),
                    wrap(hi, RANGE + 1)
                ),
                RANGE,
            ),
            E::InSelect(x, sub, negated) => (
                format!(
                    "{} {}IN ({})",
                    wrap(x, RANGE + 1),
                    not(*negated),
                    sub.sql(Dialect::Walden)
                ),
                RANGE,
            ),
            E::Quantified { op, x, sub, all } => (
                format!(
                    "{} {op} {} ({})",
                    wrap(x, CMP + 1),
                    if *all { "ALL" } else { "ANY" },
                    sub.sql(Dialect::Walden)
                ),
                CMP,
            ),
            E::CastText(x) if x.pg().1 == ATOM => (format!("{}::text", wrap(x, ATOM)), ATOM),
            E::CastText(x) => (format!("CAST({} AS text)", wrap(x, TOP)), ATOM),
            E::BoolInt(x) => (format!("CAST({} AS int)", wrap(x, TOP)), ATOM),
            E::Substr(x, start, Some(len)) if *start % 2 == 0 => (
                format!("substring({} FROM {start} FOR {len})", wrap(x, TOP)),
                ATOM,
            ),
            _ => (self.common(Dialect::Walden), ATOM),
        }
    }

    /// SQLite's text: every operator in parentheses, PostgreSQL's integer arithmetic
    /// through the functions that check it.
    fn lite(&self) -> String {
        let s = |e: &E| e.lite();
        let not = |negated: bool| if negated { "NOT " } else { "" };
        let list = |es: &[E]| es.iter().map(s).collect::<Vec<_>>().join(", ");
        match self {
            E::Int(k) if *k < 0 => format!("({k})"),
            E::Neg(x) => format!("i4(- {})", s(x)),
            E::Arith(Op::Div, x, y) => format!("pgdiv({}, {})", s(x), s(y)),
            E::Arith(Op::Mod | Op::ModFn, x, y) => format!("pgmod({}, {})", s(x), s(y)),
            E::Arith(op, x, y) => format!("i4({} {} {})", s(x), op.symbol(), s(y)),
            E::Concat(x, y) => format!("({} || {})", s(x), s(y)),
            E::Cmp(op, x, y) => format!("({} {op} {})", s(x), s(y)),
            E::And(x, y) => format!("({} AND {})", s(x), s(y)),
            E::Or(x, y) => format!("({} OR {})", s(x), s(y)),
            E::Not(x) => format!("(NOT {})", s(x)),
            E::IsNull(x, negated) => format!("({} IS {}NULL)", s(x), not(*negated)),
            E::In(x, items, negated) => format!("({} {}IN ({}))", s(x), not(*negated), list(items)),
            E::InSelect(x, sub, negated) => format!(
                "({} {}IN ({}))",
                s(x),
                not(*negated),
                sub.sql(Dialect::Sqlite)
            ),
            E::Quantified { op, x, sub, all } => quantified_lite(op, x, sub, *all),
            E::Between(x, lo, hi, negated) => format!(
                "({} {}BETWEEN {} AND {})",
                s(x),
                not(*negated),
                s(lo),
                s(hi)
            ),
            E::CastText(x) => format!("CAST({} AS TEXT)", s(x)),
            E::BoolInt(x) => format!("CAST({} AS INTEGER)", s(x)),
            E::Call("abs", x) => format!("i4(abs({}))", s(x)),
            E::Call("char_length", x) => format!("length({})", s(x)),
            _ => self.common(Dialect::Sqlite),
        }
    }

    /// The forms both dialects write alike (around their own operands).
    fn common(&self, d: Dialect) -> String {
        let s = |e: &E| e.sql(d);
        let list = |es: &[E]| es.iter().map(s).collect::<Vec<_>>().join(", ");
        match self {
            E::Col(c) => c.to_string(),
            E::Int(k) => k.to_string(),
            E::Text(t) => format!("'{t}'"),
            E::QuotedInt(k) => format!("'{k}'"),
            E::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
            E::Null => "NULL".into(),
            E::Case {
                operand,
                whens,
                otherwise,
            } => {
                let mut out = String::from("CASE");
                if let Some(o) = operand {
                    out += &format!(" {}", s(o));
                }
                for (w, t) in whens {
                    out += &format!(" WHEN {} THEN {}", s(w), s(t));
                }
                if let Some(o) = otherwise {
                    out += &format!(" ELSE {}", s(o));
                }
                out + " END"
            }
            E::Coalesce(args) => format!("coalesce({})", list(args)),
            E::Call(f, x) => format!("{f}({})", s(x)),
            E::Substr(x, start, None) => format!("substr({}, {start})", s(x)),
            E::Substr(x, start, Some(len)) => format!("substr({}, {start}, {len})", s(x)),
            E::Exists(sub) => format!("EXISTS ({})", sub.sql(d)),
            E::Scalar(sub) => format!("({})", sub.sql(d)),
            other => unreachable!("{other:?} has a form per dialect"),
        }
    }
}

/// `x op ANY|ALL (SELECT y FROM table WHERE filter)` for SQLite: ANY is true if some
/// row's comparison is true, else NULL if some row's is NULL, else false; ALL is false if
/// some row's is false, else NULL if some row's is NULL, else true.
fn quantified_lite(op: &str, x: &E, sub: &Sub, all: bool) -> String {
    let SubItem::Expr(y) = &sub.item else {
        unreachable!("a quantified subquery selects an expression")
    };
    let cond = format!("({} {op} {})", x.lite(), y.lite());
    let filter = match &sub.filter {
        Some(f) => format!("{} AND ", f.lite()),
        None => String::new(),
    };
    let exists = |c: &str| format!("EXISTS (SELECT 1 FROM {} WHERE {filter}{c})", sub.table);
    let (decides, value, otherwise) = if all {
        (format!("NOT {cond}"), 0, 1)
    } else {
        (cond.clone(), 1, 0)
    };
    format!(
        "CASE WHEN {} THEN {value} WHEN {} THEN NULL ELSE {otherwise} END",
        exists(&decides),
        exists(&format!("{cond} IS NULL"))
    )
}

impl Op {
    fn symbol(self) -> &'static str {
        match self {
            Op::Add => "+",
            Op::Sub => "-",
            Op::Mul => "*",
            Op::Div => "/",
            Op::Mod | Op::ModFn => "%",
        }
    }
}

// ---------------------------------------------------------------------------------------
// The generator.

struct Gen {
    rng: SimRng,
    /// The choices of constructs added to the generator later (FILTER): drawn from their
    /// own stream, so that the statements a seed gave before stay as they were.
    later: SimRng,
    /// The columns expressions may name now.
    scope: Scope,
}

/// The columns an expression may name: one table's, unqualified (a statement over `t` or
/// `u`), or qualified ones of one or both tables (joins, subqueries and the outer
/// columns they are correlated with).
#[derive(Clone, Copy, Debug)]
struct Scope {
    ints: &'static [&'static str],
    texts: &'static [&'static str],
}

const ONE_TABLE: Scope = Scope {
    ints: &INT_COLUMNS,
    texts: &["c"],
};
const T_QUALIFIED: Scope = Scope {
    ints: &["t.a", "t.b"],
    texts: &["t.c"],
};
const U_QUALIFIED: Scope = Scope {
    ints: &["u.a", "u.b"],
    texts: &["u.c"],
};
const JOINED: Scope = Scope {
    ints: &["t.a", "t.b", "u.a", "u.b"],
    texts: &["t.c", "u.c"],
};

const INT_COLUMNS: [&str; 2] = ["a", "b"];
const CMP_OPS: [&str; 7] = ["=", "<>", "!=", "<", "<=", ">", ">="];

impl Gen {
    fn new(seed: u64) -> Gen {
        Gen {
            rng: SimRng::new(seed),
            later: SimRng::new(seed ^ 0x9e37_79b9_7f4a_7c15),
            scope: ONE_TABLE,
        }
    }

    /// Runs `f` drawing from the `later` stream.
    fn with_later<R>(&mut self, f: impl FnOnce(&mut Gen) -> R) -> R {
        std::mem::swap(&mut self.rng, &mut self.later);
        let r = f(self);
        std::mem::swap(&mut self.rng, &mut self.later);
        r
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.rng.below(xs.len() as u64) as usize]
    }

    /// An integer column of the scope.
    fn int_col(&mut self) -> &'static str {
        self.pick(self.scope.ints)
    }

    /// A text column of the scope (no draw when there is one, so that one table's
    /// sequences read the generator as they did before scopes).
    fn text_col(&mut self) -> &'static str {
        match self.scope.texts {
            [only] => only,
            texts => self.pick(texts),
        }
    }

    /// Any column of the scope.
    fn any_col(&mut self) -> &'static str {
        let n = self.scope.ints.len() + self.scope.texts.len();
        let i = self.rng.below(n as u64) as usize;
        match self.scope.ints.get(i) {
            Some(c) => c,
            None => self.scope.texts[i - self.scope.ints.len()],
        }
    }

    /// Runs `f` with `scope` as the columns expressions may name.
    fn in_scope<R>(&mut self, scope: Scope, f: impl FnOnce(&mut Gen) -> R) -> R {
        let saved = std::mem::replace(&mut self.scope, scope);
        let r = f(self);
        self.scope = saved;
        r
    }

    /// A value in lo..=hi.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.rng.below((hi - lo + 1) as u64) as i64
    }

    /// An integer literal in an expression: mostly small, now and then large enough to
    /// overflow a product.
    fn int_literal(&mut self) -> i64 {
        match self.rng.below(100) {
            0..=3 => self.pick(&[10_000_000, 100_000, -100_000, 1000, -1000]),
            _ => self.range(-20, 20),
        }
    }

    fn nonzero_literal(&mut self) -> i64 {
        let k = self.range(1, 7);
        if self.rng.chance(30) {
            -k
        } else {
            k
        }
    }

    /// Short texts over few letters, so that equal values and prefixes are common; one
    /// upper-case letter, so that upper() and lower() change something and byte order
    /// puts it before the lower-case ones.
    fn text_literal(&mut self) -> String {
        let len = match self.rng.below(100) {
            0..=5 => 0,
            6..=45 => 1,
            46..=80 => 2,
            _ => 3,
        };
        (0..len)
            .map(|_| self.pick(&['a', 'b', 'c', 'd', 'B']))
            .collect()
    }

    fn leaf(&mut self, ty: Ty, null_ok: bool) -> E {
        if null_ok && self.rng.chance(8) {
            return E::Null;
        }
        match ty {
            Ty::Int if self.rng.chance(55) => E::Col(self.int_col()),
            Ty::Int => E::Int(self.int_literal()),
            Ty::Text if self.rng.chance(55) => E::Col(self.text_col()),
            Ty::Text => E::Text(self.text_literal()),
            Ty::Bool => match self.rng.below(10) {
                0 if self.rng.chance(30) => E::Bool(self.rng.chance(50)),
                0 => {
                    let col = bx(E::Col(self.int_col()));
                    let k = self.range(-20, 20);
                    if self.rng.chance(50) {
                        E::Cmp(self.pick(&CMP_OPS), col, bx(E::QuotedInt(k)))
                    } else {
                        E::In(
                            col,
                            vec![E::QuotedInt(k), E::Int(self.range(-20, 20))],
                            false,
                        )
                    }
                }
                1 => E::IsNull(bx(E::Col(self.any_col())), self.rng.chance(50)),
                2..=3 => E::Cmp(
                    self.pick(&CMP_OPS),
                    bx(E::Col(self.text_col())),
                    bx(E::Text(self.text_literal())),
                ),
                _ => E::Cmp(
                    self.pick(&CMP_OPS),
                    bx(E::Col(self.int_col())),
                    bx(self.leaf(Ty::Int, false)),
                ),
            },
        }
    }

    /// An expression of type `ty`. `guarded`: the expression may be left unevaluated by
    /// one engine and evaluated by the other, so it must not be able to fail.
    /// `null_ok`: it may be a bare NULL (not where PostgreSQL could not type it).
    fn expr(&mut self, ty: Ty, depth: u32, guarded: bool, null_ok: bool) -> E {
        if depth == 0 || self.rng.chance(25) {
            return self.leaf(ty, null_ok);
        }
        let e = match ty {
            Ty::Int => self.int_expr(depth - 1, guarded),
            Ty::Text => self.text_expr(depth - 1, guarded),
            Ty::Bool => self.bool_expr(depth - 1, guarded),
        };
        // PostgreSQL folds a strict operator or function with a NULL operand to NULL
        // when planning, so the other operands are never evaluated (and a NULL folded
        // into a WHERE stops the scan): one that can fail fails in Walden only
        // (NOTES-pg-oracle.md, discrepancy 2).
        if e.can_fail() && (guarded || e.has_null_fold()) {
            self.leaf(ty, null_ok)
        } else {
            e
        }
    }

    fn arith(&mut self, op: Op, x: E, y: E) -> E {
        // A constant subtree would be folded (and could fail) when PostgreSQL plans.
        let x = if x.has_column() || y.has_column() {
            x
        } else {
            E::Col(self.int_col())
        };
        E::Arith(op, bx(x), bx(y))
    }

    fn int_expr(&mut self, d: u32, g: bool) -> E {
        match self.rng.below(10) {
            0..=3 => {
                let op = self.pick(&[Op::Add, Op::Sub, Op::Mul]);
                let (x, y) = (
                    self.expr(Ty::Int, d, g, true),
                    self.expr(Ty::Int, d, g, true),
                );
                self.arith(op, x, y)
            }
            4 => {
                let op = self.pick(&[Op::Div, Op::Mod, Op::ModFn]);
                let x = self.expr(Ty::Int, d, g, true);
                let y = if g || self.rng.chance(50) {
                    E::Int(self.nonzero_literal())
                } else if self.rng.chance(15) {
                    E::Int(0)
                } else {
                    self.expr(Ty::Int, d, g, false)
                };
                self.arith(op, x, y)
            }
            5 => E::Neg(bx(self.expr(Ty::Int, d, g, false))),
            6 => E::Call("abs", bx(self.expr(Ty::Int, d, g, false))),
            7 => match self.rng.below(4) {
                0 => E::BoolInt(bx(self.expr(Ty::Bool, d, g, false))),
                _ => E::Call(
                    self.pick(&["length", "length", "char_length"]),
                    bx(self.expr(Ty::Text, d, g, false)),
                ),
            },
            8 => self.coalesce(Ty::Int, d, g),
            _ => self.case(Ty::Int, d, g),
        }
    }

    fn text_expr(&mut self, d: u32, g: bool) -> E {
        match self.rng.below(11) {
            8 => E::CastText(bx(self.expr(Ty::Int, d, g, false))),
            9 => {
                let len = self.rng.chance(70).then(|| self.range(0, 3));
                E::Substr(bx(self.expr(Ty::Text, d, g, false)), self.range(1, 4), len)
            }
            10 => E::Concat(
                bx(self.expr(Ty::Text, d, g, false)),
                bx(self.expr(Ty::Int, d, g, false)),
            ),
            0..=1 => E::Call(
                self.pick(&["upper", "lower"]),
                bx(self.expr(Ty::Text, d, g, false)),
            ),
            2..=4 => E::Concat(
                bx(self.expr(Ty::Text, d, g, false)),
                bx(self.expr(Ty::Text, d, g, true)),
            ),
            5 => self.coalesce(Ty::Text, d, g),
            _ => self.case(Ty::Text, d, g),
        }
    }

    fn bool_expr(&mut self, d: u32, g: bool) -> E {
        match self.rng.below(14) {
            0..=2 => E::Cmp(
                self.pick(&CMP_OPS),
                bx(self.expr(Ty::Int, d, g, true)),
                bx(self.expr(Ty::Int, d, g, true)),
            ),
            3..=4 => E::Cmp(
                self.pick(&CMP_OPS),
                bx(self.expr(Ty::Text, d, g, true)),
                bx(self.expr(Ty::Text, d, g, true)),
            ),
            5 => E::And(
                bx(self.expr(Ty::Bool, d, true, false)),
                bx(self.expr(Ty::Bool, d, true, false)),
            ),
            6 => E::Or(
                bx(self.expr(Ty::Bool, d, true, false)),
                bx(self.expr(Ty::Bool, d, true, false)),
            ),
            7 => E::Not(bx(self.expr(Ty::Bool, d, g, false))),
            8 => {
                let ty = self.pick(&[Ty::Int, Ty::Text, Ty::Bool]);
                E::IsNull(bx(self.expr(ty, d, g, true)), self.rng.chance(50))
            }
            9..=10 => {
                let ty = self.pick(&[Ty::Int, Ty::Text]);
                let x = self.expr(ty, d, g, false);
                let items = (0..self.range(1, 4))
                    .map(|_| {
                        if self.rng.chance(20) {
                            self.expr(ty, d, true, true)
                        } else {
                            self.leaf(ty, true)
                        }
                    })
                    .collect();
                E::In(bx(x), items, self.rng.chance(30))
            }
            11 => E::Between(
                bx(self.expr(Ty::Int, d, g, true)),
                bx(self.expr(Ty::Int, d, true, true)),
                bx(self.expr(Ty::Int, d, true, true)),
                self.rng.chance(30),
            ),
            12 => E::Cmp(
                self.pick(&["=", "<>"]),
                bx(self.expr(Ty::Bool, d, g, false)),
                bx(self.expr(Ty::Bool, d, g, false)),
            ),
            _ => {
                if self.rng.chance(50) {
                    self.case(Ty::Bool, d, g)
                } else {
                    self.coalesce(Ty::Bool, d, g)
                }
            }
        }
    }

    /// The first argument is evaluated always, the others only if it is NULL.
    fn coalesce(&mut self, ty: Ty, d: u32, g: bool) -> E {
        let mut args = vec![self.expr(ty, d, g, false)];
        for _ in 0..self.range(1, 2) {
            args.push(self.expr(ty, d, true, true));
        }
        E::Coalesce(args)
    }

    /// Only the operand (or the first condition) is evaluated always. The first result
    /// is not a bare NULL, so that PostgreSQL can type the CASE.
    fn case(&mut self, ty: Ty, d: u32, g: bool) -> E {
        let operand_ty = self.pick(&[Ty::Int, Ty::Text]);
        let operand = self
            .rng
            .chance(30)
            .then(|| bx(self.expr(operand_ty, d, g, false)));
        let mut whens = Vec::new();
        for i in 0..self.range(1, 2) {
            let when = match operand {
                Some(_) => self.leaf(operand_ty, true),
                None => self.expr(Ty::Bool, d, g || i > 0, false),
            };
            whens.push((when, self.expr(ty, d, true, i > 0)));
        }
        let otherwise = self
            .rng
            .chance(60)
            .then(|| bx(self.expr(ty, d, true, true)));
        E::Case {
            operand,
            whens,
            otherwise,
        }
    }

    /// A condition an index on `a`, `(b, a)` or `c` can serve: an equality, a range,
    /// IN, BETWEEN, or an equality on `b` with a range on `a`.
    fn key_predicate(&mut self) -> E {
        let col = self.pick(&INT_COLUMNS);
        let lit = |g: &mut Gen| E::Int(g.range(-20, 20));
        match self.rng.below(7) {
            0 => E::Cmp("=", bx(E::Col(col)), bx(lit(self))),
            1 => {
                let op = self.pick(&["<", "<=", ">", ">="]);
                if self.rng.chance(30) {
                    E::Cmp(op, bx(lit(self)), bx(E::Col(col)))
                } else {
                    E::Cmp(op, bx(E::Col(col)), bx(lit(self)))
                }
            }
            2 => {
                let items = (0..self.range(1, 4))
                    .map(|_| self.leaf(Ty::Int, true))
                    .collect();
                E::In(bx(E::Col(col)), items, false)
            }
            3 => E::Between(bx(E::Col(col)), bx(lit(self)), bx(lit(self)), false),
            4 => {
                let op = self.pick(&["<", "<=", ">", ">=", "="]);
                E::And(
                    bx(E::Cmp("=", bx(E::Col("b")), bx(lit(self)))),
                    bx(E::Cmp(op, bx(E::Col("a")), bx(lit(self)))),
                )
            }
            5 => {
                let op = self.pick(&["=", "<", ">="]);
                E::Cmp(op, bx(E::Col("c")), bx(E::Text(self.text_literal())))
            }
            _ => E::In(
                bx(E::Col("c")),
                (0..self.range(1, 3))
                    .map(|_| E::Text(self.text_literal()))
                    .collect(),
                false,
            ),
        }
    }

    fn predicate(&mut self) -> E {
        let depth = self.range(1, 3) as u32;
        self.expr(Ty::Bool, depth, false, false)
    }

    /// An integer expression to store in a column, reduced `% 1000` where it could
    /// exceed the column bound.
    fn stored_int(&mut self) -> E {
        let depth = self.range(0, 2) as u32;
        let e = self.expr(Ty::Int, depth, false, true);
        if e.bound() > COLUMN_BOUND {
            E::Arith(Op::Mod, bx(e), bx(E::Int(1000)))
        } else {
            e
        }
    }

    /// A text expression to store in `c`: it mentions `c` at most once, so that texts
    /// grow by at most a few letters per statement.
    fn stored_text(&mut self) -> E {
        for _ in 0..10 {
            let depth = self.range(0, 2) as u32;
            let e = self.expr(Ty::Text, depth, false, true);
            if e.column_refs("c") <= 1 {
                return e;
            }
        }
        E::Text(self.text_literal())
    }
}

// ---------------------------------------------------------------------------------------
// Statements.

#[derive(Clone, Debug, PartialEq, Eq)]
enum Check {
    /// The rows must come back in the same order.
    Ordered,
    /// The rows are compared as sorted multisets.
    Unordered,
    /// LIMIT or OFFSET without a full ORDER BY: which rows come back is up to each
    /// engine, so only their number must agree, and Walden's rows must be among those
    /// of the same query without LIMIT and OFFSET, run on the other engine (here in
    /// Walden's dialect, which PostgreSQL runs, and SQLite's).
    Subset {
        walden: String,
        sqlite: Option<String>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Write,
    Query(Check),
    Begin,
    Commit,
    Rollback,
    /// VACUUM or CHECKPOINT: Walden only, and no change to any result. Skipped inside a
    /// block (where VACUUM is an error).
    Maintenance,
    /// Walden loses power and recovers (unsynced writes dropped, kept or torn): every
    /// committed statement must survive and an open block must vanish, as if SQLite
    /// rolled it back.
    Crash,
}

/// A statement in Walden's dialect (which PostgreSQL runs as it is) and SQLite's.
#[derive(Clone, Debug)]
struct Stmt {
    walden: String,
    /// None for what SQLite cannot run: a query that only PostgreSQL checks (skipped
    /// without it), or a Walden-only statement (maintenance, crash).
    sqlite: Option<String>,
    kind: Kind,
}

impl Stmt {
    fn same(sql: String, kind: Kind) -> Stmt {
        Stmt {
            walden: sql.clone(),
            sqlite: Some(sql),
            kind,
        }
    }

    fn walden_only(sql: &str, kind: Kind) -> Stmt {
        Stmt {
            walden: sql.into(),
            sqlite: None,
            kind,
        }
    }

    /// A statement of text and expressions.
    fn build(parts: &[Part], kind: Kind) -> Stmt {
        Stmt {
            walden: render(parts, Dialect::Walden),
            sqlite: Some(render(parts, Dialect::Sqlite)),
            kind,
        }
    }

    /// A query with LIMIT or OFFSET but without a full ORDER BY.
    fn limited(parts: &[Part], limit: &[Part]) -> Stmt {
        let check = Check::Subset {
            walden: render(parts, Dialect::Walden),
            sqlite: Some(render(parts, Dialect::Sqlite)),
        };
        let parts: Vec<&Part> = parts.iter().chain(limit).collect();
        let text = |d| parts.iter().map(|p| p.sql(d)).collect();
        Stmt {
            walden: text(Dialect::Walden),
            sqlite: Some(text(Dialect::Sqlite)),
            kind: Kind::Query(check),
        }
    }

    /// The same statement for PostgreSQL only: SQLite lacks the construct.
    fn without_sqlite(mut self) -> Stmt {
        self.sqlite = None;
        if let Kind::Query(Check::Subset { sqlite, .. }) = &mut self.kind {
            *sqlite = None;
        }
        self
    }

    /// Whether only Walden and PostgreSQL run it (a query SQLite cannot run).
    fn postgres_only(&self) -> bool {
        self.sqlite.is_none() && matches!(self.kind, Kind::Query(_))
    }
}

fn render(parts: &[Part], d: Dialect) -> String {
    parts.iter().map(|p| p.sql(d)).collect()
}

#[derive(Clone)]
enum Part {
    Sql(String),
    /// Text that differs: Walden's, SQLite's.
    Both(String, String),
    Expr(E),
}

impl Part {
    fn sql(&self, d: Dialect) -> String {
        match (self, d) {
            (Part::Sql(s), _) | (Part::Both(s, _), Dialect::Walden) => s.clone(),
            (Part::Both(_, s), Dialect::Sqlite) => s.clone(),
            (Part::Expr(e), d) => e.sql(d),
        }
    }
}

fn sql(s: impl Into<String>) -> Part {
    Part::Sql(s.into())
}

/// An ORDER BY item: PostgreSQL's default NULL placement for Walden, spelled out for
/// SQLite (whose defaults are the opposite).
fn order_item(g: &mut Gen, key: Part) -> Vec<Part> {
    let desc = g.rng.chance(30);
    let dir = if desc { " DESC" } else { "" };
    let explicit = match g.rng.below(5) {
        0 => Some(" NULLS FIRST"),
        1 => Some(" NULLS LAST"),
        _ => None,
    };
    let sqlite_nulls = explicit.unwrap_or(if desc { " NULLS FIRST" } else { " NULLS LAST" });
    vec![
        key,
        Part::Both(
            format!("{dir}{}", explicit.unwrap_or("")),
            format!("{dir}{sqlite_nulls}"),
        ),
    ]
}

/// LIMIT and OFFSET (SQLite needs a LIMIT before an OFFSET).
fn limit_offset(g: &mut Gen) -> Vec<Part> {
    match g.rng.below(3) {
        0 => vec![sql(format!(" LIMIT {}", g.range(0, 8)))],
        1 => vec![sql(format!(
            " LIMIT {} OFFSET {}",
            g.range(0, 8),
            g.range(0, 5)
        ))],
        _ => {
            let n = g.range(0, 5);
            vec![Part::Both(
                format!(" OFFSET {n}"),
                format!(" LIMIT -1 OFFSET {n}"),
            )]
        }
    }
}

fn where_clause(g: &mut Gen, percent: u64, parts: &mut Vec<Part>) {
    if g.rng.chance(percent) {
        parts.push(sql(" WHERE "));
        let p = match g.rng.below(10) {
            0..=2 => g.key_predicate(),
            // Anything AND-ed to a key condition cannot fail: rows the index skips are
            // not evaluated.
            3..=4 => {
                let key = g.key_predicate();
                let depth = g.range(1, 2) as u32;
                E::And(bx(key), bx(g.expr(Ty::Bool, depth, true, false)))
            }
            _ => g.predicate(),
        };
        parts.push(Part::Expr(p));
    }
}

impl Gen {
    /// INSERT ... VALUES into `table` (`t` or `u`).
    fn insert(&mut self, table: &str) -> Stmt {
        let columns: Vec<&str> = if self.rng.chance(20) {
            let mut cols = vec!["a", "b", "c"];
            let keep = self.range(1, 3) as usize;
            for i in (1..cols.len()).rev() {
                let j = self.rng.below(i as u64 + 1) as usize;
                cols.swap(i, j);
            }
            cols.truncate(keep);
            cols
        } else {
            vec![]
        };
        let shown = if columns.is_empty() {
            String::new()
        } else {
            format!(" ({})", columns.join(", "))
        };
        let targets = if columns.is_empty() {
            vec!["a", "b", "c"]
        } else {
            columns
        };
        let mut parts = vec![sql(format!("INSERT INTO {table}{shown} VALUES "))];
        for row in 0..self.range(1, 5) {
            parts.push(sql(if row == 0 { "(" } else { ", (" }));
            for (i, col) in targets.iter().enumerate() {
                if i > 0 {
                    parts.push(sql(", "));
                }
                parts.push(Part::Expr(match (*col, self.rng.below(100)) {
                    (_, 0..=13) => E::Null,
                    ("c", _) => E::Text(self.text_literal()),
                    (_, 14..=16) => E::Int(self.pick(&[1000, -1000])),
                    (_, 17..=21) => self.constant_arith(),
                    _ => E::Int(self.range(-20, 20)),
                }));
            }
            parts.push(sql(")"));
        }
        Stmt::build(&parts, Kind::Write)
    }

    /// Arithmetic on literals, which PostgreSQL folds when planning: mostly small, now
    /// and then a division by zero or an overflow (which fail the whole INSERT).
    fn constant_arith(&mut self) -> E {
        let op = self.pick(&[Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Mod]);
        let x = self.range(-20, 20);
        let y = match self.rng.below(20) {
            0 if matches!(op, Op::Div | Op::Mod) => 0,
            0 => return E::Arith(Op::Mul, bx(E::Int(100_000)), bx(E::Int(-100_000))),
            _ if matches!(op, Op::Div | Op::Mod) => self.nonzero_literal(),
            _ => self.range(-20, 20),
        };
        E::Arith(op, bx(E::Int(x)), bx(E::Int(y)))
    }

    /// Many rows at once (so the table spans many pages): from generate_series in
    /// Walden, from a recursive CTE in SQLite.
    fn bulk_insert(&mut self) -> Stmt {
        let n = self.range(50, 400);
        let (m, k) = (self.range(1, 13), self.range(1, 13));
        let select = format!(
            "SELECT x * {m} % 41 - 20, x * {k} % 23 - 11, \
             CASE WHEN x % 7 = 0 THEN NULL ELSE substr('abcdB', x % 5 + 1, x % 3) END"
        );
        Stmt {
            walden: format!("INSERT INTO t {select} FROM generate_series(1, {n}) AS s(x)"),
            sqlite: Some(format!(
                "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < {n}) \
                 INSERT INTO t {select} FROM s"
            )),
            kind: Kind::Write,
        }
    }

    /// INSERT ... SELECT from `t` into `t` or `u`, a few rows picked by a full ORDER BY
    /// (so that `u` holds some of `t`'s values, which joins then find).
    fn insert_select(&mut self) -> Stmt {
        let target = self.pick(&["t", "t", "u"]);
        // Not a bare NULL: ORDER BY makes PostgreSQL type it as text, which an integer
        // column then refuses (42804), where Walden inserts the NULL
        // (NOTES-pg-oracle.md, discrepancy 1).
        let typed = |g: &mut Gen, e: E| match e {
            E::Null => E::Col(g.int_col()),
            e => e,
        };
        let (a, b) = (self.stored_int(), self.stored_int());
        let (a, b) = (typed(self, a), typed(self, b));
        let mut parts = vec![
            sql(format!("INSERT INTO {target} SELECT ")),
            Part::Expr(a),
            sql(", "),
            Part::Expr(b),
            sql(", "),
            Part::Expr(self.stored_text()),
            sql(" FROM t"),
        ];
        where_clause(self, 70, &mut parts);
        parts.push(sql(" ORDER BY "));
        for (i, key) in ["1", "2", "3"].iter().enumerate() {
            if i > 0 {
                parts.push(sql(", "));
            }
            parts.extend(order_item(self, sql(*key)));
        }
        parts.push(sql(format!(" LIMIT {}", self.range(1, 5))));
        Stmt::build(&parts, Kind::Write)
    }

    /// UPDATE of one to three columns; every expression reads the old row.
    fn update(&mut self, table: &str) -> Stmt {
        let mut parts = vec![sql(format!("UPDATE {table} SET "))];
        let mut cols = ["a", "b", "c"];
        for i in (1..cols.len()).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            cols.swap(i, j);
        }
        let n = match self.rng.below(10) {
            0..=6 => 1,
            7..=8 => 2,
            _ => 3,
        };
        for (i, col) in cols[..n].iter().enumerate() {
            if i > 0 {
                parts.push(sql(", "));
            }
            let value = match *col {
                "c" => self.stored_text(),
                "b" if self.rng.chance(60) => {
                    E::Arith(Op::Add, bx(E::Col("b")), bx(E::Int(self.range(-9, 9))))
                }
                _ => self.stored_int(),
            };
            parts.extend([sql(format!("{col} = ")), Part::Expr(value)]);
        }
        where_clause(self, 90, &mut parts);
        Stmt::build(&parts, Kind::Write)
    }

    fn delete(&mut self, table: &str) -> Stmt {
        let mut parts = vec![sql(format!("DELETE FROM {table}"))];
        where_clause(self, 95, &mut parts);
        Stmt::build(&parts, Kind::Write)
    }

    /// SELECT a, b, c with a full ORDER BY (perhaps after an expression), perhaps with
    /// LIMIT and OFFSET.
    fn ordered_select(&mut self) -> Stmt {
        let mut parts = vec![sql("SELECT a, b, c FROM t")];
        where_clause(self, 75, &mut parts);
        parts.push(sql(" ORDER BY "));
        if self.rng.chance(30) {
            let ty = self.pick(&[Ty::Int, Ty::Text]);
            let key = self.expr(ty, 2, false, false);
            // A constant key would be a column position, or out of range.
            if key.has_column() {
                parts.extend(order_item(self, Part::Expr(key)));
                parts.push(sql(", "));
            }
        }
        let mut cols = [("a", "1"), ("b", "2"), ("c", "3")];
        for i in (1..cols.len()).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            cols.swap(i, j);
        }
        for (i, (name, position)) in cols.iter().enumerate() {
            if i > 0 {
                parts.push(sql(", "));
            }
            let key = if self.rng.chance(25) { position } else { name };
            parts.extend(order_item(self, sql(*key)));
        }
        if self.rng.chance(50) {
            parts.extend(limit_offset(self));
        }
        Stmt::build(&parts, Kind::Query(Check::Ordered))
    }

    /// LIMIT or OFFSET with no ORDER BY or one on a single column. Without ORDER BY,
    /// each engine stops reading at its own row, so the filter must not fail.
    fn limited_select(&mut self) -> Stmt {
        let list = self.pick(&["a, b, c", "*", "c, a"]);
        let mut parts = vec![sql(format!("SELECT {list} FROM t"))];
        if self.rng.chance(50) {
            let depth = self.range(1, 3) as u32;
            parts.extend([
                sql(" WHERE "),
                Part::Expr(self.expr(Ty::Bool, depth, true, false)),
            ]);
        }
        if self.rng.chance(40) {
            let key = self.pick(&["a", "b", "c"]);
            parts.push(sql(" ORDER BY "));
            parts.extend(order_item(self, sql(key)));
        }
        let limit = limit_offset(self);
        Stmt::limited(&parts, &limit)
    }

    /// SELECT of up to three expressions of any type: as a multiset, or ordered by all
    /// of them (by position or alias), perhaps with LIMIT and OFFSET.
    fn projection(&mut self) -> Stmt {
        let n = self.range(1, 3);
        let ordered = self.rng.chance(40);
        let aliased = self.rng.chance(30);
        let distinct = self.rng.chance(15);
        let mut parts = vec![sql(if distinct {
            "SELECT DISTINCT "
        } else {
            "SELECT "
        })];
        for i in 0..n {
            if i > 0 {
                parts.push(sql(", "));
            }
            let ty = self.pick(&[Ty::Int, Ty::Text, Ty::Bool]);
            let depth = self.range(1, 3) as u32;
            parts.push(Part::Expr(self.expr(ty, depth, false, true)));
            if aliased {
                parts.push(sql(format!(" AS x{i}")));
            }
        }
        parts.push(sql(" FROM t"));
        where_clause(self, 50, &mut parts);
        if !ordered {
            return Stmt::build(&parts, Kind::Query(Check::Unordered));
        }
        parts.push(sql(" ORDER BY "));
        for i in 0..n {
            if i > 0 {
                parts.push(sql(", "));
            }
            let key = if aliased {
                format!("x{i}")
            } else {
                format!("{}", i + 1)
            };
            parts.extend(order_item(self, sql(key)));
        }
        if self.rng.chance(50) {
            parts.extend(limit_offset(self));
        }
        Stmt::build(&parts, Kind::Query(Check::Ordered))
    }

    /// An aggregate, now and then with `FILTER (WHERE …)`.
    fn aggregate(&mut self, guarded: bool) -> Vec<Part> {
        let mut parts = self.bare_aggregate(guarded);
        self.with_later(|g| {
            if g.rng.chance(25) {
                parts.push(sql(" FILTER (WHERE "));
                parts.push(Part::Expr(g.expr(Ty::Bool, 2, false, false)));
                parts.push(sql(")"));
            }
        });
        parts
    }

    /// An aggregate over an expression that reads a column (an aggregate of a bare
    /// literal has no type in PostgreSQL).
    fn bare_aggregate(&mut self, guarded: bool) -> Vec<Part> {
        let fixed = [
            "count(*)",
            "count(c)",
            "sum(b)",
            "min(a)",
            "max(c)",
            "avg(b)",
            "sum(a)",
            "min(c)",
            "count(DISTINCT a)",
            "count(DISTINCT c)",
        ];
        if self.rng.chance(60) {
            return vec![sql(self.pick(&fixed))];
        }
        let (func, ty) = self.pick(&[
            ("sum", Ty::Int),
            ("min", Ty::Int),
            ("max", Ty::Text),
            ("count", Ty::Bool),
            ("avg", Ty::Int),
        ]);
        let mut arg = self.expr(ty, 2, guarded, false);
        if !arg.has_column() {
            arg = self.leaf(ty, false);
            if !arg.has_column() {
                arg = E::Col(if ty == Ty::Text { "c" } else { "b" });
            }
        }
        vec![sql(format!("{func}(")), Part::Expr(arg), sql(")")]
    }

    fn aggregates(&mut self) -> Stmt {
        let mut parts = vec![sql("SELECT ")];
        for i in 0..self.range(1, 5) {
            if i > 0 {
                parts.push(sql(", "));
            }
            parts.extend(self.aggregate(false));
        }
        parts.push(sql(" FROM t"));
        where_clause(self, 70, &mut parts);
        if self.rng.chance(15) {
            parts.push(sql(format!(" HAVING count(*) > {}", self.range(0, 10))));
        }
        Stmt::build(&parts, Kind::Query(Check::Ordered))
    }

    fn group_by(&mut self) -> Stmt {
        let key = match self.rng.below(6) {
            0 => E::Col("a"),
            1 => E::Col("b"),
            2 => E::Col("c"),
            _ => {
                let ty = self.pick(&[Ty::Int, Ty::Text]);
                let e = self.expr(ty, 2, false, false);
                if e.has_column() {
                    e
                } else {
                    E::Col("a")
                }
            }
        };
        let having = self.rng.chance(30).then(|| self.rng.below(5));
        let ending = self.rng.below(20);
        let limit = match ending {
            0..=6 => self.rng.chance(40).then(|| limit_offset(self)),
            7..=9 => Some(limit_offset(self)),
            _ => None,
        };
        // PostgreSQL (and SQLite) move a HAVING condition without aggregates into WHERE,
        // and PostgreSQL orders WHERE's conditions by cost: then no other part of the
        // query may fail.
        let guarded = having == Some(3);
        let mut parts = vec![sql("SELECT "), Part::Expr(key.clone()), sql(", count(*)")];
        for _ in 0..self.range(0, 3) {
            parts.push(sql(", "));
            // Grouping by sorting, either engine may stop aggregating at the LIMIT.
            parts.extend(self.aggregate(guarded || limit.is_some()));
        }
        parts.push(sql(" FROM t"));
        if self.rng.chance(40) {
            let depth = self.range(1, 3) as u32;
            parts.extend([
                sql(" WHERE "),
                Part::Expr(self.expr(Ty::Bool, depth, guarded, false)),
            ]);
        }
        parts.extend([sql(" GROUP BY "), Part::Expr(key.clone())]);
        if let Some(kind) = having {
            parts.push(sql(" HAVING "));
            match kind {
                0 => parts.push(sql(format!("count(*) > {}", self.range(0, 2)))),
                1 => parts.push(sql(format!("sum(b) > {}", self.range(-10, 10)))),
                2 => parts.push(sql(format!("min(c) < '{}'", self.text_literal()))),
                3 => parts.extend([Part::Expr(key.clone()), sql(" IS NOT NULL")]),
                _ => parts.push(sql(format!("max(a) >= {}", self.range(-10, 10)))),
            }
        }
        match ending {
            // The key is unique among the groups: ordering by it is a full order.
            0..=6 => {
                parts.push(sql(" ORDER BY "));
                if self.rng.chance(30) {
                    parts.extend(order_item(self, sql("count(*)")));
                    parts.push(sql(", "));
                }
                let key = if self.rng.chance(50) {
                    Part::Expr(key)
                } else {
                    sql("1")
                };
                parts.extend(order_item(self, key));
                parts.extend(limit.into_iter().flatten());
                Stmt::build(&parts, Kind::Query(Check::Ordered))
            }
            7..=9 => Stmt::limited(&parts, &limit.unwrap_or_default()),
            _ => Stmt::build(&parts, Kind::Query(Check::Unordered)),
        }
    }

    fn query(&mut self) -> Stmt {
        let total: u64 = SHAPES.iter().map(|(_, weight)| weight).sum();
        let mut r = self.rng.below(total);
        for (shape, weight) in SHAPES {
            if r < weight {
                return self.query_of(shape);
            }
            r -= weight;
        }
        unreachable!("{r} is below the weights' sum")
    }

    fn query_of(&mut self, shape: Shape) -> Stmt {
        match shape {
            Shape::Ordered => self.ordered_select(),
            Shape::Limited => self.limited_select(),
            Shape::Projection => self.projection(),
            Shape::Aggregates => self.aggregates(),
            Shape::GroupBy => self.group_by(),
            Shape::Join => self.join_query(),
            Shape::GroupedJoin => self.grouped_join(),
            Shape::Subquery => self.subquery_query(),
            Shape::SetOperation => self.set_operation(),
            Shape::Window => self.window_query(),
        }
    }

    /// A query with window functions over `t`'s rows (or its groups by `a`). A window's
    /// result may depend on the order of rows its ORDER BY leaves tied (row_number, lag,
    /// first_value, a ROWS frame, ...): those functions get a window ordered by every
    /// column, where tied rows are equal rows and so any order of them gives the same
    /// multiset of output rows. The others (rank, dense_rank, percent_rank, cume_dist and
    /// aggregates over the default RANGE frame, which takes in all peers) may have any
    /// ORDER BY. The rows are compared unordered.
    fn window_query(&mut self) -> Stmt {
        let grouped = self.rng.chance(25);
        // What the windows may read: t's columns, or the groups' key and aggregates.
        let (cols, full): (&[&str], &str) = if grouped {
            (&["a", "count(*)", "sum(b)", "min(c)"], "a")
        } else {
            (&["a", "b", "c"], "a, b, c")
        };
        let mut parts = vec![sql("SELECT ")];
        parts.push(sql(if grouped { "a, count(*)" } else { "a, b, c" }));
        let named = self.rng.chance(20);
        let n = self.range(1, 3);
        let mut had_total = false;
        for _ in 0..n {
            parts.push(sql(", "));
            // Whether the function needs a total order. One such function at most: two
            // of them, each over its own order, could pair up their values of equal rows
            // differently in each engine.
            let pick = if had_total {
                1 + self.rng.below(4).min(3) + if self.rng.chance(60) { 8 } else { 0 }
            } else {
                self.rng.below(15)
            };
            let (func, total) = match pick {
                0 => ("row_number()".to_string(), true),
                1 => ("rank()".to_string(), false),
                2 => ("dense_rank()".to_string(), false),
                3 => ("percent_rank()".to_string(), false),
                4 => ("cume_dist()".to_string(), false),
                5 => (format!("ntile({})", self.range(1, 4)), true),
                6 => {
                    let f = self.pick(&["lag", "lead"]);
                    let c = self.pick(cols);
                    let arg = match self.rng.below(3) {
                        0 => String::new(),
                        1 => format!(", {}", self.range(0, 3)),
                        _ if c == "min(c)" || c == "c" => format!(", {}, 'z'", self.range(1, 3)),
                        _ => format!(", {}, -1", self.range(1, 3)),
                    };
                    (format!("{f}({c}{arg})"), true)
                }
                7 => {
                    let f = self.pick(&["first_value", "last_value"]);
                    (format!("{f}({})", self.pick(cols)), true)
                }
                8 => (
                    format!("nth_value({}, {})", self.pick(cols), self.range(1, 3)),
                    true,
                ),
                _ => {
                    let f = self.pick(&["sum", "count", "min", "max", "avg"]);
                    let arg = match (f, grouped) {
                        ("count", _) if self.rng.chance(50) => "*",
                        ("min" | "max" | "count", false) => self.pick(&["a", "b", "c"]),
                        (_, false) => self.pick(&["a", "b"]),
                        // sum of a bigint (count(*), sum(b)) is numeric, as in
                        // PostgreSQL (NOTES-pg-oracle.md, discrepancy 5, fixed).
                        (_, true) => self.pick(&["a", "count(*)", "sum(b)"]),
                    };
                    (format!("{f}({arg})"), false)
                }
            };
            had_total |= total;
            parts.push(sql(format!("{func} OVER ")));
            if named && !total {
                parts.push(sql("w"));
                continue;
            }
            parts.push(sql("("));
            let partition = self.rng.chance(50);
            if partition {
                parts.push(sql(format!("PARTITION BY {}", self.pick(&cols[..2]))));
            }
            let ordered = total || self.rng.chance(70);
            if ordered {
                parts.push(sql(if partition { " ORDER BY " } else { "ORDER BY " }));
                if total {
                    let keys: Vec<&str> = full.split(", ").collect();
                    for (i, k) in keys.iter().enumerate() {
                        if i > 0 {
                            parts.push(sql(", "));
                        }
                        parts.extend(order_item(self, sql(*k)));
                    }
                } else {
                    let k = self.pick(cols);
                    parts.extend(order_item(self, sql(k)));
                }
                // A ROWS frame (over a total order only).
                if total && !func.starts_with("row_number") && self.rng.chance(30) {
                    let start = self.pick(&["UNBOUNDED PRECEDING", "1 PRECEDING", "CURRENT ROW"]);
                    let end = match start {
                        "CURRENT ROW" => {
                            self.pick(&["CURRENT ROW", "2 FOLLOWING", "UNBOUNDED FOLLOWING"])
                        }
                        _ => self.pick(&["CURRENT ROW", "1 FOLLOWING", "UNBOUNDED FOLLOWING"]),
                    };
                    parts.push(sql(format!(" ROWS BETWEEN {start} AND {end}")));
                }
            }
            parts.push(sql(")"));
        }
        parts.push(sql(" FROM t"));
        where_clause(self, 30, &mut parts);
        if grouped {
            parts.push(sql(" GROUP BY a"));
        }
        if named {
            let by = self.pick(&cols[..2]);
            parts.push(sql(format!(" WINDOW w AS (PARTITION BY {by} ORDER BY ")));
            let k = self.pick(cols);
            parts.extend(order_item(self, sql(k)));
            parts.push(sql(")"));
        }
        Stmt::build(&parts, Kind::Query(Check::Unordered))
    }

    /// The table a single-table write goes to: mostly `t`, whose indexes and kinds the
    /// older statements were written for.
    fn table(&mut self) -> &'static str {
        self.pick(&["t", "t", "u"])
    }
}

/// The kinds of query the generator writes.
#[derive(Clone, Copy, Debug)]
enum Shape {
    Ordered,
    Limited,
    Projection,
    Aggregates,
    GroupBy,
    /// Both tables joined (relations.rs).
    Join,
    GroupedJoin,
    /// One table, with a subquery over the other.
    Subquery,
    SetOperation,
    /// Window functions over one table, or over its groups.
    Window,
}

/// Each shape's weight: how often `query` writes it, out of the sum.
const SHAPES: [(Shape, u64); 10] = [
    (Shape::Ordered, 6),
    (Shape::Limited, 1),
    (Shape::Projection, 5),
    (Shape::Aggregates, 3),
    (Shape::GroupBy, 5),
    (Shape::Join, 5),
    (Shape::GroupedJoin, 2),
    (Shape::Subquery, 4),
    (Shape::SetOperation, 3),
    (Shape::Window, 4),
];

/// The statement sequence of one seed: inserts, updates, deletes and queries, some in
/// transaction blocks that commit or roll back.
fn sequence(seed: u64) -> Vec<Stmt> {
    let mut g = Gen::new(seed);
    let len = g.range(20, 40) as usize;
    let mut out = vec![g.insert("t"), g.insert("u")];
    let mut in_block = false;
    while out.len() < len {
        let stmt = match g.rng.below(100) {
            0 if g.rng.chance(30) => g.bulk_insert(),
            0..=14 => {
                let table = g.table();
                g.insert(table)
            }
            15..=17 => g.insert_select(),
            18..=33 => {
                let table = g.table();
                g.update(table)
            }
            34..=41 => {
                let table = g.table();
                g.delete(table)
            }
            42..=51 if in_block => {
                in_block = false;
                if g.rng.chance(60) {
                    Stmt::same("COMMIT".into(), Kind::Commit)
                } else {
                    Stmt::same("ROLLBACK".into(), Kind::Rollback)
                }
            }
            42..=47 => {
                in_block = true;
                Stmt::same("BEGIN".into(), Kind::Begin)
            }
            52 if !in_block => Stmt::walden_only("VACUUM t", Kind::Maintenance),
            53 if !in_block => Stmt::walden_only("CHECKPOINT", Kind::Maintenance),
            54 => {
                in_block = false;
                Stmt::walden_only("-- crash and recover", Kind::Crash)
            }
            55..=58 => g.write_with_subquery(),
            _ => g.query(),
        };
        out.push(stmt);
    }
    if in_block {
        out.push(Stmt::same("COMMIT".into(), Kind::Commit));
    }
    out
}

// ---------------------------------------------------------------------------------------
// Running a sequence on the engines.

/// A result cell in a form every engine's values convert to.
#[derive(Clone, Debug, PartialEq, PartialOrd)]
enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

/// An engine's error: its SQLSTATE (SQLite has none) and message.
#[derive(Clone, Debug)]
struct Failure {
    code: Option<String>,
    message: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.code {
            Some(code) => write!(f, "{code} {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl From<walden_sql::SqlError> for Failure {
    fn from(e: walden_sql::SqlError) -> Self {
        Failure {
            code: Some(e.code.to_string()),
            message: e.message.clone(),
        }
    }
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Self {
        Failure {
            code: None,
            message: e.to_string(),
        }
    }
}

/// The errors the generator can cause on purpose: division by zero, integer overflow.
const DATA_ERRORS: [&str; 2] = [code::DIVISION_BY_ZERO, code::NUMERIC_OUT_OF_RANGE];

/// Whether another engine's error is the one Walden gave. SQLite has no SQLSTATE: its
/// message must name a data error. PostgreSQL's SQLSTATE must be Walden's, except
/// between the two data errors: which of a statement's failing rows or operands an
/// engine meets first depends on the order it reads them.
fn same_failure(walden: &Failure, other: &Failure) -> bool {
    let walden_code = walden.code.as_deref().unwrap_or("");
    match other.code.as_deref() {
        None => ["division by zero", "integer out of range"]
            .iter()
            .any(|m| other.message.contains(m)),
        Some(code) => {
            code == walden_code
                || (DATA_ERRORS.contains(&code) && DATA_ERRORS.contains(&walden_code))
        }
    }
}

fn walden_cell(v: &Value) -> Cell {
    match v {
        Value::Null => Cell::Null,
        Value::Bool(b) => Cell::Int(*b as i64),
        Value::Int2(x) => Cell::Int(*x as i64),
        Value::Int4(x) => Cell::Int(*x as i64),
        Value::Int8(x) => Cell::Int(*x),
        Value::Float8(x) => Cell::Real(*x),
        // As the PostgreSQL side reads its numerics.
        Value::Numeric(n) => Cell::Real(n.to_f64()),
        Value::Text(s) => Cell::Text(s.clone()),
        other => panic!("unexpected value {other:?}"),
    }
}

fn same_cell(x: &Cell, y: &Cell) -> bool {
    let close = |p: f64, q: f64| (p - q).abs() <= 1e-9 * p.abs().max(1.0);
    match (x, y) {
        (Cell::Real(p), Cell::Real(q)) => close(*p, *q),
        // A sum of bigints is numeric in Walden and PostgreSQL, an integer in SQLite:
        // the values are compared, not the types.
        (Cell::Int(i), Cell::Real(r)) | (Cell::Real(r), Cell::Int(i)) => close(*i as f64, *r),
        _ => x == y,
    }
}

fn same_rows(x: &[Vec<Cell>], y: &[Vec<Cell>]) -> bool {
    x.len() == y.len()
        && x.iter()
            .zip(y)
            .all(|(r, s)| r.len() == s.len() && r.iter().zip(s).all(|(p, q)| same_cell(p, q)))
}

/// Walden's rows are `count` rows of `all` (a multiset), `engine`'s result without LIMIT.
fn subset(
    rows: &[Vec<Cell>],
    count: usize,
    mut all: Vec<Vec<Cell>>,
    engine: &str,
) -> Result<(), String> {
    if rows.len() != count {
        return Err(format!(
            "Walden gave {} rows, {engine} {count}\n  Walden: {rows:?}",
            rows.len()
        ));
    }
    for row in rows {
        match all.iter().position(|r| same_rows(std::slice::from_ref(r), std::slice::from_ref(row))) {
            Some(i) => {
                all.swap_remove(i);
            }
            None => {
                return Err(format!(
                    "Walden's row {row:?} is not in the result\n  Walden: {rows:?}\n  {engine} without LIMIT: {all:?}"
                ))
            }
        }
    }
    Ok(())
}

fn sorted(mut rows: Vec<Vec<Cell>>) -> Vec<Vec<Cell>> {
    rows.sort_by(|x, y| x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal));
    rows
}

fn user_error(message: &str) -> rusqlite::Error {
    rusqlite::Error::UserFunctionError(message.into())
}

fn int4(x: i64) -> rusqlite::Result<i64> {
    if i32::try_from(x).is_ok() {
        Ok(x)
    } else {
        Err(user_error("integer out of range"))
    }
}

fn int_args(ctx: &Context) -> rusqlite::Result<Option<(i64, i64)>> {
    let x: Option<i64> = ctx.get(0)?;
    let y: Option<i64> = ctx.get(1)?;
    Ok(x.zip(y))
}

/// An in-memory SQLite database with PostgreSQL's int4 arithmetic as functions.
fn sqlite() -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    conn.create_scalar_function("i4", 1, flags, |ctx| {
        ctx.get::<Option<i64>>(0)?.map(int4).transpose()
    })
    .unwrap();
    conn.create_scalar_function("pgdiv", 2, flags, |ctx| match int_args(ctx)? {
        None => Ok(None),
        Some((_, 0)) => Err(user_error("division by zero")),
        Some((x, y)) => int4(x / y).map(Some),
    })
    .unwrap();
    conn.create_scalar_function("pgmod", 2, flags, |ctx| match int_args(ctx)? {
        None => Ok(None),
        Some((_, 0)) => Err(user_error("division by zero")),
        Some((x, y)) => Ok(Some(x % y)),
    })
    .unwrap();
    conn.execute_batch(CREATE_TABLES).unwrap();
    conn
}

fn sqlite_rows(conn: &Connection, sql: &str) -> rusqlite::Result<Vec<Vec<Cell>>> {
    let mut stmt = conn.prepare(sql)?;
    let width = stmt.column_count();
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let mut cells = Vec::with_capacity(width);
        for i in 0..width {
            cells.push(match row.get_ref(i)? {
                ValueRef::Null => Cell::Null,
                ValueRef::Integer(x) => Cell::Int(x),
                ValueRef::Real(x) => Cell::Real(x),
                ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(_) => panic!("unexpected blob from {sql}"),
            });
        }
        out.push(cells);
    }
    Ok(out)
}

fn walden_rows(r: &StatementResult) -> Vec<Vec<Cell>> {
    r.rows
        .iter()
        .map(|row| row.iter().map(walden_cell).collect())
        .collect()
}

/// The row count of a write's tag ("INSERT 0 3", "UPDATE 2").
fn tag_count(r: &StatementResult, sql: &str) -> Option<u64> {
    let verb = sql.split(' ').next().unwrap_or("");
    r.tag
        .strip_prefix(verb)
        .and_then(|rest| rest.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
}

fn options(vfs: &Arc<SimVfs>) -> Options {
    Options {
        vfs: vfs.clone(),
        background: false,
        ..Options::default()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    None,
    Open,
    /// An error aborted the block: Walden (and PostgreSQL) refuse statements until it
    /// ends; SQLite's block was rolled back.
    Failed,
}

#[derive(Default, Debug)]
struct Stats {
    cases: u64,
    statements: u64,
    /// Statements that failed on every engine with a data error.
    both_failed: u64,
    /// Transaction blocks aborted by such an error.
    aborted_blocks: u64,
    /// Statements refused in an aborted block.
    refused: u64,
    /// Rows of query results compared (the table checks not counted), with SQLite.
    rows_compared: u64,
    rows_written: u64,
    crashes: u64,
    /// Statements also run on PostgreSQL, and rows of query results compared with it.
    postgres_statements: u64,
    postgres_rows_compared: u64,
    /// Queries SQLite cannot run, compared with PostgreSQL only.
    postgres_only: u64,
}

struct Runner<'s> {
    walden: Session,
    sqlite: &'s Connection,
    /// PostgreSQL, when the case runs there too (with Walden's text).
    pg: Option<&'s mut postgres::Client>,
    block: Block,
}

impl Runner<'_> {
    fn step(&mut self, st: &Stmt, stats: &mut Stats) -> Result<(), String> {
        if self.pg.is_some() && !matches!(st.kind, Kind::Maintenance | Kind::Crash) {
            stats.postgres_statements += 1;
        }
        match &st.kind {
            Kind::Begin => self.begin(st),
            Kind::Commit | Kind::Rollback => self.end_block(st),
            Kind::Crash => unreachable!("run_case restarts the database"),
            Kind::Maintenance if self.block != Block::None => Ok(()),
            Kind::Maintenance => {
                let r = self
                    .walden
                    .execute_one(&st.walden)
                    .map_err(|e| format!("Walden failed: {e}"))?;
                match st.walden.split(' ').next() {
                    Some(verb) if r.tag == verb => Ok(()),
                    _ => Err(format!("Walden's tag is {:?}", r.tag)),
                }
            }
            _ if self.block == Block::Failed => self.refused(st, stats),
            Kind::Write => self.write(st, stats),
            Kind::Query(check) => self.query(st, check, stats),
        }
    }

    /// In an aborted block Walden and PostgreSQL refuse every statement.
    fn refused(&mut self, st: &Stmt, stats: &mut Stats) -> Result<(), String> {
        stats.refused += 1;
        match self.walden.execute_one(&st.walden) {
            Err(e) if e.code == code::FAILED_TRANSACTION => {}
            other => {
                return Err(format!(
                    "Walden ran a statement in an aborted block: {other:?}"
                ))
            }
        }
        if let Some(pg) = self.pg.as_deref_mut() {
            match on_postgres::execute(pg, &st.walden) {
                Err(f) if f.code.as_deref() == Some(code::FAILED_TRANSACTION) => {}
                other => {
                    return Err(format!(
                        "PostgreSQL ran a statement in an aborted block: {other:?}"
                    ))
                }
            }
        }
        Ok(())
    }

    fn begin(&mut self, st: &Stmt) -> Result<(), String> {
        let r = self
            .walden
            .execute_one(&st.walden)
            .map_err(|e| format!("Walden failed: {e}"))?;
        if r.tag != "BEGIN" {
            return Err(format!("Walden's tag is {:?}", r.tag));
        }
        if let Some(pg) = self.pg.as_deref_mut() {
            // Inside a block PostgreSQL warns too (a notice the client drops).
            on_postgres::execute(pg, &st.walden).map_err(|f| format!("PostgreSQL failed: {f}"))?;
        }
        if self.block == Block::None {
            self.sqlite.execute_batch("BEGIN").unwrap();
            self.block = Block::Open;
        } else if r.notices.is_empty() {
            // SQLite refuses a nested BEGIN; PostgreSQL warns and carries on.
            return Err("Walden gave no warning for BEGIN inside a block".into());
        }
        Ok(())
    }

    fn end_block(&mut self, st: &Stmt) -> Result<(), String> {
        let r = self
            .walden
            .execute_one(&st.walden)
            .map_err(|e| format!("Walden failed: {e}"))?;
        let expected = match (self.block, &st.kind) {
            (Block::Open | Block::None, Kind::Commit) => "COMMIT",
            _ => "ROLLBACK",
        };
        if r.tag != expected {
            return Err(format!("Walden's tag is {:?}, not {expected:?}", r.tag));
        }
        if let Some(pg) = self.pg.as_deref_mut() {
            // COMMIT of an aborted block rolls it back in PostgreSQL too (its tag is not
            // visible through the client: the table checks that follow show it).
            on_postgres::execute(pg, &st.walden).map_err(|f| format!("PostgreSQL failed: {f}"))?;
        }
        if self.block == Block::Open {
            let sql = st.sqlite.as_deref().unwrap_or(&st.walden);
            self.sqlite.execute_batch(sql).unwrap();
        }
        self.block = Block::None;
        Ok(())
    }

    /// Every engine failed: the error must be one the generator can cause, and in a
    /// block it aborts the block.
    fn all_failed(&mut self, walden: &Failure, stats: &mut Stats) -> Result<(), String> {
        let walden_code = walden.code.as_deref().unwrap_or("");
        if !DATA_ERRORS.contains(&walden_code) {
            return Err(format!(
                "every engine failed, but not with a data error: Walden {walden}"
            ));
        }
        stats.both_failed += 1;
        if self.block == Block::Open {
            self.sqlite.execute_batch("ROLLBACK").unwrap();
            self.block = Block::Failed;
            stats.aborted_blocks += 1;
        }
        Ok(())
    }

    fn write(&mut self, st: &Stmt, stats: &mut Stats) -> Result<(), String> {
        let w = self.walden.execute_one(&st.walden);
        let w_count = match &w {
            Ok(r) => Some(
                tag_count(r, &st.walden).ok_or_else(|| format!("Walden's tag is {:?}", r.tag))?,
            ),
            Err(_) => None,
        };
        let w: Result<u64, Failure> = match w {
            Ok(_) => Ok(w_count.unwrap_or(0)),
            Err(e) => Err(e.into()),
        };
        if let Some(sql) = &st.sqlite {
            let s = self.sqlite.execute(sql, []).map(|n| n as u64);
            agree_on_count(&w, s.map_err(Failure::from), "SQLite")?;
        }
        if let Some(pg) = self.pg.as_deref_mut() {
            agree_on_count(&w, on_postgres::execute(pg, &st.walden), "PostgreSQL")?;
        }
        match w {
            Ok(n) => {
                stats.rows_written += n;
                Ok(())
            }
            Err(f) => self.all_failed(&f, stats),
        }
    }

    fn query(&mut self, st: &Stmt, check: &Check, stats: &mut Stats) -> Result<(), String> {
        let w = match self.walden.execute_one(&st.walden) {
            Ok(r) if r.tag != format!("SELECT {}", r.rows.len()) => {
                return Err(format!(
                    "Walden's tag {:?} for {} rows",
                    r.tag,
                    r.rows.len()
                ))
            }
            Ok(r) => Ok(walden_rows(&r)),
            Err(e) => Err(Failure::from(e)),
        };
        if let Some(sql) = &st.sqlite {
            let conn = self.sqlite;
            let s = sqlite_rows(conn, sql).map_err(Failure::from);
            let full = match check {
                Check::Subset {
                    sqlite: Some(full), ..
                } => Some(full.as_str()),
                _ => None,
            };
            let full = || full.map(|f| sqlite_rows(conn, f).map_err(Failure::from));
            stats.rows_compared += agree_on_rows(&w, s, check, "SQLite", full)?;
        }
        if let Some(pg) = self.pg.as_deref_mut() {
            if st.sqlite.is_none() {
                stats.postgres_only += 1;
            }
            let p = on_postgres::rows(pg, &st.walden);
            let full = match check {
                Check::Subset { walden, .. } => Some(walden.as_str()),
                _ => None,
            };
            let full = || full.map(|f| on_postgres::rows(pg, f));
            stats.postgres_rows_compared += agree_on_rows(&w, p, check, "PostgreSQL", full)?;
        }
        match w {
            Ok(_) => Ok(()),
            Err(f) => self.all_failed(&f, stats),
        }
    }

    /// Both tables must hold the same rows on every engine, within the generator's
    /// bounds.
    fn check_tables(&mut self) -> Result<(), String> {
        for table in ["t", "u"] {
            let all = format!("SELECT a, b, c FROM {table}");
            let w = self
                .walden
                .execute_one(&all)
                .map_err(|e| format!("table check: Walden failed: {e}"))?;
            let w_rows = sorted(walden_rows(&w));
            let s_rows = sorted(sqlite_rows(self.sqlite, &all).unwrap());
            if w_rows != s_rows {
                return Err(format!(
                    "tables {table} differ\n  Walden: {w_rows:?}\n  SQLite: {s_rows:?}"
                ));
            }
            if let Some(pg) = self.pg.as_deref_mut() {
                let p_rows = on_postgres::rows(pg, &all)
                    .map_err(|f| format!("table check: PostgreSQL failed: {f}"))?;
                let p_rows = sorted(p_rows);
                if w_rows != p_rows {
                    return Err(format!(
                        "tables {table} differ\n  Walden: {w_rows:?}\n  PostgreSQL: {p_rows:?}"
                    ));
                }
            }
            for cell in s_rows.iter().flatten() {
                let within = match cell {
                    Cell::Int(x) => (*x as i128).abs() <= COLUMN_BOUND,
                    Cell::Text(s) => s.len() as i128 <= TEXT_BOUND,
                    _ => true,
                };
                assert!(within, "the generator broke its bounds: {cell:?}");
            }
        }
        Ok(())
    }
}

/// Walden's row count for a write against another engine's: the same count, or both
/// failed with the same error.
fn agree_on_count(
    walden: &Result<u64, Failure>,
    other: Result<u64, Failure>,
    engine: &str,
) -> Result<(), String> {
    match (walden, other) {
        (Ok(w), Ok(n)) if *w == n => Ok(()),
        (Ok(w), Ok(n)) => Err(format!("Walden changed {w} rows; {engine} {n}")),
        (Err(wf), Err(of)) if same_failure(wf, &of) => Ok(()),
        (Err(wf), Err(of)) => Err(format!(
            "both failed, differently: Walden {wf}; {engine} {of}"
        )),
        (Ok(w), Err(of)) => Err(format!(
            "only {engine} failed: {of}; Walden changed {w} rows"
        )),
        (Err(wf), Ok(n)) => Err(format!(
            "only Walden failed: {wf}; {engine} changed {n} rows"
        )),
    }
}

/// Walden's rows for a query against another engine's, as `check` says; `full` runs the
/// query without LIMIT on the other engine (for `Check::Subset`). Returns the number of
/// rows compared.
fn agree_on_rows(
    walden: &Result<Vec<Vec<Cell>>, Failure>,
    other: Result<Vec<Vec<Cell>>, Failure>,
    check: &Check,
    engine: &str,
    full: impl FnOnce() -> Option<Result<Vec<Vec<Cell>>, Failure>>,
) -> Result<u64, String> {
    let (w_rows, o_rows) = match (walden, other) {
        (Ok(w), Ok(o)) => (w.clone(), o),
        (Err(wf), Err(of)) if same_failure(wf, &of) => return Ok(0),
        (Err(wf), Err(of)) => {
            return Err(format!(
                "both failed, differently: Walden {wf}; {engine} {of}"
            ))
        }
        (Ok(w), Err(of)) => return Err(format!("only {engine} failed: {of}; Walden: {w:?}")),
        (Err(wf), Ok(o)) => return Err(format!("only Walden failed: {wf}; {engine}: {o:?}")),
    };
    let compared = o_rows.len() as u64;
    let (w_rows, o_rows) = if *check == Check::Ordered {
        (w_rows, o_rows)
    } else {
        (sorted(w_rows), sorted(o_rows))
    };
    if let Check::Subset { .. } = check {
        // Without LIMIT, the query may read a row that fails.
        return match full() {
            Some(Ok(all)) => subset(&w_rows, o_rows.len(), all, engine).map(|()| compared),
            _ if w_rows.len() == o_rows.len() => Ok(compared),
            _ => Err(format!("Walden gave {w_rows:?}, {engine} {o_rows:?}")),
        };
    }
    if same_rows(&w_rows, &o_rows) {
        Ok(compared)
    } else {
        Err(format!(
            "rows differ\n  Walden: {w_rows:?}\n  {engine}: {o_rows:?}"
        ))
    }
}

/// The table kinds every sequence runs on.
/// A table kind, with or without indexes (`CREATE_INDEXES`): a query read through an
/// index must return what a scan returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Config {
    kind: TableKind,
    indexed: bool,
}

impl std::fmt::Display for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}{}",
            self.kind,
            if self.indexed { "+indexes" } else { "" }
        )
    }
}

impl Config {
    fn parse(text: &str) -> Option<Config> {
        let (kind, indexed) = match text.strip_suffix("+indexes") {
            Some(k) => (k, true),
            None => (text, false),
        };
        Some(Config {
            kind: TableKind::parse(kind)?,
            indexed,
        })
    }
}

const TABLE_KINDS: [Config; 4] = [
    Config {
        kind: TableKind::Heap,
        indexed: false,
    },
    Config {
        kind: TableKind::Undo,
        indexed: false,
    },
    Config {
        kind: TableKind::Heap,
        indexed: true,
    },
    Config {
        kind: TableKind::Undo,
        indexed: true,
    },
];

/// The indexes of the `+indexes` configurations: some with descending and NULLS FIRST or
/// LAST columns, which ranges and ORDER BY read in their declared order.
const CREATE_INDEXES: &str = "CREATE INDEX t_a ON t (a); CREATE INDEX t_ba ON t (b, a); \
     CREATE INDEX t_c ON t (c); CREATE INDEX t_cd ON t (c DESC NULLS LAST); \
     CREATE INDEX u_a ON u (a); CREATE INDEX u_c ON u (c); \
     CREATE INDEX u_bda ON u (b DESC, a NULLS FIRST)";

/// Runs a statement list on fresh engines, the tables being of the given kind; the error
/// names the statement and the difference. With `pg`, PostgreSQL runs it too.
fn run_case(
    stmts: &[Stmt],
    cfg: Config,
    mut pg: Option<&mut postgres::Client>,
    stats: &mut Stats,
) -> Result<(), String> {
    let kind = cfg.kind;
    let vfs = Arc::new(SimVfs::new(1));
    let mut db = Database::create("db", options(&vfs)).unwrap();
    Session::new(&db)
        .execute(&format!("SET default_table_kind = {kind}; {CREATE_TABLES}"))
        .unwrap();
    if cfg.indexed {
        Session::new(&db).execute(CREATE_INDEXES).unwrap();
    }
    assert_eq!(db.table_kind("t").unwrap(), kind);
    assert_eq!(db.table_kind("u").unwrap(), kind);
    if let Some(client) = pg.as_deref_mut() {
        on_postgres::reset(client, CREATE_TABLES);
    }
    let sqlite = sqlite();
    let mut block = Block::None;
    let mut rest = stmts;
    loop {
        let mut runner = Runner {
            walden: Session::with_seed(&db, 1),
            sqlite: &sqlite,
            pg: pg.as_deref_mut(),
            block,
        };
        let done = stmts.len() - rest.len();
        let until_crash = rest
            .iter()
            .position(|s| s.kind == Kind::Crash)
            .unwrap_or(rest.len());
        for (i, st) in rest[..until_crash].iter().enumerate() {
            if st.postgres_only() && runner.pg.is_none() {
                continue;
            }
            stats.statements += 1;
            let at = |e: String| {
                format!(
                    "statement {}:\n  Walden: {}\n  SQLite: {}\n{e}",
                    done + i + 1,
                    st.walden,
                    st.sqlite.as_deref().unwrap_or("(not run)")
                )
            };
            runner.step(st, stats).map_err(at)?;
            let in_failed = runner.walden.in_failed_block();
            if in_failed != (runner.block == Block::Failed) {
                return Err(at(format!(
                    "Walden's block is {}aborted, the harness's is {:?}",
                    if in_failed { "" } else { "not " },
                    runner.block
                )));
            }
            if runner.block != Block::Failed {
                runner.check_tables().map_err(at)?;
            }
        }
        block = runner.block;
        if until_crash == rest.len() {
            return Ok(());
        }
        vfs.crash_now();
        drop(runner);
        rest = &rest[until_crash + 1..];
        stats.crashes += 1;
        if block == Block::Open {
            sqlite.execute_batch("ROLLBACK").unwrap();
        }
        if let (Some(client), Block::Open | Block::Failed) = (pg.as_deref_mut(), block) {
            // PostgreSQL did not crash: its block is rolled back as Walden's vanished.
            on_postgres::execute(client, "ROLLBACK")
                .map_err(|f| format!("PostgreSQL failed to roll back: {f}"))?;
        }
        block = Block::None;
        drop(db);
        vfs.restart(CrashMode::Random);
        db = Database::open("db", options(&vfs)).map_err(|e| {
            format!(
                "after {} statements: recovery failed: {e}",
                stmts.len() - rest.len()
            )
        })?;
        if db.table_kind("t").ok() != Some(kind) {
            return Err(format!(
                "after the crash at statement {}: the table is no longer of kind {kind}",
                stmts.len() - rest.len()
            ));
        }
        Runner {
            walden: Session::new(&db),
            sqlite: &sqlite,
            pg: pg.as_deref_mut(),
            block,
        }
        .check_tables()
        .map_err(|e| {
            format!(
                "after the crash at statement {}: {e}",
                stmts.len() - rest.len()
            )
        })?;
    }
}

/// Runs a statement list, turning a panic (in Walden or the harness) into an error.
fn run_caught(
    stmts: &[Stmt],
    kind: Config,
    pg: Option<&mut postgres::Client>,
    stats: &mut Stats,
) -> Result<(), String> {
    match panic::catch_unwind(AssertUnwindSafe(|| run_case(stmts, kind, pg, stats))) {
        Ok(r) => r,
        Err(p) => Err(format!(
            "panicked: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
    }
}

/// Removes statements (runs of them, then single ones) while the list still fails.
fn shrink(
    mut stmts: Vec<Stmt>,
    kind: Config,
    mut pg: Option<&mut postgres::Client>,
    mut failure: String,
) -> (Vec<Stmt>, String) {
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let mut chunk = stmts.len() / 2;
    let mut tries = 0;
    while chunk >= 1 && tries < 2000 {
        let mut progress = false;
        let mut i = 0;
        while i < stmts.len() {
            tries += 1;
            let mut fewer = stmts.clone();
            fewer.drain(i..(i + chunk).min(stmts.len()));
            match run_caught(&fewer, kind, pg.as_deref_mut(), &mut Stats::default()) {
                Err(f) => {
                    stmts = fewer;
                    failure = f;
                    progress = true;
                }
                Ok(()) => i += chunk,
            }
        }
        if !progress {
            chunk /= 2;
        }
    }
    panic::set_hook(hook);
    (stmts, failure)
}

fn listing(stmts: &[Stmt], dialect: Dialect) -> String {
    stmts
        .iter()
        .map(|s| match (dialect, &s.sqlite) {
            (Dialect::Walden, _) => format!("{};\n", s.walden),
            (Dialect::Sqlite, Some(sql)) => format!("{sql};\n"),
            (Dialect::Sqlite, None) if s.postgres_only() => {
                format!("-- not run (SQLite lacks it): {};\n", s.walden)
            }
            (Dialect::Sqlite, None) => format!("-- Walden only: {};\n", s.walden),
        })
        .collect()
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, not {v:?}"))
    })
}

/// The seeds to run: `WALDEN_SQL_DIFF_SEED`, else 0..`cases_var` (or `default_cases`).
fn seeds(cases_var: &str, default_cases: u64) -> Vec<u64> {
    match env_number("WALDEN_SQL_DIFF_SEED") {
        Some(seed) => vec![seed],
        None => (0..env_number(cases_var).unwrap_or(default_cases)).collect(),
    }
}

/// `WALDEN_SQL_DIFF_KIND`, else every configuration.
fn configs() -> Vec<Config> {
    match std::env::var("WALDEN_SQL_DIFF_KIND") {
        Ok(k) => vec![Config::parse(&k).unwrap_or_else(|| {
            panic!("WALDEN_SQL_DIFF_KIND must be heap or undo (+indexes), not {k:?}")
        })],
        Err(_) => TABLE_KINDS.to_vec(),
    }
}

/// Shrinks a failing case and panics with its statements in both dialects.
fn report_failure(
    seed: u64,
    stmts: Vec<Stmt>,
    kind: Config,
    pg: Option<&mut postgres::Client>,
    failure: String,
) -> ! {
    let engines = if pg.is_some() {
        "Walden, SQLite and PostgreSQL"
    } else {
        "Walden and SQLite"
    };
    let (small, small_failure) = shrink(stmts, kind, pg, failure.clone());
    panic!(
        "seed {seed}, {kind} table: {engines} differ.\n{failure}\n\n\
         Shrunk to {} statements, failing at {small_failure}\n\n\
         Walden and PostgreSQL (on a {kind} table):\n{}\nSQLite:\n{}\n\
         Replay: WALDEN_SQL_DIFF_SEED={seed} WALDEN_SQL_DIFF_KIND={kind} cargo test -p walden-sql --test differential",
        small.len(),
        listing(&small, Dialect::Walden),
        listing(&small, Dialect::Sqlite),
    );
}

#[test]
fn walden_agrees_with_sqlite() {
    let default_run = std::env::var_os("WALDEN_SQL_DIFF_CASES").is_none()
        && std::env::var_os("WALDEN_SQL_DIFF_SEED").is_none();
    let seeds = seeds("WALDEN_SQL_DIFF_CASES", 200);
    for kind in configs() {
        let started = Instant::now();
        let mut stats = Stats::default();
        for &seed in &seeds {
            let stmts = sequence(seed);
            stats.cases += 1;
            if let Err(failure) = run_caught(&stmts, kind, None, &mut stats) {
                report_failure(seed, stmts, kind, None, failure);
            }
        }
        eprintln!(
            "differential ({kind} table): {stats:?} in {:.1?}",
            started.elapsed()
        );
        if default_run {
            // The default run must exercise what it claims to, on each kind of table.
            assert!(stats.rows_compared > 5000, "{kind}: {stats:?}");
            assert!(stats.rows_written > 2000, "{kind}: {stats:?}");
            assert!(stats.both_failed > 20, "{kind}: {stats:?}");
            assert!(stats.aborted_blocks > 2, "{kind}: {stats:?}");
            assert!(stats.crashes > 10, "{kind}: {stats:?}");
        }
    }
}

/// The sequences of `WALDEN_SQL_DIFF_PG_CASES` seeds (default 500; or
/// `WALDEN_SQL_DIFF_SEED`) on Walden, SQLite and one throwaway PostgreSQL 15, the tables
/// dropped and made again for each case. Seed `s` runs on configuration `s % 4` (all four
/// when `WALDEN_SQL_DIFF_SEED` or `WALDEN_SQL_DIFF_KIND` picks). Queries SQLite cannot
/// run are compared with PostgreSQL only.
#[test]
fn walden_agrees_with_postgresql() {
    let Some(cluster) = support::pg::cluster() else {
        eprintln!("{}", support::pg::SKIPPED);
        return;
    };
    let mut client = support::pg::fresh_database(&cluster, "differential");
    let seeds = seeds("WALDEN_SQL_DIFF_PG_CASES", 500);
    let configs = configs();
    let every_config = configs.len() == 1 || seeds.len() == 1;
    let started = Instant::now();
    let mut stats = Stats::default();
    for &seed in &seeds {
        let stmts = sequence(seed);
        let chosen = if every_config {
            configs.clone()
        } else {
            vec![configs[seed as usize % configs.len()]]
        };
        for kind in chosen {
            stats.cases += 1;
            if let Err(failure) = run_caught(&stmts, kind, Some(&mut client), &mut stats) {
                report_failure(seed, stmts, kind, Some(&mut client), failure);
            }
        }
    }
    eprintln!(
        "differential (PostgreSQL 15): {stats:?} in {:.1?}",
        started.elapsed()
    );
    drop(client);
    cluster.stop().unwrap();
    let default_run = std::env::var_os("WALDEN_SQL_DIFF_PG_CASES").is_none()
        && std::env::var_os("WALDEN_SQL_DIFF_SEED").is_none()
        && std::env::var_os("WALDEN_SQL_DIFF_KIND").is_none();
    if default_run {
        // The default run must exercise what it claims to.
        assert!(stats.postgres_rows_compared > 20_000, "{stats:?}");
        assert!(stats.postgres_only > 50, "{stats:?}");
        assert!(stats.both_failed > 40, "{stats:?}");
        assert!(stats.aborted_blocks > 5, "{stats:?}");
        assert!(stats.refused > 20, "{stats:?}");
    }
}

/// Seeds that found bugs (with the generator as it is now): see the explicit tests below.
#[test]
fn regression_seeds() {
    for seed in [116] {
        for kind in TABLE_KINDS {
            if let Err(e) = run_case(&sequence(seed), kind, None, &mut Stats::default()) {
                panic!("seed {seed}, {kind} table: {e}");
            }
        }
    }
}

/// Runs statements written out by hand (Walden's text, SQLite's text) through the
/// differential harness.
fn check_by_hand(statements: &[(&str, &str, Kind)]) {
    let stmts: Vec<Stmt> = statements
        .iter()
        .map(|(walden, sqlite, kind)| Stmt {
            walden: walden.to_string(),
            sqlite: Some(sqlite.to_string()),
            kind: kind.clone(),
        })
        .collect();
    for kind in TABLE_KINDS {
        if let Err(e) = run_case(&stmts, kind, None, &mut Stats::default()) {
            panic!("{kind} table: {e}");
        }
    }
}

fn rows_of(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    s.execute_one(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .rows
}

/// Found by the differential test (seed 116; an earlier generator's seed 18 for the second part):
/// `LIMIT 0` without ORDER BY returned one row, and under any `LIMIT 0` Walden still ran
/// the query, so a row could make it fail. PostgreSQL runs nothing under LIMIT 0.
#[test]
fn limit_zero_returns_and_evaluates_nothing() {
    let vfs = Arc::new(SimVfs::new(1));
    let db = Database::create("db", options(&vfs)).unwrap();
    let mut s = Session::with_seed(&db, 1);
    s.execute_one(CREATE_TABLE).unwrap();
    s.execute_one("INSERT INTO t VALUES (1, 2, 'a'), (3, 0, 'b')")
        .unwrap();
    for sql in [
        "SELECT a FROM t LIMIT 0",
        "SELECT a FROM t LIMIT 0 OFFSET 1",
        "SELECT 10 / b FROM t LIMIT 0",
        "SELECT a FROM t WHERE 10 / b > 0 ORDER BY a LIMIT 0",
        "SELECT b / 0, count(*) FROM t GROUP BY b / 0 LIMIT 0",
        "SELECT count(*), sum(1 / b) FROM t LIMIT 0",
    ] {
        let r = s.execute_one(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert_eq!((r.tag.as_str(), r.rows.len()), ("SELECT 0", 0), "{sql}");
    }
    assert_eq!(
        s.execute_one("INSERT INTO t SELECT * FROM t LIMIT 0")
            .unwrap()
            .tag,
        "INSERT 0 0"
    );
    assert_eq!(rows_of(&mut s, "SELECT a FROM t LIMIT 1 OFFSET 1").len(), 1);
    check_by_hand(&[
        (
            "INSERT INTO t VALUES (3, -3, 'c'), (6, 0, 'db')",
            "INSERT INTO t VALUES (3, -3, 'c'), (6, 0, 'db')",
            Kind::Write,
        ),
        (
            "SELECT b / 0, count(*) FROM t GROUP BY b / 0 LIMIT 0",
            "SELECT pgdiv(b, 0), count(*) FROM t GROUP BY pgdiv(b, 0) LIMIT 0",
            Kind::Query(Check::Ordered),
        ),
        (
            "SELECT a, c FROM t LIMIT 0",
            "SELECT a, c FROM t LIMIT 0",
            Kind::Query(Check::Ordered),
        ),
    ]);
}

/// Found by the differential test on an undo table (seed 4): rolling back two updates of
/// one row in one transaction, each making the row longer, left the row at its longer
/// length ("page 0 ... is corrupt: row at slot 0: 4 trailing bytes after the row").
#[test]
fn rolling_back_two_growing_updates_of_a_row_restores_it() {
    check_by_hand(&[
        (
            "INSERT INTO t (c) VALUES ('BB')",
            "INSERT INTO t (c) VALUES ('BB')",
            Kind::Write,
        ),
        ("BEGIN", "BEGIN", Kind::Begin),
        (
            "UPDATE t SET c = 'cBa'",
            "UPDATE t SET c = 'cBa'",
            Kind::Write,
        ),
        ("UPDATE t SET a = 3", "UPDATE t SET a = 3", Kind::Write),
        ("ROLLBACK", "ROLLBACK", Kind::Rollback),
        (
            "SELECT a, b, c FROM t",
            "SELECT a, b, c FROM t",
            Kind::Query(Check::Ordered),
        ),
    ]);
}

/// Where Walden answers differently from PostgreSQL 15 (NOTES-pg-oracle.md): the generator
/// leaves these constructs out until Walden is fixed. Each test asserts PostgreSQL's
/// answer, so it fails now and passes once Walden is fixed (then drop its `ignore`, and
/// let the generator write the construct again). Run with `-- --ignored`.
fn walden_answer(setup: &str, sql: &str) -> Result<String, String> {
    let vfs = Arc::new(SimVfs::new(1));
    let db = Database::create("db", options(&vfs)).unwrap();
    let mut s = Session::with_seed(&db, 1);
    s.execute(setup).unwrap();
    let r = s.execute_one(sql).map_err(|e| format!("{} {e}", e.code))?;
    Ok(r.rows
        .iter()
        .map(|row| {
            row.iter()
                .map(walden_sql::value::display)
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect::<Vec<_>>()
        .join("\n"))
}

const TWO_TABLES: &str =
    "CREATE TABLE t (a int, b int, c text); CREATE TABLE u (a int, b int, c text);";

/// Discrepancy 1 (PostgreSQL run, seed 13): ORDER BY types a bare NULL of INSERT ...
/// SELECT as text, which an integer column refuses; Walden inserts the NULL.
#[test]
#[ignore = "Walden differs from PostgreSQL: NOTES-pg-oracle.md, discrepancy 1"]
fn insert_select_of_an_ordered_bare_null_into_an_integer_column_is_refused() {
    let got = walden_answer(TWO_TABLES, "INSERT INTO u SELECT 1, NULL, 'x' ORDER BY 2");
    assert_eq!(
        got.map_err(|e| e[..5].to_string()),
        Err("42804".to_string())
    );
}

/// Discrepancy 2 (seed 114): PostgreSQL folds a strict operator with a NULL operand to
/// NULL when planning, so the division is never evaluated.
#[test]
#[ignore = "Walden differs from PostgreSQL: NOTES-pg-oracle.md, discrepancy 2"]
fn a_strict_operator_with_a_null_operand_is_null_unevaluated() {
    let setup = format!("{TWO_TABLES} INSERT INTO t VALUES (11, 20, 'c');");
    assert_eq!(
        walden_answer(&setup, "SELECT a % 0 + NULL IS NULL FROM t"),
        Ok("t".to_string())
    );
    assert_eq!(
        walden_answer(&setup, "SELECT a FROM t WHERE a % 0 BETWEEN b + NULL AND 5"),
        Ok(String::new())
    );
}

const JOINED_ROWS: &str = "CREATE TABLE t (a int, b int, c text); \
    CREATE TABLE u (a int, b int, c text); \
    INSERT INTO t VALUES (1, 1, 'x'), (2, 2, 'y'); \
    INSERT INTO u VALUES (1, 2, 'y'), (3, 3, 'z');";

/// Discrepancy 3 (seed 48, fixed): FULL JOIN's USING column is the value of whichever
/// side has one; Walden gave the left side's, NULL for rows of the right side only.
#[test]
fn full_join_using_merges_both_sides() {
    assert_eq!(
        walden_answer(
            JOINED_ROWS,
            "SELECT c, t.c, u.c FROM t FULL JOIN u USING (c) ORDER BY 1"
        ),
        Ok("x|x|\ny|y|y\nz||z".to_string())
    );
    assert_eq!(
        walden_answer(
            JOINED_ROWS,
            "SELECT * FROM t FULL JOIN u USING (c) ORDER BY 1"
        ),
        Ok("x|1|1||\ny|2|2|1|2\nz|||3|3".to_string())
    );
}

/// Discrepancy 4 (seed 102, fixed): `SELECT *` of a RIGHT JOIN with USING gives the
/// merged column the right side's value where the left has no row; Walden's was NULL.
#[test]
fn select_star_of_right_join_using_merges_both_sides() {
    assert_eq!(
        walden_answer(
            JOINED_ROWS,
            "SELECT * FROM t RIGHT JOIN u USING (b) ORDER BY 1"
        ),
        Ok("2|2|y|1|y\n3|||3|z".to_string())
    );
}

/// The generator writes aggregates with FILTER (for SQLite and PostgreSQL alike), so the
/// runs above compare them.
#[test]
fn the_generator_writes_filter_clauses() {
    let filtered = (0..100)
        .flat_map(sequence)
        .filter(|st| {
            st.walden.contains(" FILTER (WHERE ")
                && st
                    .sqlite
                    .as_deref()
                    .is_some_and(|s| s.contains(" FILTER (WHERE "))
        })
        .count();
    assert!(
        filtered >= 10,
        "{filtered} statements with FILTER in 100 seeds"
    );
}
