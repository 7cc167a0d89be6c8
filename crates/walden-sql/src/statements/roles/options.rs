//! What a role statement's options set: their limits checked, the password made a
//! verifier, applied to a role definition.

use walden::RoleDef;

use super::{OptionKind, RoleOption};
use crate::error::{code, SqlError, SqlResult};
use crate::scram::{self, PasswordKind, ScramError};

/// Whether the options set an attribute to anything (given at all).
pub(super) fn sets(options: &[RoleOption], attr: fn(&OptionKind) -> bool) -> bool {
    options.iter().any(|o| attr(&o.kind))
}

pub(super) fn sets_superuser(k: &OptionKind) -> bool {
    matches!(k, OptionKind::Superuser(_))
}

pub(super) fn sets_replication(k: &OptionKind) -> bool {
    matches!(k, OptionKind::Replication(_))
}

pub(super) fn sets_bypassrls(k: &OptionKind) -> bool {
    matches!(k, OptionKind::Bypassrls(_))
}

pub(super) fn turns_on(options: &[RoleOption], attr: fn(&OptionKind) -> Option<bool>) -> bool {
    options.iter().any(|o| attr(&o.kind) == Some(true))
}

/// PostgreSQL's checks of option values made before any lookup.
pub(super) fn check_limits(options: &[RoleOption]) -> SqlResult<()> {
    for o in options {
        if let OptionKind::ConnectionLimit(n) = o.kind {
            if n < -1 {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER,
                    format!("invalid connection limit: {n}"),
                ));
            }
        }
    }
    Ok(())
}

/// What a statement's options set on a role, with its values made ready (the
/// password's verifier, the VALID UNTIL timestamp): applying it is quick, so it can be
/// applied under the catalog's lock.
pub(super) struct Patch(Vec<Set>);

enum Set {
    Superuser(bool),
    Createdb(bool),
    Createrole(bool),
    Inherit(bool),
    Login(bool),
    Replication(bool),
    Bypassrls(bool),
    ConnectionLimit(i32),
    ValidUntil(i64),
    Password(Option<String>),
}

pub(super) fn prepare(options: &[RoleOption], notices: &mut Vec<String>) -> SqlResult<Patch> {
    let mut sets = Vec::with_capacity(options.len());
    for o in options {
        sets.push(match &o.kind {
            OptionKind::Superuser(v) => Set::Superuser(*v),
            OptionKind::Createdb(v) => Set::Createdb(*v),
            OptionKind::Createrole(v) => Set::Createrole(*v),
            OptionKind::Inherit(v) => Set::Inherit(*v),
            OptionKind::Login(v) => Set::Login(*v),
            OptionKind::Replication(v) => Set::Replication(*v),
            OptionKind::Bypassrls(v) => Set::Bypassrls(*v),
            // Checked by `check_limits`: -1 or more, and the parser took 32 bits.
            OptionKind::ConnectionLimit(n) => Set::ConnectionLimit(*n as i32),
            OptionKind::ValidUntil(text) => {
                Set::ValidUntil(crate::datetime::parse_timestamp(text, true)?)
            }
            OptionKind::Sysid => {
                notices.push("SYSID can no longer be specified".into());
                continue;
            }
            OptionKind::Password(None) => Set::Password(None),
            OptionKind::Password(Some(text)) => Set::Password(verifier(text, notices)?),
        });
    }
    Ok(Patch(sets))
}

impl Patch {
    pub(super) fn apply(&self, role: &mut RoleDef) {
        for set in &self.0 {
            match set {
                Set::Superuser(v) => role.superuser = *v,
                Set::Createdb(v) => role.createdb = *v,
                Set::Createrole(v) => role.createrole = *v,
                Set::Inherit(v) => role.inherit = *v,
                Set::Login(v) => role.login = *v,
                Set::Replication(v) => role.replication = *v,
                Set::Bypassrls(v) => role.bypassrls = *v,
                Set::ConnectionLimit(n) => role.connection_limit = *n,
                Set::ValidUntil(t) => role.valid_until = Some(*t),
                Set::Password(p) => role.password = p.clone(),
            }
        }
    }
}

/// What a role's password becomes: a verifier made from a password in clear, or the
/// verifier given. Never quoted in an error.
pub fn verifier(text: &str, notices: &mut Vec<String>) -> SqlResult<Option<String>> {
    if text.is_empty() {
        notices.push("empty string is not a valid password, clearing password".into());
        return Ok(None);
    }
    match scram::password_kind(text) {
        PasswordKind::Scram => Ok(Some(text.to_string())),
        PasswordKind::Md5 => Err(SqlError::unsupported("an MD5-hashed password")
            .with_detail("Walden authenticates with SCRAM-SHA-256 only.")
            .with_hint("Give the password itself, or its SCRAM-SHA-256 verifier.")),
        PasswordKind::Plain => match scram::build_verifier(text.as_bytes()) {
            Ok(v) => Ok(Some(v)),
            Err(ScramError::PasswordTooLong) => {
                Err(SqlError::new(code::PROGRAM_LIMIT, "password too long"))
            }
            Err(e @ ScramError::Random(_)) => Err(SqlError::new(code::INTERNAL, e.to_string())),
        },
    }
}
