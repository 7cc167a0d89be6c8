//! CREATE SEQUENCE, ALTER SEQUENCE and DROP SEQUENCE, parsed here (sqlparser reads
//! their options in one order only, and has no ALTER SEQUENCE) and run against the
//! engine's sequences, committed at once as all of Walden's DDL. A sequence a column's
//! default calls, or an identity column's, cannot be dropped on its own (2BP01, as in
//! PostgreSQL); CASCADE drops the defaults that call it.

use sqlparser::tokenizer::{Token, TokenWithSpan};
use walden::{AlterOp, Database, Identity, SeqType, SequenceDef};

use crate::error::{code, SqlError, SqlResult};
use crate::sequences::options::SeqOptions;
use crate::statement::Output;
use crate::words::Words;

/// A parsed sequence statement.
#[derive(Debug, Clone, PartialEq)]
pub enum SequenceStatement {
    Create {
        name: String,
        if_not_exists: bool,
        options: SeqOptions,
    },
    Alter {
        name: String,
        if_exists: bool,
        action: AlterAction,
    },
    Drop {
        names: Vec<String>,
        if_exists: bool,
        cascade: bool,
    },
    /// `ALTER TABLE t ALTER [COLUMN] c ADD GENERATED … AS IDENTITY [( options )]`, as
    /// pg_dump writes an identity column (with `SEQUENCE NAME`).
    AddIdentity {
        table: String,
        column: String,
        identity: Identity,
        options: SeqOptions,
    },
    /// `ALTER TABLE name OWNER TO role` (pg_dump writes it for tables, views and
    /// sequences): the role must exist; ownership itself is not kept yet.
    OwnerTo { relation: String, role: String },
}

#[derive(Debug, Clone, PartialEq)]
pub enum AlterAction {
    Options(SeqOptions),
    Rename(String),
    /// OWNER TO role: the role must exist (ownership itself is not kept yet).
    Owner(String),
}

/// The statements this file parses, by command name (`script::command_name`).
pub fn is_sequence_command(name: &str) -> bool {
    matches!(
        name,
        "CREATE SEQUENCE" | "ALTER SEQUENCE" | "DROP SEQUENCE" | "CREATE TEMPORARY SEQUENCE"
    )
}

pub fn command(stmt: &SequenceStatement) -> &'static str {
    match stmt {
        SequenceStatement::Create { .. } => "CREATE SEQUENCE",
        SequenceStatement::Alter { .. } => "ALTER SEQUENCE",
        SequenceStatement::Drop { .. } => "DROP SEQUENCE",
        SequenceStatement::AddIdentity { .. } | SequenceStatement::OwnerTo { .. } => "ALTER TABLE",
    }
}

/// Whether an ALTER TABLE is one this file parses: `ALTER TABLE [IF EXISTS] [ONLY] name
/// OWNER TO …`, or `… ALTER [COLUMN] c ADD GENERATED …` (`words` are the statement's
/// tokens, trivia left out).
pub fn is_alter_table_here(words: &[&Token]) -> bool {
    let kw = |i: usize, k: &str| {
        matches!(words.get(i), Some(Token::Word(w))
            if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(k))
    };
    let is_word = |i: usize| matches!(words.get(i), Some(Token::Word(_)));
    // ALTER TABLE
    let mut i = 2;
    if kw(i, "IF") && kw(i + 1, "EXISTS") {
        i += 2;
    }
    if kw(i, "ONLY") {
        i += 1;
    }
    if !is_word(i) {
        return false;
    }
    i += 1;
    if matches!(words.get(i), Some(Token::Period)) && is_word(i + 1) {
        i += 2;
    }
    if kw(i, "OWNER") && kw(i + 1, "TO") {
        return true;
    }
    if !kw(i, "ALTER") {
        return false;
    }
    i += 1;
    if kw(i, "COLUMN") {
        i += 1;
    }
    is_word(i) && kw(i + 1, "ADD") && kw(i + 2, "GENERATED")
}

