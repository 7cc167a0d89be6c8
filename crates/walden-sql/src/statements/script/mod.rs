//! Splitting a script into statements and parsing each: the PostgreSQL syntax sqlparser
//! lacks (`CHECKPOINT`, `CREATE TABLE ... USING kind`; role statements go to `roles.rs`)
//! is handled here, unsupported
//! statements are named, and parser errors become PostgreSQL-style syntax errors.

pub(crate) mod copy;
mod copy_options;
mod rewrite;

use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use crate::depth::{self, Deep};
use crate::error::{clip, SqlError, SqlResult};

/// One parsed statement.
#[derive(Debug)]
pub enum Parsed {
    Checkpoint,
    /// `REINDEX INDEX name` (table false) or `REINDEX TABLE name`.
    Reindex {
        table: bool,
        name: String,
    },
    Statement {
        /// The syntax tree, which may be as deep as the statement nests.
        stmt: Deep<Statement>,
        /// `USING kind` of a CREATE TABLE, with where it was written.
        table_kind: Option<(String, Location)>,
    },
    /// VACUUM or ANALYZE, which sqlparser parses only in other dialects' forms.
    Maintenance(crate::vacuum::Maintenance),
    /// COPY, with PostgreSQL's options (`crate::copy`).
    Copy(Box<copy::CopyStatement>),
    /// A prepared query with its values, run from its cached plan
    /// (`crate::prepared::PreparedRun`).
    Prepared(crate::prepared::PreparedRun),
    /// CREATE, ALTER or DROP ROLE (USER, GROUP), and the notices parsing it gave.
    Role(crate::roles::RoleStatement, Vec<String>),
    /// CREATE, ALTER or DROP SEQUENCE.
    Sequence(crate::ddl::sequence::SequenceStatement),
    Grant(crate::privileges::grant::GrantStatement),
    /// FETCH, MOVE or CLOSE (a cursor's).
    Cursor(crate::cursors::CursorStatement),
}

impl Parsed {
    /// The stack that binding and running the statement needs.
    pub fn stack_bytes(&self) -> usize {
        match self {
            Parsed::Checkpoint
            | Parsed::Reindex { .. }
            | Parsed::Maintenance(_)
            | Parsed::Role(..)
            | Parsed::Sequence(_)
            | Parsed::Grant(_)
            | Parsed::Cursor(_) => depth::stack_bytes(0),
            Parsed::Statement { stmt, .. } => stmt.stack_bytes(),
            Parsed::Copy(c) => match &c.source {
                copy::CopySource::Query(q) => q.stack_bytes(),
                copy::CopySource::Table { .. } => depth::stack_bytes(0),
            },
            Parsed::Prepared(run) => run.stack_bytes(),
        }
    }
}

/// One statement of a script: its text, where it starts, and its parse.
#[derive(Debug)]
pub struct ScriptStatement {
    pub text: String,
    /// Character offset of the statement's first character in the script.
    pub start_char: usize,
    pub parsed: SqlResult<Parsed>,
    /// For a `COPY ... FROM STDIN` of a script split by [`parse_psql_script`]: the bytes
    /// of the script that are its data (through the `\.` line, if there is one).
    pub copy_data: Option<std::ops::Range<usize>>,
}

/// Maps (line, column) locations to character and byte offsets in a script.
pub struct LineIndex {
    /// Each line's first character's offset, in characters and in bytes.
    line_starts: Vec<usize>,
    line_byte_starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(script: &str) -> LineIndex {
        let mut line_starts = vec![0];
        let mut line_byte_starts = vec![0];
        for (i, (at, c)) in script.char_indices().enumerate() {
            if c == '\n' {
                line_starts.push(i + 1);
                line_byte_starts.push(at + 1);
            }
        }
        LineIndex {
            line_starts,
            line_byte_starts,
        }
    }

    /// 0-based character offset of a 1-based location.
    pub fn offset(&self, loc: Location) -> usize {
        let line = (loc.line as usize).clamp(1, self.line_starts.len());
        self.line_starts[line - 1] + (loc.column as usize).saturating_sub(1)
    }

