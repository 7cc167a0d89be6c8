//! The error of a throwaway cluster: what failed, with the evidence (the program's
//! message, the server log's last lines, or the operating system's error).

use std::io;

/// Messages carry no "postgres:" prefix; a caller adds its own context.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system call made for the cluster failed: creating or removing its
    /// directory, running a program.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    /// A server program failed: its message on one line, or its exit status
    /// (`program` names the action too, as in "pg_ctl start").
    #[error("{program} failed: {detail}")]
    Failed { program: String, detail: String },
    /// A setting, the OS user or a program's output was not what the cluster needs.
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}