/// `ALTER TABLE [IF EXISTS] [ONLY] name OWNER TO role` or `… ALTER [COLUMN] c ADD
/// GENERATED { ALWAYS | BY DEFAULT } AS IDENTITY [( options )]`.
fn parse_alter_table(w: &mut Words) -> SqlResult<SequenceStatement> {
    if w.keyword("IF") && !w.keyword("EXISTS") {
        return Err(w.error());
    }
    w.keyword("ONLY");
    let (table, _) = w.relation_name()?;
    if w.keyword("OWNER") {
        if !w.keyword("TO") {
            return Err(w.error());
        }
        let (role, _) = w.name()?;
        return Ok(SequenceStatement::OwnerTo {
            relation: table,
            role,
        });
    }
    if !w.keyword("ALTER") {
        return Err(w.error());
    }
    w.keyword("COLUMN");
    let (column, _) = w.name()?;
    if !(w.keyword("ADD") && w.keyword("GENERATED")) {
        return Err(w.error());
    }
    let identity = if w.keyword("ALWAYS") {
        Identity::Always
    } else if w.keyword("BY") && w.keyword("DEFAULT") {
        Identity::ByDefault
    } else {
        return Err(w.error());
    };
    if !(w.keyword("AS") && w.keyword("IDENTITY")) {
        return Err(w.error());
    }
    let options = if w.token(&Token::LParen) {
        let o = SeqOptions::parse(w, false, true)?;
        w.expect(&Token::RParen)?;
        o
    } else {
        SeqOptions::default()
    };
    Ok(SequenceStatement::AddIdentity {
        table,
        column,
        identity,
        options,
    })
}

pub fn parse(toks: &[TokenWithSpan]) -> SqlResult<SequenceStatement> {
    let mut w = Words::new(toks);
    // (ALTER is taken by the first test: ALTER TABLE, or ALTER SEQUENCE below.)
    let stmt = if w.keyword("ALTER") && w.keyword("TABLE") {
        parse_alter_table(&mut w)?
    } else if w.keyword("CREATE") {
        if w.keyword("TEMP") || w.keyword("TEMPORARY") || w.keyword("UNLOGGED") {
            return Err(SqlError::unsupported(
                "CREATE TEMPORARY or UNLOGGED SEQUENCE (every sequence is logged and kept)",
            ));
        }
        w.keyword("SEQUENCE");
        let if_not_exists = w.keyword("IF") && {
            if !(w.keyword("NOT") && w.keyword("EXISTS")) {
                return Err(w.error());
            }
            true
        };
        let (name, _) = w.relation_name()?;
        let options = SeqOptions::parse(&mut w, false, false)?;
        SequenceStatement::Create {
            name,
            if_not_exists,
            options,
        }
    } else if w.keyword("SEQUENCE") {
        let if_exists = if_exists(&mut w)?;
        let (name, _) = w.relation_name()?;
        let action = if w.keyword("RENAME") {
            if !w.keyword("TO") {
                return Err(w.error());
            }
            AlterAction::Rename(w.name()?.0)
        } else if w.keyword("OWNER") {
            if !w.keyword("TO") {
                return Err(w.error());
            }
            AlterAction::Owner(w.name()?.0)
        } else if w.is_keyword("SET") {
            return Err(SqlError::unsupported(
                "ALTER SEQUENCE … SET (Walden has one schema, and every sequence is logged)",
            ));
        } else {
            AlterAction::Options(SeqOptions::parse(&mut w, true, false)?)
        };
        SequenceStatement::Alter {
            name,
            if_exists,
            action,
        }
    } else if w.keyword("DROP") {
        w.keyword("SEQUENCE");
        let if_exists = if_exists(&mut w)?;
        let mut names = vec![w.relation_name()?.0];
        while w.token(&Token::Comma) {
            names.push(w.relation_name()?.0);
        }
        let cascade = w.keyword("CASCADE");
        if !cascade {
            w.keyword("RESTRICT");
        }
        SequenceStatement::Drop {
            names,
            if_exists,
            cascade,
        }
    } else {
        return Err(w.error());
    };
    if !w.at_end() {
        return Err(w.error());
    }
    Ok(stmt)
}

fn if_exists(w: &mut Words) -> SqlResult<bool> {
    if !w.keyword("IF") {
        return Ok(false);
    }
    if !w.keyword("EXISTS") {
        return Err(w.error());
    }
    Ok(true)
}

fn already_exists(name: &str) -> SqlError {
    SqlError::new(
        code::DUPLICATE_TABLE,
        format!("relation \"{name}\" already exists"),
    )
}