    /// Byte offset in `script` (the text the index was made of) of a 1-based location,
    /// at most the script's length.
    pub fn byte_offset(&self, script: &str, loc: Location) -> usize {
        let line = (loc.line as usize).clamp(1, self.line_byte_starts.len());
        let start = self.line_byte_starts[line - 1].min(script.len());
        let skip = (loc.column as usize).saturating_sub(1);
        match script[start..].char_indices().nth(skip) {
            Some((at, _)) => start + at,
            None => script.len(),
        }
    }

    /// The 1-based line holding byte `at`.
    fn line_of_byte(&self, at: usize) -> u64 {
        self.line_byte_starts.partition_point(|&s| s <= at) as u64
    }
}

fn is_trivia(t: &Token) -> bool {
    matches!(t, Token::Whitespace(_))
}

fn keyword(t: &Token) -> Option<Keyword> {
    match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.keyword),
        _ => None,
    }
}

fn word_upper(t: &Token) -> String {
    match t {
        Token::Word(w) => w.value.to_uppercase(),
        other => other.to_string(),
    }
}

/// Splits and parses a script. A tokenizer error (say, an unterminated string) fails the
/// whole script, as no statement boundary after it can be trusted.
pub fn parse_script(script: &str) -> SqlResult<Vec<ScriptStatement>> {
    split_script(script, false)
}

/// As [`parse_script`], with COPY data in the script as psql reads a script file: a
/// `COPY ... FROM STDIN` statement's data is the lines after the one it ends on, up to
/// a line `\.` (kept with the data) or the script's end, and the script goes on after
/// them (`ScriptStatement::copy_data`).
pub fn parse_psql_script(script: &str) -> SqlResult<Vec<ScriptStatement>> {
    split_script(script, true)
}

fn split_script(script: &str, inline_copy: bool) -> SqlResult<Vec<ScriptStatement>> {
    // PostgreSQL's text cannot hold a NUL, nor can a statement sent to it.
    if script.contains('\0') {
        return Err(crate::error::nul_in_text());
    }
    let index = LineIndex::new(script);
    let mut out = Vec::new();
    // The part of the script still to split starts at a line's start.
    let mut from = 0;
    loop {
        // With COPY data about, a part ends at a line `\.`: any data after the statements
        // before it ends there (and is then not tokenized again), and no data before it
        // (the tokens of a large COPY block are many).
        let mut end = if inline_copy {
            marker_line_end(script, from)
        } else {
            script.len()
        };
        loop {
            match split_part(script, &index, from, end, inline_copy, &mut out)? {
                Part::Done => return Ok(out),
                Part::Resume(at) => {
                    from = at;
                    break;
                }
                // A tokenizer error in a part cut short at a `\.` line may be that cut
                // (a string holding such a line): the part goes on to the next one.
                Part::Longer => end = marker_line_end(script, end),
            }
        }
    }
}

/// Where the script after byte `from` ends up to (and with) its first line that is
/// `\.` alone; the script's end without one.
fn marker_line_end(script: &str, from: usize) -> usize {
    let mut at = from;
    while at < script.len() {
        let line_end = script[at..].find('\n').map_or(script.len(), |i| at + i + 1);
        let line = script[at..line_end].trim_end_matches(['\n', '\r']);
        if line == "\\." {
            return line_end;
        }
        at = line_end;
    }
    script.len()
}

/// What splitting a part of the script found.
enum Part {
    /// The script is split.
    Done,
    /// A COPY's data ended at this byte: splitting goes on there.
    Resume(usize),
    /// A tokenizer error before the part's end, which a longer part may not have.
    Longer,
}

