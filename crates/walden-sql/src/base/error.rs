//! SQL errors, PostgreSQL-style: a SQLSTATE code, a message, and where in the statement
//! the problem is. The code is kept for a later wire-protocol server.

use std::borrow::Cow;
use std::fmt;

use sqlparser::tokenizer::Location;

/// SQLSTATE codes Walden reports (PostgreSQL's Appendix A).
pub mod code {
    pub const SYNTAX_ERROR: &str = "42601";
    pub const UNDEFINED_TABLE: &str = "42P01";
    pub const UNDEFINED_COLUMN: &str = "42703";
    pub const AMBIGUOUS_COLUMN: &str = "42702";
    pub const DUPLICATE_TABLE: &str = "42P07";
    pub const DUPLICATE_COLUMN: &str = "42701";
    pub const DUPLICATE_ALIAS: &str = "42712";
    pub const INVALID_COLUMN_REFERENCE: &str = "42P10";
    pub const CARDINALITY_VIOLATION: &str = "21000";
    pub const DATATYPE_MISMATCH: &str = "42804";
    pub const CANNOT_COERCE: &str = "42846";
    pub const UNDEFINED_FUNCTION: &str = "42883";
    /// An operator or function whose arguments' types (unknown ones) fit several.
    pub const AMBIGUOUS_FUNCTION: &str = "42725";
    /// A parameter whose type nothing in the statement determines.
    pub const INDETERMINATE_DATATYPE: &str = "42P18";
    /// A parameter given two types, or left untyped where another use typed it.
    pub const AMBIGUOUS_PARAMETER: &str = "42P08";
    pub const UNDEFINED_PARAMETER: &str = "42P02";
    pub const UNDEFINED_OBJECT: &str = "42704";
    pub const INVALID_NAME: &str = "42602";
    pub const DUPLICATE_OBJECT: &str = "42710";
    pub const RESERVED_NAME: &str = "42939";
    pub const GROUPING_ERROR: &str = "42803";
    pub const INVALID_RECURSION: &str = "42P19";
    pub const WINDOWING_ERROR: &str = "42P20";
    pub const WRONG_OBJECT_TYPE: &str = "42809";
    pub const INVALID_FRAME_OFFSET: &str = "22013";
    pub const INVALID_NTILE_ARGUMENT: &str = "22014";
    pub const INVALID_NTH_VALUE_ARGUMENT: &str = "22016";
    pub const INVALID_TABLE_DEFINITION: &str = "42P16";
    pub const DIVISION_BY_ZERO: &str = "22012";
    pub const NUMERIC_OUT_OF_RANGE: &str = "22003";
    pub const STRING_TOO_LONG: &str = "22001";
    pub const INVALID_TEXT: &str = "22P02";
    pub const BAD_COPY_FILE_FORMAT: &str = "22P04";
    pub const CHARACTER_NOT_IN_REPERTOIRE: &str = "22021";
    pub const INVALID_PARAMETER: &str = "22023";
    pub const NULL_VALUE_NOT_ALLOWED: &str = "22004";
    pub const INVALID_REGULAR_EXPRESSION: &str = "2201B";
    pub const NOT_NULL_VIOLATION: &str = "23502";
    pub const UNIQUE_VIOLATION: &str = "23505";
    pub const ACTIVE_TRANSACTION: &str = "25001";
    pub const NO_ACTIVE_SQL_TRANSACTION: &str = "25P01";
    pub const READ_ONLY_SQL_TRANSACTION: &str = "25006";
    pub const INVALID_CURSOR_NAME: &str = "34000";
    pub const INVALID_SAVEPOINT: &str = "3B001";
    pub const DUPLICATE_CURSOR: &str = "42P03";
    pub const FAILED_TRANSACTION: &str = "25P02";
    pub const SERIALIZATION_FAILURE: &str = "40001";
    pub const DEADLOCK: &str = "40P01";
    pub const LOCK_NOT_AVAILABLE: &str = "55P03";
    pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
    pub const PROGRAM_LIMIT: &str = "54000";
    pub const STATEMENT_TOO_COMPLEX: &str = "54001";
    pub const CONFIGURATION_LIMIT: &str = "53400";
    pub const OUT_OF_MEMORY: &str = "53200";
    pub const DISK_FULL: &str = "53100";
    pub const OBJECT_IN_USE: &str = "55006";
    pub const QUERY_CANCELED: &str = "57014";
    pub const IO_ERROR: &str = "58030";
    pub const DATA_CORRUPTED: &str = "XX001";
    pub const INTERNAL: &str = "XX000";
    pub const PROTOCOL_VIOLATION: &str = "08P01";
    pub const CONNECTION_FAILURE: &str = "08006";
    pub const UNDEFINED_PSTATEMENT: &str = "26000";
    pub const DUPLICATE_PSTATEMENT: &str = "42P05";
    pub const SEQUENCE_GENERATOR_LIMIT_EXCEEDED: &str = "2200H";
    pub const DEPENDENT_OBJECTS_STILL_EXIST: &str = "2BP01";
    pub const INVALID_SCHEMA_NAME: &str = "3F000";
    pub const TOO_MANY_COLUMNS: &str = "54011";
    pub const INSUFFICIENT_PRIVILEGE: &str = "42501";
    pub const INVALID_GRANT_OPERATION: &str = "0LP01";
    pub const OBJECT_NOT_IN_PREREQUISITE_STATE: &str = "55000";
    pub const GENERATED_ALWAYS: &str = "428C9";
    pub const SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION: &str = "42000";
}

