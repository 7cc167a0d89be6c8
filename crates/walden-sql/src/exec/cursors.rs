//! Cursors (PostgreSQL's DECLARE, FETCH, MOVE and CLOSE): a query's rows read a few at
//! a time over several statements of a transaction block, from the executor's stream
//! (`exec::RowStream`) with the snapshot of the DECLARE (`walden::HeldSnapshot`), so
//! that a query that streams is never held whole.
//!
//! A cursor's position is PostgreSQL's: before the first row (0), on row k (1-based),
//! or after the last. A SCROLL cursor keeps the rows it has read, to move back over
//! them; a NO SCROLL one keeps none and only moves forward; one declared with neither
//! keeps them while they fit in `work_mem` and is forward-only past that (PostgreSQL
//! lets such a cursor move back when its plan can; Walden when its rows are few). At
//! COMMIT a WITH HOLD cursor reads the rest of its rows, which it keeps for later
//! transactions; the others close at the end of their transaction.

use sqlparser::tokenizer::{Token, TokenWithSpan};
use walden::{HeldSnapshot, Value};

use crate::error::{clip, code, SqlError, SqlResult};
use crate::exec::RowStream;
use crate::expr::EvalCtx;
use crate::guard::row_bytes;
use crate::types::SqlType;

pub use crate::pg_catalog::CursorInfo;

/// FETCH, MOVE or CLOSE, as parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum CursorStatement {
    Fetch {
        name: String,
        direction: Direction,
        /// MOVE: the same motion, no rows returned.
        moving: bool,
    },
    /// CLOSE name, or CLOSE ALL (None).
    Close(Option<String>),
}

/// Where a FETCH or MOVE goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// This many rows forward (None: all the rest).
    Forward(Option<u64>),
    /// This many rows back (None: back to the start).
    Backward(Option<u64>),
    /// To row n (1-based; below 0 counted from the end; 0 before the first).
    Absolute(i64),
    /// To the row n rows away (0: the current row again).
    Relative(i64),
}

/// True for the statements `parse` takes.
pub fn is_cursor_command(name: &str) -> bool {
    matches!(name, "FETCH" | "MOVE" | "CLOSE")
}

fn syntax_near(t: Option<&Token>) -> SqlError {
    match t {
        Some(t) => SqlError::syntax(format!(
            "syntax error at or near \"{}\"",
            clip(&t.to_string())
        )),
        None => SqlError::syntax("syntax error at end of input"),
    }
}

fn word(t: &Token) -> Option<String> {
    match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    }
}

fn cursor_name(t: &Token) -> Option<String> {
    match t {
        Token::Word(w) => Some(crate::catalog::ident_name(
            &w.clone().into_ident(sqlparser::tokenizer::Span::empty()),
        )),
        _ => None,
    }
}

/// A signed count at `words[i..]`: its value and the tokens it took.
fn count_at(words: &[&Token], i: usize) -> SqlResult<Option<(i64, usize)>> {
    let (sign, at) = match words.get(i) {
        Some(Token::Minus) => (-1, i + 1),
        Some(Token::Plus) => (1, i + 1),
        _ => (1, i),
    };
    match words.get(at) {
        Some(Token::Number(n, _)) => {
            let v: i64 = n.parse().map_err(|_| syntax_near(words.get(at).copied()))?;
            Ok(Some((sign * v, at + 1 - i)))
        }
        _ if at > i => Err(syntax_near(words.get(at).copied())),
        _ => Ok(None),
    }
}

