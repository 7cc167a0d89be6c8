//! Role statements parsed from their tokens: `CREATE`/`ALTER`/`DROP ROLE | USER | GROUP`
//! with PostgreSQL's errors (reserved names, conflicting options, names cut to 63 bytes).

use sqlparser::tokenizer::{Location, Token, TokenWithSpan};

use super::{Name, OptionKind, RoleOption, RoleStatement, Spec, NAME_BYTES};
use crate::error::{clip, code, SqlError, SqlResult};

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

pub(super) fn reserved_name(name: &str) -> SqlError {
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
