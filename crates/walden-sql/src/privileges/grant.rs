//! GRANT and REVOKE, PostgreSQL's: privileges on tables, views, sequences, the schema
//! `public` and columns (`SELECT (a, b)`, kept by the columns' stored positions) (to roles or PUBLIC, WITH GRANT OPTION, revoked with CASCADE), and roles to
//! roles (WITH ADMIN OPTION); and `ALTER … OWNER TO`. Parsed here from the statement's
//! tokens, with PostgreSQL's errors and warnings, and applied to the engine's entries in
//! one step under its catalog lock (`Database::change_acl`, `change_members`).

use sqlparser::tokenizer::{Token, TokenWithSpan};
use walden::privilege::{bits, PUBLIC};
use walden::{AclItem, Database, MemberChange, Membership, ObjectAcl, ObjectKind};

use super::{items_of, relation_acl, schema_acl, Authority, RelKind, PUBLIC_SCHEMA};
use crate::error::{code, SqlError, SqlResult};
use crate::roles::{find, BOOTSTRAP};
use crate::statement::Output;
use crate::words::Words;

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

/// A role named as a grantee: PUBLIC, CURRENT_USER and friends (resolved later), or a
/// name.
fn grantee(w: &mut Words) -> SqlResult<String> {
    w.keyword("GROUP");
    let quoted = matches!(w.peek(), Some(Token::Word(x)) if x.quote_style.is_some());
    let (name, _) = w.name()?;
    if quoted {
        return Ok(name);
    }
    Ok(match name.as_str() {
        "public" => PUBLIC.to_string(),
        "current_user" | "current_role" => "\u{0}current_user".to_string(),
        "session_user" => "\u{0}session_user".to_string(),
        _ => name,
    })
}

fn privilege(w: &mut Words) -> SqlResult<u16> {
    let (name, at) = w.name()?;
    Ok(match name.as_str() {
        "select" => bits::SELECT,
        "insert" => bits::INSERT,
        "update" => bits::UPDATE,
        "delete" => bits::DELETE,
        "truncate" => bits::TRUNCATE,
        "references" => bits::REFERENCES,
        "trigger" => bits::TRIGGER,
        "usage" => bits::USAGE,
        "create" => bits::CREATE,
        "connect" | "temp" | "temporary" | "execute" => {
            return Err(SqlError::unsupported(format!(
                "the {} privilege (Walden has one database and no functions of users)",
                name.to_uppercase()
            ))
            .at(at))
        }
        _ => {
            return Err(SqlError::syntax(format!("unrecognized privilege type \"{name}\"")).at(at))
        }
    })
}

/// A column list after a privilege (`SELECT (a, b)`), if there is one.
fn column_list(w: &mut Words) -> SqlResult<Option<Vec<String>>> {
    if !w.token(&Token::LParen) {
        return Ok(None);
    }
    let mut out = vec![w.name()?.0];
    while w.token(&Token::Comma) {
        out.push(w.name()?.0);
    }
    if !w.token(&Token::RParen) {
        return Err(w.error());
    }
    Ok(Some(out))
}

fn relation_list(w: &mut Words) -> SqlResult<Vec<String>> {
    let mut out = vec![w.relation_name()?.0];
    while w.token(&Token::Comma) {
        out.push(w.relation_name()?.0);
    }
    Ok(out)
}

/// Parses GRANT, REVOKE or ALTER DEFAULT PRIVILEGES.
pub fn parse(toks: &[TokenWithSpan]) -> SqlResult<GrantStatement> {
    let mut w = Words::new(toks);
    if w.keyword("ALTER") {
        if !(w.keyword("DEFAULT") && w.keyword("PRIVILEGES")) {
            return Err(w.error());
        }
        let mut roles = Vec::new();
        let mut schema = false;
        loop {
            if w.keyword("FOR") {
                if !(w.keyword("ROLE") || w.keyword("USER")) {
                    return Err(w.error());
                }
                loop {
                    roles.push(grantee(&mut w)?);
                    if !w.token(&Token::Comma) {
                        break;
                    }
                }
            } else if w.keyword("IN") {
                if !w.keyword("SCHEMA") {
                    return Err(w.error());
                }
                loop {
                    let (name, at) = w.name()?;
                    if name != PUBLIC_SCHEMA {
                        return Err(no_schema(&name).at(at));
                    }
                    schema = true;
                    if !w.token(&Token::Comma) {
                        break;
                    }
                }
            } else {
                break;
            }
        }
        let change = parse_privileges(&w.rest(), true)?;
        return Ok(GrantStatement::Defaults {
            roles,
            schema,
            change: Box::new(change),
        });
    }
    parse_privileges(toks, false)
}