/// How many characters of a value an error message quotes.
const QUOTED_CHARS: usize = 40;

/// A value (or a piece of a statement) as an error message quotes it: the first 40
/// characters, then "..." if there are more. PostgreSQL quotes values whole, but a value
/// here may be megabytes long, and the message would repeat all of it.
pub fn clip(value: &str) -> Cow<'_, str> {
    match value.char_indices().nth(QUOTED_CHARS) {
        Some((end, _)) => Cow::Owned(format!("{}...", &value[..end])),
        None => Cow::Borrowed(value),
    }
}

/// The error for a NUL character in text, which PostgreSQL's text cannot hold.
pub fn nul_in_text() -> SqlError {
    SqlError::new(
        code::CHARACTER_NOT_IN_REPERTOIRE,
        "invalid byte sequence for encoding \"UTF8\": 0x00",
    )
}

/// An error of one statement: its fields (`ErrorFields`) behind one pointer, so that a
/// `SqlResult` is hardly larger than its value (every expression's evaluation returns
/// one, per row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlError(Box<ErrorFields>);

impl std::ops::Deref for SqlError {
    type Target = ErrorFields;
    fn deref(&self) -> &ErrorFields {
        &self.0
    }
}

impl std::ops::DerefMut for SqlError {
    fn deref_mut(&mut self) -> &mut ErrorFields {
        &mut self.0
    }
}

/// What an error says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorFields {
    /// SQLSTATE, five characters.
    pub code: &'static str,
    pub message: String,
    /// 1-based character offset in the statement's text, as PostgreSQL reports it.
    pub position: Option<usize>,
    pub detail: Option<Box<str>>,
    pub hint: Option<Box<str>>,
    /// Where the error happened beyond the statement, PostgreSQL's CONTEXT field: for
    /// COPY FROM the line and column of the data (`COPY t, line 3, column b: "x"`).
    pub context: Option<Box<str>>,
    /// Where in the script the error is; turned into `position` by the session, which
    /// knows where the statement starts. (Boxed: a `SqlResult` stays small.)
    pub(crate) location: Option<Box<Location>>,
}

pub type SqlResult<T> = Result<T, SqlError>;

// What an expression's evaluation returns, per row and node: its fields in line made
// it 120 bytes.
const _: () = assert!(std::mem::size_of::<SqlResult<walden::Value>>() <= 40);
const _: () = assert!(std::mem::size_of::<ErrorFields>() >= 112);

impl SqlError {
    pub fn new(code: &'static str, message: impl Into<String>) -> SqlError {
        SqlError(Box::new(ErrorFields {
            code,
            message: message.into(),
            position: None,
            detail: None,
            hint: None,
            context: None,
            location: None,
        }))
    }

