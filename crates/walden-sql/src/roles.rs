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

use sqlparser::tokenizer::{Location, Token, TokenWithSpan};
use walden::{Database, RoleDef};

use crate::error::{clip, code, SqlError, SqlResult};
use crate::scram::{self, PasswordKind, ScramError};
use crate::statement::Output;

pub use crate::catalog::{BOOTSTRAP, BOOTSTRAP_OID};
/// PostgreSQL's longest name (NAMEDATALEN − 1 bytes); longer ones are cut, with a notice.
pub const NAME_BYTES: usize = 63;

/// The bootstrap superuser as it is until changed: every attribute, no password (a
/// server lets it in only by trust until `ALTER ROLE postgres PASSWORD` or `walden user
/// password` gives it one).
pub fn bootstrap_role() -> RoleDef {
    RoleDef {
        login: true,
        superuser: true,
        createdb: true,
        createrole: true,
        replication: true,
        bypassrls: true,
        ..RoleDef::new(BOOTSTRAP)
    }
}

/// The role of that name as SQL sees it (the bootstrap superuser included): what a
/// server authenticates a user against.
pub fn find(db: &Database, name: &str) -> Option<RoleDef> {
    db.role(name)
        .or_else(|| (name == BOOTSTRAP).then(bootstrap_role))
}

/// Every role, by name, the bootstrap superuser included.
pub fn all(db: &Database) -> Vec<RoleDef> {
    let mut roles = db.roles();
    if !roles.iter().any(|r| r.name == BOOTSTRAP) {
        roles.push(bootstrap_role());
        roles.sort_by(|a, b| a.name.cmp(&b.name));
    }
    roles
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

/// The significant tokens of a statement, read front to back.
struct Cursor<'a> {
    toks: Vec<&'a TokenWithSpan>,
    at: usize,
    /// Just after the last token: where "at end of input" points.
    end: Location,
}

impl<'a> Cursor<'a> {
    fn new(toks: &'a [TokenWithSpan]) -> Cursor<'a> {
        let toks: Vec<&TokenWithSpan> = toks
            .iter()
            .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
            .collect();
        let end = toks
            .last()
            .map_or(Location { line: 0, column: 0 }, |t| t.span.end);
        Cursor { toks, at: 0, end }
    }

    fn peek(&self) -> Option<&'a Token> {
        self.toks.get(self.at).map(|t| &t.token)
    }

    fn loc(&self) -> Location {
        self.toks.get(self.at).map_or(self.end, |t| t.span.start)
    }

    fn done(&self) -> bool {
        self.at >= self.toks.len()
    }

    /// A syntax error at the current token, a string shown as `'…'` (it may be a
    /// password).
    fn error(&self) -> SqlError {
        match self.peek() {
            None => SqlError::syntax("syntax error at end of input").at(self.end),
            Some(t) => {
                let shown = match t {
                    t if string_value(t).is_some() => "'…'".to_string(),
                    other => clip(&other.to_string()).into_owned(),
                };
                SqlError::syntax(format!("syntax error at or near \"{shown}\"")).at(self.loc())
            }
        }
    }