/// GRANT or REVOKE (`defaults`: as ALTER DEFAULT PRIVILEGES has them, on TABLES or
/// SEQUENCES).
fn parse_privileges(toks: &[TokenWithSpan], defaults: bool) -> SqlResult<GrantStatement> {
    let mut w = Words::new(toks);
    let grant = if w.keyword("GRANT") {
        true
    } else if w.keyword("REVOKE") {
        false
    } else {
        return Err(w.error());
    };
    let mut option = false;
    if !grant {
        if (w.keyword("GRANT") || w.keyword("ADMIN")) && w.keyword("OPTION") && w.keyword("FOR") {
            option = true;
        } else {
            // Back to the privilege list (GRANT or ADMIN was a role's name).
            w = Words::new(toks);
            w.keyword("REVOKE");
        }
    }
    // ALL [PRIVILEGES], or a list of privileges or of roles.
    let mut privs: Option<u16> = None;
    let mut columns: Vec<(u16, Vec<String>)> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut all = false;
    let mut listed_columns = false;
    if w.keyword("ALL") {
        all = true;
        w.keyword("PRIVILEGES");
        if let Some(cols) = column_list(&mut w)? {
            columns.push((super::COLUMN_PRIVS, cols));
            privs = Some(0);
        }
    } else {
        let start = w.position();
        let mut tw = Words::new(toks);
        while tw.position() < start {
            tw.next();
        }
        // A list of names: privileges when ON follows, roles otherwise.
        loop {
            let (name, _) = w.name()?;
            names.push(name);
            listed_columns |= column_list(&mut w)?.is_some();
            if !w.token(&Token::Comma) {
                break;
            }
        }
        if w.is_keyword("ON") {
            let mut p = 0;
            loop {
                let bit = privilege(&mut tw)?;
                match column_list(&mut tw)? {
                    Some(cols) => columns.push((bit, cols)),
                    None => p |= bit,
                }
                if !tw.token(&Token::Comma) {
                    break;
                }
            }
            privs = Some(p);
        } else if listed_columns {
            return Err(w.error());
        }
    }
    // PostgreSQL's check, before any object is looked at.
    for (bit, _) in &columns {
        if let Some(bad) = first_bit(bit & !super::COLUMN_PRIVS) {
            return Err(SqlError::new(
                code::INVALID_GRANT_OPERATION,
                format!("invalid privilege type {} for column", privilege_word(bad)),
            ));
        }
    }
    if all || privs.is_some() {
        if !w.keyword("ON") {
            return Err(w.error());
        }
        let target = if defaults {
            if w.keyword("TABLES") {
                Target::DefaultTables
            } else if w.keyword("SEQUENCES") {
                Target::DefaultSequences
            } else {
                return Err(w.error());
            }
        } else if w.keyword("ALL") {
            let tables = if w.keyword("TABLES") {
                true
            } else if w.keyword("SEQUENCES") {
                false
            } else {
                return Err(w.error());
            };
            if !(w.keyword("IN") && w.keyword("SCHEMA")) {
                return Err(w.error());
            }
            let (schema, at) = w.name()?;
            if schema != PUBLIC_SCHEMA {
                return Err(no_schema(&schema).at(at));
            }
            if tables {
                Target::AllTables
            } else {
                Target::AllSequences
            }
        } else if w.keyword("SEQUENCE") {
            Target::Sequences(relation_list(&mut w)?)
        } else if w.keyword("SCHEMA") {
            let mut out = vec![w.name()?.0];
            while w.token(&Token::Comma) {
                out.push(w.name()?.0);
            }
            Target::Schemas(out)
        } else {
            for kw in [
                "DATABASE",
                "FUNCTION",
                "PROCEDURE",
                "ROUTINE",
                "LANGUAGE",
                "TYPE",
                "DOMAIN",
                "TABLESPACE",
                "FOREIGN",
                "LARGE",
            ] {
                if w.is_keyword(kw) {
                    return Err(SqlError::unsupported(format!(
                        "GRANT and REVOKE on a {}",
                        kw.to_lowercase()
                    ))
                    .at(w.location()));
                }
            }
            w.keyword("TABLE");
            Target::Tables(relation_list(&mut w)?)
        };
        if !w.keyword(if grant { "TO" } else { "FROM" }) {
            return Err(w.error());
        }
        let mut grantees = vec![grantee(&mut w)?];
        while w.token(&Token::Comma) {
            grantees.push(grantee(&mut w)?);
        }
        if grant && w.keyword("WITH") {
            if !(w.keyword("GRANT") && w.keyword("OPTION")) {
                return Err(w.error());
            }
            option = true;
        }
        granted_by(&mut w)?;
        let mut cascade = false;
        if !grant {
            if w.keyword("CASCADE") {
                cascade = true;
            } else {
                w.keyword("RESTRICT");
            }
        }
        if !w.at_end() {
            return Err(w.error());
        }
        if !columns.is_empty() && !matches!(target, Target::Tables(_) | Target::AllTables) {
            return Err(SqlError::new(
                code::INVALID_GRANT_OPERATION,
                "column privileges are only valid for relations",
            ));
        }
        return Ok(GrantStatement::Privileges {
            grant,
            privs,
            columns,
            target,
            grantees,
            option,
            cascade,
        });
    }
    // GRANT role, … TO role, … / REVOKE role, … FROM role, ….
    if !w.keyword(if grant { "TO" } else { "FROM" }) {
        return Err(w.error());
    }
    let mut members = vec![grantee(&mut w)?];
    while w.token(&Token::Comma) {
        members.push(grantee(&mut w)?);
    }
    let mut admin = option;
    if grant && w.keyword("WITH") {
        if !(w.keyword("ADMIN") && w.keyword("OPTION")) {
            return Err(w.error());
        }
        admin = true;
    }
    granted_by(&mut w)?;
    if !grant && !w.keyword("CASCADE") {
        w.keyword("RESTRICT");
    }
    if !w.at_end() {
        return Err(w.error());
    }
    Ok(GrantStatement::Roles {
        grant,
        roles: names,
        members,
        admin,
    })
}