/// Parses FETCH, MOVE or CLOSE (PostgreSQL's grammar: `FETCH [direction] [FROM | IN]
/// name`, `CLOSE {name | ALL}`).
pub fn parse(toks: &[TokenWithSpan]) -> SqlResult<CursorStatement> {
    let words: Vec<&Token> = toks
        .iter()
        .map(|t| &t.token)
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon))
        .collect();
    let first = words.first().and_then(|t| word(t)).unwrap_or_default();
    if first == "CLOSE" {
        return parse_close(&words[1..]);
    }
    let moving = first == "MOVE";
    let mut i = 1;
    let kw = words.get(i).and_then(|t| word(t));
    // A direction keyword followed by nothing is the cursor's name.
    let last = words.len() == i + 1;
    let direction = match kw.as_deref() {
        _ if last => Direction::Forward(Some(1)),
        Some("NEXT") => {
            i += 1;
            Direction::Forward(Some(1))
        }
        Some("PRIOR") => {
            i += 1;
            Direction::Backward(Some(1))
        }
        Some("FIRST") => {
            i += 1;
            Direction::Absolute(1)
        }
        Some("LAST") => {
            i += 1;
            Direction::Absolute(-1)
        }
        Some("ALL") => {
            i += 1;
            Direction::Forward(None)
        }
        Some(k @ ("ABSOLUTE" | "RELATIVE")) => {
            let (n, used) =
                count_at(&words, i + 1)?.ok_or_else(|| syntax_near(words.get(i + 1).copied()))?;
            i += 1 + used;
            if k == "ABSOLUTE" {
                Direction::Absolute(n)
            } else {
                Direction::Relative(n)
            }
        }
        Some(k @ ("FORWARD" | "BACKWARD")) => {
            i += 1;
            let back = k == "BACKWARD";
            if words.get(i).and_then(|t| word(t)).as_deref() == Some("ALL") {
                i += 1;
                if back {
                    Direction::Backward(None)
                } else {
                    Direction::Forward(None)
                }
            } else {
                let n = match count_at(&words, i)? {
                    Some((n, used)) => {
                        i += used;
                        n
                    }
                    None => 1,
                };
                counted(if back { -n } else { n })
            }
        }
        _ => match count_at(&words, i)? {
            Some((n, used)) => {
                i += used;
                counted(n)
            }
            None => Direction::Forward(Some(1)),
        },
    };
    if matches!(
        words.get(i).and_then(|t| word(t)).as_deref(),
        Some("FROM" | "IN")
    ) {
        i += 1;
    }
    let name = words
        .get(i)
        .and_then(|t| cursor_name(t))
        .ok_or_else(|| syntax_near(words.get(i).copied()))?;
    if let Some(t) = words.get(i + 1) {
        return Err(syntax_near(Some(t)));
    }
    Ok(CursorStatement::Fetch {
        name,
        direction,
        moving,
    })
}

/// CLOSE's operand (the words after CLOSE): a cursor's name or ALL.
fn parse_close(words: &[&Token]) -> SqlResult<CursorStatement> {
    match words {
        [t] if word(t).as_deref() == Some("ALL") => Ok(CursorStatement::Close(None)),
        [t] => cursor_name(t)
            .map(|n| CursorStatement::Close(Some(n)))
            .ok_or_else(|| syntax_near(Some(t))),
        [] => Err(syntax_near(None)),
        [_, t, ..] => Err(syntax_near(Some(t))),
    }
}

/// A count's direction: forward, back for a negative one, the current row for 0.
fn counted(n: i64) -> Direction {
    match n {
        0 => Direction::Relative(0),
        n if n > 0 => Direction::Forward(Some(n as u64)),
        n => Direction::Backward(Some(n.unsigned_abs())),
    }
}

/// How a cursor may move back (see the module's notes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scroll {
    Yes,
    No,
    /// Neither keyword: back while its rows fit in `work_mem`.
    Default,
}

/// An open cursor.
pub(crate) struct Cursor {
    /// The DECLARE statement's text (`pg_cursors.statement`).
    pub text: String,
    pub columns: Vec<(String, SqlType)>,
    pub stream: RowStream,
    /// The DECLARE's view, while its transaction runs (None once a WITH HOLD cursor's
    /// rows were read at COMMIT, or for rows made whole when it opened).
    pub held: Option<HeldSnapshot>,
    pub scroll: Scroll,
    pub hold: bool,
    pub binary: bool,
    /// When it was declared (microseconds since 2000-01-01 UTC).
    pub created: i64,
    /// Declared in the transaction running (it goes if that one rolls back).
    pub new: bool,
    /// The savepoints set when it was declared (a rollback to any of them closes it).
    pub savepoints: usize,
    /// Listed in `pg_cursors` (a DECLARE's; not a protocol portal's).
    pub visible: bool,
    /// The rows read so far, kept to move back over (a scrollable cursor's).
    kept: Vec<Vec<Value>>,
    kept_bytes: u64,
    /// Rows kept no more: a default cursor's, past `work_mem`.
    forward_only: bool,
    /// Rows read from the stream so far.
    read: u64,
    /// The position: 0 before the first row, k on row k; past `read` after the last.
    pos: u64,
    /// The stream has no more rows (`read` is the count).
    done: bool,
}