    /// The current token as an unquoted word, lower case.
    fn word(&self) -> Option<String> {
        match self.peek() {
            Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_lowercase()),
            _ => None,
        }
    }

    /// Takes the keyword if it is next.
    fn keyword(&mut self, kw: &str) -> bool {
        if self.word().as_deref() == Some(kw) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, kw: &str) -> SqlResult<()> {
        if self.keyword(kw) {
            Ok(())
        } else {
            Err(self.error())
        }
    }

    /// A string constant (PostgreSQL's Sconst).
    fn string(&mut self) -> SqlResult<String> {
        match self.peek().and_then(string_value) {
            Some(s) => {
                self.at += 1;
                Ok(s)
            }
            None => Err(self.error()),
        }
    }

    /// A signed integer (PostgreSQL's SignedIconst: it must fit 32 bits).
    fn integer(&mut self) -> SqlResult<i64> {
        let negative = matches!(self.peek(), Some(Token::Minus));
        if negative {
            self.at += 1;
        }
        match self.peek() {
            Some(Token::Number(n, _)) => match n.parse::<i32>() {
                Ok(v) => {
                    self.at += 1;
                    Ok(if negative {
                        -i64::from(v)
                    } else {
                        i64::from(v)
                    })
                }
                Err(_) => Err(self.error()),
            },
            _ => Err(self.error()),
        }
    }

    /// A role name being made (PostgreSQL's RoleId): an identifier, quoted or not,
    /// never `public`, `none` or a special role specifier.
    fn role_id(&mut self, notices: &mut Vec<String>) -> SqlResult<Name> {
        match self.role_spec(notices)? {
            Spec::Named(name) if name.name == "public" => {
                Err(reserved_name(&name.name).at(name.at))
            }
            Spec::Named(name) => Ok(name),
            Spec::Current(which, at) => Err(SqlError::new(
                code::RESERVED_NAME,
                format!("{which} cannot be used as a role name here"),
            )
            .at(at)),
        }
    }

    /// A role named (PostgreSQL's RoleSpec): an identifier, or `CURRENT_USER`,
    /// `SESSION_USER`, `CURRENT_ROLE`; `public` and `none` are refused here (42939).
    fn role_spec(&mut self, notices: &mut Vec<String>) -> SqlResult<Spec> {
        let at = self.loc();
        let (name, quoted) = match self.peek() {
            Some(Token::Word(w)) if w.quote_style == Some('"') => {
                if w.value.is_empty() {
                    return Err(SqlError::syntax(
                        "zero-length delimited identifier at or near \"\"\"\"",
                    )
                    .at(at));
                }
                (w.value.clone(), true)
            }
            Some(Token::Word(w)) if w.quote_style.is_none() => (w.value.to_lowercase(), false),
            _ => return Err(self.error()),
        };
        if !quoted {
            let special = match name.as_str() {
                "current_user" => Some("CURRENT_USER"),
                "session_user" => Some("SESSION_USER"),
                "current_role" => Some("CURRENT_ROLE"),
                _ => None,
            };
            if let Some(which) = special {
                self.at += 1;
                return Ok(Spec::Current(which, at));
            }
            if RESERVED_WORDS.contains(&name.as_str()) {
                return Err(self.error());
            }
        }
        self.at += 1;
        // `public` names every role (a special specifier where a role is named, refused
        // where one is made); `none` is refused everywhere.
        if name == "none" {
            return Err(reserved_name(&name).at(at));
        }
        Ok(Spec::Named(Name {
            name: truncated(name, notices),
            at,
        }))
    }
}

fn reserved_name(name: &str) -> SqlError {
    SqlError::new(
        code::RESERVED_NAME,
        format!("role name \"{name}\" is reserved"),
    )
}

/// PostgreSQL's reserved key words that the grammar refuses as a role name unquoted
/// (those a role statement is likeliest to meet; any other word is taken as a name).
const RESERVED_WORDS: &[&str] = &[
    "all",
    "and",
    "any",
    "as",
    "both",
    "case",
    "cast",
    "check",
    "column",
    "constraint",
    "create",
    "default",
    "distinct",
    "do",
    "else",
    "end",
    "false",
    "for",
    "foreign",
    "from",
    "grant",
    "group",
    "having",
    "in",
    "into",
    "limit",
    "not",
    "null",
    "on",
    "only",
    "or",
    "order",
    "primary",
    "references",
    "select",
    "table",
    "then",
    "to",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "when",
    "where",
    "with",
];

/// The text of a string constant token.
fn string_value(t: &Token) -> Option<String> {
    match t {
        Token::SingleQuotedString(s)
        | Token::EscapedStringLiteral(s)
        | Token::NationalStringLiteral(s)
        | Token::UnicodeStringLiteral(s) => Some(s.clone()),
        Token::DollarQuotedString(d) => Some(d.value.clone()),
        _ => None,
    }
}

/// A name cut to PostgreSQL's 63 bytes (at a character boundary), with its notice.
fn truncated(name: String, notices: &mut Vec<String>) -> String {
    if name.len() <= NAME_BYTES {
        return name;
    }
    let mut end = NAME_BYTES;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let cut = name[..end].to_string();
    notices.push(format!(
        "identifier \"{name}\" will be truncated to \"{cut}\""
    ));
    cut
}

/// Parses a role statement; `notices` gets what parsing says (truncated names).
pub fn parse(toks: &[TokenWithSpan], notices: &mut Vec<String>) -> SqlResult<RoleStatement> {
    let mut c = Cursor::new(toks);
    let verb = c.word().unwrap_or_default();
    c.at += 1;
    let object = c.word().unwrap_or_default();
    c.at += 1;
    let stmt = match verb.as_str() {
        "create" => {
            let name = c.role_id(notices)?;
            c.keyword("with");
            let options = parse_options(&mut c, true)?;
            RoleStatement::Create {
                name,
                options,
                user: object == "user",
            }
        }
        "alter" => parse_alter(&mut c, &object, notices)?,
        "drop" => {
            let if_exists = if c.keyword("if") {
                c.expect("exists")?;
                true
            } else {
                false
            };
            let mut names = vec![c.role_spec(notices)?];
            while matches!(c.peek(), Some(Token::Comma)) {
                c.at += 1;
                names.push(c.role_spec(notices)?);
            }
            RoleStatement::Drop { if_exists, names }
        }
        _ => return Err(SqlError::syntax("not a role statement")),
    };
    if !c.done() {
        return Err(c.error());
    }
    Ok(stmt)
}

