//! The COPY statement as PostgreSQL 15 parses it, which sqlparser does not (it knows
//! neither `freeze on` nor the old option syntax pg_dump and pgbench write): the
//! table with its columns or the query, the direction, the client or a file, and the
//! options, old style (`WITH CSV HEADER DELIMITER ','`) or new (`WITH (FORMAT csv,
//! HEADER)`), checked as PostgreSQL's `ProcessCopyOptions` checks them, with its
//! messages and SQLSTATEs.

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan};

use crate::depth::Deep;
use crate::error::{clip, code, SqlError, SqlResult};
use crate::words::Words;

/// The format of COPY data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyFormat {
    /// PostgreSQL's text format: delimited fields, backslash escapes, `\N` for NULL.
    Text,
    /// Comma-separated values with quoting.
    Csv,
}

/// What `HEADER` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header {
    No,
    /// A header line: written by COPY TO, skipped by COPY FROM.
    Yes,
    /// COPY FROM checks the header's names against the columns.
    Match,
}

/// A column named in an option or a column list, and where.
pub type Named = (String, Location);

/// `FORCE_QUOTE`.
#[derive(Debug, Clone, PartialEq)]
pub enum ForceQuote {
    None,
    All,
    Columns(Vec<Named>),
}

/// The options, checked and with their defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyOptions {
    pub format: CopyFormat,
    /// FREEZE: accepted and ignored (Walden's rows need no freezing).
    pub freeze: bool,
    pub delimiter: u8,
    pub null: String,
    pub header: Header,
    /// CSV's quote and escape characters.
    pub quote: u8,
    pub escape: u8,
    pub force_quote: ForceQuote,
    pub force_not_null: Vec<Named>,
    pub force_null: Vec<Named>,
}

/// What a COPY reads from or writes to.
#[derive(Debug)]
pub enum CopySource {
    Table {
        name: String,
        at: Location,
        /// The column list (empty: every column).
        columns: Vec<Named>,
    },
    /// `COPY (query) TO ...`: the query as a statement.
    Query(Deep<ast::Statement>),
}

/// The other end: the client (`STDIN`/`STDOUT`, which PostgreSQL takes either way
/// round), a server-side file, or a program.
#[derive(Debug, Clone, PartialEq)]
pub enum Endpoint {
    Client,
    File(String),
    Program(String),
}

/// A parsed COPY statement.
#[derive(Debug)]
pub struct CopyStatement {
    pub source: CopySource,
    /// COPY ... FROM (else TO).
    pub from: bool,
    pub endpoint: Endpoint,
    pub options: CopyOptions,
}

/// An option as written, before it is checked.
struct RawOption {
    name: String,
    at: Location,
    arg: Arg,
}

/// An option's argument, as PostgreSQL's `copy_generic_opt_arg`: a word (lower-cased
/// unless quoted), a string, a number, `*`, a parenthesized list of names, or nothing.
#[derive(Debug, Clone, PartialEq)]
enum Arg {
    None,
    Word(String),
    Str(String),
    Number(String),
    Star,
    List(Vec<Named>),
}