/// Splits the statements of `script[from..end]` into `out`, stopping after a COPY FROM
/// STDIN (with `inline_copy`) to take its data.
fn split_part(
    script: &str,
    index: &LineIndex,
    from: usize,
    end: usize,
    inline_copy: bool,
    out: &mut Vec<ScriptStatement>,
) -> SqlResult<Part> {
    // What the part may cost to tokenize and parse is bounded before it is tokenized.
    crate::budget::check(&script[from..end], inline_copy)?;
    let dialect = PostgreSqlDialect {};
    let first_line = index.line_of_byte(from);
    // About a token per four bytes of SQL (reserved up front: grown a token at a time,
    // the buffer's copies cost a tenth of parsing a short statement).
    let mut tokens = Vec::with_capacity(((end - from) / 4).min(1 << 16) + 8);
    let tokenized =
        Tokenizer::new(&dialect, &script[from..end]).tokenize_with_location_into_buf(&mut tokens);
    // Locations in the whole script (the part starts at a line's start).
    for t in &mut tokens {
        t.span.start.line += first_line - 1;
        t.span.end.line += first_line - 1;
    }
    let mut current: Vec<TokenWithSpan> = Vec::new();
    let mut data_from: Option<usize> = None;
    for t in tokens {
        if let Some(data) = data_from {
            if index.byte_offset(script, t.span.start) >= data {
                break;
            }
        }
        if t.token != Token::SemiColon {
            current.push(t);
            continue;
        }
        let Some(s) = statement_of(
            script,
            index,
            std::mem::take(&mut current),
            Some(t.span.start),
        ) else {
            continue;
        };
        let copies_in = inline_copy && data_from.is_none() && copies_from_client(&s);
        out.push(s);
        if copies_in {
            // The data starts on the next line.
            let semicolon_end = index.byte_offset(script, t.span.end);
            data_from = Some(
                script[semicolon_end..]
                    .find('\n')
                    .map_or(script.len(), |i| semicolon_end + i + 1),
            );
        }
    }
    if let Some(data) = data_from {
        if let Some(s) = statement_of(script, index, current, None) {
            out.push(s);
        }
        let copy_end = marker_line_end(script, data);
        // The COPY is the last statement with data, before any rest of its line.
        if let Some(s) = out.iter_mut().rev().find(|s| copies_from_client(s)) {
            s.copy_data = Some(data..copy_end);
        }
        return Ok(if copy_end >= script.len() {
            Part::Done
        } else {
            Part::Resume(copy_end)
        });
    }
    if let Err(e) = tokenized {
        if end < script.len() {
            return Ok(Part::Longer);
        }
        let mut location = e.location;
        location.line += first_line - 1;
        // sqlparser refuses an escape spelling a NUL as if the string were
        // unterminated; PostgreSQL names the NUL.
        if escapes_nul(script.chars().skip(index.offset(location))) {
            return Err(crate::error::nul_in_text());
        }
        return Err(SqlError::syntax(e.message.clone()).at(location));
    }
    if let Some(s) = statement_of(script, index, current, None) {
        out.push(s);
    }
    Ok(if end >= script.len() {
        Part::Done
    } else {
        Part::Resume(end)
    })
}

/// True for a parsed `COPY ... FROM STDIN`.
fn copies_from_client(s: &ScriptStatement) -> bool {
    matches!(&s.parsed, Ok(Parsed::Copy(c))
        if c.from && c.endpoint == copy::Endpoint::Client)
}

/// The statement made of `toks` (None if they are only white space and comments),
/// ending at `end` (its semicolon) or after its last token.
fn statement_of(
    script: &str,
    index: &LineIndex,
    toks: Vec<TokenWithSpan>,
    end: Option<Location>,
) -> Option<ScriptStatement> {
    let first = toks.iter().find(|t| !is_trivia(&t.token))?;
    let start_char = index.offset(first.span.start);
    let start_byte = index.byte_offset(script, first.span.start);
    let last = toks
        .iter()
        .rev()
        .find(|t| !is_trivia(&t.token))
        .map(|t| t.span.end);
    let end_byte = match (last, end) {
        (Some(l), _) | (None, Some(l)) => index.byte_offset(script, l),
        (None, None) => script.len(),
    }
    .max(start_byte);
    let text = script[start_byte..end_byte].to_string();
    let nesting = depth::nesting_bound(toks.iter().map(|t| &t.token));
    let parsed = if nesting > depth::MAX_NESTING {
        Err(depth::too_complex())
    } else {
        // The parser recurses on its own grown stack, but the trees it drops on an
        // error may be as deep as the statement nests.
        depth::with_stack(depth::stack_bytes(nesting), || parse_one(toks, nesting))
    };
    Some(ScriptStatement {
        text,
        start_char,
        parsed,
        copy_data: None,
    })
}