/// `GRANTED BY role`: accepted when it names the current user (PostgreSQL 15 allows
/// nothing else either).
fn granted_by(w: &mut Words) -> SqlResult<()> {
    if w.keyword("GRANTED") {
        if !w.keyword("BY") {
            return Err(w.error());
        }
        let (name, at) = w.name()?;
        if name != "current_user" && name != "current_role" {
            return Err(SqlError::unsupported("GRANTED BY other than the current user").at(at));
        }
    }
    Ok(())
}

fn no_schema(name: &str) -> SqlError {
    SqlError::new(
        code::INVALID_SCHEMA_NAME,
        format!("schema \"{name}\" does not exist"),
    )
}

fn no_role(name: &str) -> SqlError {
    SqlError::new(
        code::UNDEFINED_OBJECT,
        format!("role \"{name}\" does not exist"),
    )
}

/// A grantee's name resolved: the special specifiers to the session's roles; every
/// named role must exist.
fn resolve(db: &Database, name: &str, current: &str, session: &str) -> SqlResult<String> {
    let name = match name {
        "\u{0}current_user" => current,
        "\u{0}session_user" => session,
        other => other,
    };
    if name.is_empty() {
        return Ok(String::new());
    }
    if find(db, name).is_none() {
        return Err(no_role(name));
    }
    Ok(name.to_string())
}

/// `resolve` of every name of a list.
fn resolve_all(
    db: &Database,
    names: &[String],
    auth: &Authority,
    session_user: &str,
) -> SqlResult<Vec<String>> {
    names
        .iter()
        .map(|n| resolve(db, n, &auth.user, session_user))
        .collect()
}