/// Parses a statement that starts with COPY; `nesting` bounds the depth of its query.
pub(crate) fn parse(tokens: &[TokenWithSpan], nesting: usize) -> SqlResult<CopyStatement> {
    let mut w = Words::new(tokens);
    if !w.keyword("copy") {
        return Err(w.error());
    }
    let mut raw = Vec::new();
    if w.is_keyword("binary") {
        let at = w.location();
        w.next();
        raw.push(RawOption {
            name: "format".into(),
            at,
            arg: Arg::Word("binary".into()),
        });
    }
    let source = if w.peek() == Some(&Token::LParen) && raw.is_empty() {
        CopySource::Query(query(&mut w, nesting)?)
    } else {
        let (name, at) = w.relation_name()?;
        let columns = if w.peek() == Some(&Token::LParen) {
            w.name_list()?
        } else {
            Vec::new()
        };
        CopySource::Table { name, at, columns }
    };
    let from = match &source {
        CopySource::Query(_) if w.keyword("to") => false,
        CopySource::Query(_) => return Err(w.error()),
        CopySource::Table { .. } if w.keyword("from") => true,
        CopySource::Table { .. } if w.keyword("to") => false,
        CopySource::Table { .. } => return Err(w.error()),
    };
    let program = w.keyword("program");
    let endpoint = if !program && (w.keyword("stdin") || w.keyword("stdout")) {
        Endpoint::Client
    } else {
        let name = w.string()?;
        if program {
            Endpoint::Program(name)
        } else {
            Endpoint::File(name)
        }
    };
    if matches!(source, CopySource::Table { .. }) {
        let using = w.keyword("using");
        if w.is_keyword("delimiters") {
            let at = w.location();
            w.next();
            let d = w.string()?;
            raw.push(RawOption {
                name: "delimiter".into(),
                at,
                arg: Arg::Str(d),
            });
        } else if using {
            return Err(w.error());
        }
    }
    w.keyword("with");
    if w.peek() == Some(&Token::LParen) {
        generic_options(&mut w, &mut raw)?;
    } else {
        legacy_options(&mut w, &mut raw)?;
    }
    if from && w.is_keyword("where") {
        return Err(SqlError::unsupported("COPY FROM ... WHERE").at(w.location()));
    }
    if !w.at_end() {
        return Err(w.error());
    }
    let options = check_options(raw, from)?;
    Ok(CopyStatement {
        source,
        from,
        endpoint,
        options,
    })
}

/// `( query )`: the tokens up to the matching parenthesis, parsed as a query.
fn query(w: &mut Words, nesting: usize) -> SqlResult<Deep<ast::Statement>> {
    w.expect(&Token::LParen)?;
    let start = w.position();
    let mut depth = 0usize;
    loop {
        match w.peek() {
            None => return Err(w.error()),
            Some(Token::LParen) => depth += 1,
            Some(Token::RParen) if depth == 0 => break,
            Some(Token::RParen) => depth -= 1,
            Some(_) => {}
        }
        w.next();
    }
    let tokens = w.since(start);
    let end = w.location();
    w.expect(&Token::RParen)?;
    let dialect = PostgreSqlDialect {};
    let mut parser = Parser::new(&dialect)
        .with_recursion_limit(crate::depth::MAX_NESTING)
        .with_tokens_with_locations(tokens);
    let stmt = parser
        .parse_statement()
        .map_err(|e| crate::script::parse_error(e).at(end))?;
    let next = parser.peek_token();
    if next.token != Token::EOF {
        return Err(SqlError::syntax(format!(
            "syntax error at or near \"{}\"",
            clip(&next.token.to_string())
        ))
        .at(next.span.start));
    }
    match &stmt {
        ast::Statement::Query(_) => Ok(Deep::new(stmt, nesting)),
        ast::Statement::Insert(_) | ast::Statement::Update(_) | ast::Statement::Delete(_) => {
            Err(SqlError::unsupported("COPY of an INSERT, UPDATE or DELETE"))
        }
        _ => {
            let text = stmt.to_string();
            let first = text.split_whitespace().next().unwrap_or_default();
            Err(SqlError::syntax(format!(
                "syntax error at or near \"{}\"",
                clip(first)
            )))
        }
    }
}

/// `( name [arg] [, ...] )`.
fn generic_options(w: &mut Words, raw: &mut Vec<RawOption>) -> SqlResult<()> {
    w.expect(&Token::LParen)?;
    loop {
        let at = w.location();
        let (name, _) = w.name()?;
        let arg = match w.peek() {
            Some(Token::Comma | Token::RParen) | None => Arg::None,
            Some(Token::Word(word)) => {
                w.next();
                Arg::Word(if word.quote_style.is_some() {
                    word.value.clone()
                } else {
                    word.value.to_lowercase()
                })
            }
            Some(Token::SingleQuotedString(_) | Token::EscapedStringLiteral(_)) => {
                Arg::Str(w.string()?)
            }
            Some(Token::Number(n, _)) => {
                w.next();
                Arg::Number(n.clone())
            }
            Some(Token::Minus) => {
                w.next();
                match w.next() {
                    Some(Token::Number(n, _)) => Arg::Number(format!("-{n}")),
                    _ => return Err(w.error()),
                }
            }
            Some(Token::Mul) => {
                w.next();
                Arg::Star
            }
            Some(Token::LParen) => Arg::List(w.name_list()?),
            Some(_) => return Err(w.error()),
        };
        raw.push(RawOption { name, at, arg });
        if !w.token(&Token::Comma) {
            break;
        }
    }
    w.expect(&Token::RParen)
}