/// The column `OWNED BY table.column` names: the table's id and the column's place.
fn owner_column(db: &Database, table: &str, column: &str) -> SqlResult<(u32, u16)> {
    let Ok(id) = db.table_id(table) else {
        return Err(SqlError::new(
            code::UNDEFINED_TABLE,
            format!("relation \"{table}\" does not exist"),
        ));
    };
    let schema = db.schema(table)?;
    let at = schema
        .columns
        .iter()
        .position(|c| !c.dropped && c.name == column)
        .ok_or_else(|| {
            SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("column \"{column}\" of relation \"{table}\" does not exist"),
            )
        })?;
    Ok((id, at as u16))
}

/// `owned_by` as the options set it (unchanged when they do not name it).
fn owned_by(
    db: &Database,
    options: &SeqOptions,
    now: Option<(u32, u16)>,
) -> SqlResult<Option<(u32, u16)>> {
    match &options.owned_by {
        None => Ok(now),
        Some(None) => Ok(None),
        Some(Some((table, column))) => owner_column(db, table, column).map(Some),
    }
}

pub(crate) fn run(
    db: &Database,
    auth: &crate::privileges::Authority,
    stmt: SequenceStatement,
) -> SqlResult<Output> {
    use crate::privileges::{check::require_owner, RelKind};
    let mut out = Output::tag(command(&stmt));
    match stmt {
        SequenceStatement::Create {
            name,
            if_not_exists,
            options,
        } => {
            if !auth.superuser {
                auth.require_create()?;
            }
            if db.relation_exists(&name) {
                if if_not_exists {
                    out.notices.push(format!(
                        "NOTICE:  relation \"{name}\" already exists, skipping"
                    ));
                    return Ok(out);
                }
                return Err(already_exists(&name));
            }
            let base = SequenceDef::new(&name, options.as_type.unwrap_or(SeqType::Int8));
            let (mut def, _) = options.apply(&base, true, None)?;
            def.owned_by = owned_by(db, &options, None)?;
            same_owner(db, auth, &name, def.owned_by, &auth.user)?;
            db.create_sequence_by(def, Some(auth.new_acl(RelKind::Sequence)))?;
        }
        SequenceStatement::Alter {
            name,
            if_exists,
            action,
        } => {
            let Some(info) = db.sequence(&name) else {
                if if_exists {
                    out.notices.push(format!(
                        "NOTICE:  relation \"{name}\" does not exist, skipping"
                    ));
                    return Ok(out);
                }
                return Err(if db.relation_exists(&name) {
                    crate::sequences::not_a_sequence(&name)
                } else {
                    SqlError::new(
                        code::UNDEFINED_TABLE,
                        format!("relation \"{name}\" does not exist"),
                    )
                });
            };
            if !matches!(action, AlterAction::Owner(_)) {
                require_owner(auth, &name, RelKind::Sequence)?;
            }
            match action {
                AlterAction::Options(options) => {
                    let owner = owned_by(db, &options, info.def.owned_by)?;
                    let seq_owner = crate::privileges::relation_acl(&auth.privileges, &name).owner;
                    if owner != info.def.owned_by {
                        same_owner(db, auth, &name, owner, &seq_owner)?;
                    }
                    db.alter_sequence::<SqlError>(&name, |def, state| {
                        let (mut d, restart) = options.apply(def, false, Some(state))?;
                        d.owned_by = owner;
                        Ok((d, restart))
                    })?;
                }
                AlterAction::Rename(new) => rename(db, &name, &new)?,
                AlterAction::Owner(role) => {
                    crate::privileges::grant::change_owner(db, auth, &name, &role)?;
                }
            }
        }
        SequenceStatement::AddIdentity {
            table,
            column,
            identity,
            options,
        } => {
            if db.relation_kind(&table) == Some(walden::RelationKind::Table) {
                require_owner(auth, &table, RelKind::Table)?;
            }
            add_identity(db, &table, &column, identity, options)?
        }
        SequenceStatement::OwnerTo { relation, role } => {
            crate::privileges::grant::change_owner(db, auth, &relation, &role)?;
        }
        SequenceStatement::Drop {
            names,
            if_exists,
            cascade,
        } => {
            drop_sequences(db, auth, names, if_exists, cascade, &mut out.notices)?;
        }
    }
    Ok(out)
}