/// Runs a GRANT or REVOKE (committed at once).
pub(crate) fn run(
    db: &Database,
    auth: &Authority,
    session_user: &str,
    stmt: GrantStatement,
) -> SqlResult<Output> {
    let mut out = Output::tag(command(&stmt));
    match stmt {
        GrantStatement::Defaults {
            roles,
            schema,
            change,
        } => {
            let GrantStatement::Privileges {
                grant,
                privs,
                columns: _,
                target,
                grantees,
                option,
                cascade,
            } = *change
            else {
                return Err(SqlError::syntax(
                    "ALTER DEFAULT PRIVILEGES takes GRANT or REVOKE",
                ));
            };
            let kind = if target == Target::DefaultSequences {
                RelKind::Sequence
            } else {
                RelKind::Table
            };
            let objtype = if kind == RelKind::Sequence {
                b'S'
            } else {
                b'r'
            };
            let all = kind.owner_default();
            let wanted = match privs {
                None => all,
                Some(p) => {
                    check_kind(p, Some(kind), "", &target, &mut out.notices)?;
                    p & all
                }
            };
            let roles = if roles.is_empty() {
                vec![auth.user.clone()]
            } else {
                resolve_all(db, &roles, auth, session_user)?
            };
            let grantees = resolve_all(db, &grantees, auth, session_user)?;
            for role in roles {
                if !auth.is_member(&role) {
                    return Err(SqlError::new(
                        code::INSUFFICIENT_PRIVILEGE,
                        format!("must be member of role \"{role}\""),
                    ));
                }
                let base = if schema {
                    Vec::new()
                } else {
                    items_of(&ObjectAcl::owned_by(&role), all)
                };
                let key = (
                    role.clone(),
                    if schema {
                        PUBLIC_SCHEMA.to_string()
                    } else {
                        String::new()
                    },
                    objtype,
                );
                db.change_default_acl::<SqlError>(key, |old| {
                    let mut items = old.cloned().unwrap_or_else(|| base.clone());
                    for g in &grantees {
                        if grant {
                            grant_item(&mut items, g, &role, wanted, option)?;
                        } else {
                            revoke_item(&mut items, g, &role, wanted, option, cascade, &role)?;
                        }
                    }
                    Ok((items != base).then_some(items))
                })?;
            }
        }
        GrantStatement::Privileges {
            grant,
            privs,
            columns,
            target,
            grantees,
            option,
            cascade,
        } => {
            let grantees = resolve_all(db, &grantees, auth, session_user)?;
            let objects = objects_of(db, &target)?;
            for (kind, name, rel) in objects {
                let all = match rel {
                    Some(k) => k.owner_default(),
                    None => bits::USAGE | bits::CREATE,
                };
                let wanted = match privs {
                    None => all,
                    Some(0) => 0,
                    Some(p) => {
                        check_kind(p, rel, &name, &target, &mut out.notices)?;
                        p & all
                    }
                };
                // Each column named, by its stored position.
                let mut cols: Vec<(u16, u32, String)> = Vec::new();
                if !columns.is_empty() {
                    let positions = super::column_positions(db, &name).unwrap_or_default();
                    for (bit, names) in &columns {
                        for c in names {
                            let Some((_, at)) = positions.iter().find(|(n, _)| n == c) else {
                                return Err(SqlError::new(
                                    code::UNDEFINED_COLUMN,
                                    format!("column \"{c}\" of relation \"{name}\" does not exist"),
                                ));
                            };
                            match cols.iter_mut().find(|x| x.1 == *at) {
                                Some(x) => x.0 |= bit,
                                None => cols.push((*bit, *at, c.clone())),
                            }
                        }
                    }
                }
                let change = Change {
                    grant,
                    privs: wanted,
                    columns: cols,
                    option,
                    cascade,
                    grantees: &grantees,
                    asked_all: privs.is_none(),
                };
                apply_acl(db, auth, kind, &name, rel, &change, &mut out.notices)?;
            }
        }
        GrantStatement::Roles {
            grant,
            roles,
            members,
            admin,
        } => {
            let roles = resolve_all(db, &roles, auth, session_user)?;
            let members = resolve_all(db, &members, auth, session_user)?;
            for r in roles.iter().chain(&members) {
                if r.is_empty() {
                    return Err(SqlError::new(
                        code::INVALID_GRANT_OPERATION,
                        "role \"public\" does not exist",
                    ));
                }
            }
            for role in &roles {
                may_admin(auth, db, role)?;
            }
            let grantor = auth.user.clone();
            let notices = &mut out.notices;
            db.change_members::<SqlError>(|p, _| {
                let mut changes = Vec::new();
                for role in &roles {
                    for member in &members {
                        let key = (role.clone(), member.clone());
                        let have = p.members.get(&key);
                        if grant {
                            if super::is_member_of(p, role, member) {
                                return Err(SqlError::new(
                                    code::INVALID_GRANT_OPERATION,
                                    format!("role \"{role}\" is a member of role \"{member}\""),
                                ));
                            }
                            if let Some(m) = have {
                                if m.admin || !admin {
                                    notices.push(format!(
                                        "NOTICE:  role \"{member}\" is already a member of role \"{role}\""
                                    ));
                                    continue;
                                }
                            }
                            changes.push(MemberChange {
                                role: role.clone(),
                                member: member.clone(),
                                how: Some(Membership {
                                    grantor: grantor.clone(),
                                    admin,
                                }),
                            });
                        } else {
                            let Some(m) = have else {
                                notices.push(format!(
                                    "WARNING:  role \"{member}\" is not a member of role \"{role}\""
                                ));
                                continue;
                            };
                            let how = admin.then(|| Membership {
                                grantor: m.grantor.clone(),
                                admin: false,
                            });
                            changes.push(MemberChange {
                                role: role.clone(),
                                member: member.clone(),
                                how,
                            });
                        }
                    }
                }
                Ok(changes)
            })?;
        }
    }
    Ok(out)
}

