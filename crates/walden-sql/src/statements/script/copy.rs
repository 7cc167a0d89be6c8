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

use super::copy_options::{check_options, generic_options, legacy_options, Arg, RawOption};
use crate::depth::Deep;
use crate::error::{clip, SqlError, SqlResult};
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
