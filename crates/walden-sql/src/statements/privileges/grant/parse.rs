//! GRANT, REVOKE and ALTER … OWNER TO parsed from the statement's tokens, with
//! PostgreSQL's errors.

use sqlparser::tokenizer::{Token, TokenWithSpan};
use walden::privilege::{bits, PUBLIC};

use super::run::{first_bit, no_schema, privilege_word};
use super::{GrantStatement, Target};
use crate::error::{code, SqlError, SqlResult};
use crate::privileges::PUBLIC_SCHEMA;
use crate::words::Words;

/// A role named as a grantee: PUBLIC, CURRENT_USER and friends (resolved later), or a
/// name.
pub(super) fn grantee(w: &mut Words) -> SqlResult<String> {
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

pub(super) fn privilege(w: &mut Words) -> SqlResult<u16> {
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
            columns.push((crate::privileges::COLUMN_PRIVS, cols));
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
        if let Some(bad) = first_bit(bit & !crate::privileges::COLUMN_PRIVS) {
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
        let target = target(&mut w, defaults)?;
        let (grantees, with_option, cascade) = grantees_and_options(&mut w, grant)?;
        option |= with_option;
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
    role_grant(&mut w, grant, names, option)
}

/// GRANT's and REVOKE's objects (after ON): tables, sequences, ALL of them IN SCHEMA
/// public, schemas, or ALTER DEFAULT PRIVILEGES' TABLES or SEQUENCES.
fn target(w: &mut Words, defaults: bool) -> SqlResult<Target> {
    Ok(if defaults {
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
        Target::Sequences(relation_list(w)?)
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
        Target::Tables(relation_list(w)?)
    })
}

/// TO or FROM the grantees, then WITH GRANT OPTION (GRANT), GRANTED BY, CASCADE or
/// RESTRICT (REVOKE), to the end: (grantees, WITH GRANT OPTION, CASCADE).
fn grantees_and_options(w: &mut Words, grant: bool) -> SqlResult<(Vec<String>, bool, bool)> {
    if !w.keyword(if grant { "TO" } else { "FROM" }) {
        return Err(w.error());
    }
    let mut grantees = vec![grantee(w)?];
    while w.token(&Token::Comma) {
        grantees.push(grantee(w)?);
    }
    let mut option = false;
    if grant && w.keyword("WITH") {
        if !(w.keyword("GRANT") && w.keyword("OPTION")) {
            return Err(w.error());
        }
        option = true;
    }
    granted_by(w)?;
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
    Ok((grantees, option, cascade))
}

/// GRANT role, … TO role, … / REVOKE role, … FROM role, …: what follows the roles.
/// `admin`: REVOKE ADMIN OPTION FOR.
fn role_grant(
    w: &mut Words,
    grant: bool,
    names: Vec<String>,
    mut admin: bool,
) -> SqlResult<GrantStatement> {
    if !w.keyword(if grant { "TO" } else { "FROM" }) {
        return Err(w.error());
    }
    let mut members = vec![grantee(w)?];
    while w.token(&Token::Comma) {
        members.push(grantee(w)?);
    }
    if grant && w.keyword("WITH") {
        if !(w.keyword("ADMIN") && w.keyword("OPTION")) {
            return Err(w.error());
        }
        admin = true;
    }
    granted_by(w)?;
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
