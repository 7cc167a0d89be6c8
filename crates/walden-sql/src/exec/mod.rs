//! The executor's pull side: a query's rows taken one at a time (`RowStream::next`), so
//! that the client's result, a cursor's FETCH and a portal's Execute read them as they
//! are made and nothing holds the whole result.
//!
//! A stream owns its state (the table cursor's position, rows still to skip or give)
//! and borrows nothing between calls: each call is given the evaluation context of its
//! moment, whose reader must see what the first call's saw (the same command's, or the
//! cursor's held snapshot). That is what lets a cursor stop after a FETCH and go on in
//! a later statement.
//!
//! The plans that stream today: tables read by a scan (their conditions, the WHERE
//! clause, the select list, OFFSET and LIMIT), joined by hash, nested-loop or index
//! nested-loop joins whose left side streams (`join.rs`), `generate_series`, no
//! FROM, and a FROM clause whose condition is the constant false (no rows). Any other
//! query is run whole when the stream opens (`Node::Rows`), as before.

pub mod cursors;

use std::collections::VecDeque;

mod join;

use walden::{TableCursor, Value};

use crate::error::{code, SqlError, SqlResult};
use crate::expr::{EvalCtx, Expr};
use crate::from::{pad_row, JoinMethod, TableRead};
pub(crate) use crate::select::{with_run, with_run_params};
use crate::select::{QueryPlan, SeriesIter, Source};

/// A query's rows, pulled.
pub(crate) struct RowStream {
    node: Node,
    /// Rows still to skip (OFFSET) before any is given.
    skip: u64,
    /// Rows still to give (LIMIT; None: all).
    left: Option<u64>,
    /// The select list over each input row (None: the input rows are the output).
    project: Option<Projection>,
    /// Rows given so far.
    given: u64,
}

struct Projection {
    filter: Option<Expr>,
    outputs: Vec<Expr>,
}

enum Node {
    /// Rows made before (a query the executor does not stream: run whole at open).
    Rows(VecDeque<Vec<Value>>),
    /// No FROM: one empty row.
    One(bool),
    /// A FROM clause whose condition is the constant false: no rows.
    Empty,
    Series(SeriesIter),
    Scan(Box<Scan>),
    /// A relation's rows placed at columns `at..` of rows `width` wide.
    Pad {
        input: Box<Node>,
        at: usize,
        width: usize,
    },
    Filter {
        input: Box<Node>,
        cond: Expr,
    },
    /// A hash or nested-loop join, its left side streamed.
    BuildJoin(Box<join::BuildJoin>),
    /// An index nested-loop join.
    IndexJoin(Box<join::IndexJoin>),
}

struct Scan {
    read: TableRead,
    /// Made at the first row (the reader of that moment).
    cursor: Option<TableCursor>,
}

impl RowStream {
    /// Opens the stream of a query: a plan that streams is not run until rows are
    /// asked for; another is run whole now, in `cx`.
    pub(crate) fn open(plan: &QueryPlan, cx: &mut EvalCtx) -> SqlResult<RowStream> {
        if let Some(s) = plan.as_select().and_then(|p| p.stream_parts()) {
            if let Some(node) = Node::of(s.source) {
                return Ok(RowStream {
                    node,
                    skip: s.offset,
                    left: s.limit,
                    project: Some(Projection {
                        filter: s.filter.cloned(),
                        outputs: s.outputs.to_vec(),
                    }),
                    given: 0,
                });
            }
        }
        Ok(RowStream::of_rows(plan.run(cx)?))
    }

    /// A stream of rows already made.
    pub(crate) fn of_rows(rows: Vec<Vec<Value>>) -> RowStream {
        RowStream {
            node: Node::Rows(rows.into()),
            skip: 0,
            left: None,
            project: None,
            given: 0,
        }
    }

    /// True if the rows were made whole when the stream opened.
    pub(crate) fn is_materialized(&self) -> bool {
        matches!(self.node, Node::Rows(_))
    }

