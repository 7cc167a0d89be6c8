//! VACUUM and ANALYZE as PostgreSQL writes them, which sqlparser does not parse (it
//! knows Redshift's VACUUM and one table per ANALYZE): `VACUUM [FULL] [FREEZE]
//! [VERBOSE] [ANALYZE] t1, t2 (col, …)`, the parenthesized option list of either, and
//! several tables at once (`pgbench -i` sends `vacuum analyze pgbench_branches`). VACUUM
//! commits on its own in the engine, so it is refused inside a transaction block; an
//! ANALYZE alone runs in the statement's transaction.

use sqlparser::tokenizer::{Location, Token, TokenWithSpan};

use crate::error::{clip, code, SqlError, SqlResult};
use crate::statement::{Ctx, Output};
use crate::words::Words;

/// A VACUUM or ANALYZE statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Maintenance {
    /// VACUUM (else ANALYZE alone).
    pub vacuum: bool,
    /// ANALYZE, alone or as VACUUM's option.
    pub analyze: bool,
    /// VERBOSE: VACUUM says what it did for each table (INFO notices).
    pub verbose: bool,
    /// The tables named, with their column lists (empty: every table).
    pub tables: Vec<Target>,
}

/// One table a VACUUM or ANALYZE names.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub name: String,
    pub at: Location,
    /// The columns listed after it (ANALYZE reads every column anyway).
    pub columns: Vec<(String, Location)>,
}

/// Parses a statement whose first word is VACUUM or ANALYZE (ANALYSE).
pub(crate) fn parse(tokens: &[TokenWithSpan]) -> SqlResult<Maintenance> {
    let mut w = Words::new(tokens);
    let vacuum = w.keyword("vacuum");
    if !(vacuum || w.keyword("analyze") || w.keyword("analyse")) {
        return Err(w.error());
    }
    let mut m = Maintenance {
        vacuum,
        analyze: !vacuum,
        verbose: false,
        tables: Vec::new(),
    };
    if w.peek() == Some(&Token::LParen) {
        options(&mut w, &mut m)?;
    } else if vacuum {
        if w.keyword("full") {
            return Err(SqlError::unsupported("VACUUM FULL"));
        }
        w.keyword("freeze");
        m.verbose = w.keyword("verbose");
        m.analyze = w.keyword("analyze") || w.keyword("analyse");
    } else {
        w.keyword("verbose");
    }
    if w.at_end() {
        return Ok(m);
    }
    loop {
        let (name, at) = w.relation_name()?;
        let columns = if w.peek() == Some(&Token::LParen) {
            w.name_list()?
        } else {
            Vec::new()
        };
        if !columns.is_empty() && !m.analyze {
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                "ANALYZE option must be specified when a column list is provided",
            ));
        }
        m.tables.push(Target { name, at, columns });
        if !w.token(&Token::Comma) {
            break;
        }
    }
    if !w.at_end() {
        return Err(w.error());
    }
    Ok(m)
}

/// The parenthesized option list: `(ANALYZE, VERBOSE false, INDEX_CLEANUP auto, …)`.
/// Options that change nothing in Walden are accepted; FULL is refused.
fn options(w: &mut Words, m: &mut Maintenance) -> SqlResult<()> {
    w.expect(&Token::LParen)?;
    loop {
        let at = w.location();
        let (name, _) = w.name()?;
        let value = option_value(w);
        let flag = || match value.as_deref() {
            None | Some("true" | "on" | "1") => Ok(true),
            Some("false" | "off" | "0") => Ok(false),
            Some(_) => Err(SqlError::syntax(format!("{name} requires a Boolean value"))),
        };
        let known_to_both = matches!(name.as_str(), "verbose" | "skip_locked");
        match name.as_str() {
            "verbose" if m.vacuum => m.verbose = flag()?,
            _ if known_to_both => {
                flag()?;
            }
            "analyze" | "analyse" if m.vacuum => m.analyze = flag()?,
            "full" if m.vacuum => {
                if flag()? {
                    return Err(SqlError::unsupported("VACUUM FULL"));
                }
            }
            "freeze" | "disable_page_skipping" | "process_toast" | "truncate" if m.vacuum => {
                flag()?;
            }
            "index_cleanup" if m.vacuum => {
                if value.as_deref() != Some("auto") {
                    flag()?;
                }
            }
            "parallel" if m.vacuum => {
                let n = value.as_deref().and_then(|v| v.parse::<u32>().ok());
                if n.is_none_or(|n| n > 1024) {
                    return Err(SqlError::syntax(
                        "parallel option requires a value between 0 and 1024",
                    )
                    .at(at));
                }
            }
            _ => {
                let what = if m.vacuum { "VACUUM" } else { "ANALYZE" };
                return Err(SqlError::syntax(format!(
                    "unrecognized {what} option \"{}\"",
                    clip(&name)
                ))
                .at(at));
            }
        }
        if !w.token(&Token::Comma) {
            break;
        }
    }
    w.expect(&Token::RParen)
}

/// An option's argument, lower-cased: a word, a number or a string; None when the
/// option stands alone.
fn option_value(w: &mut Words) -> Option<String> {
    let v = match w.peek()? {
        Token::Word(word) => word.value.to_lowercase(),
        Token::Number(n, _) => n.clone(),
        Token::SingleQuotedString(s) => s.to_lowercase(),
        _ => return None,
    };
    w.next();
    Some(v)
}