/// The old syntax: `BINARY`, `FREEZE`, `DELIMITER [AS] 'c'`, `NULL [AS] 's'`, `CSV`,
/// `HEADER`, `QUOTE [AS] 'c'`, `ESCAPE [AS] 'c'`, `FORCE QUOTE cols | *`, `FORCE NOT
/// NULL cols`, `FORCE NULL cols`, `ENCODING 's'`, in any order.
fn legacy_options(w: &mut Words, raw: &mut Vec<RawOption>) -> SqlResult<()> {
    let columns = |w: &mut Words| -> SqlResult<Vec<Named>> {
        let mut names = vec![w.name()?];
        while w.token(&Token::Comma) {
            names.push(w.name()?);
        }
        Ok(names)
    };
    loop {
        let at = w.location();
        let (name, arg) = if w.keyword("binary") {
            ("format", Arg::Word("binary".into()))
        } else if w.keyword("csv") {
            ("format", Arg::Word("csv".into()))
        } else if w.keyword("freeze") {
            ("freeze", Arg::None)
        } else if w.keyword("header") {
            ("header", Arg::None)
        } else if w.keyword("delimiter") {
            w.keyword("as");
            ("delimiter", Arg::Str(w.string()?))
        } else if w.keyword("null") {
            w.keyword("as");
            ("null", Arg::Str(w.string()?))
        } else if w.keyword("quote") {
            w.keyword("as");
            ("quote", Arg::Str(w.string()?))
        } else if w.keyword("escape") {
            w.keyword("as");
            ("escape", Arg::Str(w.string()?))
        } else if w.keyword("encoding") {
            ("encoding", Arg::Str(w.string()?))
        } else if w.keyword("force") {
            if w.keyword("quote") {
                if w.token(&Token::Mul) {
                    ("force_quote", Arg::Star)
                } else {
                    ("force_quote", Arg::List(columns(w)?))
                }
            } else if w.keyword("not") {
                if !w.keyword("null") {
                    return Err(w.error());
                }
                ("force_not_null", Arg::List(columns(w)?))
            } else if w.keyword("null") {
                ("force_null", Arg::List(columns(w)?))
            } else {
                return Err(w.error());
            }
        } else {
            return Ok(());
        };
        raw.push(RawOption {
            name: name.into(),
            at,
            arg,
        });
    }
}

/// An option's argument as a string (PostgreSQL's `defGetString`).
fn arg_string(o: &RawOption) -> SqlResult<String> {
    match &o.arg {
        Arg::Word(s) | Arg::Str(s) | Arg::Number(s) => Ok(s.clone()),
        Arg::None => Err(SqlError::syntax(format!("{} requires a parameter", o.name))),
        Arg::Star | Arg::List(_) => {
            Err(SqlError::syntax(format!("{} requires a parameter", o.name)))
        }
    }
}

/// PostgreSQL's `defGetBoolean`: nothing, 1, 0, true, false, on, off.
fn arg_bool(o: &RawOption) -> SqlResult<Option<bool>> {
    Ok(match &o.arg {
        Arg::None => Some(true),
        Arg::Number(n) if n == "1" => Some(true),
        Arg::Number(n) if n == "0" => Some(false),
        Arg::Word(s) | Arg::Str(s) => match s.to_lowercase().as_str() {
            "true" | "on" => Some(true),
            "false" | "off" => Some(false),
            _ => None,
        },
        _ => None,
    })
}

fn conflicting(at: Location) -> SqlError {
    SqlError::syntax("conflicting or redundant options").at(at)
}

fn not_supported(message: &str) -> SqlError {
    SqlError::new(code::FEATURE_NOT_SUPPORTED, message)
}

fn invalid(message: String) -> SqlError {
    SqlError::new(code::INVALID_PARAMETER, message)
}

/// The options as written, collected.
#[derive(Default)]
struct Given {
    format: Option<String>,
    freeze: Option<bool>,
    delimiter: Option<String>,
    null: Option<String>,
    header: Option<Header>,
    quote: Option<String>,
    escape: Option<String>,
    force_quote: Option<ForceQuote>,
    force_not_null: Option<Vec<Named>>,
    force_null: Option<Vec<Named>>,
    encoding: Option<String>,
}