/// True if `literal`, the text from an `E'...'` string on, spells a NUL with an escape
/// (`\0`, `\000`, `\x00`, `\u0000`, `\U00000000`) before its closing quote.
fn escapes_nul(literal: impl Iterator<Item = char>) -> bool {
    let mut chars = literal.skip_while(|&c| c != '\'').skip(1).peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' if chars.peek() == Some(&'\'') => {
                chars.next();
            }
            '\'' => return false,
            '\\' => {
                let (radix, max_digits) = match chars.peek() {
                    Some('x') => (16, 2),
                    Some('u') => (16, 4),
                    Some('U') => (16, 8),
                    Some(d) if d.is_digit(8) => (8, 3),
                    _ => {
                        chars.next();
                        continue;
                    }
                };
                if radix == 16 {
                    chars.next();
                }
                let mut digits = 0;
                let mut value = 0u32;
                while digits < max_digits {
                    match chars.peek().and_then(|d| d.to_digit(radix)) {
                        Some(d) => {
                            value = value.saturating_mul(radix).saturating_add(d);
                            digits += 1;
                            chars.next();
                        }
                        None => break,
                    }
                }
                if digits > 0 && value == 0 {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// The statement's leading words as PostgreSQL names the command ("CREATE TRIGGER").
fn command_name(words: &[&Token]) -> String {
    let mut names: Vec<String> = Vec::new();
    for t in words.iter().take(6) {
        let w = word_upper(t);
        if names.is_empty() {
            names.push(w.clone());
            if !matches!(
                w.as_str(),
                "CREATE" | "ALTER" | "DROP" | "COMMENT" | "REFRESH"
            ) {
                break;
            }
            continue;
        }
        match w.as_str() {
            "OR" | "REPLACE" | "UNIQUE" | "GLOBAL" | "LOCAL" | "UNLOGGED" | "CONSTRAINT"
            | "RECURSIVE" | "TRUSTED" | "PROCEDURAL" => continue,
            "TEMP" | "TEMPORARY" | "MATERIALIZED" | "FOREIGN" => {
                names.push(if w == "TEMP" { "TEMPORARY".into() } else { w });
                continue;
            }
            _ => {
                names.push(w);
                break;
            }
        }
    }
    names.join(" ")
}

fn parse_one(mut toks: Vec<TokenWithSpan>, nesting: usize) -> SqlResult<Parsed> {
    let words: Vec<&Token> = toks
        .iter()
        .map(|t| &t.token)
        .filter(|t| !is_trivia(t))
        .collect();
    let first_loc = toks
        .iter()
        .find(|t| !is_trivia(&t.token))
        .map(|t| t.span.start)
        .unwrap_or(Location { line: 1, column: 1 });
    let name = command_name(&words);
    if !is_supported(&name) {
        return Err(not_supported(&words, &name, first_loc));
    }
    if let Some(parsed) = parse_by_hand(&name, &words, &toks, nesting) {
        return parsed;
    }
    let table_kind = if name == "CREATE TABLE" {
        take_using(&mut toks)?
    } else {
        None
    };
    if matches!(name.as_str(), "CREATE TABLE" | "ALTER TABLE") {
        crate::sequences::options::canonical_identity_options(&mut toks)?;
    }
    if name == "TABLE" {
        rewrite::table_as_select(&mut toks);
    }
    rewrite::join_using_aliases(&mut toks);
    let stmt = parse_statement(toks, first_loc)?;
    Ok(Parsed::Statement {
        stmt: Deep::new(stmt, nesting),
        table_kind,
    })
}

/// Whether a statement of this command (`command_name`) is one Walden runs.
fn is_supported(name: &str) -> bool {
    matches!(
        name,
        "SELECT"
            | "INSERT"
            | "UPDATE"
            | "DELETE"
            | "CREATE TABLE"
            | "DROP TABLE"
            | "CREATE INDEX"
            | "DROP INDEX"
            | "CREATE VIEW"
            | "DROP VIEW"
            | "ALTER TABLE"
            | "REINDEX"
            | "EXPLAIN"
            | "PREPARE"
            | "EXECUTE"
            | "DEALLOCATE"
            | "TRUNCATE"
            | "BEGIN"
            | "START"
            | "COMMIT"
            | "END"
            | "ROLLBACK"
            | "ABORT"
            | "SAVEPOINT"
            | "RELEASE"
            | "LOCK"
            | "VACUUM"
            | "ANALYZE"
            | "ANALYSE"
            | "CHECKPOINT"
            | "SET"
            | "RESET"
            | "SHOW"
            | "COPY"
            | "("
            | "WITH"
            | "VALUES"
            | "TABLE"
            | "DECLARE"
    ) || crate::roles::is_role_command(name)
        || crate::cursors::is_cursor_command(name)
        || crate::ddl::sequence::is_sequence_command(name)
        || crate::privileges::grant::is_grant_command(name)
}

/// The error for a command Walden does not run: an unknown first word is a syntax
/// error, as in PostgreSQL; a known command Walden lacks is named.
fn not_supported(words: &[&Token], name: &str, first_loc: Location) -> SqlError {
    let known =
        matches!(words.first().and_then(|t| keyword(t)), Some(k) if k != Keyword::NoKeyword);
    if known {
        SqlError::unsupported(name).at(first_loc)
    } else {
        SqlError::syntax(format!(
            "syntax error at or near \"{}\"",
            clip(&words.first().map(|t| t.to_string()).unwrap_or_default())
        ))
        .at(first_loc)
    }
}

/// The statements Walden parses itself (sqlparser does not know them, or not as
/// PostgreSQL has them); None for those sqlparser parses.
fn parse_by_hand(
    name: &str,
    words: &[&Token],
    toks: &[TokenWithSpan],
    nesting: usize,
) -> Option<SqlResult<Parsed>> {
    if name == "CHECKPOINT" {
        if words.len() > 1 {
            return Some(Err(SqlError::syntax(format!(
                "syntax error at or near \"{}\"",
                clip(&words[1].to_string())
            ))));
        }
        return Some(Ok(Parsed::Checkpoint));
    }
    if name == "REINDEX" {
        return Some(parse_reindex(words));
    }
    if crate::cursors::is_cursor_command(name) {
        return Some(crate::cursors::parse(toks).map(Parsed::Cursor));
    }
    if name == "COPY" {
        return Some(copy::parse(toks, nesting).map(|c| Parsed::Copy(Box::new(c))));
    }
    if matches!(name, "VACUUM" | "ANALYZE" | "ANALYSE") {
        return Some(crate::vacuum::parse(toks).map(Parsed::Maintenance));
    }
    if crate::ddl::sequence::is_sequence_command(name)
        || (name == "ALTER TABLE" && crate::ddl::sequence::is_alter_table_here(words))
    {
        return Some(crate::ddl::sequence::parse(toks).map(Parsed::Sequence));
    }
    if crate::privileges::grant::is_grant_command(name) {
        return Some(crate::privileges::grant::parse(toks).map(Parsed::Grant));
    }
    if crate::roles::is_role_command(name) {
        let mut notices = Vec::new();
        return Some(crate::roles::parse(toks, &mut notices).map(|s| Parsed::Role(s, notices)));
    }
    None
}

/// One statement parsed by sqlparser from its tokens; nothing may follow it.
fn parse_statement(toks: Vec<TokenWithSpan>, first_loc: Location) -> SqlResult<Statement> {
    let dialect = PostgreSqlDialect {};
    // An error at the end of the input points just after the last token.
    let end_loc = toks
        .iter()
        .rev()
        .find(|t| !is_trivia(&t.token))
        .map(|t| t.span.end)
        .unwrap_or(first_loc);
    // Nesting is bounded by the tokens already (and the parser grows its own stack), so
    // sqlparser's default limit of 50 levels need not refuse anything below it.
    let mut parser = Parser::new(&dialect)
        .with_recursion_limit(depth::MAX_NESTING)
        .with_tokens_with_locations(toks);
    let stmt = parser
        .parse_statement()
        .map_err(|e| parse_error(e).at(end_loc))?;
    let next = parser.peek_token();
    if next.token != Token::EOF {
        return Err(SqlError::syntax(format!(
            "syntax error at or near \"{}\"",
            clip(&next.token.to_string())
        ))
        .at(next.span.start));
    }
    Ok(stmt)
}

/// `REINDEX { INDEX | TABLE } name`, which sqlparser does not know.
fn parse_reindex(words: &[&Token]) -> SqlResult<Parsed> {
    let at = |i: usize| words.get(i).map(|t| t.to_string()).unwrap_or_default();
    let table = match word_upper_opt(words.get(1)).as_deref() {
        Some("INDEX") => false,
        Some("TABLE") => true,
        Some("SCHEMA" | "DATABASE" | "SYSTEM") => {
            return Err(SqlError::unsupported(format!(
                "REINDEX {} (name an index or a table)",
                word_upper_opt(words.get(1)).unwrap_or_default()
            )))
        }
        _ => {
            return Err(SqlError::syntax(format!(
                "syntax error at or near \"{}\"",
                clip(&at(1))
            )))
        }
    };
    let name = match words.get(2) {
        Some(Token::Word(w)) if words.len() == 3 => {
            if w.quote_style.is_some() {
                w.value.clone()
            } else {
                w.value.to_lowercase()
            }
        }
        _ => {
            let i = if words.len() < 3 { 2 } else { 3 };
            return Err(SqlError::syntax(format!(
                "syntax error at or near \"{}\"",
                clip(&at(i))
            )));
        }
    };
    Ok(Parsed::Reindex { table, name })
}

fn word_upper_opt(t: Option<&&Token>) -> Option<String> {
    t.map(|t| word_upper(t))
}

/// Removes `USING kind` from a CREATE TABLE (before AS or at the end), which sqlparser's
/// PostgreSQL dialect does not know.
fn take_using(toks: &mut Vec<TokenWithSpan>) -> SqlResult<Option<(String, Location)>> {
    let mut depth = 0i32;
    for i in 0..toks.len() {
        match &toks[i].token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            t if depth == 0 && keyword(t) == Some(Keyword::AS) => return Ok(None),
            t if depth == 0 && keyword(t) == Some(Keyword::USING) => {
                let at = toks[i].span.start;
                let j = (i + 1..toks.len()).find(|&j| !is_trivia(&toks[j].token));
                let Some(j) = j else {
                    return Err(SqlError::syntax("syntax error at end of input").at(at));
                };
                let kind = match &toks[j].token {
                    Token::Word(w) if w.quote_style.is_some() => w.value.clone(),
                    Token::Word(w) => w.value.to_lowercase(),
                    other => {
                        return Err(SqlError::syntax(format!(
                            "syntax error at or near \"{}\"",
                            clip(&other.to_string())
                        ))
                        .at(toks[j].span.start))
                    }
                };
                let kind_at = toks[j].span.start;
                toks.drain(i..=j);
                return Ok(Some((kind, kind_at)));
            }
            _ => {}
        }
    }
    Ok(None)
}

/// sqlparser's messages end in "at Line: l, Column: c"; PostgreSQL says "syntax error at
/// or near ..." with a position.
pub(crate) fn parse_error(e: ParserError) -> SqlError {
    let msg = match &e {
        ParserError::ParserError(m) | ParserError::TokenizerError(m) => m.clone(),
        ParserError::RecursionLimitExceeded => return depth::too_complex(),
    };
    let (body, loc) = match msg.rsplit_once(" at Line: ") {
        Some((body, rest)) => {
            let mut nums = rest
                .split(", Column: ")
                .map(|x| x.trim().parse::<u64>().ok());
            match (nums.next().flatten(), nums.next().flatten()) {
                (Some(line), Some(column)) => (body.to_string(), Some(Location { line, column })),
                _ => (msg.clone(), None),
            }
        }
        None => (msg.clone(), None),
    };
    let found = body.split_once(", found: ").map(|(expected, found)| {
        (
            expected.trim_start_matches("Expected: ").to_string(),
            found.to_string(),
        )
    });
    let err = match found {
        Some((expected, found)) if found == "EOF" => {
            SqlError::syntax("syntax error at end of input")
                .with_hint(format!("expected {expected}"))
        }
        Some((expected, found)) => {
            SqlError::syntax(format!("syntax error at or near \"{}\"", clip(&found)))
                .with_hint(format!("expected {expected}"))
        }
        None => SqlError::syntax(format!("syntax error: {body}")),
    };
    match loc {
        Some(l) => err.at(l),
        None => err,
    }
}
