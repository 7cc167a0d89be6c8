//! GRANT and REVOKE, PostgreSQL's: privileges on tables, views, sequences, the schema
//! `public` and columns (`SELECT (a, b)`, kept by the columns' stored positions) (to roles or PUBLIC, WITH GRANT OPTION, revoked with CASCADE), and roles to
//! roles (WITH ADMIN OPTION); and `ALTER … OWNER TO`. Parsed here from the statement's
//! tokens, with PostgreSQL's errors and warnings, and applied to the engine's entries in
//! one step under its catalog lock (`Database::change_acl`, `change_members`).

mod acl;
mod owner;
mod parse;
mod run;

pub(crate) use owner::change_owner;
pub use parse::parse;
pub(crate) use run::run;

/// What a GRANT or REVOKE is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `[TABLE] name, …` (tables, views and sequences).
    Tables(Vec<String>),
    /// `SEQUENCE name, …`.
    Sequences(Vec<String>),
    /// `SCHEMA name, …`.
    Schemas(Vec<String>),
    /// `ALL TABLES IN SCHEMA public` / `ALL SEQUENCES IN SCHEMA public`.
    AllTables,
    AllSequences,
    /// ALTER DEFAULT PRIVILEGES … ON TABLES / ON SEQUENCES.
    DefaultTables,
    DefaultSequences,
}

/// A parsed GRANT or REVOKE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantStatement {
    Privileges {
        grant: bool,
        /// None: ALL [PRIVILEGES].
        privs: Option<u16>,
        /// Privileges on columns: `SELECT (a, b)`, `ALL (a)` (each with its columns'
        /// names).
        columns: Vec<(u16, Vec<String>)>,
        target: Target,
        grantees: Vec<String>,
        /// WITH GRANT OPTION, or REVOKE GRANT OPTION FOR.
        option: bool,
        cascade: bool,
    },
    Roles {
        grant: bool,
        roles: Vec<String>,
        members: Vec<String>,
        /// WITH ADMIN OPTION, or REVOKE ADMIN OPTION FOR.
        admin: bool,
    },
    /// `ALTER DEFAULT PRIVILEGES [FOR ROLE r, …] [IN SCHEMA public] { GRANT | REVOKE }
    /// … ON { TABLES | SEQUENCES } …` (`change` is a `Privileges` with a default
    /// target; no roles: the current user's; no schema: every schema).
    Defaults {
        roles: Vec<String>,
        schema: bool,
        change: Box<GrantStatement>,
    },
}

/// The commands this file parses.
pub fn is_grant_command(name: &str) -> bool {
    matches!(name, "GRANT" | "REVOKE" | "ALTER DEFAULT")
}

pub fn command(stmt: &GrantStatement) -> &'static str {
    match stmt {
        GrantStatement::Defaults { .. } => "ALTER DEFAULT PRIVILEGES",
        GrantStatement::Privileges { grant: true, .. }
        | GrantStatement::Roles { grant: true, .. } => "GRANT",
        _ => "REVOKE",
    }
}