/// PostgreSQL 15's check for granting a role: a superuser role is a superuser's; any
/// other needs CREATEROLE or ADMIN OPTION on it.
fn may_admin(auth: &Authority, db: &Database, role: &str) -> SqlResult<()> {
    if auth.superuser {
        return Ok(());
    }
    let def = find(db, role).ok_or_else(|| no_role(role))?;
    if def.superuser {
        return Err(SqlError::new(
            code::INSUFFICIENT_PRIVILEGE,
            "must be superuser to alter superusers",
        ));
    }
    let me = find(db, &auth.user);
    if me.is_some_and(|m| m.createrole) {
        return Ok(());
    }
    let admin = auth
        .privileges
        .members
        .iter()
        .any(|((r, m), how)| r == role && how.admin && auth.is_member(m));
    if admin {
        Ok(())
    } else {
        Err(SqlError::new(
            code::INSUFFICIENT_PRIVILEGE,
            format!("must have admin option on role \"{role}\""),
        ))
    }
}

/// The objects a target names: (kind, name, relation kind or None for a schema).
fn objects_of(
    db: &Database,
    target: &Target,
) -> SqlResult<Vec<(ObjectKind, String, Option<RelKind>)>> {
    let rel = |name: &String| -> SqlResult<(ObjectKind, String, Option<RelKind>)> {
        match super::rel_kind(db, name) {
            Some(k) => Ok((ObjectKind::Relation, name.clone(), Some(k))),
            None => Err(SqlError::new(
                code::UNDEFINED_TABLE,
                format!("relation \"{name}\" does not exist"),
            )),
        }
    };
    Ok(match target {
        Target::Tables(names) => names.iter().map(rel).collect::<SqlResult<_>>()?,
        Target::Sequences(names) => {
            let mut out = Vec::new();
            for n in names {
                let o = rel(n)?;
                if o.2 != Some(RelKind::Sequence) {
                    return Err(SqlError::new(
                        code::WRONG_OBJECT_TYPE,
                        format!("\"{n}\" is not a sequence"),
                    ));
                }
                out.push(o);
            }
            out
        }
        Target::Schemas(names) => {
            let mut out = Vec::new();
            for n in names {
                if n != PUBLIC_SCHEMA {
                    return Err(no_schema(n));
                }
                out.push((ObjectKind::Schema, n.clone(), None));
            }
            out
        }
        Target::AllTables | Target::AllSequences => {
            let want_seq = *target == Target::AllSequences;
            let mut names: Vec<String> = if want_seq {
                db.sequences().into_iter().map(|s| s.def.name).collect()
            } else {
                let mut v = db.table_names();
                v.extend(db.views().into_iter().map(|v| v.name));
                v
            };
            names.sort();
            names.iter().map(rel).collect::<SqlResult<_>>()?
        }
        Target::DefaultTables | Target::DefaultSequences => Vec::new(),
    })
}

/// A privilege bit's name.
fn privilege_word(bit: u16) -> &'static str {
    match bit {
        bits::SELECT => "SELECT",
        bits::INSERT => "INSERT",
        bits::UPDATE => "UPDATE",
        bits::DELETE => "DELETE",
        bits::TRUNCATE => "TRUNCATE",
        bits::REFERENCES => "REFERENCES",
        bits::TRIGGER => "TRIGGER",
        bits::USAGE => "USAGE",
        _ => "CREATE",
    }
}

/// The first of `privs` in PostgreSQL's order (`ACL_ALL_RIGHTS_STR`).
fn first_bit(privs: u16) -> Option<u16> {
    [
        bits::INSERT,
        bits::SELECT,
        bits::UPDATE,
        bits::DELETE,
        bits::TRUNCATE,
        bits::REFERENCES,
        bits::TRIGGER,
        bits::USAGE,
        bits::CREATE,
    ]
    .into_iter()
    .find(|b| privs & b != 0)
}