/// ALTER SEQUENCE … RENAME TO, the defaults that call it written anew.
fn rename(db: &Database, name: &str, new: &str) -> SqlResult<()> {
    if db.relation_exists(new) {
        return Err(already_exists(new));
    }
    // Defaults are kept as text: those that call the sequence are written anew with
    // its new name (only the forms Walden and pg_dump write; another is refused before
    // anything changes).
    let deps = dependent_defaults(db, name);
    for (table, column) in &deps {
        let text = column_default_text(db, table, column);
        if !calls_only(&text, name) {
            return Err(SqlError::unsupported(format!(
                "renaming sequence \"{name}\", which the default of column \"{column}\" of table \"{table}\" calls in an expression (Walden keeps a default as text)"
            ))
            .with_hint("Set the column's default to nextval of the sequence alone first."));
        }
    }
    db.alter_sequence::<SqlError>(name, |def, _| {
        let mut d = def.clone();
        d.name = new.to_string();
        Ok((d, None))
    })?;
    for (table, column) in deps {
        db.alter_table(
            &table,
            &AlterOp::SetDefault {
                column,
                default: Some(crate::sequences::owned::nextval_default(new)),
            },
        )?;
    }
    Ok(())
}

/// DROP SEQUENCE: every name checked before any is dropped, as PostgreSQL does; the
/// defaults that call a dropped sequence removed.
fn drop_sequences(
    db: &Database,
    auth: &crate::privileges::Authority,
    names: Vec<String>,
    if_exists: bool,
    cascade: bool,
    notices: &mut Vec<String>,
) -> SqlResult<()> {
    use crate::privileges::{check::require_owner, RelKind};
    let mut drop = Vec::new();
    for name in names {
        match db.sequence(&name) {
            Some(info) => drop.push(info),
            None if if_exists => notices.push(format!(
                "NOTICE:  sequence \"{name}\" does not exist, skipping"
            )),
            None if db.relation_exists(&name) => {
                return Err(crate::sequences::not_a_sequence(&name)
                    .with_hint("Use DROP TABLE to remove a table."))
            }
            None => {
                return Err(SqlError::new(
                    code::UNDEFINED_TABLE,
                    format!("sequence \"{name}\" does not exist"),
                ))
            }
        }
    }
    for info in &drop {
        require_owner(auth, &info.def.name, RelKind::Sequence)?;
        check_droppable(db, &info.def, cascade, notices)?;
    }
    for info in drop {
        for (table, column) in dependent_defaults(db, &info.def.name) {
            db.alter_table(
                &table,
                &AlterOp::SetDefault {
                    column,
                    default: None,
                },
            )?;
        }
        db.drop_sequence(&info.def.name)?;
    }
    Ok(())
}

/// PostgreSQL's rule for OWNED BY: the sequence and the table have one owner (55000
/// "sequence must have same owner as table it is linked to").
fn same_owner(
    db: &Database,
    auth: &crate::privileges::Authority,
    _sequence: &str,
    owned_by: Option<(u32, u16)>,
    seq_owner: &str,
) -> SqlResult<()> {
    let Some((table_id, _)) = owned_by else {
        return Ok(());
    };
    let Some(table) = db
        .table_names()
        .into_iter()
        .find(|t| db.table_id(t).ok() == Some(table_id))
    else {
        return Ok(());
    };
    if crate::privileges::relation_acl(&auth.privileges, &table).owner != seq_owner {
        return Err(SqlError::new(
            code::OBJECT_NOT_IN_PREREQUISITE_STATE,
            "sequence must have same owner as table it is linked to",
        ));
    }
    Ok(())
}

