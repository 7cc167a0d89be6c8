//! COPY's options, old style (`WITH CSV HEADER DELIMITER ','`) or new (`WITH (FORMAT csv,
//! HEADER)`), read as written and then checked as PostgreSQL's `ProcessCopyOptions` checks
//! them, with its messages and SQLSTATEs.

use sqlparser::tokenizer::{Location, Token};

use super::copy::{CopyFormat, CopyOptions, ForceQuote, Header, Named};
use crate::error::{clip, code, SqlError, SqlResult};
use crate::words::Words;

/// An option as written, before it is checked.
pub(super) struct RawOption {
    pub(super) name: String,
    pub(super) at: Location,
    pub(super) arg: Arg,
}

/// An option's argument, as PostgreSQL's `copy_generic_opt_arg`: a word (lower-cased
/// unless quoted), a string, a number, `*`, a parenthesized list of names, or nothing.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Arg {
    None,
    Word(String),
    Str(String),
    Number(String),
    Star,
    List(Vec<Named>),
}

/// `( name [arg] [, ...] )`.
pub(super) fn generic_options(w: &mut Words, raw: &mut Vec<RawOption>) -> SqlResult<()> {
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
pub(super) fn legacy_options(w: &mut Words, raw: &mut Vec<RawOption>) -> SqlResult<()> {
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
pub(super) fn check_options(raw: Vec<RawOption>, from: bool) -> SqlResult<CopyOptions> {
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
    check_forced(&g, csv, from)?;
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

/// FORCE_QUOTE, FORCE_NOT_NULL and FORCE_NULL: CSV only, each in its direction of COPY.
fn check_forced(g: &Given, csv: bool, from: bool) -> SqlResult<()> {
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
    Ok(())
}