fn parse_alter(
    c: &mut Cursor,
    object: &str,
    notices: &mut Vec<String>,
) -> SqlResult<RoleStatement> {
    if object != "group" && c.word().as_deref() == Some("all") {
        return Err(SqlError::unsupported("ALTER ROLE ALL"));
    }
    let spec_at = c.loc();
    let role = c.role_spec(notices)?;
    if c.keyword("rename") {
        c.expect("to")?;
        let role = match role {
            Spec::Current(which, _) => {
                return Err(SqlError::new(
                    code::RESERVED_NAME,
                    format!("{which} cannot be used as a role name here"),
                )
                .at(spec_at))
            }
            named => named,
        };
        let to = c.role_id(notices)?;
        return Ok(RoleStatement::Rename { role, to });
    }
    let word = c.word();
    match word.as_deref() {
        Some("set" | "reset") => {
            return Err(SqlError::unsupported(format!(
                "ALTER {} ... {}",
                object.to_uppercase(),
                word.unwrap_or_default().to_uppercase()
            )))
        }
        Some("in") => {
            c.at += 1;
            if c.word().as_deref() == Some("database") {
                return Err(SqlError::unsupported("ALTER ROLE ... IN DATABASE"));
            }
            return Err(c.error());
        }
        Some("add" | "drop") if object == "group" => {
            return Err(SqlError::unsupported(format!(
                "ALTER GROUP ... {} USER (Walden has no role membership)",
                word.unwrap_or_default().to_uppercase()
            )))
        }
        _ if object == "group" => return Err(c.error()),
        _ => {}
    }
    c.keyword("with");
    let options = parse_options(c, false)?;
    Ok(RoleStatement::Alter { role, options })
}

/// The attributes of CREATE (`create`) or ALTER ROLE, up to the end.
fn parse_options(c: &mut Cursor, create: bool) -> SqlResult<Vec<RoleOption>> {
    let mut options: Vec<RoleOption> = Vec::new();
    while !c.done() {
        let at = c.loc();
        let Some(word) = c.word() else {
            return Err(c.error());
        };
        c.at += 1;
        let kind = match word.as_str() {
            "superuser" | "nosuperuser" => OptionKind::Superuser(word == "superuser"),
            "createdb" | "nocreatedb" => OptionKind::Createdb(word == "createdb"),
            "createrole" | "nocreaterole" => OptionKind::Createrole(word == "createrole"),
            "inherit" | "noinherit" => OptionKind::Inherit(word == "inherit"),
            "login" | "nologin" => OptionKind::Login(word == "login"),
            "replication" | "noreplication" => OptionKind::Replication(word == "replication"),
            "bypassrls" | "nobypassrls" => OptionKind::Bypassrls(word == "bypassrls"),
            "password" => {
                if c.keyword("null") {
                    OptionKind::Password(None)
                } else {
                    OptionKind::Password(Some(c.string()?))
                }
            }
            "encrypted" => {
                c.expect("password")?;
                OptionKind::Password(Some(c.string()?))
            }
            "unencrypted" => {
                c.expect("password")?;
                c.string()?;
                return Err(SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    "UNENCRYPTED PASSWORD is no longer supported",
                )
                .with_hint("Remove UNENCRYPTED to store the password in encrypted form instead.")
                .at(at));
            }
            "connection" => {
                c.expect("limit")?;
                OptionKind::ConnectionLimit(c.integer()?)
            }
            "valid" => {
                c.expect("until")?;
                OptionKind::ValidUntil(c.string()?)
            }
            "sysid" if create => {
                c.integer()?;
                OptionKind::Sysid
            }
            "in" | "role" | "admin" | "user" if create => {
                return Err(SqlError::unsupported(format!(
                    "{} in CREATE ROLE (Walden has no role membership)",
                    if word == "in" {
                        "IN ROLE"
                    } else {
                        match word.as_str() {
                            "role" => "ROLE",
                            "admin" => "ADMIN",
                            _ => "USER",
                        }
                    }
                ))
                .at(at))
            }
            // PostgreSQL takes any other plain identifier as an option it does not
            // know, and a key word as a syntax error.
            _ if matches!(
                c.toks.get(c.at - 1).map(|t| &t.token),
                Some(Token::Word(w)) if w.keyword == sqlparser::keywords::Keyword::NoKeyword
            ) =>
            {
                return Err(SqlError::syntax(format!(
                    "unrecognized role option \"{}\"",
                    clip(&word)
                ))
                .at(at))
            }
            _ => {
                c.at -= 1;
                return Err(c.error());
            }
        };
        if kind != OptionKind::Sysid && options.iter().any(|o| o.kind.group() == kind.group()) {
            return Err(SqlError::syntax("conflicting or redundant options").at(at));
        }
        options.push(RoleOption { kind, at });
    }
    Ok(options)
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