/// PostgreSQL's checks of the privileges named against the object's kind.
fn check_kind(
    privs: u16,
    rel: Option<RelKind>,
    name: &str,
    target: &Target,
    notices: &mut Vec<String>,
) -> SqlResult<()> {
    let word = privilege_word;
    let first_bad = |allowed: u16| first_bit(privs & !allowed);
    match rel {
        Some(RelKind::Sequence) => {
            if let Some(bad) = first_bad(RelKind::Sequence.owner_default()) {
                if matches!(
                    target,
                    Target::Sequences(_) | Target::AllSequences | Target::DefaultSequences
                ) {
                    return Err(SqlError::new(
                        code::INVALID_GRANT_OPERATION,
                        format!("invalid privilege type {} for sequence", word(bad)),
                    ));
                }
                notices.push(format!(
                    "WARNING:  sequence \"{name}\" only supports USAGE, SELECT, and UPDATE privileges"
                ));
            }
        }
        Some(k) => {
            if let Some(bad) = first_bad(k.owner_default()) {
                return Err(SqlError::new(
                    code::INVALID_GRANT_OPERATION,
                    format!("invalid privilege type {} for table", word(bad)),
                ));
            }
        }
        None => {
            if let Some(bad) = first_bad(bits::USAGE | bits::CREATE) {
                return Err(SqlError::new(
                    code::INVALID_GRANT_OPERATION,
                    format!("invalid privilege type {} for schema", word(bad)),
                ));
            }
        }
    }
    Ok(())
}

struct Change<'a> {
    grant: bool,
    privs: u16,
    /// Column privileges: (privileges, stored position, name).
    columns: Vec<(u16, u32, String)>,
    option: bool,
    cascade: bool,
    grantees: &'a [String],
    asked_all: bool,
}

impl Change<'_> {
    /// Grants or revokes `privs` (as `grantor`) to or from each grantee in one list.
    fn apply(
        &self,
        items: &mut Vec<AclItem>,
        grantor: &str,
        privs: u16,
        owner: &str,
    ) -> SqlResult<()> {
        for grantee in self.grantees {
            if self.grant {
                grant_item(items, grantee, grantor, privs, self.option)?;
            } else {
                revoke_item(
                    items,
                    grantee,
                    grantor,
                    privs,
                    self.option,
                    self.cascade,
                    owner,
                )?;
            }
        }
        Ok(())
    }
}