/// Collects the options, each at most once (PostgreSQL's `ProcessCopyOptions`, first
/// loop).
fn collect(raw: Vec<RawOption>, from: bool) -> SqlResult<Given> {
    let mut g = Given::default();
    for o in raw {
        let at = o.at;
        match o.name.as_str() {
            "format" => {
                if g.format.is_some() {
                    return Err(conflicting(at));
                }
                let f = arg_string(&o)?;
                if !matches!(f.as_str(), "text" | "csv" | "binary") {
                    return Err(
                        invalid(format!("COPY format \"{}\" not recognized", clip(&f))).at(at),
                    );
                }
                g.format = Some(f);
            }
            "freeze" => {
                if g.freeze.is_some() {
                    return Err(conflicting(at));
                }
                let b = arg_bool(&o)?
                    .ok_or_else(|| SqlError::syntax("freeze requires a Boolean value"))?;
                g.freeze = Some(b);
            }
            "delimiter" | "null" | "quote" | "escape" => {
                let slot = match o.name.as_str() {
                    "delimiter" => &mut g.delimiter,
                    "null" => &mut g.null,
                    "quote" => &mut g.quote,
                    _ => &mut g.escape,
                };
                if slot.is_some() {
                    return Err(conflicting(at));
                }
                *slot = Some(arg_string(&o)?);
            }
            "header" => {
                if g.header.is_some() {
                    return Err(conflicting(at));
                }
                let match_word =
                    matches!(&o.arg, Arg::Word(s) | Arg::Str(s) if s.eq_ignore_ascii_case("match"));
                g.header = Some(match arg_bool(&o)? {
                    Some(true) => Header::Yes,
                    Some(false) => Header::No,
                    None if match_word && from => Header::Match,
                    None if match_word => {
                        return Err(SqlError::syntax(
                            "cannot use \"match\" with HEADER in COPY TO",
                        ))
                    }
                    None => {
                        return Err(SqlError::syntax(
                            "header requires a Boolean value or \"match\"",
                        ))
                    }
                });
            }
            "force_quote" => {
                if g.force_quote.is_some() {
                    return Err(conflicting(at));
                }
                g.force_quote = Some(match o.arg {
                    Arg::Star => ForceQuote::All,
                    Arg::List(l) => ForceQuote::Columns(l),
                    _ => return Err(list_required(&o.name, at)),
                });
            }
            "force_not_null" | "force_null" => {
                let slot = if o.name == "force_null" {
                    &mut g.force_null
                } else {
                    &mut g.force_not_null
                };
                if slot.is_some() {
                    return Err(conflicting(at));
                }
                match o.arg {
                    Arg::List(l) => *slot = Some(l),
                    _ => return Err(list_required(&o.name, at)),
                }
            }
            "encoding" => {
                if g.encoding.is_some() {
                    return Err(conflicting(at));
                }
                let e = arg_string(&o)?;
                check_encoding(&e).map_err(|err| err.at(at))?;
                g.encoding = Some(e);
            }
            other => {
                return Err(
                    SqlError::syntax(format!("option \"{}\" not recognized", clip(other))).at(at),
                )
            }
        }
    }
    Ok(g)
}

fn list_required(name: &str, at: Location) -> SqlError {
    invalid(format!(
        "argument to option \"{name}\" must be a list of column names"
    ))
    .at(at)
}