/// Whether the options set an attribute to anything (given at all).
fn sets(options: &[RoleOption], attr: fn(&OptionKind) -> bool) -> bool {
    options.iter().any(|o| attr(&o.kind))
}

fn sets_superuser(k: &OptionKind) -> bool {
    matches!(k, OptionKind::Superuser(_))
}
fn sets_replication(k: &OptionKind) -> bool {
    matches!(k, OptionKind::Replication(_))
}
fn sets_bypassrls(k: &OptionKind) -> bool {
    matches!(k, OptionKind::Bypassrls(_))
}
fn turns_on(options: &[RoleOption], attr: fn(&OptionKind) -> Option<bool>) -> bool {
    options.iter().any(|o| attr(&o.kind) == Some(true))
}

/// PostgreSQL 15's CreateRole checks: only a superuser makes a superuser, a
/// replication or a bypassrls role; otherwise CREATEROLE is needed.
fn may_create(actor: &RoleDef, options: &[RoleOption]) -> SqlResult<()> {
    if actor.superuser {
        return Ok(());
    }
    if turns_on(options, |k| match k {
        OptionKind::Superuser(v) => Some(*v),
        _ => None,
    }) {
        return Err(denied("must be superuser to create superusers"));
    }
    if turns_on(options, |k| match k {
        OptionKind::Replication(v) => Some(*v),
        _ => None,
    }) {
        return Err(denied("must be superuser to create replication users"));
    }
    if turns_on(options, |k| match k {
        OptionKind::Bypassrls(v) => Some(*v),
        _ => None,
    }) {
        return Err(denied("must be superuser to create bypassrls users"));
    }
    if !actor.createrole {
        return Err(denied("permission denied to create role"));
    }
    Ok(())
}