/// Makes a column an identity column: its sequence (named by SEQUENCE NAME, or as
/// PostgreSQL names it) and the default that calls it. The column must be NOT NULL
/// and have no default, as PostgreSQL requires.
fn add_identity(
    db: &Database,
    table: &str,
    column: &str,
    identity: Identity,
    options: SeqOptions,
) -> SqlResult<()> {
    let (table_id, at) = owner_column(db, table, column)?;
    let col = db.schema(table)?.columns[at as usize].clone();
    let ty = crate::types::SqlType::from_column(col.ty);
    if col.nullable {
        return Err(SqlError::new(
            code::OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "column \"{column}\" of relation \"{table}\" must be declared NOT NULL before identity can be added"
            ),
        ));
    }
    if crate::sequences::owned::identities(db, table).contains_key(&(at as usize)) {
        return Err(SqlError::new(
            code::OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("column \"{column}\" of relation \"{table}\" is already an identity column"),
        ));
    }
    if col.default.is_some() {
        return Err(SqlError::new(
            code::OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("column \"{column}\" of relation \"{table}\" already has a default value"),
        ));
    }
    let name = match &options.sequence_name {
        Some(n) if db.relation_exists(n) => return Err(already_exists(n)),
        Some(n) => n.clone(),
        None => crate::sequences::owned::choose_name(db, table, column, &[]),
    };
    let mut named = options;
    named.sequence_name = None;
    let seq = crate::sequences::owned::ColumnSequence::identity(identity, ty, named)?;
    let mut def = seq.definition(&name, at)?;
    def.owned_by = Some((table_id, at));
    let owner = crate::privileges::relation_acl(&db.privileges(), table).owner;
    db.create_sequence_by(def, Some(walden::ObjectAcl::owned_by(&owner)))?;
    db.alter_table(
        table,
        &AlterOp::SetDefault {
            column: column.to_string(),
            default: Some(crate::sequences::owned::nextval_default(&name)),
        },
    )?;
    Ok(())
}

/// An identity column's sequence never goes on its own; a sequence a default calls
/// goes with CASCADE only, taking the defaults with it.
fn check_droppable(
    db: &Database,
    def: &SequenceDef,
    cascade: bool,
    notices: &mut Vec<String>,
) -> SqlResult<()> {
    if def.identity != Identity::None {
        if let Some((table, column)) = owner_names(db, def) {
            return Err(SqlError::new(
                code::DEPENDENT_OBJECTS_STILL_EXIST,
                format!(
                    "cannot drop sequence {} because column {column} of table {table} requires it",
                    def.name
                ),
            )
            .with_hint(format!(
                "You can drop column {column} of table {table} instead."
            )));
        }
    }
    let deps = dependent_defaults(db, &def.name);
    if deps.is_empty() {
        return Ok(());
    }
    let describe = |(t, c): &(String, String)| format!("default value for column {c} of table {t}");
    if !cascade {
        let detail: Vec<String> = deps
            .iter()
            .map(|d| format!("{} depends on sequence {}", describe(d), def.name))
            .collect();
        return Err(SqlError::new(
            code::DEPENDENT_OBJECTS_STILL_EXIST,
            format!(
                "cannot drop sequence {} because other objects depend on it",
                def.name
            ),
        )
        .with_detail(detail.join("\n"))
        .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
    }
    for d in &deps {
        notices.push(format!("NOTICE:  drop cascades to {}", describe(d)));
    }
    Ok(())
}

/// The table and column that own a sequence, by name.
pub(crate) fn owner_names(db: &Database, def: &SequenceDef) -> Option<(String, String)> {
    let (table, column) = def.owned_by?;
    let name = db
        .table_names()
        .into_iter()
        .find(|n| db.table_id(n).ok() == Some(table))?;
    let col = db
        .schema(&name)
        .ok()?
        .columns
        .get(column as usize)?
        .name
        .clone();
    Some((name, col))
}

/// The sequences a default's text calls `nextval` of (`nextval('name'::regclass)`, the
/// form Walden and pg_dump write, or `nextval('name')`).
pub(crate) fn sequences_called(default: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lower = default.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("nextval(") {
        let rest = default[from + at + "nextval(".len()..].trim_start();
        from += at + "nextval(".len();
        let Some(lit) = rest.strip_prefix('\'') else {
            continue;
        };
        let mut text = String::new();
        let mut chars = lit.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' {
                if chars.peek() == Some(&'\'') {
                    chars.next();
                    text.push('\'');
                    continue;
                }
                break;
            }
            text.push(c);
        }
        if let Ok((schema, name)) = crate::catalog::relation_name_of_text(&text) {
            if schema.is_none_or(|s| s == "public") {
                out.push(name);
            }
        }
    }
    out
}