/// ENCODING: UTF-8 (under any of PostgreSQL's spellings) is what Walden reads and
/// writes; another encoding PostgreSQL knows is refused, an unknown name is 22023.
fn check_encoding(name: &str) -> SqlResult<()> {
    let key: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_lowercase();
    if matches!(key.as_str(), "utf8" | "unicode") {
        return Ok(());
    }
    const KNOWN: &[&str] = &[
        "sqlascii",
        "eucjp",
        "euccn",
        "euckr",
        "euctw",
        "eucjis2004",
        "muleinternal",
        "latin1",
        "latin2",
        "latin3",
        "latin4",
        "latin5",
        "latin6",
        "latin7",
        "latin8",
        "latin9",
        "latin10",
        "iso88591",
        "iso88592",
        "iso88593",
        "iso88594",
        "iso88595",
        "iso88596",
        "iso88597",
        "iso88598",
        "iso88599",
        "iso885910",
        "iso885913",
        "iso885914",
        "iso885915",
        "iso885916",
        "win866",
        "win874",
        "win1250",
        "win1251",
        "win1252",
        "win1253",
        "win1254",
        "win1255",
        "win1256",
        "win1257",
        "win1258",
        "koi8r",
        "koi8u",
        "sjis",
        "big5",
        "gbk",
        "uhc",
        "gb18030",
        "johab",
        "shiftjis2004",
        "windows1252",
        "windows1251",
        "windows1250",
    ];
    if KNOWN.contains(&key.as_str()) {
        return Err(SqlError::unsupported(format!(
            "COPY with ENCODING '{}' (Walden reads and writes COPY data as UTF-8)",
            clip(name)
        )));
    }
    Err(invalid(
        "argument to option \"encoding\" must be a valid encoding name".into(),
    ))
}

/// One byte of a one-character option, or PostgreSQL's error.
fn one_byte(s: &str, what: &str) -> SqlResult<u8> {
    match s.as_bytes() {
        [b] => Ok(*b),
        _ => Err(not_supported(&format!(
            "COPY {what} must be a single one-byte character"
        ))),
    }
}

