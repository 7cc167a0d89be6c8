//! Roles as PostgreSQL's SQL shows them: `CREATE ROLE | USER | GROUP`, `ALTER ROLE | USER
//! | GROUP` (attributes, password, `RENAME TO`) and `DROP ROLE | USER | GROUP`, parsed
//! here from the statement's tokens (sqlparser's dialect lacks `CREATE USER`,
//! `ENCRYPTED PASSWORD` and PostgreSQL's errors) and run against the engine's roles;
//! and the bootstrap superuser `postgres`, which every database has (the virtual
//! catalog's owner of everything) and which the engine stores only once it is changed.
//!
//! A password given in clear becomes a SCRAM-SHA-256 verifier (`scram.rs`) before it
//! reaches the engine; one given as a verifier (pg_dump writes them so) is kept as it
//! is. Neither is ever quoted in an error: a syntax error at a string shows `'…'`.
//!
//! Roles carry PostgreSQL's attributes, shown in `pg_roles`, with PostgreSQL 15's
//! rules for who may create, change and drop them; what they may do with tables, views
//! and sequences is the `privileges` module's. A role that owns or holds privileges on
//! anything cannot be dropped (2BP01).

mod alter;
mod create;
mod drop;
mod options;
mod parse;

use sqlparser::tokenizer::Location;
use walden::{Database, RoleDef};

use crate::error::{code, SqlError, SqlResult};
use crate::statement::Output;

pub use crate::catalog::{BOOTSTRAP, BOOTSTRAP_OID};
/// The role list and the bootstrap superuser live with the catalog, which shows them.
pub use crate::pg_catalog::{all_roles as all, bootstrap_role};

use alter::{alter, rename};
use create::create;
use drop::drop_roles;
pub use options::verifier;
pub use parse::parse;
use parse::reserved_name;
/// PostgreSQL's longest name (NAMEDATALEN − 1 bytes); longer ones are cut, with a notice.
pub const NAME_BYTES: usize = 63;

/// The role of that name as SQL sees it (the bootstrap superuser included): what a
/// server authenticates a user against.
pub fn find(db: &Database, name: &str) -> Option<RoleDef> {
    db.role(name)
        .or_else(|| (name == BOOTSTRAP).then(bootstrap_role))
}

// ---------------------------------------------------------------------------------------
// Statements.

/// A role statement, parsed.
#[derive(Debug)]
pub enum RoleStatement {
    Create {
        name: Name,
        options: Vec<RoleOption>,
        /// `CREATE USER`: LOGIN unless NOLOGIN is given.
        user: bool,
    },
    Alter {
        role: Spec,
        options: Vec<RoleOption>,
    },
    Rename {
        role: Spec,
        to: Name,
    },
    Drop {
        if_exists: bool,
        names: Vec<Spec>,
    },
}

/// A role name as written, and where.
#[derive(Debug, Clone)]
pub struct Name {
    pub name: String,
    pub at: Location,
}

/// A role as `ALTER` and `DROP` name it: by name, or as the session's user.
#[derive(Debug, Clone)]
pub enum Spec {
    Named(Name),
    /// `CURRENT_USER`, `SESSION_USER` or `CURRENT_ROLE` (as written, upper case).
    Current(&'static str, Location),
}

/// One attribute of a role statement, and where it was written.
#[derive(Debug, Clone)]
pub struct RoleOption {
    pub kind: OptionKind,
    pub at: Location,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionKind {
    Superuser(bool),
    Createdb(bool),
    Createrole(bool),
    Inherit(bool),
    Login(bool),
    Replication(bool),
    Bypassrls(bool),
    /// None: `PASSWORD NULL`.
    Password(Option<String>),
    ConnectionLimit(i64),
    ValidUntil(String),
    /// `SYSID n`, accepted and ignored with a notice, as PostgreSQL does.
    Sysid,
}

impl OptionKind {
    /// Options of one group conflict ("conflicting or redundant options").
    fn group(&self) -> u8 {
        match self {
            OptionKind::Superuser(_) => 0,
            OptionKind::Createdb(_) => 1,
            OptionKind::Createrole(_) => 2,
            OptionKind::Inherit(_) => 3,
            OptionKind::Login(_) => 4,
            OptionKind::Replication(_) => 5,
            OptionKind::Bypassrls(_) => 6,
            OptionKind::Password(_) => 7,
            OptionKind::ConnectionLimit(_) => 8,
            OptionKind::ValidUntil(_) => 9,
            OptionKind::Sysid => 10,
        }
    }
}

/// The command's name, as errors name it.
pub fn command(stmt: &RoleStatement) -> &'static str {
    match stmt {
        RoleStatement::Create { .. } => "CREATE ROLE",
        RoleStatement::Alter { .. } | RoleStatement::Rename { .. } => "ALTER ROLE",
        RoleStatement::Drop { .. } => "DROP ROLE",
    }
}

/// The commands this module parses (`script::command_name`'s names).
pub fn is_role_command(name: &str) -> bool {
    matches!(
        name,
        "CREATE ROLE"
            | "CREATE USER"
            | "CREATE GROUP"
            | "ALTER ROLE"
            | "ALTER USER"
            | "ALTER GROUP"
            | "DROP ROLE"
            | "DROP USER"
            | "DROP GROUP"
    )
}

// ---------------------------------------------------------------------------------------
// Running them.

fn no_such_role(name: &str) -> SqlError {
    SqlError::new(
        code::UNDEFINED_OBJECT,
        format!("role \"{name}\" does not exist"),
    )
}

fn reserved_prefix(name: &str) -> SqlResult<()> {
    if name.starts_with("pg_") {
        return Err(
            reserved_name(name).with_detail("Role names starting with \"pg_\" are reserved.")
        );
    }
    Ok(())
}

/// The role the session's special specifiers name: the bootstrap superuser, which
/// every session runs as.
fn resolve<'a>(spec: &'a Spec, actor: &'a str) -> &'a str {
    match spec {
        Spec::Named(n) => &n.name,
        Spec::Current(..) => actor,
    }
}

fn denied(message: &str) -> SqlError {
    SqlError::new(code::INSUFFICIENT_PRIVILEGE, message)
}

/// The role running a statement, as SQL sees it (a role dropped since its session
/// logged in has no attribute left).
fn actor_of(db: &Database, actor: &str) -> RoleDef {
    find(db, actor).unwrap_or_else(|| RoleDef::new(actor))
}

/// Runs a role statement (committed at once, as all of Walden's DDL) for the role
/// `actor` (the session's current user), with PostgreSQL's checks of what it may do.
pub(crate) fn run(
    db: &Database,
    actor: &str,
    stmt: RoleStatement,
    notices: Vec<String>,
) -> SqlResult<Output> {
    let mut out = Output::tag("");
    out.notices = notices;
    let me = actor_of(db, actor);
    let tag = match stmt {
        RoleStatement::Create {
            name,
            options,
            user,
        } => create(db, &me, &name, &options, user, &mut out.notices)?,
        RoleStatement::Alter { role, options } => {
            alter(db, &me, resolve(&role, actor), &options, &mut out.notices)?
        }
        RoleStatement::Rename { role, to } => rename(db, &me, resolve(&role, actor), to)?,
        RoleStatement::Drop { if_exists, names } => {
            drop_roles(db, &me, if_exists, &names, &mut out.notices)?
        }
    };
    out.tag = tag.into();
    Ok(out)
}