impl Cursor {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        text: String,
        columns: Vec<(String, SqlType)>,
        stream: RowStream,
        held: Option<HeldSnapshot>,
        scroll: Scroll,
        hold: bool,
        binary: bool,
        created: i64,
    ) -> Cursor {
        Cursor {
            text,
            columns,
            stream,
            held,
            forward_only: scroll == Scroll::No,
            scroll,
            hold,
            binary,
            created,
            new: true,
            savepoints: 0,
            visible: true,
            kept: Vec::new(),
            kept_bytes: 0,
            read: 0,
            pos: 0,
            done: false,
        }
    }

    /// True if its rows were made whole when it opened (it reads no table later).
    pub(crate) fn stream_is_materialized(&self) -> bool {
        self.stream.is_materialized()
    }

    /// True once the cursor stands after its last row.
    pub(crate) fn at_end(&self) -> bool {
        self.done && self.pos >= self.after_end()
    }

    /// True if the cursor can move back (pg_cursors.is_scrollable).
    pub(crate) fn scrollable(&self) -> bool {
        self.scroll != Scroll::No
    }

    fn backward_error() -> SqlError {
        SqlError::new(
            code::OBJECT_NOT_IN_PREREQUISITE_STATE,
            "cursor can only scan forward",
        )
        .with_hint("Declare it with SCROLL option to enable backward scan.")
    }

    /// Row k (1-based), reading the stream up to it (only forward for a cursor that
    /// keeps no rows). None past the last row.
    fn row(&mut self, k: u64, cx: &mut EvalCtx, limit: u64) -> SqlResult<Option<Vec<Value>>> {
        if k <= self.read {
            if self.forward_only {
                return Err(Self::backward_error());
            }
            return Ok(self.kept.get((k - 1) as usize).cloned());
        }
        while self.read < k {
            if self.done {
                return Ok(None);
            }
            let Some(row) = self.stream.next(cx)? else {
                self.done = true;
                return Ok(None);
            };
            self.read += 1;
            if !self.forward_only {
                self.keep(&row, limit)?;
            }
            if self.read == k {
                return Ok(Some(row));
            }
        }
        Ok(None)
    }

    /// Keeps a row read, for moving back: a SCROLL cursor up to `statement_mem`
    /// (53200 past it), a default one while within `work_mem` (`limit`).
    fn keep(&mut self, row: &[Value], limit: u64) -> SqlResult<()> {
        let bytes = row_bytes(row) + 24;
        if self.kept_bytes + bytes > limit {
            if self.scroll == Scroll::Default {
                self.forward_only = true;
                self.kept = Vec::new();
                self.kept_bytes = 0;
                return Ok(());
            }
            return Err(SqlError::new(
                code::OUT_OF_MEMORY,
                format!(
                    "out of memory: the rows of a SCROLL cursor need more than statement_mem ({})",
                    crate::guard::size_text(limit)
                ),
            ));
        }
        self.kept_bytes += bytes;
        self.kept.push(row.to_vec());
        Ok(())
    }

    /// The position after the last row, once it is known.
    fn after_end(&self) -> u64 {
        self.read + 1
    }

    /// One step forward: the row moved onto, or None (now after the last row).
    fn step_forward(&mut self, cx: &mut EvalCtx, limit: u64) -> SqlResult<Option<Vec<Value>>> {
        if self.done && self.pos >= self.after_end() {
            return Ok(None);
        }
        self.land(self.pos + 1, cx, limit)
    }

    /// Row k read, and the cursor on it; past the last row, after it.
    fn land(&mut self, k: u64, cx: &mut EvalCtx, limit: u64) -> SqlResult<Option<Vec<Value>>> {
        let row = self.row(k, cx, limit)?;
        self.pos = if row.is_some() { k } else { self.after_end() };
        Ok(row)
    }

    /// One step back: the row moved onto, or None (now before the first row).
    fn step_backward(&mut self) -> SqlResult<Option<Vec<Value>>> {
        if self.forward_only {
            return Err(Self::backward_error());
        }
        if self.pos <= 1 {
            self.pos = 0;
            return Ok(None);
        }
        self.pos -= 1;
        Ok(self.kept.get((self.pos - 1) as usize).cloned())
    }

    /// Reads the rest of the stream (to know where the end is).
    fn read_all(&mut self, cx: &mut EvalCtx, limit: u64) -> SqlResult<()> {
        while !self.done {
            let k = self.read + 1;
            self.row(k, cx, limit)?;
        }
        Ok(())
    }

    /// Goes to row k (0: before the first; past the last: after it) and gives it.
    fn go_to(&mut self, k: u64, cx: &mut EvalCtx, limit: u64) -> SqlResult<Option<Vec<Value>>> {
        if self.forward_only && k <= self.pos {
            return Err(Self::backward_error());
        }
        if k == 0 {
            self.pos = 0;
            return Ok(None);
        }
        self.land(k, cx, limit)
    }

    /// Runs a FETCH (rows given to `out`) or MOVE; returns the count its tag shows.
    pub(crate) fn fetch(
        &mut self,
        direction: Direction,
        cx: &mut EvalCtx,
        limit: u64,
        out: &mut Vec<Vec<Value>>,
    ) -> SqlResult<u64> {
        let mut n = 0u64;
        let mut give = |row: Option<Vec<Value>>, n: &mut u64| {
            if let Some(r) = row {
                *n += 1;
                out.push(r);
            }
        };
        match direction {
            Direction::Forward(count) => {
                for _ in 0..count.unwrap_or(u64::MAX) {
                    match self.step_forward(cx, limit)? {
                        Some(r) => give(Some(r), &mut n),
                        None => break,
                    }
                }
            }
            Direction::Backward(count) => {
                if self.forward_only {
                    return Err(Self::backward_error());
                }
                for _ in 0..count.unwrap_or(u64::MAX) {
                    match self.step_backward()? {
                        Some(r) => give(Some(r), &mut n),
                        None => break,
                    }
                }
            }
            Direction::Absolute(k) => {
                let target = if k >= 0 {
                    k as u64
                } else {
                    if self.forward_only {
                        return Err(Self::backward_error());
                    }
                    self.read_all(cx, limit)?;
                    (self.read + 1).saturating_sub(k.unsigned_abs())
                };
                let r = self.go_to(target, cx, limit)?;
                give(r, &mut n);
            }
            Direction::Relative(0) => {
                // The current row again (none before the first or after the last).
                let on_row = self.pos >= 1 && !(self.done && self.pos >= self.after_end());
                if on_row {
                    if self.forward_only {
                        return Err(Self::backward_error());
                    }
                    give(self.kept.get((self.pos - 1) as usize).cloned(), &mut n);
                }
            }
            Direction::Relative(k) => {
                let target = if k > 0 {
                    self.pos.saturating_add(k as u64)
                } else {
                    self.pos.saturating_sub(k.unsigned_abs())
                };
                let r = self.go_to(target, cx, limit)?;
                give(r, &mut n);
            }
        }
        Ok(n)
    }

    /// Reads the rest of the rows (a WITH HOLD cursor at its transaction's COMMIT),
    /// within `limit` bytes (53200 past it): the cursor then needs no transaction.
    pub(crate) fn materialize(&mut self, cx: &mut EvalCtx, limit: u64) -> SqlResult<()> {
        let too_many = || {
            SqlError::new(
                code::OUT_OF_MEMORY,
                format!(
                    "out of memory: the rows of a WITH HOLD cursor need more than statement_mem ({})",
                    crate::guard::size_text(limit)
                ),
            )
        };
        if self.forward_only {
            let (mut rest, mut bytes) = (Vec::new(), 0u64);
            while let Some(row) = self.stream.next(cx)? {
                bytes += row_bytes(&row) + 24;
                if bytes > limit {
                    return Err(too_many());
                }
                rest.push(row);
            }
            // The stream now gives the rest from where the cursor stands.
            self.stream = RowStream::of_rows(rest);
        } else {
            // Every row is kept: none may be dropped for being past work_mem now.
            self.scroll = Scroll::Yes;
            self.read_all(cx, limit).map_err(|e| {
                if e.code == code::OUT_OF_MEMORY {
                    too_many()
                } else {
                    e
                }
            })?;
        }
        self.held = None;
        self.new = false;
        Ok(())
    }
}