/// Checks the options as PostgreSQL's `ProcessCopyOptions` does, in its order, and
/// fills in the defaults.
fn check_options(raw: Vec<RawOption>, from: bool) -> SqlResult<CopyOptions> {
    let g = collect(raw, from)?;
    let binary = g.format.as_deref() == Some("binary");
    let csv = g.format.as_deref() == Some("csv");
    if binary && g.delimiter.is_some() {
        return Err(SqlError::syntax("cannot specify DELIMITER in BINARY mode"));
    }
    if binary && g.null.is_some() {
        return Err(SqlError::syntax("cannot specify NULL in BINARY mode"));
    }
    let delimiter = g
        .delimiter
        .clone()
        .unwrap_or_else(|| if csv { ",".into() } else { "\t".into() });
    let null = g
        .null
        .clone()
        .unwrap_or_else(|| if csv { String::new() } else { "\\N".into() });
    let delim = one_byte(&delimiter, "delimiter")?;
    if delim == b'\r' || delim == b'\n' {
        return Err(invalid(
            "COPY delimiter cannot be newline or carriage return".into(),
        ));
    }
    if null.contains(['\r', '\n']) {
        return Err(invalid(
            "COPY null representation cannot use newline or carriage return".into(),
        ));
    }
    if !csv && b"\\.abcdefghijklmnopqrstuvwxyz0123456789".contains(&delim) {
        return Err(invalid(format!(
            "COPY delimiter cannot be \"{}\"",
            delim as char
        )));
    }
    if binary && matches!(g.header, Some(Header::Yes | Header::Match)) {
        return Err(not_supported("cannot specify HEADER in BINARY mode"));
    }
    if !csv && g.quote.is_some() {
        return Err(not_supported("COPY quote available only in CSV mode"));
    }
    let quote = if csv {
        one_byte(g.quote.as_deref().unwrap_or("\""), "quote")?
    } else {
        b'"'
    };
    if csv && delim == quote {
        return Err(invalid("COPY delimiter and quote must be different".into()));
    }
    if !csv && g.escape.is_some() {
        return Err(not_supported("COPY escape available only in CSV mode"));
    }
    let escape = match &g.escape {
        Some(e) if csv => one_byte(e, "escape")?,
        _ => quote,
    };
    if !csv && g.force_quote.is_some() {
        return Err(not_supported("COPY force quote available only in CSV mode"));
    }
    if g.force_quote.is_some() && from {
        return Err(not_supported(
            "COPY force quote only available using COPY TO",
        ));
    }
    if !csv && g.force_not_null.is_some() {
        return Err(not_supported(
            "COPY force not null available only in CSV mode",
        ));
    }
    if g.force_not_null.is_some() && !from {
        return Err(not_supported(
            "COPY force not null only available using COPY FROM",
        ));
    }
    if !csv && g.force_null.is_some() {
        return Err(not_supported("COPY force null available only in CSV mode"));
    }
    if g.force_null.is_some() && !from {
        return Err(not_supported(
            "COPY force null only available using COPY FROM",
        ));
    }
    if null.as_bytes().contains(&delim) {
        return Err(not_supported(
            "COPY delimiter must not appear in the NULL specification",
        ));
    }
    if csv && null.as_bytes().contains(&quote) {
        return Err(not_supported(
            "CSV quote character must not appear in the NULL specification",
        ));
    }
    if binary {
        return Err(SqlError::unsupported("COPY's binary format")
            .with_hint("Walden reads and writes COPY data in text and CSV formats."));
    }
    Ok(CopyOptions {
        format: if csv {
            CopyFormat::Csv
        } else {
            CopyFormat::Text
        },
        freeze: g.freeze.unwrap_or(false),
        delimiter: delim,
        null,
        header: g.header.unwrap_or(Header::No),
        quote,
        escape,
        force_quote: g.force_quote.unwrap_or(ForceQuote::None),
        force_not_null: g.force_not_null.unwrap_or_default(),
        force_null: g.force_null.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::tokenizer::Tokenizer;

    fn parsed(sql: &str) -> SqlResult<CopyStatement> {
        let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
            .tokenize_with_location()
            .expect("tokens");
        parse(&tokens, 10)
    }

    fn table_of(s: &CopyStatement) -> (String, Vec<String>) {
        match &s.source {
            CopySource::Table { name, columns, .. } => (
                name.clone(),
                columns.iter().map(|(c, _)| c.clone()).collect(),
            ),
            CopySource::Query(_) => panic!("a query"),
        }
    }

    /// The forms pgbench, pg_dump and psql users write.
    #[test]
    fn old_and_new_syntax_parse() {
        let s = parsed("copy pgbench_accounts from stdin with (freeze on)").unwrap();
        assert_eq!(table_of(&s).0, "pgbench_accounts");
        assert!(s.from && s.options.freeze);
        assert_eq!(s.endpoint, Endpoint::Client);
        assert_eq!(
            (
                s.options.format,
                s.options.delimiter,
                s.options.null.as_str()
            ),
            (CopyFormat::Text, b'\t', "\\N")
        );
        let s = parsed("COPY public.t (a, \"B\") FROM stdin;").unwrap_err();
        assert_eq!(s.message, "syntax error at or near \";\"");
        let s = parsed("COPY public.t (a, \"B\") FROM stdin").unwrap();
        assert_eq!(table_of(&s), ("t".into(), vec!["a".into(), "B".into()]));
        let s = parsed("copy t (a,b) from stdin with csv header").unwrap();
        assert_eq!(
            (s.options.format, s.options.header, s.options.delimiter),
            (CopyFormat::Csv, Header::Yes, b',')
        );
        let s = parsed("copy t from stdin delimiter ',' null as 'NUL' csv header quote as '''' force not null b").unwrap();
        assert_eq!((s.options.quote, s.options.escape), (b'\'', b'\''));
        assert_eq!(s.options.null, "NUL");
        assert_eq!(s.options.force_not_null.len(), 1);
        let s = parsed("copy t to stdout (format csv, force_quote *, header true)").unwrap();
        assert!(!s.from);
        assert_eq!(s.options.force_quote, ForceQuote::All);
        let s =
            parsed("copy t from stdin (format \"csv\", delimiter E'\\t', escape '\\')").unwrap();
        assert_eq!((s.options.delimiter, s.options.escape), (b'\t', b'\\'));
        let s = parsed("copy t using delimiters '|' from stdin").unwrap_err();
        assert_eq!(s.code, "42601");
        let s = parsed("copy t from stdin using delimiters '|'").unwrap();
        assert_eq!(s.options.delimiter, b'|');
        let s = parsed("copy (select 1 as x) to stdout with csv").unwrap();
        assert!(matches!(s.source, CopySource::Query(_)));
        let s = parsed("copy t to '/tmp/x'").unwrap();
        assert_eq!(s.endpoint, Endpoint::File("/tmp/x".into()));
        let s = parsed("copy t from program 'ls'").unwrap();
        assert_eq!(s.endpoint, Endpoint::Program("ls".into()));
    }

    /// PostgreSQL 15's errors for bad options (checked against it).
    #[test]
    fn bad_options_get_postgres_errors() {
        let cases = [
            ("copy t from stdin (format xml)", "22023", "COPY format \"xml\" not recognized"),
            ("copy t from stdin (delimiter ',,')", "0A000", "COPY delimiter must be a single one-byte character"),
            ("copy t from stdin (delimiter '\\')", "22023", "COPY delimiter cannot be \"\\\""),
            ("copy t from stdin (quote '\"')", "0A000", "COPY quote available only in CSV mode"),
            ("copy t from stdin (format csv, delimiter ',', quote ',')", "22023", "COPY delimiter and quote must be different"),
            ("copy t from stdin (force_quote (a))", "0A000", "COPY force quote available only in CSV mode"),
            ("copy t to stdout (force_not_null (a))", "0A000", "COPY force not null available only in CSV mode"),
            ("copy t from stdin (format csv, header match, freeze off, header)", "42601", "conflicting or redundant options"),
            ("copy t from stdin (freeze maybe)", "42601", "freeze requires a Boolean value"),
            ("copy t from stdin (bogus)", "42601", "option \"bogus\" not recognized"),
            ("copy t from stdin (format csv, delimiter E'\\n')", "22023", "COPY delimiter cannot be newline or carriage return"),
            ("copy t from stdin (format csv, null ',')", "0A000", "COPY delimiter must not appear in the NULL specification"),
            ("copy t from stdin (encoding 'bogus')", "22023", "argument to option \"encoding\" must be a valid encoding name"),
            ("copy t from stdin (escape 'x')", "0A000", "COPY escape available only in CSV mode"),
            ("copy t from stdin (format csv, escape 'xy')", "0A000", "COPY escape must be a single one-byte character"),
            ("copy t from stdin (format csv, quote '')", "0A000", "COPY quote must be a single one-byte character"),
            ("copy t from stdin (delimiter 'a')", "22023", "COPY delimiter cannot be \"a\""),
            ("copy t from stdin (delimiter 'é')", "0A000", "COPY delimiter must be a single one-byte character"),
            ("copy t to stdout (format csv, header match)", "42601", "cannot use \"match\" with HEADER in COPY TO"),
            ("copy t from stdin (format 'CSV')", "22023", "COPY format \"CSV\" not recognized"),
            ("copy t from stdin (format csv, format text)", "42601", "conflicting or redundant options"),
            ("copy t from stdin (format csv, null E'\\r')", "22023", "COPY null representation cannot use newline or carriage return"),
            ("copy t from stdin (format csv, default 'x')", "42601", "option \"default\" not recognized"),
            ("copy t from stdin (format csv, force_quote (a))", "0A000", "COPY force quote only available using COPY TO"),
            ("copy t from stdin (format csv, null '\"')", "0A000", "CSV quote character must not appear in the NULL specification"),
            ("copy t from stdin (format binary)", "0A000", "COPY's binary format is not supported"),
            ("copy binary t to stdout", "0A000", "COPY's binary format is not supported"),
            ("copy t from stdin (format binary, delimiter ',')", "42601", "cannot specify DELIMITER in BINARY mode"),
            ("copy t to stdout oids", "42601", "syntax error at or near \"oids\""),
            ("copy (select 1) from stdin", "42601", "syntax error at or near \"from\""),
            ("copy t from stdin where a > 1", "0A000", "COPY FROM ... WHERE is not supported"),
            ("copy t from stdin (encoding 'latin1')", "0A000", "COPY with ENCODING 'latin1' (Walden reads and writes COPY data as UTF-8) is not supported"),
            ("copy t", "42601", "syntax error at end of input"),
        ];
        let mut wrong = Vec::new();
        for (sql, code, message) in cases {
            match parsed(sql) {
                Err(e) if (e.code, e.message.as_str()) == (code, message) => {}
                other => wrong.push(format!("{sql}: {:?}", other.map(|_| "parsed"))),
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn encodings_spelled_as_postgres_spells_utf8_are_taken() {
        for name in ["UTF8", "utf-8", "Unicode"] {
            let sql = format!("copy t from stdin (encoding '{name}')");
            assert!(parsed(&sql).is_ok(), "{name}");
        }
    }
}