/// PostgreSQL 15's AlterRole checks: superuser, replication and bypassrls roles and
/// attributes are a superuser's; other roles a CREATEROLE role's; a role without
/// CREATEROLE may change only its own password.
fn may_alter(actor: &RoleDef, target: &RoleDef, options: &[RoleOption]) -> SqlResult<()> {
    if actor.superuser {
        return Ok(());
    }
    if target.superuser || sets(options, sets_superuser) {
        return Err(denied(
            "must be superuser to alter superuser roles or change superuser attribute",
        ));
    }
    if target.replication || sets(options, sets_replication) {
        return Err(denied(
            "must be superuser to alter replication roles or change replication attribute",
        ));
    }
    if sets(options, sets_bypassrls) {
        return Err(denied("must be superuser to change bypassrls attribute"));
    }
    if actor.createrole {
        return Ok(());
    }
    let only_password = !options.is_empty()
        && options
            .iter()
            .all(|o| matches!(o.kind, OptionKind::Password(_)));
    if !only_password || target.name != actor.name {
        return Err(denied("permission denied"));
    }
    Ok(())
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
    match stmt {
        RoleStatement::Create {
            name,
            options,
            user,
        } => {
            may_create(&me, &options)?;
            check_limits(&options)?;
            reserved_prefix(&name.name)?;
            if find(db, &name.name).is_some() {
                return Err(SqlError::new(
                    code::DUPLICATE_OBJECT,
                    format!("role \"{}\" already exists", name.name),
                ));
            }
            let mut role = RoleDef {
                login: user,
                ..RoleDef::new(&name.name)
            };
            prepare(&options, &mut out.notices)?.apply(&mut role);
            db.create_role(role)?;
            out.tag = "CREATE ROLE".into();
        }
        RoleStatement::Alter { role, options } => {
            check_limits(&options)?;
            let name = resolve(&role, actor);
            let Some(target) = find(db, name) else {
                return Err(no_such_role(name));
            };
            may_alter(&me, &target, &options)?;
            // The verifier is made before the catalog's lock is taken.
            let patch = prepare(&options, &mut out.notices)?;
            db.change_role(name, unstored(name), |mut r| {
                patch.apply(&mut r);
                Ok::<_, SqlError>(r)
            })?;
            out.tag = "ALTER ROLE".into();
        }
        RoleStatement::Rename { role, to } => {
            let name = resolve(&role, actor);
            let Some(target) = find(db, name) else {
                return Err(no_such_role(name));
            };
            if name == actor || name == BOOTSTRAP {
                return Err(SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    "session user cannot be renamed",
                ));
            }
            if target.superuser && !me.superuser {
                return Err(denied("must be superuser to rename superusers"));
            }
            if !me.superuser && !me.createrole {
                return Err(denied("permission denied to rename role"));
            }
            reserved_prefix(&to.name)?;
            if find(db, &to.name).is_some() {
                return Err(SqlError::new(
                    code::DUPLICATE_OBJECT,
                    format!("role \"{}\" already exists", to.name),
                ));
            }
            // A SCRAM verifier does not depend on the name, so it stays (PostgreSQL
            // clears only MD5 hashes, which are salted with it).
            db.change_role(name, None, |r| {
                Ok::<_, SqlError>(RoleDef { name: to.name, ..r })
            })?;
            out.tag = "ALTER ROLE".into();
        }
        RoleStatement::Drop { if_exists, names } => {
            if !me.superuser && !me.createrole {
                return Err(denied("permission denied to drop role"));
            }
            let doomed = droppable(db, &me, if_exists, &names, &mut out.notices)?;
            for name in doomed {
                // Refused while it owns or holds privileges on anything (checked under
                // the catalog's lock, so nothing comes to name it meanwhile).
                // (Each relation's kind is read first: the check runs under the catalog's
                // lock, where the database cannot be asked.)
                let words: std::collections::HashMap<String, &'static str> = db
                    .privileges()
                    .relations
                    .keys()
                    .map(|r| {
                        let word =
                            crate::privileges::rel_kind(db, r).map_or("relation", |k| k.word());
                        (r.clone(), word)
                    })
                    .collect();
                db.drop_role_checked::<SqlError>(&name, |p| {
                    let kinds = |rel: &str| words.get(rel).copied().unwrap_or("relation");
                    let deps = crate::privileges::dependents(p, &name, &kinds);
                    if deps.is_empty() {
                        return Ok(());
                    }
                    Err(SqlError::new(
                        code::DEPENDENT_OBJECTS_STILL_EXIST,
                        format!(
                            "role \"{name}\" cannot be dropped because some objects depend on it"
                        ),
                    )
                    .with_detail(deps.join("\n")))
                })?;
            }
            out.tag = "DROP ROLE".into();
        }
    }
    Ok(out)
}

/// PostgreSQL's checks of option values made before any lookup.
fn check_limits(options: &[RoleOption]) -> SqlResult<()> {
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
struct Patch(Vec<Set>);

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

fn prepare(options: &[RoleOption], notices: &mut Vec<String>) -> SqlResult<Patch> {
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
    fn apply(&self, role: &mut RoleDef) {
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

/// What a change starts from when the role is not stored: the bootstrap superuser's
/// definition (it is stored the first time it changes).
fn unstored(name: &str) -> Option<RoleDef> {
    (name == BOOTSTRAP).then(bootstrap_role)
}

/// The stored roles a DROP ROLE removes, all checked before any goes (PostgreSQL drops
/// them in one transaction: one error keeps them all).
fn droppable(
    db: &Database,
    actor: &RoleDef,
    if_exists: bool,
    names: &[Spec],
    notices: &mut Vec<String>,
) -> SqlResult<Vec<String>> {
    let mut doomed: Vec<String> = Vec::new();
    for spec in names {
        let name = match spec {
            Spec::Named(n) => &n.name,
            Spec::Current(..) => {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER,
                    "cannot use special role specifier in DROP ROLE",
                ))
            }
        };
        if name == "public" {
            return Err(SqlError::new(
                code::INVALID_PARAMETER,
                "cannot use special role specifier in DROP ROLE",
            ));
        }
        if find(db, name).is_none() || doomed.contains(name) {
            if if_exists {
                notices.push(format!("role \"{name}\" does not exist, skipping"));
                continue;
            }
            return Err(no_such_role(name));
        }
        if name == BOOTSTRAP || *name == actor.name {
            return Err(SqlError::new(
                code::OBJECT_IN_USE,
                "current user cannot be dropped",
            ));
        }
        if find(db, name).is_some_and(|r| r.superuser) && !actor.superuser {
            return Err(denied("must be superuser to drop superusers"));
        }
        doomed.push(name.clone());
    }
    Ok(doomed)
}