    /// Points the error at a place in the script (the first one given wins).
    pub fn at(mut self, location: Location) -> SqlError {
        if self.location.is_none() {
            // Line 0 means "no position" and also stops later calls from adding one.
            self.location = Some(Box::new(location));
        }
        self
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> SqlError {
        self.detail = Some(detail.into().into_boxed_str());
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> SqlError {
        self.hint = Some(hint.into().into_boxed_str());
        self
    }

    /// Adds a line to the CONTEXT field: contexts stack as PostgreSQL's do, the
    /// innermost (given first) on the first line.
    pub fn with_context(mut self, context: impl Into<String>) -> SqlError {
        let context = context.into();
        self.context = Some(match self.context.take() {
            Some(inner) => format!("{inner}\n{context}").into_boxed_str(),
            None => context.into_boxed_str(),
        });
        self
    }

    pub fn syntax(message: impl Into<String>) -> SqlError {
        SqlError::new(code::SYNTAX_ERROR, message)
    }

    pub fn unsupported(what: impl fmt::Display) -> SqlError {
        SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            format!("{what} is not supported"),
        )
    }

    pub fn division_by_zero() -> SqlError {
        SqlError::new(code::DIVISION_BY_ZERO, "division by zero")
    }

    pub fn out_of_range(type_name: &str) -> SqlError {
        SqlError::new(
            code::NUMERIC_OUT_OF_RANGE,
            format!("{type_name} out of range"),
        )
    }
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ERROR:  {}", self.message)?;
        if let Some(d) = &self.detail {
            write!(f, "\nDETAIL:  {d}")?;
        }
        if let Some(h) = &self.hint {
            write!(f, "\nHINT:  {h}")?;
        }
        if let Some(c) = &self.context {
            write!(f, "\nCONTEXT:  {c}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SqlError {}

impl From<walden::Error> for SqlError {
    fn from(e: walden::Error) -> SqlError {
        if let Some(err) = statement_error(&e).or_else(|| object_error(&e)) {
            return err;
        }
        SqlError::new(code_of(&e), e.to_string())
    }
}

/// The engine's errors a statement meets (conflicts, constraints, limits), worded as
/// PostgreSQL's.
fn statement_error(e: &walden::Error) -> Option<SqlError> {
    use walden::Error as E;
    Some(match e {
        E::SerializationFailure => {
            SqlError::new(
                code::SERIALIZATION_FAILURE,
                "could not serialize access due to concurrent update",
            )
        }
        E::Deadlock => SqlError::new(code::DEADLOCK, "deadlock detected"),
        E::LockNotAvailable(table) => SqlError::new(
            "55P03",
            format!("could not obtain lock on relation \"{table}\""),
        ),
        E::WaitStopped(why) => match why {
            walden::WaitStop::Canceled => SqlError::new(
                code::QUERY_CANCELED,
                "canceling statement due to user request",
            ),
            walden::WaitStop::StatementTimeout => SqlError::new(
                code::QUERY_CANCELED,
                "canceling statement due to statement timeout",
            ),
            walden::WaitStop::LockTimeout => SqlError::new(
                code::LOCK_NOT_AVAILABLE,
                "canceling statement due to lock timeout",
            ),
        },
        E::SequenceExhausted {
            name,
            maximum,
            limit,
        } => {
            let which = if *maximum { "maximum" } else { "minimum" };
            SqlError::new(
                code::SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
                format!("nextval: reached {which} value of sequence \"{name}\" ({limit})"),
            )
        }
        E::SequenceOutOfBounds {
            name,
            value,
            min,
            max,
        } => {
            SqlError::new(
                code::NUMERIC_OUT_OF_RANGE,
                format!(
                    "setval: value {value} is out of bounds for sequence \"{name}\" ({min}..{max})"
                ),
            )
        }
        E::UniqueViolation {
            index,
            columns,
            values,
        } => {
            SqlError::new(
                code::UNIQUE_VIOLATION,
                format!("duplicate key value violates unique constraint \"{index}\""),
            )
            .with_detail(format!(
                "Key ({columns})=({}) already exists.",
                clip(values)
            ))
        }
        E::KeyTooLarge { index, size, max } => {
            SqlError::new(
                code::PROGRAM_LIMIT,
                format!("index row size {size} exceeds maximum {max} for index \"{index}\""),
            )
            .with_hint("Values larger than a quarter of a page cannot be indexed.")
        }
        E::MustRollBack { cause } => {
            SqlError::new(
                code::FAILED_TRANSACTION,
                format!("current transaction is aborted: {cause}"),
            )
        }
        E::NotNullViolation { table, column } => {
            SqlError::new(
                code::NOT_NULL_VIOLATION,
                format!("null value in column \"{column}\" of relation \"{table}\" violates not-null constraint"),
            )
            .with_detail("The column is part of the primary key.")
        }
        // The SQL layer checks rows before the engine does; should one still not
        // match, its message quotes the value.
        E::SchemaMismatch { table, reason } => {
            SqlError::new(
                code::INTERNAL,
                format!(
                    "row does not match the schema of table {table}: {}",
                    clip(reason)
                ),
            )
        }
        E::RowTooLarge { size, max } => {
            SqlError::new(
                code::PROGRAM_LIMIT,
                format!("row is too big: size {size}, maximum size {max}"),
            )
        }
        _ => return None,
    })
}

/// The engine's errors about a named object (a relation, index, sequence or role that
/// is missing or already there), worded as PostgreSQL's.
fn object_error(e: &walden::Error) -> Option<SqlError> {
    use walden::Error as E;
    Some(match e {
        E::NoSuchTable(t) => SqlError::new(
            code::UNDEFINED_TABLE,
            format!("relation \"{t}\" does not exist"),
        ),
        E::NoSuchSequence(t) => SqlError::new(
            code::UNDEFINED_TABLE,
            format!("relation \"{t}\" does not exist"),
        ),
        E::IndexExists(t) => SqlError::new(
            code::DUPLICATE_TABLE,
            format!("relation \"{t}\" already exists"),
        ),
        E::NoSuchIndex(t) => SqlError::new(
            code::UNDEFINED_OBJECT,
            format!("index \"{t}\" does not exist"),
        ),
        E::TableExists(t) => SqlError::new(
            code::DUPLICATE_TABLE,
            format!("relation \"{t}\" already exists"),
        ),
        E::RoleExists(r) => SqlError::new(
            code::DUPLICATE_OBJECT,
            format!("role \"{r}\" already exists"),
        ),
        E::NoSuchRole(r) => SqlError::new(
            code::UNDEFINED_OBJECT,
            format!("role \"{r}\" does not exist"),
        ),
        _ => return None,
    })
}

/// The SQLSTATE of an engine error worded by its own message.
fn code_of(e: &walden::Error) -> &'static str {
    use walden::Error as E;
    match e {
        E::Io { .. } | E::Poisoned { .. } => code::IO_ERROR,
        E::ChecksumMismatch { .. }
        | E::CorruptPage { .. }
        | E::CorruptWal { .. }
        | E::CorruptControlFile { .. }
        | E::CorruptCheckpoint { .. }
        | E::TruncatedWalSegment { .. }
        | E::MissingWalSegment { .. }
        | E::CorruptFile { .. }
        | E::MissingFile { .. }
        | E::MissingControlFile { .. } => code::DATA_CORRUPTED,
        E::Locked { .. } => code::OBJECT_IN_USE,
        E::DatabaseFull { .. } | E::DiskFull { .. } => code::DISK_FULL,
        E::BufferPoolExhausted { .. } => code::OUT_OF_MEMORY,
        E::TooManyCommands { .. } => code::PROGRAM_LIMIT,
        E::RecordTooLarge { .. } => code::PROGRAM_LIMIT,
        E::UndoFull { .. } => code::CONFIGURATION_LIMIT,
        E::UndoSpill { source, .. } | E::TempFile { source, .. }
            if source.kind() == std::io::ErrorKind::StorageFull =>
        {
            code::DISK_FULL
        }
        E::UndoSpill { .. } | E::TempFile { .. } => code::IO_ERROR,
        E::InvalidOption(_) => code::INVALID_PARAMETER,
        _ => code::INTERNAL,
    }
}

/// A constraint error without its detail, which shows a row's or a key's values: for a
/// user who may not read them all.
pub fn without_row_details(mut e: SqlError) -> SqlError {
    if matches!(
        e.code,
        code::UNIQUE_VIOLATION | code::NOT_NULL_VIOLATION | "23514" | "23503" | "23P01"
    ) {
        e.detail = None;
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Engine errors that are limits or states, not bugs, reach clients with their own
    /// SQLSTATE (not 22023 "invalid parameter", not XX000).
    #[test]
    fn engine_limits_and_states_have_their_sqlstate() {
        let cases = [
            (walden::Error::DatabaseFull { pages: 1 << 32 }, "53100"),
            (
                walden::Error::UndoSpill {
                    path: PathBuf::from("d/undo/0000000000000001"),
                    source: std::io::Error::from_raw_os_error(28),
                },
                "53100",
            ),
            (
                walden::Error::UndoSpill {
                    path: PathBuf::from("d/undo/0000000000000001"),
                    source: std::io::Error::from_raw_os_error(5),
                },
                "58030",
            ),
            (
                walden::Error::TempFile {
                    path: PathBuf::from("d/tmp/0000000000000001"),
                    op: "write",
                    source: std::io::Error::from_raw_os_error(28),
                },
                "53100",
            ),
            (walden::Error::BufferPoolExhausted { frames: 16 }, "53200"),
            (walden::Error::TooManyCommands { max: 7 }, "54000"),
            (
                walden::Error::Locked {
                    dir: PathBuf::from("d"),
                    lock: PathBuf::from("d/lock"),
                    holder: "process 1".into(),
                },
                "55006",
            ),
            (
                walden::Error::CorruptFile {
                    path: PathBuf::from("d/xact"),
                    reason: "checksum mismatch in block 0".into(),
                },
                "XX001",
            ),
            (
                walden::Error::MissingFile {
                    path: PathBuf::from("d/data"),
                    reason: "needed".into(),
                },
                "XX001",
            ),
        ];
        for (e, expected) in cases {
            let text = e.to_string();
            let sql = SqlError::from(e);
            assert_eq!((sql.code, sql.message.as_str()), (expected, text.as_str()));
        }
    }
}