/// Applies a GRANT or REVOKE to one object, PostgreSQL's `ExecGrant_Relation`: the
/// grantor is the owner when the user has the owner's privileges, else the user, whose
/// grant options bound what it grants (a warning when they fall short; 42501 when it
/// has no privilege on the object at all). A column's grant options are the table's and
/// the column's own; REVOKE of a table-level privilege revokes it from every column too.
fn apply_acl(
    db: &Database,
    auth: &Authority,
    kind: ObjectKind,
    name: &str,
    rel: Option<RelKind>,
    change: &Change,
    notices: &mut Vec<String>,
) -> SqlResult<()> {
    let default_privs = rel.map_or(bits::USAGE | bits::CREATE, |k| k.owner_default());
    let word = rel.map_or("schema", |k| k.word());
    db.change_acl::<SqlError>(kind, name, |stored| {
        let entry = match (stored, kind) {
            (Some(e), _) => e.clone(),
            (None, ObjectKind::Relation) => relation_acl(&Default::default(), name),
            (None, ObjectKind::Schema) => schema_acl(&Default::default(), name),
        };
        let owner = entry.owner.clone();
        let is_owner = auth.superuser || auth.has_privs_of(&owner);
        let mine = |items: &[AclItem]| {
            let (mut may, mut any) = (0, 0);
            for i in items {
                if i.grantee.is_empty() || auth.has_privs_of(&i.grantee) {
                    may |= i.grantable;
                    any |= i.privs;
                }
            }
            (may, any)
        };
        let items = items_of(&entry, default_privs);
        let (table_may, table_any) = mine(&items);
        // What the user may grant, and as whom.
        let grantor = if is_owner {
            owner.clone()
        } else {
            auth.user.clone()
        };
        let verb = if change.grant { "granted" } else { "revoked" };
        let could = if change.grant { "were" } else { "could be" };
        let mut items = items;
        let table_level = change.privs != 0 || change.columns.is_empty();
        if table_level {
            let may = if is_owner { bits::ALL } else { table_may };
            if !is_owner && may == 0 && table_any == 0 {
                return Err(SqlError::new(
                    code::INSUFFICIENT_PRIVILEGE,
                    format!("permission denied for {word} {name}"),
                ));
            }
            let this = change.privs & may;
            if this != change.privs || may == 0 {
                if this == 0 {
                    notices.push(format!(
                        "WARNING:  no privileges {could} {verb} for \"{name}\""
                    ));
                } else if !change.asked_all || this != change.privs & default_privs {
                    notices.push(format!(
                        "WARNING:  not all privileges {could} {verb} for \"{name}\""
                    ));
                }
            }
            change.apply(&mut items, &grantor, this, &owner)?;
        }
        let mut columns = entry.columns.clone();
        // REVOKE of table-level privileges takes them from every column as well.
        let mut col_changes: Vec<(u16, u32, Option<String>)> = change
            .columns
            .iter()
            .map(|(b, at, n)| (*b, *at, Some(n.clone())))
            .collect();
        if !change.grant && change.privs & super::COLUMN_PRIVS != 0 {
            for at in entry.columns.keys() {
                match col_changes.iter_mut().find(|c| c.1 == *at) {
                    Some(c) => c.0 |= change.privs & super::COLUMN_PRIVS,
                    None => col_changes.push((change.privs & super::COLUMN_PRIVS, *at, None)),
                }
            }
        }
        for (privs, at, col) in col_changes {
            let mut list = columns.get(&at).cloned().unwrap_or_default();
            let this = if is_owner {
                privs
            } else {
                let (col_may, col_any) = mine(&list);
                let may = table_may | col_may;
                if let Some(col) = &col {
                    if may == 0 && table_any == 0 && col_any == 0 {
                        return Err(SqlError::new(
                            code::INSUFFICIENT_PRIVILEGE,
                            format!("permission denied for column \"{col}\" of relation \"{name}\""),
                        ));
                    }
                    if privs & may != privs {
                        let how = if privs & may == 0 { "no" } else { "not all" };
                        notices.push(format!(
                            "WARNING:  {how} privileges {could} {verb} for column \"{col}\" of relation \"{name}\""
                        ));
                    }
                }
                privs & may
            };
            change.apply(&mut list, &grantor, this, &owner)?;
            if list.is_empty() {
                columns.remove(&at);
            } else {
                columns.insert(at, list);
            }
        }
        let acl = if table_level || entry.acl.is_some() {
            Some(items)
        } else {
            None
        };
        Ok(Some(ObjectAcl {
            owner,
            acl,
            columns,
        }))
    })
}

fn grant_item(
    items: &mut Vec<AclItem>,
    grantee: &str,
    grantor: &str,
    privs: u16,
    option: bool,
) -> SqlResult<()> {
    if option && grantee == grantor {
        return Err(SqlError::new(
            code::INVALID_GRANT_OPERATION,
            "grant options cannot be granted back to your own grantor",
        ));
    }
    if privs == 0 {
        return Ok(());
    }
    match items
        .iter_mut()
        .find(|i| i.grantee == grantee && i.grantor == grantor)
    {
        Some(i) => {
            i.privs |= privs;
            if option {
                i.grantable |= privs;
            }
        }
        None => items.push(AclItem {
            grantee: grantee.to_string(),
            grantor: grantor.to_string(),
            privs,
            grantable: if option { privs } else { 0 },
        }),
    }
    Ok(())
}