    /// The next row, or None once there are no more.
    pub(crate) fn next(&mut self, cx: &mut EvalCtx) -> SqlResult<Option<Vec<Value>>> {
        if self.left == Some(0) {
            return Ok(None);
        }
        loop {
            if let Some(g) = cx.statement_guard() {
                g.check()?;
            }
            let Some(input) = self.node.next(cx)? else {
                self.left = Some(0);
                return Ok(None);
            };
            let row = match &self.project {
                None => input,
                Some(p) => {
                    if let Some(f) = &p.filter {
                        if !f.test(&input, cx)? {
                            continue;
                        }
                    }
                    let mut out = Vec::with_capacity(p.outputs.len());
                    for e in &p.outputs {
                        out.push(e.eval(&input, cx)?);
                    }
                    out
                }
            };
            if self.skip > 0 {
                self.skip -= 1;
                continue;
            }
            if let Some(left) = &mut self.left {
                *left -= 1;
            }
            self.given += 1;
            return Ok(Some(row));
        }
    }
}

impl Node {
    /// The node that streams `source`, if it is one that streams.
    fn of(source: &Source) -> Option<Node> {
        Some(match source {
            Source::Nothing => Node::One(false),
            Source::Empty => Node::Empty,
            Source::Series { .. } => Node::Series(SeriesIter::new(source)),
            Source::Table(t) if matches!(t.access, crate::access_path::Access::Scan) => {
                if t.top.is_some() {
                    return None;
                }
                Node::Scan(Box::new(Scan {
                    read: t.clone(),
                    cursor: None,
                }))
            }
            Source::Padded { inner, at, width } => Node::Pad {
                input: Box::new(Node::of(inner)?),
                at: *at,
                width: *width,
            },
            Source::Filter { inner, cond, .. } => Node::Filter {
                input: Box::new(Node::of(inner)?),
                cond: cond.clone(),
            },
            Source::Join(j) => match j.method {
                JoinMethod::Hash { .. } | JoinMethod::NestedLoop => {
                    Node::BuildJoin(Box::new(join::BuildJoin::new(j, Node::of(&j.left)?)))
                }
                JoinMethod::Index { .. } => {
                    Node::IndexJoin(Box::new(join::IndexJoin::new(j, Node::of(&j.left)?)))
                }
                JoinMethod::Lateral => return None,
            },
            _ => return None,
        })
    }

    fn next(&mut self, cx: &mut EvalCtx) -> SqlResult<Option<Vec<Value>>> {
        match self {
            Node::Rows(rows) => Ok(rows.pop_front()),
            Node::One(done) => Ok((!std::mem::replace(done, true)).then(Vec::new)),
            Node::Empty => Ok(None),
            Node::Series(it) => Ok(it.next().map(|v| vec![v])),
            Node::Scan(s) => s.next(cx),
            Node::Pad { input, at, width } => {
                Ok(input.next(cx)?.map(|row| pad_row(row, *at, *width)))
            }
            Node::Filter { input, cond } => loop {
                let Some(row) = input.next(cx)? else {
                    return Ok(None);
                };
                if cond.test(&row, cx)? {
                    return Ok(Some(row));
                }
            },
            Node::BuildJoin(j) => j.next(cx),
            Node::IndexJoin(j) => j.next(cx),
        }
    }
}

impl Scan {
    fn next(&mut self, cx: &mut EvalCtx) -> SqlResult<Option<Vec<Value>>> {
        let reader = cx
            .run
            .and_then(|r| r.reader)
            .ok_or_else(|| SqlError::new(code::INTERNAL, "no transaction to read a table with"))?;
        let t = &self.read;
        if self.cursor.is_none() {
            let needed = t.needed.as_ref().map(|n| n.to_vec());
            self.cursor = Some(reader.table_cursor(&t.name, needed, t.width)?);
        }
        let Some(cursor) = self.cursor.as_mut() else {
            return Ok(None);
        };
        loop {
            let Some((id, row)) = cursor.next(&reader)? else {
                return Ok(None);
            };
            let row = t.shape(id, row)?;
            if let Some(f) = &t.filter {
                if !f.test(&row, cx)? {
                    continue;
                }
            }
            return Ok(Some(row));
        }
    }
}