/// The tables a VACUUM or ANALYZE works on, each checked to exist with the columns it
/// lists; every table when it names none.
fn tables(cx: &Ctx, m: &Maintenance) -> SqlResult<Vec<String>> {
    if m.tables.is_empty() {
        return Ok(cx.db.table_names());
    }
    let mut out = Vec::new();
    for t in &m.tables {
        let schema = cx
            .db
            .schema(&t.name)
            .map_err(|e| SqlError::from(e).at(t.at))?;
        for (i, (c, at)) in t.columns.iter().enumerate() {
            if !schema.columns.iter().any(|x| x.name == *c) {
                return Err(SqlError::new(
                    code::UNDEFINED_COLUMN,
                    format!("column \"{c}\" of relation \"{}\" does not exist", t.name),
                )
                .at(*at));
            }
            if t.columns[..i].iter().any(|(x, _)| x == c) {
                return Err(SqlError::new(
                    code::DUPLICATE_COLUMN,
                    format!(
                        "column \"{c}\" of relation \"{}\" appears more than once",
                        t.name
                    ),
                ));
            }
        }
        out.push(t.name.clone());
    }
    Ok(out)
}

/// VACUUM (outside any transaction: the engine commits each table's on its own); the
/// tables it analyzes afterwards are returned for the caller to analyze in a
/// transaction of their own.
/// With VERBOSE, `notices` gets two INFO lines per table: what it removed and gave
/// back.
pub(crate) fn vacuum(
    cx: &mut Ctx,
    m: &Maintenance,
    notices: &mut Vec<String>,
) -> SqlResult<Vec<String>> {
    let tables = owned(cx, m, "vacuum", tables(cx, m)?, notices);
    for t in &tables {
        cx.guard.check()?;
        let r = cx.db.vacuum_report(t)?;
        if m.verbose {
            notices.push(format!("INFO:  vacuuming \"public.{t}\""));
            notices.push(format!(
                "INFO:  \"public.{t}\": removed {} row versions; {} empty pages given back, {} left; {} bytes cut from the data file",
                r.versions_removed, r.pages_given_back, r.pages_left, r.file_bytes_cut
            ));
        }
    }
    Ok(if m.analyze { tables } else { Vec::new() })
}

/// ANALYZE of the statement's tables, in its transaction.
pub(crate) fn analyze(
    cx: &mut Ctx,
    t: &mut walden::Transaction,
    m: &Maintenance,
) -> SqlResult<Output> {
    let mut out = Output::tag("ANALYZE");
    let tables = tables(cx, m)?;
    for table in owned(cx, m, "analyze", tables, &mut out.notices) {
        crate::analyze::analyze_table(cx, t, &table)?;
    }
    Ok(out)
}

/// The tables the user may vacuum or analyze: its own (PostgreSQL 15 skips the others,
/// with a warning for those the statement names).
fn owned(
    cx: &Ctx,
    m: &Maintenance,
    verb: &str,
    tables: Vec<String>,
    notices: &mut Vec<String>,
) -> Vec<String> {
    if cx.auth.superuser {
        return tables;
    }
    tables
        .into_iter()
        .filter(|t| {
            let mine = cx.auth.owns_relation(t);
            if !mine && !m.tables.is_empty() {
                notices.push(format!(
                    "WARNING:  skipping \"{t}\" --- only table or database owner can {verb} it"
                ));
            }
            mine
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::tokenizer::Tokenizer;

    fn parsed(sql: &str) -> SqlResult<Maintenance> {
        let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
            .tokenize_with_location()
            .expect("tokens");
        parse(&tokens)
    }

    fn names(m: &Maintenance) -> Vec<&str> {
        m.tables.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn the_forms_pgbench_and_psql_send_parse() {
        let m = parsed("vacuum analyze pgbench_branches").unwrap();
        assert_eq!(
            (m.vacuum, m.analyze, names(&m)),
            (true, true, vec!["pgbench_branches"])
        );
        let m = parsed("VACUUM t1, \"T2\"").unwrap();
        assert_eq!(
            (m.vacuum, m.analyze, names(&m)),
            (true, false, vec!["t1", "T2"])
        );
        let m = parsed("vacuum (verbose false, analyze, index_cleanup auto) a (x, y), b").unwrap();
        assert_eq!((m.analyze, names(&m)), (true, vec!["a", "b"]));
        assert_eq!(m.tables[0].columns.len(), 2);
        let m = parsed("analyze verbose public.a, b").unwrap();
        assert_eq!(
            (m.vacuum, m.analyze, names(&m)),
            (false, true, vec!["a", "b"])
        );
        let m = parsed("vacuum freeze verbose").unwrap();
        assert_eq!((m.vacuum, m.analyze, m.tables.len()), (true, false, 0));
    }

    #[test]
    fn bad_forms_get_postgres_errors() {
        let cases = [
            ("vacuum full t", "0A000", "VACUUM FULL is not supported"),
            ("vacuum (full) t", "0A000", "VACUUM FULL is not supported"),
            (
                "vacuum (bogus) t",
                "42601",
                "unrecognized VACUUM option \"bogus\"",
            ),
            (
                "analyze (full) t",
                "42601",
                "unrecognized ANALYZE option \"full\"",
            ),
            (
                "vacuum (analyze maybe) t",
                "42601",
                "analyze requires a Boolean value",
            ),
            (
                "vacuum (parallel) t",
                "42601",
                "parallel option requires a value between 0 and 1024",
            ),
            (
                "vacuum t (a)",
                "0A000",
                "ANALYZE option must be specified when a column list is provided",
            ),
            ("vacuum t u", "42601", "syntax error at or near \"u\""),
            ("vacuum t,", "42601", "syntax error at end of input"),
            (
                "vacuum other.t",
                "42P01",
                "relation \"other.t\" does not exist",
            ),
        ];
        for (sql, code, message) in cases {
            let e = parsed(sql).unwrap_err();
            assert_eq!((e.code, e.message.as_str()), (code, message), "{sql}");
        }
    }
}