/// Revokes `privs` (or only their grant options) granted by `grantor` to `grantee`;
/// grants made on the strength of a grant option revoked go too with CASCADE and are
/// an error without it (2BP01), PostgreSQL's `recursive_revoke`.
fn revoke_item(
    items: &mut Vec<AclItem>,
    grantee: &str,
    grantor: &str,
    privs: u16,
    option_only: bool,
    cascade: bool,
    owner: &str,
) -> SqlResult<()> {
    let Some(at) = items
        .iter()
        .position(|i| i.grantee == grantee && i.grantor == grantor)
    else {
        return Ok(());
    };
    let lost_options = items[at].grantable & privs;
    if lost_options != 0 && grantee != owner {
        let dependent = items
            .iter()
            .any(|i| i.grantor == grantee && i.privs & lost_options != 0);
        if dependent {
            if !cascade {
                return Err(SqlError::new(
                    code::DEPENDENT_OBJECTS_STILL_EXIST,
                    "dependent privileges exist",
                )
                .with_hint("Use CASCADE to revoke them too."));
            }
            let dependents: Vec<String> = items
                .iter()
                .filter(|i| i.grantor == grantee && i.privs & lost_options != 0)
                .map(|i| i.grantee.clone())
                .collect();
            for d in dependents {
                revoke_item(items, &d, grantee, lost_options, false, true, owner)?;
            }
        }
    }
    let Some(at) = items
        .iter()
        .position(|i| i.grantee == grantee && i.grantor == grantor)
    else {
        return Ok(());
    };
    let item = &mut items[at];
    item.grantable &= !privs;
    if !option_only {
        item.privs &= !privs;
    }
    if item.privs == 0 {
        items.remove(at);
    }
    Ok(())
}

/// `ALTER TABLE | VIEW | SEQUENCE name OWNER TO role`, PostgreSQL's
/// `ATExecChangeOwner`: a superuser may give anything to anyone; anyone else must own
/// the relation, be a member of the new owner, and the new owner must be able to
/// create in the schema. The access control list follows (PostgreSQL's
/// `aclnewowner`), and a table's sequences follow their table.
pub(crate) fn change_owner(
    db: &Database,
    auth: &Authority,
    relation: &str,
    role: &str,
) -> SqlResult<()> {
    let Some(kind) = super::rel_kind(db, relation) else {
        return Err(SqlError::new(
            code::UNDEFINED_TABLE,
            format!("relation \"{relation}\" does not exist"),
        ));
    };
    let role = match role {
        "current_user" | "current_role" => auth.user.clone(),
        other => other.to_string(),
    };
    if find(db, &role).is_none() {
        return Err(no_role(&role));
    }
    let current = relation_acl(&auth.privileges, relation).owner;
    if current == role {
        return Ok(());
    }
    if kind == RelKind::Sequence {
        if let Some((table, _)) = db
            .sequence(relation)
            .and_then(|s| crate::ddl::sequence::owner_names(db, &s.def))
        {
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                format!("cannot change owner of sequence \"{relation}\""),
            )
            .with_detail(format!(
                "Sequence \"{relation}\" is linked to table \"{table}\"."
            )));
        }
    }
    if !auth.superuser {
        auth.require_owner(relation, kind)?;
        if !auth.is_member(&role) {
            return Err(SqlError::new(
                code::INSUFFICIENT_PRIVILEGE,
                format!("must be member of role \"{role}\""),
            ));
        }
        let new_auth = auth.as_role(&role);
        new_auth.require_create()?;
    }
    let mut relations = vec![relation.to_string()];
    if kind == RelKind::Table {
        relations.extend(
            db.sequences()
                .into_iter()
                .filter(|s| {
                    crate::ddl::sequence::owner_names(db, &s.def)
                        .is_some_and(|(t, _)| t == relation)
                })
                .map(|s| s.def.name),
        );
    }
    for name in relations {
        db.change_acl::<SqlError>(ObjectKind::Relation, &name, |stored| {
            let entry = stored
                .cloned()
                .unwrap_or_else(|| ObjectAcl::owned_by(BOOTSTRAP));
            Ok(Some(new_owner(entry, &role)))
        })?;
    }
    Ok(())
}

/// An entry with its owner replaced, in its items too (PostgreSQL's `aclnewowner`:
/// what the old owner held or granted, the new one does; items that come to name the
/// same pair are merged).
fn new_owner(entry: ObjectAcl, role: &str) -> ObjectAcl {
    let old = entry.owner;
    let swap = |items: Vec<AclItem>| {
        let mut out: Vec<AclItem> = Vec::new();
        for mut i in items {
            if i.grantee == old {
                i.grantee = role.to_string();
            }
            if i.grantor == old {
                i.grantor = role.to_string();
            }
            match out
                .iter_mut()
                .find(|o| o.grantee == i.grantee && o.grantor == i.grantor)
            {
                Some(o) => {
                    o.privs |= i.privs;
                    o.grantable |= i.grantable;
                }
                None => out.push(i),
            }
        }
        out
    };
    ObjectAcl {
        owner: role.to_string(),
        acl: entry.acl.map(swap),
        columns: entry
            .columns
            .into_iter()
            .map(|(at, items)| (at, swap(items)))
            .collect(),
    }
}