/// A column's default as stored (empty when it has none).
fn column_default_text(db: &Database, table: &str, column: &str) -> String {
    db.schema(table)
        .ok()
        .and_then(|s| {
            s.columns
                .into_iter()
                .find(|c| c.name == column && !c.dropped)
                .and_then(|c| c.default)
        })
        .unwrap_or_default()
}

/// Whether a default is `nextval` of the sequence and nothing else.
fn calls_only(default: &str, sequence: &str) -> bool {
    let text = default.trim();
    let Some(inner) = text
        .strip_prefix("nextval(")
        .and_then(|r| r.strip_suffix(')'))
        .map(|r| r.trim().trim_end_matches("::regclass"))
    else {
        return false;
    };
    sequences_called(text) == [sequence]
        && inner.starts_with('\'')
        && inner.ends_with('\'')
        && inner.matches('\'').count() >= 2
}

/// Every (table, column) whose default calls `nextval` of the sequence.
fn dependent_defaults(db: &Database, sequence: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for table in db.table_names() {
        let Ok(schema) = db.schema(&table) else {
            continue;
        };
        for c in schema.columns.iter().filter(|c| !c.dropped) {
            if let Some(d) = &c.default {
                if sequences_called(d).iter().any(|s| s == sequence) {
                    out.push((table.clone(), c.name.clone()));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(sql: &str) -> SqlResult<SequenceStatement> {
        let toks =
            sqlparser::tokenizer::Tokenizer::new(&sqlparser::dialect::PostgreSqlDialect {}, sql)
                .tokenize_with_location()
                .unwrap();
        parse(&toks)
    }

    #[test]
    fn statements_parse_as_pg_dump_writes_them() {
        let s = p("CREATE SEQUENCE public.t_id_seq\n    AS integer\n    START WITH 1\n    INCREMENT BY 1\n    NO MINVALUE\n    NO MAXVALUE\n    CACHE 1").unwrap();
        assert!(matches!(s, SequenceStatement::Create { ref name, .. } if name == "t_id_seq"));
        let s = p("ALTER SEQUENCE public.t_id_seq OWNED BY public.t.id").unwrap();
        match s {
            SequenceStatement::Alter {
                action: AlterAction::Options(o),
                ..
            } => assert_eq!(o.owned_by, Some(Some(("t".into(), "id".into())))),
            other => panic!("{other:?}"),
        }
        let s = p("drop sequence if exists a, \"B\" cascade").unwrap();
        assert_eq!(
            s,
            SequenceStatement::Drop {
                names: vec!["a".into(), "B".into()],
                if_exists: true,
                cascade: true
            }
        );
        assert_eq!(p("create sequence s owned by x").unwrap_err().code, "42601");
        assert_eq!(p("alter sequence s rename x").unwrap_err().code, "42601");
        assert_eq!(p("create temp sequence s").unwrap_err().code, "0A000");
        let words = |sql: &str| {
            sqlparser::tokenizer::Tokenizer::new(&sqlparser::dialect::PostgreSqlDialect {}, sql)
                .tokenize()
                .unwrap()
                .into_iter()
                .filter(|t| !matches!(t, Token::Whitespace(_)))
                .collect::<Vec<_>>()
        };
        let here = |sql: &str| is_alter_table_here(&words(sql).iter().collect::<Vec<_>>());
        assert!(here("alter table only public.t owner to bob"));
        assert!(here(
            "ALTER TABLE t ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY"
        ));
        assert!(here(
            "alter table if exists t alter id add generated by default as identity"
        ));
        // A column named owner is renamed by the ordinary ALTER TABLE.
        assert!(!here("alter table t rename column owner to x"));
        assert!(!here("alter table t add column owner text"));
    }

    #[test]
    fn defaults_name_the_sequences_they_call() {
        assert_eq!(
            sequences_called("nextval('t_id_seq'::regclass)"),
            ["t_id_seq"]
        );
        assert_eq!(
            sequences_called("NEXTVAL('public.\"Odd''s\"'::regclass) + nextval( 'b')"),
            ["Odd's", "b"]
        );
        assert!(sequences_called("42").is_empty());
        assert!(sequences_called("nextval('other.s')").is_empty());
    }
}
