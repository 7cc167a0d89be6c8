//! What every statement runs with and returns: its context ([`Ctx`]: the database,
//! the running statement's guard, who runs it, the session's caches of constraints),
//! its [`Output`], and the [`RowSink`] a caller may take its rows through. The
//! statements (DML, DDL, utility) take these from the session, which is above them.

use walden::rng::SimRng;
use walden::{Database, Value};

use crate::error::SqlResult;
use crate::expr::EvalCtx;
use crate::guard::Guard;
use crate::types::SqlType;

/// What statements need while they run inside a transaction.
pub(crate) struct Ctx<'s, 'db> {
    pub db: &'db Database,
    pub rng: &'s mut SimRng,
    /// The running statement's cancel and memory checks.
    pub guard: &'s Guard,
    /// The values and cached plan of the prepared query running, if one is.
    pub prepared: Option<&'s crate::prepared::PreparedRun>,
    /// Who the statement runs as, and what it may do.
    pub auth: std::sync::Arc<crate::privileges::Authority>,
    /// Where a query's rows go as they are made, if the caller takes them so.
    pub rows: Option<&'s mut dyn RowSink>,
    /// The session's foreign keys, as of the catalog generation it last read them at.
    pub fkeys: &'s crate::fkeys::KeyCache,
    /// The session's CHECK constraints bound, by table and schema.
    pub checks: &'s crate::checks::CheckCache,
}

impl Ctx<'_, '_> {
    pub fn eval_ctx(&mut self) -> EvalCtx<'_> {
        EvalCtx::of(self.rng, self.guard)
    }
}

/// What a statement returns besides its tag.
pub(crate) struct Output {
    pub tag: String,
    pub columns: Vec<(String, SqlType)>,
    pub rows: Vec<Vec<Value>>,
    pub notices: Vec<String>,
    /// The rows went to the caller's `RowSink` as they were made (`rows` is empty).
    pub streamed: bool,
    /// The rows are a FETCH's from a BINARY cursor (`StatementResult::binary`).
    pub binary: bool,
}

/// Where a query's rows go as they are made, when the caller takes them so (a
/// server's RowDescription and DataRow messages): no statement then holds its whole
/// result. An error a sink returns (the client gone) ends the statement.
pub trait RowSink {
    /// The result's columns, before its first row.
    fn start(&mut self, columns: &[(String, SqlType)]) -> SqlResult<()>;
    fn row(&mut self, row: &[Value]) -> SqlResult<()>;
}

impl Output {
    pub fn tag(tag: impl Into<String>) -> Output {
        Output {
            tag: tag.into(),
            columns: Vec::new(),
            rows: Vec::new(),
            notices: Vec::new(),
            streamed: false,
            binary: false,
        }
    }
}
