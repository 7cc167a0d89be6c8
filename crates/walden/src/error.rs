//! The engine's error type: one enum, each variant carrying the evidence a user or a test
//! needs (file, page, LSN, expected and actual values).

use std::path::PathBuf;

/// Everything that can go wrong in Walden.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a Walden database (it has no Walden control file)")]
    NotADatabase { path: PathBuf },
    #[error("database already exists at {path}")]
    AlreadyExists { path: PathBuf },
    #[error("{dir} holds database files ({found}) but no control file: the database is damaged (or its creation was interrupted); nothing was changed. Restore `control` from a backup, or move the files away to create a new database")]
    MissingControlFile { dir: PathBuf, found: String },
    #[error("cannot create a database in {dir}: the directory is not empty and holds no Walden database ({entries})")]
    DirectoryNotEmpty { dir: PathBuf, entries: String },
    #[error("database {dir} is in use by {holder} (lock file {lock})")]
    Locked {
        dir: PathBuf,
        lock: PathBuf,
        holder: String,
    },
    #[error("{path} is missing: {reason}")]
    MissingFile { path: PathBuf, reason: String },
    #[error("{path} is corrupt: {reason}")]
    CorruptFile { path: PathBuf, reason: String },
    #[error("{path} has format version {found}; this build reads version {supported}")]
    UnsupportedVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("control file {path} is corrupt: {reason}")]
    CorruptControlFile { path: PathBuf, reason: String },
    #[error("checkpoint file {path} is corrupt: {reason}")]
    CorruptCheckpoint { path: PathBuf, reason: String },
    #[error("page checksum mismatch in {path}, page {page} (location {location}): expected {expected:#010x}, found {actual:#010x}")]
    ChecksumMismatch {
        path: PathBuf,
        page: u64,
        location: u64,
        expected: u32,
        actual: u32,
    },
    #[error("page {page} in {path} (location {location}) is corrupt: {reason}")]
    CorruptPage {
        path: PathBuf,
        page: u64,
        location: u64,
        reason: String,
    },
    #[error("WAL corrupt at LSN {lsn} in {path}: {reason}")]
    CorruptWal {
        path: PathBuf,
        lsn: u64,
        reason: String,
    },
    #[error("WAL segment {path} is truncated: {len} bytes, expected {expected}")]
    TruncatedWalSegment {
        path: PathBuf,
        len: u64,
        expected: u64,
    },
    #[error("WAL segment {segment} ({path}) is missing, but {reason}")]
    MissingWalSegment {
        path: PathBuf,
        segment: u64,
        reason: String,
    },
    #[error("the database refuses writes after an earlier I/O failure ({cause}); reopen it")]
    Poisoned { cause: String },
    #[error("could not serialize access due to concurrent update (SQLSTATE 40001)")]
    SerializationFailure,
    #[error("deadlock detected (SQLSTATE 40P01)")]
    Deadlock,
    /// A table lock asked for with NOWAIT is held by another transaction.
    #[error("could not obtain lock on relation \"{0}\"")]
    LockNotAvailable(String),
    /// A wait for another transaction (a row, a key, an advisory lock) stopped by the
    /// waiter's limits (`txn::WaitLimits`).
    #[error("the wait was stopped: {0}")]
    WaitStopped(WaitStop),
    #[error("table {0:?} does not exist")]
    NoSuchTable(String),
    #[error("table {0:?} already exists")]
    TableExists(String),
    #[error("row {0} does not exist or is not visible to this transaction")]
    NoSuchRow(crate::RowId),
    #[error("row does not match the schema of table {table}: {reason}")]
    SchemaMismatch { table: String, reason: String },
    #[error("row of {size} bytes does not fit in a page (at most {max} bytes)")]
    RowTooLarge { size: usize, max: usize },
    #[error("a WAL record of {bytes} bytes is larger than the {max} bytes a record may have")]
    RecordTooLarge { bytes: usize, max: usize },
    #[error("invalid option: {0}")]
    InvalidOption(String),
    #[error("database is full: {pages} pages, the most a table's row links can address (SQLSTATE 53100)")]
    DatabaseFull { pages: u64 },
    /// The file system had no room for the data file to grow by what the change needs
    /// reserved first: the change was refused before anything was written, and the
    /// database goes on (docs/recovery.md rule 20).
    #[error("could not extend file {path} by {bytes} bytes: {source} (SQLSTATE 53100)")]
    DiskFull {
        path: PathBuf,
        bytes: u64,
        #[source]
        source: std::io::Error,
    },
    #[error("buffer pool exhausted: all {frames} frames are pinned; raise buffer_pool_bytes (SQLSTATE 53200)")]
    BufferPoolExhausted { frames: usize },
    #[error("too many commands in one transaction (at most {max}) (SQLSTATE 54000)")]
    TooManyCommands { max: u64 },
    #[error("undo log full: {live} bytes of undo held, the limit (undo_limit) is {limit} bytes; end long-running transactions or raise the limit (SQLSTATE 53400)")]
    UndoFull { limit: u64, live: u64 },
    #[error("could not write undo to {path}: {source}; the change was not made (undo past undo_memory goes to files in the database's undo directory)")]
    UndoSpill {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("could not {op} temporary file {}: {source}", path.display())]
    TempFile {
        path: std::path::PathBuf,
        op: &'static str,
        source: std::io::Error,
    },
    #[error("transaction is already finished")]
    TransactionFinished,
    #[error("index {index:?} is damaged at page {page}: {reason} (REINDEX rebuilds it)")]
    CorruptIndex {
        index: String,
        page: u64,
        reason: String,
    },
    #[error("index row of {size} bytes exceeds the maximum {max} for index {index:?}: a key may take at most a quarter of a page (SQLSTATE 54000)")]
    KeyTooLarge {
        index: String,
        size: usize,
        max: usize,
    },
    #[error("duplicate key value violates unique constraint {index:?}: Key ({columns})=({values}) already exists (SQLSTATE 23505)")]
    UniqueViolation {
        index: String,
        columns: String,
        values: String,
    },
    #[error("index {0:?} does not exist")]
    NoSuchIndex(String),
    #[error("current transaction is aborted ({cause}); it can only roll back (SQLSTATE 25P02)")]
    MustRollBack { cause: String },
    #[error("relation {0:?} already exists")]
    IndexExists(String),
    #[error("sequence {0:?} does not exist")]
    NoSuchSequence(String),
    #[error("nextval: reached {} value of sequence {name:?} ({limit}) (SQLSTATE 2200H)", if *maximum { "maximum" } else { "minimum" })]
    SequenceExhausted {
        name: String,
        maximum: bool,
        limit: i64,
    },
    #[error("setval: value {value} is out of bounds for sequence {name:?} ({min}..{max}) (SQLSTATE 22003)")]
    SequenceOutOfBounds {
        name: String,
        value: i64,
        min: i64,
        max: i64,
    },
    #[error("role {0:?} already exists")]
    RoleExists(String),
    #[error("role {0:?} does not exist")]
    NoSuchRole(String),
    #[error("null value in column {column:?} of relation {table:?} violates not-null constraint: it is part of the primary key (SQLSTATE 23502)")]
    NotNullViolation { table: String, column: String },
    #[error("pages that must reach disk in order wait for each other ({pages:?}); they stay in memory unwritten. This is a bug: docs/recovery.md rules 28 and 33 make every such wait point at a higher page number")]
    WriteOrderCycle {
        /// The page being written, the last page of its chain of waits, and the page
        /// that one waits for.
        pages: Vec<u64>,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Damage to the log itself (what `walden recover --accept-data-loss` may cut off).
    pub fn is_wal_damage(&self) -> bool {
        matches!(
            self,
            Error::CorruptWal { .. }
                | Error::MissingWalSegment { .. }
                | Error::TruncatedWalSegment { .. }
        )
    }

    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// Why a wait stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitStop {
    /// The waiter's cancel flag was set.
    Canceled,
    /// The waiter's statement ran past its deadline.
    StatementTimeout,
    /// The wait itself lasted past the waiter's lock timeout.
    LockTimeout,
}

impl std::fmt::Display for WaitStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WaitStop::Canceled => "canceled",
            WaitStop::StatementTimeout => "statement timeout",
            WaitStop::LockTimeout => "lock timeout",
        })
    }
}
